"""transformer_lib.variants: encoder-only (BERT-style) and decoder-only (GPT-style)
models, MLM inputs."""

import math

import pytest
import torch
import torch.nn.functional as F

from transformer_lib import (
    DecoderLayer,
    DecoderOnlyTransformer,
    EncoderLayer,
    EncoderOnlyTransformer,
    Transformer,
    TransformerConfig,
    count_parameters,
    encoder_layer_parameter_count,
    mask_tokens_for_mlm,
    sample_logits,
)

V, D, H, N, FF = 40, 32, 4, 2, 64


def small(cls, **kw):
    args = dict(d_model=D, n_heads=H, n_layers=N, d_ff=FF, max_len=24)
    args.update(kw)
    return cls(V, **args).eval()


# ---------------------------------------------------------------- shapes, tying, counts
@pytest.mark.parametrize("cls", [EncoderOnlyTransformer, DecoderOnlyTransformer])
def test_shapes_and_tied_head(cls):
    model = small(cls)
    tokens = torch.randint(1, V, (3, 10))
    assert model(tokens).shape == (3, 10, V)
    assert model.lm_head.weight is model.embed.weight
    assert not torch.isnan(model(tokens)).any()


@pytest.mark.parametrize("cls", [EncoderOnlyTransformer, DecoderOnlyTransformer])
@pytest.mark.parametrize("norm_first", [False, True])
def test_parameter_count_closed_form(cls, norm_first):
    model = small(cls, norm_first=norm_first)
    expected = (
        V * D + N * encoder_layer_parameter_count(D, FF) + (2 * D if norm_first else 0)
    )
    assert (
        count_parameters(model)
        == expected
        == sum(p.numel() for p in model.parameters())
    )


def test_bert_base_count_on_meta_device():
    with torch.device("meta"):
        model = EncoderOnlyTransformer(
            30522, d_model=768, n_heads=12, n_layers=12, d_ff=3072
        )
    assert count_parameters(model) == 108_495_360


# ---------------------------------------------------------------- the original model
# with a part removed
def test_encoder_only_equals_transformer_encoder():
    seq2seq = Transformer(
        TransformerConfig(
            V,
            V,
            d_model=D,
            n_heads=H,
            n_encoder_layers=N,
            n_decoder_layers=1,
            d_ff=FF,
            max_len=24,
            pad_id=0,
        )
    ).eval()
    bert = small(EncoderOnlyTransformer, pad_id=0)
    with torch.no_grad():
        bert.embed.weight.copy_(seq2seq.src_embed.weight)
    bert.encoder.load_state_dict(seq2seq.encoder.state_dict())
    src = torch.randint(1, V, (2, 9))
    src[0, 6:] = 0
    with torch.no_grad():
        torch.testing.assert_close(
            bert.encode(src), seq2seq.encode(src), atol=1e-6, rtol=0
        )


def test_decoder_layer_without_cross_attention_is_causal_encoder_layer():
    enc = EncoderLayer(D, H, FF, dropout=0.0, norm_first=True).eval()
    dec = DecoderLayer(D, H, FF, dropout=0.0, norm_first=True).eval()
    dec.self_attn.load_state_dict(enc.self_attn.state_dict())
    dec.ffn.load_state_dict(enc.ffn.state_dict())
    dec.norm1.load_state_dict(enc.norm1.state_dict())
    dec.norm3.load_state_dict(enc.norm2.state_dict())
    with torch.no_grad():
        dec.cross_attn.out_proj.weight.zero_()
        dec.cross_attn.out_proj.bias.zero_()
    x, mem = torch.randn(2, 7, D), torch.randn(2, 5, D)
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    with torch.no_grad():
        torch.testing.assert_close(
            dec(x, mem, tgt_mask=causal), enc(x, mask=causal), atol=1e-6, rtol=0
        )


# ---------------------------------------------------------------- what each position
# sees
def test_decoder_only_is_causal_and_encoder_only_is_bidirectional():
    gpt, bert = small(DecoderOnlyTransformer), small(EncoderOnlyTransformer)
    a = torch.randint(1, V, (1, 12))
    b = a.clone()
    b[0, 5] = (a[0, 5] % (V - 1)) + 1
    with torch.no_grad():
        g = (gpt(a) - gpt(b)).abs().amax(-1)[0]
        e = (bert(a) - bert(b)).abs().amax(-1)[0]
    assert (g[:5] == 0).all() and (g[5:] > 0).all()
    assert (e > 0).all()


