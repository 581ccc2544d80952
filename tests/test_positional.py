"""transformer_lib.positional: the sinusoidal table, its relative-position property, the
PositionalEncoding / LearnedPositionalEmbedding modules, RoPE, dtypes and errors."""

import math

import pytest
import torch

import transformer_lib
from transformer_lib import (
    LearnedPositionalEmbedding,
    PositionalEncoding,
    RotaryEmbedding,
    attention,
    sinusoidal_positional_encoding,
)


def _loop_table(max_len, d_model):
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    for pos in range(max_len):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            pe[pos, 2 * i] = math.sin(angle)
            pe[pos, 2 * i + 1] = math.cos(angle)
    return pe.float()


def _rotation_matrix(k, d_model):
    """Block-diagonal M_k with PE(pos + k) = M_k PE(pos)."""
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        w = k / 10000 ** (2 * i / d_model)
        c, s = math.cos(w), math.sin(w)
        m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor(
            [[c, s], [-s, c]], dtype=torch.float64
        )
    return m


@pytest.mark.parametrize("max_len,d_model", [(1, 2), (7, 4), (50, 16), (128, 512)])
def test_table_matches_loop_definition(max_len, d_model):
    pe = sinusoidal_positional_encoding(max_len, d_model)
    assert pe.shape == (max_len, d_model) and pe.dtype == torch.float32
    torch.testing.assert_close(pe, _loop_table(max_len, d_model), atol=1e-6, rtol=0)


def test_table_interleaved_first_rows():
    pe = sinusoidal_positional_encoding(3, 4)
    torch.testing.assert_close(pe[0], torch.tensor([0.0, 1.0, 0.0, 1.0]))
    torch.testing.assert_close(
        pe[1], torch.tensor([math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)])
    )
    assert pe.abs().max() <= 1.0


@pytest.mark.parametrize("k", [1, 3, 17, 100])
def test_relative_shift_is_a_fixed_linear_map(k):
    d = 32
    pe = sinusoidal_positional_encoding(400, d).double()
    m = _rotation_matrix(k, d)
    shifted = pe[: 400 - k] @ m.T  # M_k PE(pos) for every pos at once
    torch.testing.assert_close(shifted, pe[k:], atol=1e-5, rtol=0)
    torch.testing.assert_close(m @ m.T, torch.eye(d, dtype=torch.float64))  # a rotation


def test_dot_product_depends_on_distance_only():
    pe = sinusoidal_positional_encoding(200, 64).double()
    gram = pe @ pe.T  # (200, 200)
    for delta in (0, 1, 5, 40):
        diag = torch.diagonal(gram, offset=delta)
        torch.testing.assert_close(
            diag, torch.full_like(diag, diag[0].item()), atol=1e-5, rtol=0
        )
        # symmetric in p - q
        torch.testing.assert_close(torch.diagonal(gram, offset=-delta), diag)
    torch.testing.assert_close(
        torch.diagonal(gram), torch.full((200,), 32.0, dtype=torch.float64)
    )


@pytest.mark.parametrize("bad", [0, -3, 2.0, "8", True, None])
def test_table_rejects_bad_sizes(bad):
    with pytest.raises(ValueError, match="positive int"):
        sinusoidal_positional_encoding(bad, 8)
    with pytest.raises(ValueError, match="positive int"):
        sinusoidal_positional_encoding(8, bad)


def test_table_rejects_odd_width():
    with pytest.raises(ValueError, match="d_model.*even.*d_model=7"):
        sinusoidal_positional_encoding(10, 7)
    with pytest.raises(ValueError, match="even"):
        PositionalEncoding(7)


def test_positional_encoding_module_adds_table_and_has_no_parameters():
    pe_mod = PositionalEncoding(16, max_len=40, dropout=0.1).eval()
    x = torch.randn(3, 10, 16)
    out = pe_mod(x)
    torch.testing.assert_close(out, x + sinusoidal_positional_encoding(40, 16)[:10])
    assert sum(p.numel() for p in pe_mod.parameters()) == 0
    assert "pe" not in pe_mod.state_dict() and len(pe_mod.state_dict()) == 0
    assert pe_mod.pe.requires_grad is False
    assert "max_len=40" in repr(pe_mod)


def test_positional_encoding_dropout_in_training_only():
    pe_mod = PositionalEncoding(16, max_len=40, dropout=0.5).train()
    x = torch.randn(4, 20, 16)
    out = pe_mod(x)
    zeros = (out == 0).float().mean().item()
    assert 0.35 < zeros < 0.65  # about half dropped
    kept = out != 0
    # survivors scaled by 1/(1-p)
    torch.testing.assert_close(out[kept], (2 * (x + pe_mod.pe[:20]))[kept])
    pe_mod.eval()
    torch.testing.assert_close(pe_mod(x), x + pe_mod.pe[:20])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_positional_encoding_keeps_dtype(dtype):
    pe_mod = PositionalEncoding(8, max_len=16, dropout=0.0)
    x = torch.randn(2, 5, 8).to(dtype)
    out = pe_mod(x)
    assert out.dtype == dtype
    ref = x.float() + sinusoidal_positional_encoding(16, 8)[:5]
    tol = {torch.float32: 1e-6, torch.bfloat16: 2e-2, torch.float16: 2e-3}[dtype]
    torch.testing.assert_close(out.float(), ref, atol=tol, rtol=tol)


def test_module_to_bfloat16_moves_buffer():
    pe_mod = PositionalEncoding(8, max_len=16, dropout=0.0).to(torch.bfloat16)
    assert pe_mod.pe.dtype == torch.bfloat16
    assert pe_mod(torch.zeros(1, 4, 8, dtype=torch.bfloat16)).dtype == torch.bfloat16


