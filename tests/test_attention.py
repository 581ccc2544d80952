"""transformer_lib.attention: equal to PyTorch's SDPA, mask semantics, no NaN, clear
errors."""

import math

import pytest
import torch
import torch.nn.functional as F

from transformer_lib import attention, check_mask


@pytest.mark.parametrize("shape", [(3, 4), (2, 5, 8), (2, 4, 5, 16)])
@pytest.mark.parametrize("lk,dv", [(None, None), (7, 3)])
def test_matches_sdpa_without_mask(shape, lk, dv):
    *lead, lq, dk = shape
    lk = lk or lq
    dv = dv or dk
    q = torch.randn(*lead, lq, dk)
    k = torch.randn(*lead, lk, dk)
    v = torch.randn(*lead, lk, dv)
    out, w = attention(q, k, v)
    assert out.shape == (*lead, lq, dv) and w.shape == (*lead, lq, lk)
    torch.testing.assert_close(
        out, F.scaled_dot_product_attention(q, k, v), atol=1e-6, rtol=1e-5
    )
    torch.testing.assert_close(w.sum(-1), torch.ones(*lead, lq))
    torch.testing.assert_close(out, w @ v)


@pytest.mark.parametrize(
    "mask_shape", [(5, 7), (2, 1, 5, 7), (2, 1, 1, 7), (1, 4, 5, 7)]
)
def test_matches_sdpa_with_broadcast_mask(mask_shape):
    q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 7, 8), torch.randn(2, 4, 7, 6)
    mask = torch.rand(mask_shape) > 0.5
    mask[..., 0] = True
    out, w = attention(q, k, v, mask=mask)
    torch.testing.assert_close(
        out,
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        atol=1e-6,
        rtol=1e-5,
    )
    assert (w[~mask.expand_as(w)] == 0).all()


def test_hand_worked_example():
    q = torch.tensor([[1.0, 0.0, 1.0, 0.0]])
    k = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    v = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    out, w = attention(q, k, v)
    e = torch.tensor([math.e, 1.0, math.exp(0.5)])
    torch.testing.assert_close(w[0], e / e.sum())
    torch.testing.assert_close(
        out[0], torch.tensor([0.81372, 0.49346]), atol=1e-4, rtol=0
    )


def test_scale_argument():
    q, k, v = torch.randn(4, 8), torch.randn(6, 8), torch.randn(6, 2)
    _, w_unscaled = attention(q, k, v, scale=1.0)
    torch.testing.assert_close(w_unscaled, torch.softmax(q @ k.T, -1))
    _, w_default = attention(q, k, v)
    torch.testing.assert_close(w_default, torch.softmax(q @ k.T / math.sqrt(8), -1))


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16]
)
def test_fully_masked_row_is_zero_not_nan(dtype):
    q, k, v = (torch.randn(2, 3, 4, dtype=dtype) for _ in range(3))
    mask = torch.ones(2, 3, 3, dtype=torch.bool)
    mask[1, 2] = False  # query 2 of sample 1 sees nothing
    out, w = attention(q, k, v, mask=mask)
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    assert (out[1, 2] == 0).all() and (w[1, 2] == 0).all()
    assert out.dtype == dtype


def test_fully_masked_row_has_finite_gradients():
    q, k, v = (torch.randn(1, 3, 4, requires_grad=True) for _ in range(3))
    mask = torch.tensor(
        [[True, True, False], [False, False, False], [True, False, True]]
    )
    out, _ = attention(q, k, v, mask=mask)
    out.sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()


def test_masked_keys_do_not_influence_output():
    q, k, v = torch.randn(2, 5, 8), torch.randn(2, 6, 8), torch.randn(2, 6, 4)
    mask = torch.tensor([True, True, True, True, False, False])
    out, _ = attention(q, k, v, mask=mask)
    k2, v2 = k.clone(), v.clone()
    k2[:, 4:] = 100 * torch.randn(2, 2, 8)
    v2[:, 4:] = 100 * torch.randn(2, 2, 4)
    out2, _ = attention(q, k2, v2, mask=mask)
    torch.testing.assert_close(out, out2)


def test_dropout_is_applied_to_weights():
    q, k, v = torch.randn(4, 8), torch.randn(6, 8), torch.randn(6, 3)
    drop = torch.nn.Dropout(0.5).train()
    out, w = attention(q, k, v, dropout=drop)
    assert (w == 0).any()
    torch.testing.assert_close(out, w @ v)


def test_gradcheck():
    q, k, v = (
        torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True) for _ in range(3)
    )
    mask = torch.tensor([[True, False, True], [True, True, True], [False, True, False]])
    assert torch.autograd.gradcheck(
        lambda a, b, c: attention(a, b, c, mask=mask)[0], (q, k, v)
    )


@pytest.mark.parametrize(
    "args,kwargs,exc,words",
    [
        (
            (torch.randn(3, 4), torch.randn(3, 5), torch.randn(3, 2)),
            {},
            ValueError,
            ["`query`", "`key`", "d_k", "(3, 5)"],
        ),
        (
            (torch.randn(3, 4), torch.randn(3, 4), torch.randn(2, 2)),
            {},
            ValueError,
            ["`value`", "L_k", "(2, 2)"],
        ),
        (
            ([[1.0]], torch.randn(3, 4), torch.randn(3, 2)),
            {},
            TypeError,
            ["`query`", "list"],
        ),
        (
            (torch.randn(4), torch.randn(3, 4), torch.randn(3, 2)),
            {},
            ValueError,
            ["`query`", "(4,)"],
        ),
        (
            (torch.ones(3, 4, dtype=torch.long), torch.randn(3, 4), torch.randn(3, 2)),
            {},
            TypeError,
            ["`query`", "int64"],
        ),
        (
            (torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 2)),
            {"mask": torch.ones(3, 3)},
            TypeError,
            ["`mask`", "torch.bool", "float32"],
        ),
        (
            (torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 2)),
            {"mask": torch.ones(2, 3, dtype=torch.bool)},
            ValueError,
            ["`mask`", "(2, 3)", "(3, 3)"],
        ),
        (
            (torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 2)),
            {"mask": [[True]]},
            TypeError,
            ["`mask`", "list"],
        ),
    ],
)
def test_errors_name_the_argument(args, kwargs, exc, words):
    with pytest.raises(exc) as info:
        attention(*args, **kwargs)
    for word in words:
        assert word in str(info.value), f"{word!r} not in {info.value}"


def test_check_mask_returns_the_mask():
    m = torch.ones(1, 1, 3, dtype=torch.bool)
    assert check_mask(m, (2, 4, 5, 3)) is m