def test_padding_does_not_change_real_tokens():
    bert = small(EncoderOnlyTransformer, pad_id=0)
    x = torch.randint(1, V, (1, 8))
    with torch.no_grad():
        short = bert.encode(x)
        padded = bert.encode(
            torch.cat([x, torch.zeros(1, 10, dtype=torch.long)], dim=1)
        )
    torch.testing.assert_close(short, padded[:, :8], atol=1e-5, rtol=0)


def test_decoder_only_pad_id_masks_padding():
    gpt = small(DecoderOnlyTransformer, pad_id=0)
    x = torch.randint(1, V, (1, 8))
    x[0, 2] = 0  # a pad in the middle
    causal = torch.ones(8, 8, dtype=torch.bool).tril()
    with torch.no_grad():
        torch.testing.assert_close(
            gpt(x), gpt(x, mask=causal & (x != 0)[:, None, None, :])
        )
        assert not torch.allclose(gpt(x)[:, 3:], gpt(x, mask=causal)[:, 3:])
        left = gpt(torch.cat([torch.zeros(1, 3, dtype=torch.long), x[:, 3:]], dim=1))
    assert not torch.isnan(left).any()  # the fully masked first pad row gives no NaN


def test_explicit_mask_is_used_and_checked():
    gpt = small(DecoderOnlyTransformer)
    x = torch.randint(1, V, (2, 5))
    full = torch.ones(5, 5, dtype=torch.bool)
    with torch.no_grad():
        # no causal mask: the past sees the future
        assert not torch.allclose(gpt(x, mask=full), gpt(x))
        torch.testing.assert_close(
            gpt(x, mask=torch.ones(5, 5, dtype=torch.bool).tril()), gpt(x)
        )
    with pytest.raises(TypeError, match="mask"):
        gpt(x, mask=full.int())
    with pytest.raises(ValueError, match="mask"):
        gpt(x, mask=torch.ones(4, 4, dtype=torch.bool))


# ---------------------------------------------------------------- generation
def test_generate_reproducible_and_restores_mode():
    gpt = small(DecoderOnlyTransformer).train()
    prompt = torch.randint(1, V, (2, 3))
    # longer than max_len=24
    a = gpt.generate(prompt, 30, generator=torch.Generator().manual_seed(0))
    b = gpt.generate(prompt, 30, generator=torch.Generator().manual_seed(0))
    assert a.shape == (2, 33) and torch.equal(a, b) and torch.equal(a[:, :3], prompt)
    assert gpt.training
    assert int(a.min()) >= 0 and int(a.max()) < V


def test_generate_greedy_matches_argmax_loop_and_sampling():
    gpt = small(DecoderOnlyTransformer)
    prompt = torch.randint(1, V, (1, 4))
    out = gpt.generate(prompt, 5, greedy=True)
    tokens = prompt
    with torch.no_grad():
        for _ in range(5):
            tokens = torch.cat(
                [tokens, gpt(tokens)[:, -1].argmax(-1, keepdim=True)], dim=1
            )
    assert torch.equal(out, tokens)
    # one sampling step equals sample_logits with the same generator
    s = gpt.generate(
        prompt, 1, temperature=0.7, top_k=5, generator=torch.Generator().manual_seed(3)
    )
    with torch.no_grad():
        expect = sample_logits(
            gpt(prompt)[:, -1], 0.7, 5, None, torch.Generator().manual_seed(3)
        )
    assert s[0, -1] == expect[0]
    assert torch.equal(gpt.generate(prompt, 0), prompt)