@pytest.mark.parametrize("cls", ["sin", "learned"])
def test_too_long_sequence_names_both_lengths(cls):
    mod = (
        PositionalEncoding(16, max_len=512)
        if cls == "sin"
        else LearnedPositionalEmbedding(512, 16)
    )
    with pytest.raises(ValueError, match=r"sequence length 600 exceeds max_len 512"):
        mod(torch.randn(1, 600, 16))
    mod(torch.randn(1, 512, 16))  # exactly max_len is fine


@pytest.mark.parametrize("cls", ["sin", "learned"])
def test_wrong_width_and_type(cls):
    mod = (
        PositionalEncoding(16, max_len=32)
        if cls == "sin"
        else LearnedPositionalEmbedding(32, 16)
    )
    with pytest.raises(ValueError, match=r"d_model=16.*\(2, 5, 12\)"):
        mod(torch.randn(2, 5, 12))
    with pytest.raises(TypeError, match="floating-point"):
        mod(torch.ones(2, 5, 16, dtype=torch.long))
    with pytest.raises(TypeError, match="torch.Tensor"):
        mod([[0.0] * 16])


def test_learned_embedding_is_trainable_and_adds():
    mod = LearnedPositionalEmbedding(max_len=20, d_model=8, dropout=0.0)
    assert sum(p.numel() for p in mod.parameters() if p.requires_grad) == 20 * 8
    x = torch.randn(2, 6, 8)
    torch.testing.assert_close(mod(x), x + mod.embedding.weight[:6])
    mod(x).sum().backward()
    grad = mod.embedding.weight.grad
    # only used positions learn
    assert grad[:6].abs().sum() > 0 and grad[6:].abs().sum() == 0


def test_top_level_exports():
    for name in (
        "sinusoidal_positional_encoding",
        "PositionalEncoding",
        "LearnedPositionalEmbedding",
        "RotaryEmbedding",
    ):
        assert getattr(transformer_lib, name) is getattr(
            transformer_lib.positional, name
        )


# ---------------------------------------------------------------- RoPE


def _rope_loop(x, base=10000.0):
    """Reference: rotate each pair (2i, 2i+1) of row m by m * base^(-2i/d)."""
    L, d = x.shape
    out = torch.empty_like(x, dtype=torch.float64)
    for m in range(L):
        for i in range(d // 2):
            a = m * base ** (-2 * i / d)
            c, s = math.cos(a), math.sin(a)
            x0, x1 = x[m, 2 * i].item(), x[m, 2 * i + 1].item()
            out[m, 2 * i], out[m, 2 * i + 1] = x0 * c - x1 * s, x0 * s + x1 * c
    return out.float()


def test_rope_matches_loop_and_preserves_norms():
    rope = RotaryEmbedding(8, max_len=64)
    x = torch.randn(12, 8)
    y = rope.rotate(x)
    torch.testing.assert_close(y, _rope_loop(x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(y[0], x[0])  # position 0: no rotation


def test_rope_score_depends_on_relative_position_only():
    rope = RotaryEmbedding(16, max_len=300)
    q, k = torch.randn(16), torch.randn(16)

    def score(m, n):
        qs = rope.rotate(q.expand(300, 16))[m]
        ks = rope.rotate(k.expand(300, 16))[n]
        return (qs @ ks).item()

    for delta in (0, 3, -7, 40):
        scores = [score(m, m - delta) for m in range(max(delta, 0) + 2, 250, 37)]
        assert max(scores) - min(scores) < 1e-4, (delta, scores)
    assert abs(score(10, 7) - score(10, 3)) > 1e-3  # but it does depend on the distance


def test_rope_offset_equals_slice_of_full_rotation():
    rope = RotaryEmbedding(8, max_len=32)
    x = torch.randn(2, 3, 10, 8)  # (B, h, L, d_head)
    full = rope.rotate(x)
    torch.testing.assert_close(rope.rotate(x[..., 6:, :], offset=6), full[..., 6:, :])
    q_rot, k_rot = rope(x, x * 2)
    torch.testing.assert_close(q_rot, full)
    torch.testing.assert_close(k_rot, 2 * full, atol=1e-6, rtol=1e-6)


def test_rope_attention_is_shift_invariant():
    rope = RotaryEmbedding(16, max_len=64)
    q, k, v = (
        torch.randn(1, 2, 6, 16),
        torch.randn(1, 2, 6, 16),
        torch.randn(1, 2, 6, 16),
    )
    out0, w0 = attention(*rope(q, k), v)
    out5, w5 = attention(*rope(q, k, offset=5), v)  # the whole sequence moved by 5
    torch.testing.assert_close(w0, w5, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out0, out5, atol=1e-5, rtol=1e-5)


def test_rope_bfloat16():
    rope = RotaryEmbedding(8, max_len=32)
    x = torch.randn(4, 8)
    y = rope.rotate(x.bfloat16())
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y.float(), rope.rotate(x), atol=3e-2, rtol=3e-2)


def test_rope_errors():
    with pytest.raises(ValueError, match="even"):
        RotaryEmbedding(7)
    rope = RotaryEmbedding(8, max_len=16)
    with pytest.raises(ValueError, match="sequence length 20 exceeds max_len 16"):
        rope.rotate(torch.randn(20, 8))
    with pytest.raises(ValueError, match="exceeds max_len 16"):
        rope.rotate(torch.randn(10, 8), offset=8)
    with pytest.raises(ValueError, match="d_head=8"):
        rope.rotate(torch.randn(4, 6))
    with pytest.raises(ValueError, match="offset"):
        rope.rotate(torch.randn(4, 8), offset=-1)
    assert (
        len(rope.state_dict()) == 0 and sum(p.numel() for p in rope.parameters()) == 0
    )
