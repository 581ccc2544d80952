"""Chapter 6's checks: each named mistake is recognised, the right answer passes, a
broken answer gets a sentence."""

import pytest
import torch

from transformer_lib.exercises import ch06


def _ln(dims=-1, unbiased=False, eps_at="var", centre=True, gb="gb", ignore_eps=False):
    def f(x, gamma, beta, eps=1e-5):
        if ignore_eps:
            eps = 1e-5
        mu = x.mean(dim=dims, keepdim=True) if centre else 0
        var = (
            x.var(dim=dims, unbiased=unbiased, keepdim=True)
            if centre
            else x.pow(2).mean(dim=dims, keepdim=True)
        )
        z = (x - mu) / (
            torch.sqrt(var + eps)
            if eps_at == "var"
            else torch.sqrt(var) + eps
            if eps_at == "std"
            else torch.sqrt(var)
        )
        return {
            "gb": gamma * z + beta,
            "bg": beta * z + gamma,
            "b": z + beta,
            "g": gamma * z,
        }[gb]

    return f


def test_ex5_right_answer_passes():
    v = ch06.ex5.check(_ln())
    assert v.ok, v.message


LN_MISTAKES = [
    (_ln(dims=-2), "over the positions"),
    (_ln(dims=0), "over the batch"),
    (
        lambda x, g, b, eps=1e-5: _ln(dims=tuple(range(x.dim())))(x, g, b, eps),
        "whole tensor",
    ),
    (_ln(unbiased=True), "unbiased variance"),
    (_ln(eps_at="std"), "added eps to the standard deviation"),
    (_ln(eps_at="none"), "no eps inside the square root"),
    (_ln(centre=False), "RMSNorm"),
    (_ln(gb="bg"), "gamma and beta are swapped"),
    (_ln(gb="b"), "gamma is missing"),
    (_ln(gb="g"), "beta is missing"),
    (_ln(ignore_eps=True), "ignores its eps argument"),
]


@pytest.mark.parametrize("answer,words", LN_MISTAKES, ids=[w for _, w in LN_MISTAKES])
def test_ex5_names_each_mistake(answer, words):
    v = ch06.ex5.check(answer)
    assert not v.ok and words in v.message, v.message


def test_ex5_nan_for_equal_features():
    # right except on a token of equal features
    def no_eps_flat(x, gamma, beta, eps=1e-5):
        var = x.var(dim=-1, unbiased=False, keepdim=True)
        return (
            gamma
            * (x - x.mean(-1, keepdim=True))
            / torch.sqrt(torch.where(var > 0, var + eps, var))
            + beta
        )

    v = ch06.ex5.check(no_eps_flat)
    assert not v.ok and "NaN" in v.message, v.message


def test_ex5_broken_answers_get_a_sentence():
    assert (
        "raised ZeroDivisionError" in ch06.ex5.check(lambda x, g, b, eps: 1 / 0).message
    )
    assert (
        "should be a torch.Tensor"
        in ch06.ex5.check(lambda x, g, b, eps: x.tolist()).message
    )
    assert "has shape" in ch06.ex5.check(lambda x, g, b, eps: x.mean(-1)).message
    assert "should be a function" in ch06.ex5.check(3).message
    assert (
        "differs from F.layer_norm"
        in ch06.ex5.check(lambda x, g, b, eps: 2 * _ln()(x, g, b, eps)).message
    )


def test_ex5_arguments_in_another_order():
    right = _ln()
    # NaN in the check's order
    v = ch06.ex5.check(lambda gamma, x, eps, beta: right(x, gamma, beta, eps))
    assert (
        not v.ok
        and "right with its arguments in another order, (gamma, x, eps, beta)"
        in v.message
    ), v.message
    assert (
        "my_layer_norm(x, gamma, beta, eps)" in v.message and "NaN" not in v.message
    ), v.message
    # named as gamma/beta swapped
    v = ch06.ex5.check(lambda x, beta, gamma, eps: right(x, gamma, beta, eps))
    assert not v.ok and "gamma and beta are swapped" in v.message, v.message
    # raises in the check's order
    v = ch06.ex5.check(lambda eps, x, gamma, beta: right(x, gamma, beta, eps))
    assert (
        not v.ok
        and "right with its arguments in another order, (eps, x, gamma, beta)"
        in v.message
    ), v.message
    # raises in the check's order
    v = ch06.ex5.check(lambda x, eps, gamma, beta: right(x, gamma, beta, eps))
    assert not v.ok and "(x, eps, gamma, beta)" in v.message, v.message
    # no order helps: NaN stays
    with_nan = lambda x, g, b, eps: right(x, g, b, eps) * float("nan")
    assert "NaN" in ch06.ex5.check(with_nan).message


