"""transformer_lib.params: closed-form counts equal numel; FLOPs equal PyTorch's
counter."""

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from transformer_lib import (
    MultiHeadAttention,
    Transformer,
    TransformerConfig,
    count_parameters,
    decoder_layer_parameter_count,
    encoder_layer_parameter_count,
    ffn_parameter_count,
    mha_parameter_count,
    transformer_flops,
    transformer_parameter_count,
)
from transformer_lib import DecoderLayer, EncoderLayer, PositionwiseFeedForward


def test_seed_example_four_mha_layers():
    mhas = nn.ModuleList(MultiHeadAttention(512, 8, bias=False) for _ in range(4))
    assert (
        count_parameters(mhas) == 4 * mha_parameter_count(512, bias=False) == 4_194_304
    )


@pytest.mark.parametrize("d, d_ff", [(32, 64), (512, 2048)])
def test_layer_counts(d, d_ff):
    assert count_parameters(MultiHeadAttention(d, 4)) == mha_parameter_count(d)
    assert count_parameters(PositionwiseFeedForward(d, d_ff)) == ffn_parameter_count(
        d, d_ff
    )
    assert count_parameters(EncoderLayer(d, 4, d_ff)) == encoder_layer_parameter_count(
        d, d_ff
    )
    assert count_parameters(DecoderLayer(d, 4, d_ff)) == decoder_layer_parameter_count(
        d, d_ff
    )


@pytest.mark.parametrize(
    "fields",
    [
        dict(),
        dict(share_embeddings=True, tgt_vocab_size=50),
        dict(tie_output=False),
        dict(tie_output=False, share_embeddings=True, tgt_vocab_size=50),
        dict(norm_first=True),
        dict(n_encoder_layers=1, n_decoder_layers=3),
        dict(positions="learned", max_len=30),
        dict(d_k=3),
        dict(d_k=16, norm_first=True),
    ],
)
def test_transformer_count_matches_numel(fields):
    config = TransformerConfig(
        **{
            **dict(
                src_vocab_size=50,
                tgt_vocab_size=40,
                d_model=32,
                n_heads=4,
                n_encoder_layers=2,
                n_decoder_layers=2,
                d_ff=64,
            ),
            **fields,
        }
    )
    assert count_parameters(Transformer(config)) == transformer_parameter_count(config)


def test_base_and_big_counts():
    for config, expected in (
        (TransformerConfig.base(37000), 63_082_496),
        (TransformerConfig.big(37000), 214_245_376),
    ):
        assert transformer_parameter_count(config) == expected
        with torch.device("meta"):
            assert count_parameters(Transformer(config)) == expected


def test_count_parameters_trainable_only():
    lin = nn.Linear(3, 4)
    lin.bias.requires_grad_(False)
    assert (
        count_parameters(lin) == 12
        and count_parameters(lin, trainable_only=False) == 16
    )


@pytest.mark.parametrize("d_k", [None, 3])
def test_flops_match_counter(d_k):
    config = TransformerConfig.base(
        60,
        d_model=32,
        n_heads=4,
        n_encoder_layers=2,
        n_decoder_layers=1,
        d_ff=64,
        dropout=0.0,
        d_k=d_k,
    )
    model = Transformer(config)
    for m in model.modules():
        if isinstance(m, MultiHeadAttention):
            m.store_weights = True
    src, tgt = torch.randint(1, 60, (3, 9)), torch.randint(1, 60, (3, 4))
    with FlopCounterMode(display=False) as counter:
        model(src, tgt)
    assert counter.get_total_flops() == 3 * transformer_flops(
        config, 9, 4, training=False
    )
    with FlopCounterMode(display=False) as counter:
        model(src, tgt).sum().backward()
    assert counter.get_total_flops() == 3 * transformer_flops(config, 9, 4)


def test_errors():
    with pytest.raises(TypeError, match="TransformerConfig"):
        transformer_parameter_count({"d_model": 512})
    with pytest.raises(TypeError, match="Module"):
        count_parameters([1, 2])
    with pytest.raises(ValueError, match="src_len"):
        transformer_flops(TransformerConfig.base(100), 0, 5)
    with pytest.raises(ValueError, match="d_model"):
        mha_parameter_count(-4)
