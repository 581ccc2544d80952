"""Chapter 10's checks name each mistake they promise, pass the right answers, and never
show a traceback."""

import pytest
import torch

from transformer_lib.decoding import length_penalty_gnmt, top_p_filter
from transformer_lib.exercises import ch10


def softmax_with_temperature(z, T=1.0):
    """The library's function written out: 10.2's answers may not call the library's
    own."""
    return torch.softmax(z / T, dim=-1)


def top_k_filter(z, k):
    idx = z.topk(k, dim=-1).indices
    return torch.full_like(z, float("-inf")).scatter(-1, idx, z.gather(-1, idx))


def right_topk(z, T, k):
    return softmax_with_temperature(top_k_filter(z / T, k))


def _keep(z, k):
    return torch.isfinite(top_k_filter(z, k))


def test_ex2_right_answer_passes():
    v = ch10.ex2.check(right_topk)
    assert v.ok, v.message

    # topk + scatter, without the library's filter
    def by_hand(z, T, k):
        s = z / T
        idx = s.topk(k, dim=-1).indices
        out = torch.full_like(s, float("-inf")).scatter(-1, idx, s.gather(-1, idx))
        return out.softmax(-1)

    assert ch10.ex2.check(by_hand).ok


@pytest.mark.parametrize(
    "fn, message",
    [
        (
            lambda z, T, k: softmax_with_temperature(
                top_k_filter(z / T, min(k + 1, z.shape[-1]))
            ),
            "you kept k + 1 tokens",
        ),
        (
            lambda z, T, k: softmax_with_temperature(
                top_k_filter(z / T, max(k - 1, 1))
            ),
            "you kept k - 1 tokens",
        ),
        (
            lambda z, T, k: softmax_with_temperature(z / T) * _keep(z, k),
            "do not sum to 1: after removing the tail, renormalise",
        ),
        (lambda z, T, k: softmax_with_temperature(z / T), "you did not filter"),
        (
            lambda z, T, k: (lambda p: p / p.sum(-1, keepdim=True))(
                torch.softmax(z, -1) * _keep(z, k)
            ),
            "temperature has no effect",
        ),
        (
            lambda z, T, k: torch.softmax(z, -1) * _keep(z, k) / T,
            "temperature after the softmax",
        ),
        (lambda z, T, k: right_topk(z, 1.0, k) / T, "temperature after the softmax"),
        (
            lambda z, T, k: softmax_with_temperature(top_k_filter(z * T, k)),
            "multiplied the logits by T",
        ),
        (
            lambda z, T, k: softmax_with_temperature(top_k_filter(-z / T, k)),
            "k smallest",
        ),
        (lambda z, T, k: torch.softmax(top_k_filter(z / T, k), dim=0), "over dim 0"),
        (lambda z, T, k: z.div_(T).softmax(-1), "in place"),
        (
            lambda z, T, k: right_topk(z, T, k) + 1e-3 * (right_topk(z, T, k) > 0),
            "do not sum to 1 over the vocabulary",
        ),
        (
            lambda z, T, k: right_topk(z, T, k).roll(1, -1),
            "other tokens than the k most probable",
        ),
        (
            lambda z, T, k: right_topk(z, T * 1.1, k),
            "differ from softmax(top_k(logits / T))",
        ),
    ],
)
def test_ex2_mistakes(fn, message):
    v = ch10.ex2.check(fn)
    assert not v.ok and message in v.message, v.message


def right_top_p(z, p):
    probs, order = torch.sort(torch.softmax(z, -1), dim=-1, descending=True)
    drop = (probs.cumsum(-1) - probs) >= p
    return z.masked_fill(drop.scatter(-1, order, drop), float("-inf"))


def test_ex3_right_answers_pass():
    assert ch10.ex3.check(right_top_p).ok
    assert ch10.ex3.check(top_p_filter).ok


def _excluding(z, p):
    probs, order = torch.sort(torch.softmax(z, -1), dim=-1, descending=True)
    drop = probs.cumsum(-1) >= p
    return z.masked_fill(drop.scatter(-1, order, drop), float("-inf"))


def _unsorted(z, p):
    probs = torch.softmax(z, -1)
    return z.masked_fill((probs.cumsum(-1) - probs) >= p, float("-inf"))


def _ascending(z, p):
    probs, order = torch.sort(torch.softmax(z, -1), dim=-1)
    drop = (probs.cumsum(-1) - probs) >= p
    return z.masked_fill(drop.scatter(-1, order, drop), float("-inf"))


def _sorted_order(z, p):
    srt, _ = torch.sort(z, dim=-1, descending=True)
    probs = torch.softmax(srt, -1)
    return srt.masked_fill((probs.cumsum(-1) - probs) >= p, float("-inf"))


def _modifies(z, p):
    keep = torch.isfinite(right_top_p(z, p))
    return z.masked_fill_(~keep, float("-inf"))


