"""transformer_lib.multihead: equal to nn.MultiheadAttention, both paths agree, no NaN,
clear errors."""

import pytest
import torch
from torch import nn

from transformer_lib import (
    MultiHeadAttention,
    attention,
    load_torch_mha_weights,
    mha_parameter_count,
)

D, H = 32, 4


def _pair(d_model=D, n_heads=H, bias=True, dropout=0.0):
    torch_mha = nn.MultiheadAttention(
        d_model, n_heads, dropout=dropout, bias=bias, batch_first=True
    )
    ours = load_torch_mha_weights(
        MultiHeadAttention(d_model, n_heads, dropout=dropout, bias=bias), torch_mha
    )
    return ours.eval(), torch_mha.eval()


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("store_weights", [False, True])
def test_self_attention_matches_torch(bias, store_weights):
    ours, ref = _pair(bias=bias)
    ours.store_weights = store_weights
    x = torch.randn(3, 7, D)
    expected, ref_w = ref(x, x, x, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(ours(x, x, x), expected, atol=1e-6, rtol=1e-5)
    if store_weights:
        torch.testing.assert_close(ours.last_weights, ref_w, atol=1e-6, rtol=1e-5)
    else:
        assert ours.last_weights is None


@pytest.mark.parametrize("same_kv", [True, False])
@pytest.mark.parametrize("store_weights", [False, True])
def test_cross_attention_different_lengths_matches_torch(same_kv, store_weights):
    ours, ref = _pair()
    ours.store_weights = store_weights
    q, k = torch.randn(2, 5, D), torch.randn(2, 9, D)
    v = k if same_kv else torch.randn(2, 9, D)
    out = ours(q, k, v)
    assert out.shape == (2, 5, D)
    torch.testing.assert_close(
        out, ref(q, k, v, need_weights=False)[0], atol=1e-6, rtol=1e-5
    )


@pytest.mark.parametrize("store_weights", [False, True])
def test_padding_mask_opposite_convention(store_weights):
    ours, ref = _pair()
    ours.store_weights = store_weights
    q, kv = torch.randn(3, 4, D), torch.randn(3, 6, D)
    lengths = torch.tensor([6, 3, 1])
    # (B, L_k), True = real token
    may_attend = torch.arange(6)[None, :] < lengths[:, None]
    out = ours(q, kv, kv, mask=may_attend[:, None, None, :])  # ours: True = may attend
    # torch: True = ignore
    expected = ref(q, kv, kv, key_padding_mask=~may_attend, need_weights=False)[0]
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=1e-5)
    if store_weights:
        assert (ours.last_weights[2, :, :, 1:] == 0).all()


def test_causal_mask_2d_matches_torch():
    ours, ref = _pair()
    x = torch.randn(2, 6, D)
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    expected = ref(x, x, x, attn_mask=~causal, need_weights=False)[0]
    torch.testing.assert_close(
        ours(x, x, x, mask=causal), expected, atol=1e-6, rtol=1e-5
    )
    torch.testing.assert_close(
        ours(x, x, x, mask=causal[None, None]), expected, atol=1e-6, rtol=1e-5
    )


@pytest.mark.parametrize("mask_shape", [None, (2, 1, 1, 7), (5, 7), (2, 4, 5, 7)])
def test_fast_path_equals_explicit_path(mask_shape):
    mha = MultiHeadAttention(D, H).eval()
    q, kv = torch.randn(2, 5, D), torch.randn(2, 7, D)
    mask = None if mask_shape is None else torch.rand(mask_shape) > 0.3
    fast = mha(q, kv, kv, mask=mask)
    mha.store_weights = True
    slow = mha(q, kv, kv, mask=mask)
    torch.testing.assert_close(fast, slow, atol=1e-6, rtol=1e-5)
    assert mha.last_weights.shape == (2, H, 5, 7) and not mha.last_weights.requires_grad


