"""transformer_lib.masks: padding, causal and target masks, teacher forcing, and the
masking properties the chapters assert (future tokens and extra padding change nothing;
no NaN)."""

import pytest
import torch

import transformer_lib
from transformer_lib import (
    MultiHeadAttention,
    attention,
    causal_mask,
    padding_mask,
    shift_right,
    target_mask,
    teacher_forcing,
)

PAD, BOS, EOS = 0, 1, 2


def test_padding_mask_shape_and_values():
    tokens = torch.tensor([[5, 6, 7, 8], [5, 6, PAD, PAD], [9, PAD, PAD, PAD]])
    m = padding_mask(tokens, PAD)
    assert m.shape == (3, 1, 1, 4) and m.dtype == torch.bool
    assert m[:, 0, 0].tolist() == [
        [True] * 4,
        [True, True, False, False],
        [True, False, False, False],
    ]


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.uint8])
def test_padding_mask_integer_dtypes(dtype):
    assert padding_mask(torch.tensor([[3, 0]], dtype=dtype), 0)[0, 0, 0].tolist() == [
        True,
        False,
    ]


@pytest.mark.parametrize(
    "bad",
    [
        torch.tensor([[1.0, 0.0]]),
        torch.tensor([[True, False]]),
        torch.tensor([[1.0, 0.0]], dtype=torch.bfloat16),
    ],
)
def test_padding_mask_rejects_non_integer(bad):
    with pytest.raises(TypeError, match="integer token ids"):
        padding_mask(bad, 0)


def test_padding_mask_rejects_wrong_rank_and_non_tensor():
    with pytest.raises(ValueError, match=r"2-D \(B, L\).*\(4,\)"):
        padding_mask(torch.tensor([1, 2, 3, 0]), 0)
    with pytest.raises(ValueError, match="2-D"):
        padding_mask(torch.zeros(2, 3, 4, dtype=torch.long), 0)
    with pytest.raises(TypeError, match="torch.Tensor"):
        padding_mask([[1, 2, 0]], 0)
    with pytest.raises(TypeError, match="pad_id"):
        padding_mask(torch.tensor([[1, 0]]), 0.0)


@pytest.mark.parametrize("size", [1, 2, 5, 64])
def test_causal_mask_is_lower_triangular(size):
    m = causal_mask(size)
    assert m.shape == (size, size) and m.dtype == torch.bool
    for i in range(size):
        for j in range(size):
            # removed: keys after the query (upper right)
            assert m[i, j].item() == (j <= i)
    assert m.sum().item() == size * (size + 1) // 2