def _sub(order="right"):
    def f(x, sublayer, norm, dropout, norm_first):
        if norm_first:
            y = norm(x)
            return {
                "right": x + dropout(sublayer(y)),
                "swapped": norm(x + dropout(sublayer(x))),
                "residual from norm": y + dropout(sublayer(y)),
                "norm the sum": norm(x + dropout(sublayer(y))),
                "no norm": x + dropout(sublayer(x)),
                "no residual": dropout(sublayer(y)),
                "dropout on sum": dropout(x + sublayer(y)),
                "no dropout": x + sublayer(y),
                "norm the output": x + dropout(norm(sublayer(x))),
                "norm the dropped output": x + norm(dropout(sublayer(x))),
                "dropout on input": x + sublayer(dropout(y)),
            }[order]
        return {
            "swapped": x + dropout(sublayer(norm(x))),
            "dropout on sum": norm(dropout(x + sublayer(x))),
            "no residual": norm(dropout(sublayer(x))),
            "norm before add": x + norm(dropout(sublayer(x))),
            "no dropout": norm(x + sublayer(x)),
            "dropout after norm": dropout(norm(x + sublayer(x))),
            "dropout on input": norm(x + sublayer(dropout(x))),
            "norm x": norm(x) + dropout(sublayer(x)),
            "no norm": x + dropout(sublayer(x)),
            "norm twice": norm(x + dropout(sublayer(norm(x)))),
        }.get(order, norm(x + dropout(sublayer(x))))

    return f


def _post_only(order):
    """A mistake in post-LN only (pre-LN right)."""

    def f(x, sublayer, norm, dropout, norm_first):
        return (
            _sub("right")(x, sublayer, norm, dropout, True)
            if norm_first
            else _sub(order)(x, sublayer, norm, dropout, False)
        )

    return f


def _pre_only(order):
    """A mistake in pre-LN only (post-LN right)."""

    def f(x, sublayer, norm, dropout, norm_first):
        return (
            _sub(order)(x, sublayer, norm, dropout, True)
            if norm_first
            else _sub("right")(x, sublayer, norm, dropout, False)
        )

    return f


def test_ex6_right_answer_passes():
    v = ch06.ex6.check(_sub())
    assert v.ok, v.message


SUB_MISTAKES = [
    (_post_only("swapped"), "with norm_first=False you computed pre-LN"),
    (_post_only("dropout on sum"), "dropout acts on the residual sum"),
    (_post_only("no residual"), "post-LN has no residual connection"),
    (
        _post_only("norm before add"),
        "normalised the sub-layer's output before adding x",
    ),
    (_post_only("no dropout"), "never applies dropout"),
    (_post_only("dropout after norm"), "dropout comes after the LayerNorm"),
    (_post_only("dropout on input"), "dropout acts on the sub-layer's input"),
    (_post_only("norm x"), "post-LN normalises x, not the sum"),
    (_post_only("no norm"), "post-LN never normalises"),
    (_post_only("norm twice"), "post-LN normalises twice"),
    (_pre_only("swapped"), "with norm_first=True you computed post-LN"),
    (_pre_only("residual from norm"), "residual starts from norm(x)"),
    (_pre_only("norm the sum"), "also normalises the sum"),
    (_pre_only("no norm"), "never normalises"),
    (_pre_only("no residual"), "pre-LN has no residual connection"),
    (_pre_only("dropout on sum"), "dropout acts on the residual sum"),
    (_pre_only("no dropout"), "never applies dropout"),
    (
        _pre_only("norm the output"),
        "pre-LN normalises the sub-layer's output, not its input",
    ),
    (
        _pre_only("norm the dropped output"),
        "pre-LN normalises the sub-layer's dropped-out output",
    ),
    (_pre_only("dropout on input"), "dropout acts on the sub-layer's input"),
    (
        lambda x, norm, sublayer, dropout, norm_first: _sub()(
            x, sublayer, norm, dropout, norm_first
        ),
        (
            "right with its arguments in another order, (x, norm, sublayer, dropout,"
            " norm_first)"
        ),
    ),
    (
        lambda x, sublayer, norm, norm_first, dropout: _sub()(
            x, sublayer, norm, dropout, norm_first
        ),
        (
            "right with its arguments in another order, (x, sublayer, norm, norm_first,"
            " dropout)"
        ),
    ),
]


