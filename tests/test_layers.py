"""transformer_lib.layers: FFN, EncoderLayer and Encoder equal PyTorch's, weight for
weight."""

import pytest
import torch
from torch import nn

from transformer_lib import (
    Encoder,
    EncoderLayer,
    PositionwiseFeedForward,
    load_torch_mha_weights,
    padding_mask,
)


def _copy_layer(ours: EncoderLayer, theirs: nn.TransformerEncoderLayer) -> None:
    load_torch_mha_weights(ours.self_attn, theirs.self_attn)
    with torch.no_grad():
        for a, b in (
            (ours.ffn.linear1, theirs.linear1),
            (ours.ffn.linear2, theirs.linear2),
            (ours.norm1, theirs.norm1),
            (ours.norm2, theirs.norm2),
        ):
            a.weight.copy_(b.weight)
            a.bias.copy_(b.bias)


def _padded_batch():
    tokens = torch.tensor([[5, 3, 8, 2, 9, 4], [6, 1, 4, 0, 0, 0], [2, 7, 0, 0, 0, 0]])
    return torch.randn(3, 6, 32), padding_mask(tokens, 0)


def test_ffn_is_positionwise_and_matches_formula():
    ffn = PositionwiseFeedForward(16, 64, dropout=0.0)
    x = torch.randn(2, 5, 16)
    ref = (
        torch.relu(x @ ffn.linear1.weight.T + ffn.linear1.bias) @ ffn.linear2.weight.T
        + ffn.linear2.bias
    )
    torch.testing.assert_close(ffn(x), ref)
    torch.testing.assert_close(ffn(x[:, 2]), ffn(x)[:, 2])


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_encoder_layer_equals_torch(norm_first, masked):
    theirs = nn.TransformerEncoderLayer(
        32, 4, 64, dropout=0.1, batch_first=True, norm_first=norm_first
    ).eval()
    ours = EncoderLayer(32, 4, 64, dropout=0.1, norm_first=norm_first).eval()
    _copy_layer(ours, theirs)
    x, mask = _padded_batch()
    with torch.no_grad():
        out = ours(x, mask if masked else None)
        ref = theirs(x, src_key_padding_mask=~mask[:, 0, 0] if masked else None)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_stack_equals_torch(norm_first):
    layer = nn.TransformerEncoderLayer(
        32, 4, 64, dropout=0.1, batch_first=True, norm_first=norm_first
    )
    theirs = nn.TransformerEncoder(
        layer, 3, norm=nn.LayerNorm(32), enable_nested_tensor=False
    ).eval()
    ours = Encoder(
        32, 4, 64, 3, dropout=0.1, norm_first=norm_first, final_norm=True
    ).eval()
    for a, b in zip(ours.layers, theirs.layers):
        _copy_layer(a, b)
    with torch.no_grad():
        ours.norm.weight.copy_(theirs.norm.weight)
        ours.norm.bias.copy_(theirs.norm.bias)
        x, mask = _padded_batch()
        torch.testing.assert_close(
            ours(x, mask),
            theirs(x, src_key_padding_mask=~mask[:, 0, 0]),
            atol=1e-5,
            rtol=1e-5,
        )


def test_final_norm_default_follows_norm_first():
    assert Encoder(32, 4, 64, 2).norm is None
    assert isinstance(Encoder(32, 4, 64, 2, norm_first=True).norm, nn.LayerNorm)
    assert isinstance(Encoder(32, 4, 64, 2, final_norm=True).norm, nn.LayerNorm)
    assert Encoder(32, 4, 64, 2, norm_first=True, final_norm=False).norm is None


def test_layers_have_independent_parameters():
    enc = Encoder(32, 4, 64, 3)
    ptrs = {p.data_ptr() for p in enc.parameters()}
    assert len(ptrs) == len(list(enc.parameters()))


def test_train_mode_is_random_eval_is_deterministic():
    layer = EncoderLayer(32, 4, 64, dropout=0.3)
    x = torch.randn(2, 5, 32)
    assert not torch.allclose(layer(x), layer(x))
    layer.eval()
    assert torch.equal(layer(x), layer(x))


def test_layernorm_output_independent_of_batch_padding():
    layer = EncoderLayer(32, 4, 64, dropout=0.0).eval()
    x, mask = _padded_batch()
    full = layer(x, mask)
    alone = layer(x[1:2, :3], None)  # row 1 without its padding
    torch.testing.assert_close(full[1:2, :3], alone, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: PositionwiseFeedForward(0, 8), "d_model"),
        (lambda: PositionwiseFeedForward(8, -1), "d_ff"),
        (lambda: PositionwiseFeedForward(8, 16, dropout=1.0), "dropout"),
        (lambda: EncoderLayer(30, 4, 64), "divisible"),
        (lambda: Encoder(32, 4, 64, 0), "n_layers"),
        (lambda: Encoder(32, 4, 64, 2.0), "n_layers"),
    ],
)
def test_bad_arguments(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_mask():
    layer = EncoderLayer(32, 4, 64)
    x = torch.randn(2, 5, 32)
    with pytest.raises(ValueError, match="mask"):
        layer(x, torch.ones(2, 1, 1, 6, dtype=torch.bool))
    with pytest.raises(TypeError, match="bool"):
        layer(x, torch.ones(2, 1, 1, 5))
