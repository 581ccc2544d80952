"""transformer_lib.model: equal to torch.nn.Transformer, masks from pad_id, clear
errors, no NaN."""

import pytest
import torch
from torch import nn

from transformer_lib import (
    Decoder,
    DecoderLayer,
    Encoder,
    Transformer,
    TransformerConfig,
    causal_mask,
    load_torch_transformer_weights,
    padding_mask,
    stacks_from_torch_transformer,
    target_mask,
)

# nn.Transformer warns that its nested-tensor fast path is a prototype: not what these
# tests test.
pytestmark = pytest.mark.filterwarnings(
    "ignore::UserWarning:torch.nn.modules.transformer"
)


def small_config(**overrides):
    fields = dict(
        src_vocab_size=50,
        tgt_vocab_size=40,
        d_model=32,
        n_heads=4,
        n_encoder_layers=2,
        n_decoder_layers=2,
        d_ff=64,
        max_len=20,
    )
    return TransformerConfig(**{**fields, **overrides})


@pytest.fixture
def model():
    return Transformer(small_config()).eval()


@pytest.fixture
def batch():
    src = torch.tensor([[5, 9, 23, 7, 2], [8, 4, 2, 0, 0], [3, 3, 0, 0, 0]])
    tgt = torch.tensor([[1, 12, 33, 8], [1, 19, 0, 0], [1, 5, 6, 0]])
    return src, tgt


# ----- equivalence with torch.nn.Transformer ------------------------------------------
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_stacks_equal_torch_transformer(norm_first, masked):
    torch.manual_seed(0)
    reference = nn.Transformer(
        32,
        4,
        2,
        3,
        64,
        dropout=0.1,
        batch_first=True,
        norm_first=norm_first,
        activation="relu",
    ).eval()
    encoder, decoder = stacks_from_torch_transformer(reference)
    assert not encoder.training and not decoder.training
    x, y = torch.randn(3, 7, 32), torch.randn(3, 5, 32)
    src_real = torch.tensor([[1] * 7, [1] * 5 + [0] * 2, [1] * 3 + [0] * 4]).bool()
    tgt_real = torch.tensor([[1] * 5, [1] * 4 + [0], [1] * 2 + [0] * 3]).bool()
    with torch.no_grad():
        if masked:
            sm, tm = src_real[:, None, None], tgt_real[:, None, None] & causal_mask(5)
            ours = decoder(y, encoder(x, sm), tm, sm)
            theirs = reference(
                x,
                y,
                tgt_mask=~causal_mask(5),
                src_key_padding_mask=~src_real,
                tgt_key_padding_mask=~tgt_real,
                memory_key_padding_mask=~src_real,
            )
        else:
            ours, theirs = decoder(y, encoder(x)), reference(x, y)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


def test_load_into_existing_stacks_and_refusals():
    reference = nn.Transformer(32, 4, 2, 2, 64, batch_first=True).eval()
    enc = Encoder(32, 4, 64, 2, final_norm=True).eval()
    dec = Decoder(32, 4, 64, 2, final_norm=True).eval()
    load_torch_transformer_weights(enc, dec, reference)
    x, y = torch.randn(2, 6, 32), torch.randn(2, 4, 32)
    with torch.no_grad():
        torch.testing.assert_close(
            dec(y, enc(x)), reference(x, y), atol=1e-5, rtol=1e-5
        )
    with pytest.raises(ValueError, match="final_norm=True"):
        load_torch_transformer_weights(Encoder(32, 4, 64, 2), dec, reference)
    with pytest.raises(ValueError, match="layers"):
        load_torch_transformer_weights(
            Encoder(32, 4, 64, 3, final_norm=True), dec, reference
        )
    with pytest.raises(ValueError, match="norm_first"):
        load_torch_transformer_weights(
            Encoder(32, 4, 64, 2, norm_first=True), dec, reference
        )
    with pytest.raises(TypeError, match="torch.nn.Transformer"):
        load_torch_transformer_weights(enc, dec, nn.Linear(2, 2))


# ----- the model ----------------------------------------------------------------------
def test_shapes_and_default_masks(model, batch):
    src, tgt = batch
    logits = model(src, tgt)
    assert logits.shape == (3, 4, 40)
    memory = model.encode(src)
    assert memory.shape == (3, 5, 32)
    torch.testing.assert_close(logits, model.decode(tgt, memory, padding_mask(src, 0)))
    torch.testing.assert_close(
        logits, model(src, tgt, padding_mask(src, 0), target_mask(tgt, 0))
    )