def test_explicit_path_is_attention_per_head():
    """The explicit path is literally transformer_lib.attention on each head's
    projections."""
    mha = MultiHeadAttention(D, H).eval()
    mha.store_weights = True
    x = torch.randn(2, 5, D)
    out = mha(x, x, x)
    Wq, Wk, Wv = mha.in_proj.weight.chunk(3)
    bq, bk, bv = mha.in_proj.bias.chunk(3)
    heads, d_k = [], D // H
    for i in range(H):
        s = slice(i * d_k, (i + 1) * d_k)
        z, w = attention(x @ Wq[s].T + bq[s], x @ Wk[s].T + bk[s], x @ Wv[s].T + bv[s])
        torch.testing.assert_close(w, mha.last_weights[:, i])
        heads.append(z)
    torch.testing.assert_close(
        out, mha.out_proj(torch.cat(heads, dim=-1)), atol=1e-6, rtol=1e-5
    )


@pytest.mark.parametrize("d_k", [2, 12])
def test_narrower_or_wider_keys_are_attention_per_head(d_k):
    """Table 3 row (B): queries and keys of width d_k, values of width d_model / h,
    scores / sqrt(d_k)."""
    mha = MultiHeadAttention(D, H, d_k=d_k).eval()
    d_v = D // H
    assert (mha.d_k, mha.d_v) == (d_k, d_v) and mha.in_proj.weight.shape == (
        2 * H * d_k + D,
        D,
    )
    assert sum(p.numel() for p in mha.parameters()) == mha_parameter_count(
        D, qk_width=H * d_k
    )
    x, memory = torch.randn(2, 5, D), torch.randn(2, 7, D)
    Wq, Wk, Wv = mha.in_proj.weight.split([H * d_k, H * d_k, D])
    bq, bk, bv = mha.in_proj.bias.split([H * d_k, H * d_k, D])
    for kv in (x, memory):  # self- and cross-attention
        heads = []
        for i in range(H):
            s, t = slice(i * d_k, (i + 1) * d_k), slice(i * d_v, (i + 1) * d_v)
            z, _ = attention(
                x @ Wq[s].T + bq[s], kv @ Wk[s].T + bk[s], kv @ Wv[t].T + bv[t]
            )
            heads.append(z)
        want = mha.out_proj(torch.cat(heads, dim=-1))
        for store in (False, True):  # the fused kernel and the explicit path
            mha.store_weights = store
            torch.testing.assert_close(mha(x, kv, kv), want, atol=1e-6, rtol=1e-5)
    with pytest.raises(ValueError, match="d_k"):
        load_torch_mha_weights(mha, nn.MultiheadAttention(D, H, batch_first=True))


@pytest.mark.parametrize("store_weights", [False, True])
def test_fully_masked_query_rows_are_finite(store_weights):
    mha = MultiHeadAttention(D, H)
    mha.store_weights = store_weights
    q, kv = (
        torch.randn(2, 4, D, requires_grad=True),
        torch.randn(2, 6, D, requires_grad=True),
    )
    mask = torch.ones(2, 1, 4, 6, dtype=torch.bool)
    mask[0, 0, 2] = False  # query 2 of sequence 0 may attend to nothing
    mask[1] = False  # sequence 1: every query fully masked
    out = mha(q, kv, kv, mask=mask)
    assert torch.isfinite(out).all()
    # zeros from attention, then W_O's bias
    torch.testing.assert_close(out[0, 2], mha.out_proj.bias)
    torch.testing.assert_close(out[1], mha.out_proj.bias.expand(4, D))
    out.sum().backward()
    assert torch.isfinite(q.grad).all() and torch.isfinite(kv.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in mha.parameters())


@pytest.mark.parametrize("store_weights", [False, True])
def test_gradients_reach_every_parameter(store_weights):
    mha = MultiHeadAttention(D, H)
    mha.store_weights = store_weights
    q, kv = (
        torch.randn(2, 5, D, requires_grad=True),
        torch.randn(2, 7, D, requires_grad=True),
    )
    mha(q, kv, kv).pow(2).sum().backward()
    for name, p in mha.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, (
            f"no gradient reached {name}"
        )
    assert q.grad.abs().sum() > 0 and kv.grad.abs().sum() > 0