@pytest.mark.parametrize("answer,words", SUB_MISTAKES, ids=[w for _, w in SUB_MISTAKES])
def test_ex6_names_each_mistake(answer, words):
    v = ch06.ex6.check(answer)
    assert not v.ok and words in v.message, v.message


def test_ex6_broken_answers_get_a_sentence():
    assert "raised TypeError" in ch06.ex6.check(lambda x, s, n, d: x).message
    assert (
        "should be a torch.Tensor" in ch06.ex6.check(lambda x, s, n, d, f: None).message
    )
    assert "has shape" in ch06.ex6.check(lambda x, s, n, d, f: x[0]).message
    assert "differs from" in ch06.ex6.check(lambda x, s, n, d, f: x * 0.5).message


# ---- the examples: PyTorch's layer norm by any door, in-place changes, dtypes,
# fresh inputs --

import torch.nn.functional as F

LAYER_NORM_DOORS = {
    "F.layer_norm": (
        lambda x, g, b, eps: F.layer_norm(x, x.shape[-1:], g, b, eps),
        "calls F.layer_norm",
    ),
    "torch.layer_norm": (
        lambda x, g, b, eps: torch.layer_norm(x, x.shape[-1:], g, b, eps),
        "calls torch.layer_norm",
    ),
    "nn.LayerNorm": (
        lambda x, g, b, eps: torch.nn.LayerNorm(
            x.shape[-1], eps=eps, elementwise_affine=False, dtype=x.dtype
        )(x)
        * g
        + b,
        "calls F.layer_norm",
    ),
    "aten.native_layer_norm": (
        lambda x, g, b, eps: torch.ops.aten.native_layer_norm(
            x, x.shape[-1:], g, b, eps
        )[0],
        "torch.ops.aten.native_layer_norm (PyTorch's layer norm)",
    ),
}


@pytest.mark.parametrize("name", LAYER_NORM_DOORS)
def test_ex5_bans_layer_norm_by_any_door(name):
    fn, words = LAYER_NORM_DOORS[name]
    v = ch06.ex5.check(fn)
    assert (
        not v.ok and words in v.message and "which this exercise forbids" in v.message
    ), v.message


def test_ex5_in_place_dtype_and_fresh_inputs():
    def in_place(x, gamma, beta, eps):
        x -= x.mean(-1, keepdim=True)
        return (
            gamma * x / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps) + beta
        )

    v = ch06.ex5.check(in_place)
    assert not v.ok and "changed its argument x in place" in v.message, v.message
    v = ch06.ex5.check(
        lambda x, g, b, eps: (
            _ln()(x.double(), g.double(), b.double(), eps)
            if x.dtype == torch.float32
            else _ln()(x, g, b, eps)
        )
    )
    assert not v.ok and "is float64; keep the input's dtype (float32)" in v.message, (
        v.message
    )
    v = ch06.ex5.check(lambda x, g, b, eps: _ln()(x, g, b, eps).float())
    assert not v.ok and "is float32; keep the input's dtype (float64)" in v.message, (
        v.message
    )
    widths = set()
    for _ in range(4):
        assert ch06.ex5.check(
            lambda x, g, b, eps: widths.add(x.shape) or _ln()(x, g, b, eps)
        ).ok
    assert len(widths) > 6  # shapes drawn anew at every call