def test_causality(model, batch):
    src, tgt = batch
    changed = tgt.clone()
    changed[:, 2] = 7
    a, b = model(src, tgt), model(src, changed)
    torch.testing.assert_close(a[:, :2], b[:, :2])
    assert not torch.allclose(a[:, 2:], b[:, 2:])


def test_incremental_decoding_matches_parallel(model, batch):
    src, tgt = batch
    memory = model.encode(src[:1])
    steps = torch.stack(
        [model.decode(tgt[:1, :t], memory, src=src[:1])[:, -1] for t in range(1, 5)],
        dim=1,
    )
    torch.testing.assert_close(
        steps, model.decode(tgt[:1], memory, src=src[:1]), atol=1e-5, rtol=1e-5
    )


def test_decoder_layer_past_equals_full_prefix():
    layer = DecoderLayer(32, 4, 64, dropout=0.0).eval()
    for norm_first in (False, True):
        layer.norm_first = norm_first
        x, memory = torch.randn(2, 5, 32), torch.randn(2, 7, 32)
        full = layer(x, memory, tgt_mask=causal_mask(5))
        # one new position, no mask needed
        last = layer(x[:, -1:], memory, past=x[:, :-1])
        torch.testing.assert_close(last, full[:, -1:], atol=1e-5, rtol=1e-5)


def test_embed_tgt_offset_matches_slice(model):
    tgt = torch.tensor([[1, 5, 6, 7]])
    torch.testing.assert_close(
        model.embed_tgt(tgt)[:, 2:], model.embed_tgt(tgt[:, 2:], offset=2)
    )


def test_learned_positions_are_trained_and_decode_incrementally(batch):
    """Table 3 row (E): one trained vector per position, used by the parallel and the
    step-by-step decoder."""
    torch.manual_seed(0)
    learned = Transformer(small_config(positions="learned")).eval()
    table = learned.positional.embedding.weight
    assert table.shape == (20, 32) and table.requires_grad
    assert not hasattr(learned.positional, "pe")  # no sinusoid anywhere
    src, tgt = batch
    test_incremental_decoding_matches_parallel(learned, batch)
    tgt1 = tgt[:1]
    torch.testing.assert_close(
        learned.embed_tgt(tgt1)[:, 2:], learned.embed_tgt(tgt1[:, 2:], offset=2)
    )
    learned(src, tgt).sum().backward()
    assert table.grad is not None and table.grad[: tgt.shape[1]].abs().sum() > 0


def test_outputs_independent_of_other_samples(model):
    torch.manual_seed(1)
    src, tgt = torch.randint(1, 50, (6, 9)), torch.randint(1, 40, (6, 7))
    src[2, 4:], tgt[4, 3:] = 0, 0
    together = model(src, tgt)
    alone = torch.cat([model(src[i : i + 1], tgt[i : i + 1]) for i in range(6)])
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        model(src[2:3, :4], tgt[2:3]), together[2:3], atol=1e-5, rtol=1e-5
    )


def test_all_padding_source_row_is_finite(model, batch):
    src, tgt = batch
    src = src.clone()
    src[1] = 0
    model.train()
    out = model(src, tgt)
    assert torch.isfinite(out).all()
    out.sum().backward()
    assert all(
        torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None
    )


def test_weight_tying():
    tied = Transformer(
        TransformerConfig.base(
            100, d_model=32, n_heads=4, n_encoder_layers=1, n_decoder_layers=1, d_ff=64
        )
    )
    assert tied.src_embed.weight is tied.tgt_embed.weight is tied.output.weight
    untied = Transformer(small_config(tie_output=False))
    assert untied.output.weight is not untied.tgt_embed.weight
    assert untied.src_embed.weight is not untied.tgt_embed.weight
    assert tied.output.bias is None


def test_presets():
    base, big = TransformerConfig.base(37000), TransformerConfig.big(37000)
    assert (base.d_model, base.n_heads, base.d_ff, base.dropout) == (512, 8, 2048, 0.1)
    assert (big.d_model, big.n_heads, big.d_ff, big.dropout) == (1024, 16, 4096, 0.3)
    for c in (base, big):
        assert (
            c.share_embeddings
            and c.tie_output
            and c.src_vocab_size == c.tgt_vocab_size == 37000
        )
        assert (c.n_encoder_layers, c.n_decoder_layers, c.norm_first) == (6, 6, False)
    assert TransformerConfig.base(100, d_model=64).d_model == 64