def test_causal_mask_device_and_sdpa_convention():
    m = causal_mask(6, device="cpu")
    assert m.device.type == "cpu"
    q, k, v = torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 8)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(attention(q, k, v, mask=m)[0], ref, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("bad", [0, -1, 2.0, None, True])
def test_causal_mask_rejects_bad_size(bad):
    with pytest.raises(ValueError, match="positive int"):
        causal_mask(bad)


def test_target_mask_is_padding_and_causal():
    tgt = torch.tensor([[BOS, 5, 6, 7], [BOS, 5, PAD, PAD]])
    m = target_mask(tgt, PAD)
    assert m.shape == (2, 1, 4, 4) and m.dtype == torch.bool
    expected = torch.zeros(2, 1, 4, 4, dtype=torch.bool)
    for b in range(2):
        for i in range(4):
            for j in range(4):
                expected[b, 0, i, j] = j <= i and tgt[b, j].item() != PAD
    assert torch.equal(m, expected)
    assert torch.equal(m, padding_mask(tgt, PAD) & causal_mask(4))


def test_shift_right():
    tokens = torch.tensor([[5, 6, 7, EOS], [5, EOS, PAD, PAD]])
    assert shift_right(tokens, BOS).tolist() == [[BOS, 5, 6, 7], [BOS, 5, EOS, PAD]]
    with pytest.raises(TypeError):
        shift_right(tokens.float(), BOS)


def test_teacher_forcing_seed_example():
    # "I'm a student" -> "<SOS> Je suis un étudiant"; a second, shorter sentence pads
    # the batch.
    vocab = {
        "<pad>": PAD,
        "<bos>": BOS,
        "<eos>": EOS,
        "Je": 3,
        "suis": 4,
        "un": 5,
        "étudiant": 6,
        "Bonjour": 7,
    }
    inv = {i: w for w, i in vocab.items()}
    tgt = torch.tensor([[3, 4, 5, 6], [7, PAD, PAD, PAD]])
    dec_in, labels = teacher_forcing(tgt, BOS, EOS, PAD)
    assert [inv[i] for i in dec_in[0].tolist()] == [
        "<bos>",
        "Je",
        "suis",
        "un",
        "étudiant",
    ]
    assert [inv[i] for i in labels[0].tolist()] == [
        "Je",
        "suis",
        "un",
        "étudiant",
        "<eos>",
    ]
    assert [inv[i] for i in dec_in[1].tolist()] == [
        "<bos>",
        "Bonjour",
        "<pad>",
        "<pad>",
        "<pad>",
    ]
    assert [inv[i] for i in labels[1].tolist()] == [
        "Bonjour",
        "<eos>",
        "<pad>",
        "<pad>",
        "<pad>",
    ]
    # at every position that is trained, the input holds the previous label
    trained = labels != PAD
    assert torch.equal(dec_in[:, 1:][trained[:, 1:]], labels[:, :-1][trained[:, 1:]])
    assert dec_in.dtype == labels.dtype == tgt.dtype


def test_teacher_forcing_errors():
    with pytest.raises(ValueError, match="right-padded"):
        teacher_forcing(torch.tensor([[PAD, 3, 4]]), BOS, EOS, PAD)
    with pytest.raises(ValueError, match="must differ"):
        teacher_forcing(torch.tensor([[3, 4]]), BOS, BOS, PAD)
    with pytest.raises(TypeError, match="integer"):
        teacher_forcing(torch.tensor([[3.0, 4.0]]), BOS, EOS, PAD)
    with pytest.raises(ValueError, match="2-D"):
        teacher_forcing(torch.tensor([3, 4]), BOS, EOS, PAD)


# ---------------------------------------------------------------- properties of masked
# attention


def test_causal_mask_future_tokens_do_not_change_the_past():
    L, d = 7, 16
    x = torch.randn(1, L, d)
    x2 = x.clone()
    x2[:, 4:] = torch.randn(1, L - 4, d)  # change tokens 4..6
    out1, _ = attention(x, x, x, mask=causal_mask(L))
    out2, _ = attention(x2, x2, x2, mask=causal_mask(L))
    torch.testing.assert_close(out1[:, :4], out2[:, :4], atol=0, rtol=0)
    assert not torch.allclose(out1[:, 4:], out2[:, 4:])
    # without the mask the past does change: the test can fail
    assert not torch.allclose(
        attention(x, x, x)[0][:, :4], attention(x2, x2, x2)[0][:, :4]
    )


def test_extra_padding_leaves_real_positions_unchanged():
    emb = torch.nn.Embedding(20, 16, padding_idx=PAD)
    tokens = torch.tensor([[5, 6, 7, 8, 9]])
    outs = []
    for n_pad in (0, 3, 11):
        t = torch.cat([tokens, torch.full((1, n_pad), PAD)], dim=1)
        x = emb(t)[:, None]  # (1, 1, L, d): B=1, one head
        out, _ = attention(x, x, x, mask=padding_mask(t, PAD))
        outs.append(out[..., :5, :])
    for o in outs[1:]:
        torch.testing.assert_close(o, outs[0], atol=1e-6, rtol=1e-6)
    t = torch.cat([tokens, torch.full((1, 3), PAD)], dim=1)
    x = emb(t)[:, None]
    # unmasked padding leaks
    assert not torch.allclose(attention(x, x, x)[0][..., :5, :], outs[0])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fully_masked_row_gives_zeros_not_nan(dtype):
    q, k, v = (torch.randn(2, 4, 5, 8, dtype=dtype) for _ in range(3))
    # second sequence is all padding
    tokens = torch.tensor([[4, 5, 6, 0, 0], [0, 0, 0, 0, 0]])
    out, w = attention(q, k, v, mask=padding_mask(tokens, PAD))
    assert out.dtype == dtype and torch.isfinite(out).all() and torch.isfinite(w).all()
    assert (out[1] == 0).all() and (w[1] == 0).all()
    torch.testing.assert_close(
        w[0].float().sum(-1), torch.ones(4, 5), atol=1e-2, rtol=0
    )


@pytest.mark.parametrize("store_weights", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_multihead_fully_masked_row_no_nan(store_weights, dtype):
    mha = MultiHeadAttention(16, 4).to(dtype).eval()
    mha.store_weights = store_weights
    x = torch.randn(2, 5, 16, dtype=dtype)
    tokens = torch.tensor([[4, 5, 6, 0, 0], [0, 0, 0, 0, 0]])
    out = mha(x, x, x, mask=padding_mask(tokens, PAD))
    assert out.dtype == dtype and torch.isfinite(out).all()
    # a query with no allowed key gets a zero attention output, so only W_O's bias
    # remains
    torch.testing.assert_close(out[1], mha.out_proj.bias.expand(5, 16), atol=0, rtol=0)


def test_multihead_accepts_target_mask_and_is_causal():
    mha = MultiHeadAttention(16, 4).eval()
    tgt = torch.tensor([[BOS, 5, 6, 7, 8, 9]])
    x = torch.randn(1, 6, 16)
    x2 = x.clone()
    x2[:, 3:] += 1.0
    m = target_mask(tgt, PAD)
    torch.testing.assert_close(
        mha(x, x, x, mask=m)[:, :3],
        mha(x2, x2, x2, mask=m)[:, :3],
        atol=1e-6,
        rtol=1e-6,
    )


@pytest.mark.parametrize(
    "bad,err",
    [
        (torch.ones(2, 5, dtype=torch.long), TypeError),
        (torch.ones(3, 1, 1, 5, dtype=torch.bool), ValueError),
    ],
)
def test_bad_mask_rejected_by_attention(bad, err):
    q = torch.randn(2, 4, 5, 8)
    with pytest.raises(err):
        attention(q, q, q, mask=bad)


def test_top_level_exports():
    for name in (
        "padding_mask",
        "causal_mask",
        "target_mask",
        "shift_right",
        "teacher_forcing",
    ):
        assert getattr(transformer_lib, name) is getattr(transformer_lib.masks, name)