def test_gradients_match_torch():
    ours, ref = _pair()
    x = torch.randn(2, 5, D)
    ours(x, x, x).pow(2).sum().backward()
    ref(x, x, x, need_weights=False)[0].pow(2).sum().backward()
    torch.testing.assert_close(
        ours.in_proj.weight.grad, ref.in_proj_weight.grad, atol=1e-5, rtol=1e-4
    )
    torch.testing.assert_close(
        ours.out_proj.weight.grad, ref.out_proj.weight.grad, atol=1e-5, rtol=1e-4
    )


@pytest.mark.parametrize("d_model,n_heads", [(512, 8), (32, 4), (64, 1)])
def test_parameter_count(d_model, n_heads):
    mha = MultiHeadAttention(d_model, n_heads)
    ref = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
    n = sum(p.numel() for p in mha.parameters())
    assert n == 4 * d_model**2 + 4 * d_model == sum(p.numel() for p in ref.parameters())
    assert (
        sum(
            p.numel()
            for p in MultiHeadAttention(d_model, n_heads, bias=False).parameters()
        )
        == 4 * d_model**2
    )


def test_dropout_train_vs_eval():
    mha = MultiHeadAttention(D, H, dropout=0.5)
    x = torch.randn(2, 8, D)
    mha.eval()
    assert torch.equal(mha(x, x, x), mha(x, x, x))  # no dropout in eval mode
    mha.train()
    torch.manual_seed(1)
    a = mha(x, x, x)
    torch.manual_seed(2)
    b = mha(x, x, x)
    assert not torch.allclose(a, b)  # dropout active in training
    mha.store_weights = True
    mha(x, x, x)
    assert (mha.last_weights == 0).any()  # stored weights are after dropout


def _raises(exc, match, fn):
    with pytest.raises(exc, match=match):
        fn()


def test_errors_name_the_argument():
    _raises(
        ValueError, "d_model.*divisible by `n_heads`", lambda: MultiHeadAttention(30, 4)
    )
    mha = MultiHeadAttention(D, H)
    x = torch.randn(2, 5, D)
    _raises(
        ValueError,
        "`query` must have shape",
        lambda: mha(torch.randn(2, 5, D + 1), x, x),
    )
    _raises(
        ValueError, "`key` must have shape", lambda: mha(x, torch.randn(2, 5, 8), x)
    )
    _raises(ValueError, "`value` must have", lambda: mha(x, x, torch.randn(5, D)))
    _raises(
        ValueError,
        "batch sizes differ",
        lambda: mha(x, torch.randn(3, 5, D), torch.randn(3, 5, D)),
    )
    _raises(
        ValueError,
        "`key` and `value` must have the same length",
        lambda: mha(x, x, torch.randn(2, 4, D)),
    )
    _raises(
        TypeError,
        "`mask` must have dtype torch.bool",
        lambda: mha(x, x, x, mask=torch.ones(5, 5)),
    )
    _raises(
        ValueError,
        "`mask` of shape",
        lambda: mha(x, x, x, mask=torch.ones(2, 1, 1, 4, dtype=torch.bool)),
    )
    _raises(TypeError, "`query` must be a torch.Tensor", lambda: mha([[1.0]], x, x))
    _raises(TypeError, "floating-point", lambda: mha(x.long(), x, x))


def test_load_torch_weights_rejects_mismatch():
    _raises(
        ValueError,
        "num_heads",
        lambda: load_torch_mha_weights(
            MultiHeadAttention(D, H), nn.MultiheadAttention(D, 2)
        ),
    )
    _raises(
        ValueError,
        "bias",
        lambda: load_torch_mha_weights(
            MultiHeadAttention(D, H, bias=False), nn.MultiheadAttention(D, H)
        ),
    )
    _raises(
        ValueError,
        "kdim",
        lambda: load_torch_mha_weights(
            MultiHeadAttention(D, H), nn.MultiheadAttention(D, H, kdim=8, vdim=8)
        ),
    )
    _raises(
        TypeError,
        "torch_mha",
        lambda: load_torch_mha_weights(MultiHeadAttention(D, H), nn.Linear(D, D)),
    )