def test_pre_ln_model_has_final_norms():
    model = Transformer(small_config(norm_first=True))
    assert model.encoder.norm is not None and model.decoder.norm is not None
    post = Transformer(small_config())
    assert post.encoder.norm is None and post.decoder.norm is None


def test_seeded_init_is_deterministic():
    torch.manual_seed(3)
    a = Transformer(small_config())
    torch.manual_seed(3)
    b = Transformer(small_config())
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)


def test_train_eval_modes(model, batch):
    src, tgt = batch
    m = Transformer(small_config(dropout=0.3))
    m.train()
    assert not torch.allclose(m(src, tgt), m(src, tgt))
    m.eval()
    assert torch.equal(m(src, tgt), m(src, tgt))


# ----- errors -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fields, exc, match",
    [
        (dict(n_heads=5), ValueError, "divisible"),
        (dict(d_model=0), ValueError, "d_model"),
        (dict(dropout=1.0), ValueError, "dropout"),
        (dict(pad_id=40), ValueError, "pad_id"),
        (dict(pad_id=None), TypeError, "pad_id"),
        (dict(share_embeddings=True), ValueError, "share_embeddings"),
        (dict(tie_output=1), TypeError, "tie_output"),
        (dict(max_len=-1), ValueError, "max_len"),
        (dict(positions="rope"), ValueError, "positions"),
    ],
)
def test_config_validation(fields, exc, match):
    with pytest.raises(exc, match=match):
        small_config(**fields)


def test_transformer_needs_a_config():
    with pytest.raises(TypeError, match="TransformerConfig"):
        Transformer({"src_vocab_size": 3})


@pytest.mark.parametrize(
    "make_src, make_tgt, exc, match",
    [
        (lambda s: s.clone().fill_(50), None, ValueError, r"`src`.*0 <= id < 50"),
        (lambda s: s - 1, None, ValueError, r"`src`.*\[-1"),
        (None, lambda t: t + 40, ValueError, r"`tgt`.*0 <= id < 40"),
        (lambda s: s.float(), None, TypeError, r"`src`.*integer"),
        (lambda s: s.bool(), None, TypeError, r"`src`.*integer"),
        (lambda s: s[0], None, ValueError, r"`src`.*2-D"),
        (None, lambda t: t[None], ValueError, r"`tgt`.*2-D"),
        (lambda s: s.tolist(), None, TypeError, r"`src`.*Tensor"),
        (None, lambda t: t[:2], ValueError, "same batch size"),
        (
            lambda s: torch.ones(3, 21, dtype=torch.long),
            None,
            ValueError,
            r"`src`.*length 21.*max_len=20",
        ),
        (
            None,
            lambda t: torch.ones(3, 21, dtype=torch.long),
            ValueError,
            r"`tgt`.*length 21.*max_len=20",
        ),
        (lambda s: s[:, :0], None, ValueError, "empty"),
    ],
)
def test_token_errors(model, batch, make_src, make_tgt, exc, match):
    src, tgt = batch
    src = make_src(src) if make_src else src
    tgt = make_tgt(tgt) if make_tgt else tgt
    with pytest.raises(exc, match=match):
        model(src, tgt)


def test_mask_errors(model, batch):
    src, tgt = batch
    with pytest.raises(TypeError, match="src_mask.*bool"):
        model(src, tgt, src_mask=padding_mask(src, 0).float())
    with pytest.raises(ValueError, match="src_mask"):
        model(src, tgt, src_mask=torch.ones(3, 1, 1, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="tgt_mask"):
        model(src, tgt, tgt_mask=torch.ones(3, 1, 4, 5, dtype=torch.bool))
    with pytest.raises(TypeError, match="tgt_mask"):
        model(src, tgt, tgt_mask=torch.ones(4, 4).tril())
    # a (B, 1, S, S) mask cannot serve cross-attention
    with pytest.raises(ValueError, match="src_mask"):
        model(src, tgt, src_mask=torch.ones(3, 1, 5, 5, dtype=torch.bool))


def test_memory_errors(model, batch):
    src, tgt = batch
    with pytest.raises(ValueError, match="memory"):
        model.decode(tgt, torch.randn(2, 5, 32))
    with pytest.raises(ValueError, match="memory"):
        model.decode(tgt, torch.randn(3, 5, 16))
    with pytest.raises(TypeError, match="memory"):
        model.decode(tgt, torch.ones(3, 5, 32, dtype=torch.long))