@pytest.mark.parametrize(
    "fn, message",
    [
        (_excluding, "left out the token that crosses p"),
        (_unsorted, "vocabulary order"),
        (_ascending, "least probable token"),
        (
            lambda z, p: z.masked_fill(~torch.isfinite(right_top_p(z, p)), 0.0),
            "to 0, not −inf",
        ),
        (
            lambda z, p: torch.softmax(z, -1).masked_fill(
                ~torch.isfinite(right_top_p(z, p)), 0.0
            ),
            "returned probabilities",
        ),
        (lambda z, p: torch.softmax(right_top_p(z, p), -1), "returned probabilities"),
        (_sorted_order, "sorted order"),
        (_modifies, "in place"),
        (lambda z, p: z.clone(), "kept tokens outside the nucleus"),
        (
            lambda z, p: top_k_filter(right_top_p(z, p), 1),
            "removed tokens of the nucleus",
        ),
        (lambda z, p: right_top_p(z, p) * 2, "changed their logits"),
        (lambda z, p: torch.full_like(z, float("-inf")), "all −inf"),
        (lambda z, p: right_top_p(z, p).isfinite(), "not floating point"),
        (lambda z, p: right_top_p(z, p)[..., :-1], "shape"),
        (lambda z, p: right_top_p(z, p).tolist(), "torch.Tensor"),
        (lambda z, p: torch.log(z), "NaN"),
    ],
)
def test_ex3_mistakes(fn, message):
    v = ch10.ex3.check(fn)
    assert not v.ok and message in v.message, v.message


def test_ex3_empty_nucleus_is_explained():
    v = ch10.ex3.check(_excluding)
    assert "nucleus is empty" in v.message and "NaN" in v.message, v.message


def test_ex4_right_answers_pass():
    assert ch10.ex4.check(lambda lp, n, a: lp / ((5 + n) / 6) ** a).ok
    assert ch10.ex4.check(lambda lp, n, a: lp / length_penalty_gnmt(n, a)).ok


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda lp, n, a: lp * ((5 + n) / 6) ** a, "multiplied by the length penalty"),
        (lambda lp, n, a: lp / ((5 + n) / 6**a), "** binds tighter"),
        (lambda lp, n, a: lp / (5 + n) ** a, "division by 6^α"),
        (lambda lp, n, a: lp / ((5 + n) / 6), "ignores α"),
        (lambda lp, n, a: lp / n**a, "|Y|^α"),
        (lambda lp, n, a: lp / ((6 + n) / 6) ** a, "|Y| + 1"),
        (lambda lp, n, a: lp / ((4 + n) / 6) ** a, "|Y| - 1"),
        (lambda lp, n, a: lp - ((5 + n) / 6) ** a, "subtracted"),
        (lambda lp, n, a: lp / ((5 + n) / 6) ** (a / 2), "differ from log P"),
        (lambda lp, n, a: (lp / ((5 + n) / 6) ** a).tolist(), "torch.Tensor"),
        (lambda lp, n, a: (lp / ((5 + n) / 6) ** a)[:3], "shape"),
        (lambda lp, n, a: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_ex4_mistakes(fn, message):
    v = ch10.ex4.check(fn)
    assert not v.ok and message in v.message, v.message


@pytest.mark.parametrize("ex", [ch10.ex2, ch10.ex3, ch10.ex4])
def test_not_a_function_or_raising(ex):
    v = ex.check(42)
    assert not v.ok and "should be a function" in v.message
    v = ex.check(lambda *a: (_ for _ in ()).throw(RuntimeError("boom")))
    assert not v.ok and "raised RuntimeError: boom" in v.message


# ---- the examples: the library's answer banned, −1e9 named, fresh inputs,
# dtypes


def test_ex2_bans_the_librarys_functions():
    from transformer_lib import decoding

    v = ch10.ex2.check(
        lambda z, T, k: decoding.softmax_with_temperature(
            decoding.top_k_filter(z / T, k)
        )
    )
    assert (
        not v.ok
        and "calls transformer_lib.top_k_filter (the library's answer to this exercise)"
        in v.message
    ), v.message
    v = ch10.ex2.check(
        lambda z, T, k: decoding.softmax_with_temperature(top_k_filter(z, k), T)
    )
    assert not v.ok and "calls transformer_lib.softmax_with_temperature" in v.message, (
        v.message
    )
    v = ch10.ex2.check(lambda z, T, k: right_topk(z, T, k).double())
    assert not v.ok and "is float64; keep the input's dtype (float32)" in v.message, (
        v.message
    )


def test_ex2_a_table_of_the_checks_own_cases_fails():
    seen = {}
    assert ch10.ex2.check(
        lambda z, T, k: seen.setdefault(
            (tuple(z.flatten().tolist()), T, k), right_topk(z, T, k)
        )
    ).ok
    v = ch10.ex2.check(
        lambda z, T, k: seen.get(
            (tuple(z.flatten().tolist()), T, k), torch.softmax(z, -1)
        )
    )
    assert not v.ok, v.message


def test_ex3_minus_1e9_is_named():
    v = ch10.ex3.check(
        lambda z, p: z.masked_fill(~torch.isfinite(top_p_filter(z, p)), -1e9)
    )
    assert not v.ok and "large negative number" in v.message and "-inf" in v.message, (
        v.message
    )