def test_decoder_only_learns_a_repeating_pattern():
    torch.manual_seed(0)
    gpt = DecoderOnlyTransformer(
        5,
        d_model=32,
        n_heads=4,
        n_layers=1,
        d_ff=64,
        dropout=0.0,
        max_len=16,
        norm_first=True,
    )
    seq = torch.tensor([[0, 1, 2, 3, 4] * 3])[:, :16]
    opt = torch.optim.Adam(gpt.parameters(), lr=1e-2)
    for _ in range(60):
        logits = gpt(seq[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), seq[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.1 < math.log(5)
    assert gpt.generate(seq[:, :2], 8, greedy=True)[0].tolist() == [
        0,
        1,
        2,
        3,
        4,
        0,
        1,
        2,
        3,
        4,
    ]


# ---------------------------------------------------------------- MLM inputs
def test_mlm_proportions_and_specials():
    tokens = torch.randint(
        5, 500, (64, 512), generator=torch.Generator().manual_seed(0)
    )
    tokens[:, -50:] = 0
    inputs, labels = mask_tokens_for_mlm(
        tokens,
        4,
        500,
        special_ids=(0, 1, 2),
        generator=torch.Generator().manual_seed(1),
    )
    chosen = labels != -100
    real = tokens != 0
    assert abs(chosen[real].float().mean().item() - 0.15) < 0.01
    assert not chosen[~real].any()
    assert abs((inputs[chosen] == 4).float().mean().item() - 0.8) < 0.02
    assert abs((inputs[chosen] == tokens[chosen]).float().mean().item() - 0.1) < 0.02
    assert torch.equal(inputs[~chosen], tokens[~chosen])
    assert torch.equal(labels[chosen], tokens[chosen])
    assert inputs.dtype == labels.dtype == tokens.dtype


def test_mlm_reproducible_with_generator_and_ignore_index():
    tokens = torch.randint(5, 50, (4, 30))
    a = mask_tokens_for_mlm(
        tokens, 4, 50, generator=torch.Generator().manual_seed(7), ignore_index=-1
    )
    b = mask_tokens_for_mlm(
        tokens, 4, 50, generator=torch.Generator().manual_seed(7), ignore_index=-1
    )
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert set(a[1][a[1] < 0].tolist()) <= {-1}


def test_mlm_never_chooses_mask_token():
    tokens = torch.full((2, 100), 4)
    inputs, labels = mask_tokens_for_mlm(
        tokens, 4, 10, mask_prob=0.9, generator=torch.Generator().manual_seed(0)
    )
    assert (labels == -100).all() and torch.equal(inputs, tokens)


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("cls", [EncoderOnlyTransformer, DecoderOnlyTransformer])
def test_bad_tokens_raise(cls):
    model = small(cls)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model(torch.tensor([[1, V]]))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model(torch.tensor([[-1, 2]]))
    with pytest.raises(TypeError, match="integer"):
        model(torch.rand(1, 4))
    with pytest.raises(ValueError, match="2-D"):
        model(torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="max_len"):
        model(torch.ones(1, 25, dtype=torch.long))
    with pytest.raises(ValueError, match="empty"):
        model(torch.ones(1, 0, dtype=torch.long))
    with pytest.raises(TypeError, match="torch.Tensor"):
        model([[1, 2]])


@pytest.mark.parametrize("cls", [EncoderOnlyTransformer, DecoderOnlyTransformer])
def test_bad_construction_raises(cls):
    with pytest.raises(ValueError, match="divisible"):
        cls(V, d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="vocab_size"):
        cls(0)
    with pytest.raises(ValueError, match="dropout"):
        cls(V, d_model=32, n_heads=4, dropout=1.5)
    with pytest.raises(ValueError, match="pad_id"):
        cls(V, d_model=32, n_heads=4, pad_id=V)
    with pytest.raises(TypeError, match="pad_id"):
        cls(V, d_model=32, n_heads=4, pad_id=1.0)
    with pytest.raises(TypeError, match="norm_first"):
        cls(V, d_model=32, n_heads=4, norm_first=1)


def test_encoder_only_needs_a_pad_id():
    with pytest.raises(TypeError, match="pad_id"):
        EncoderOnlyTransformer(V, d_model=32, n_heads=4, pad_id=None)


def test_generate_bad_arguments():
    gpt = small(DecoderOnlyTransformer)
    prompt = torch.randint(1, V, (1, 3))
    with pytest.raises(ValueError, match="max_new_tokens"):
        gpt.generate(prompt, -1)
    with pytest.raises(ValueError, match="temperature"):
        gpt.generate(prompt, 2, temperature=0.0)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        gpt.generate(torch.tensor([[V]]), 2)
    with pytest.raises(TypeError, match="greedy"):
        gpt.generate(prompt, 2, greedy="yes")


def test_mlm_bad_arguments():
    tokens = torch.randint(5, 50, (2, 10))
    with pytest.raises(ValueError, match="mask_id"):
        mask_tokens_for_mlm(tokens, 50, 50)
    with pytest.raises(ValueError, match="mask_prob"):
        mask_tokens_for_mlm(tokens, 4, 50, mask_prob=1.0)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        mask_tokens_for_mlm(tokens, 4, 20)
    with pytest.raises(TypeError, match="integer"):
        mask_tokens_for_mlm(tokens.float(), 4, 50)
    with pytest.raises(TypeError, match="special_ids"):
        mask_tokens_for_mlm(tokens, 4, 50, special_ids=(0.5,))
