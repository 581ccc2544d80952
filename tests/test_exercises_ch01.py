"""Chapter 1's checks name each mistake they claim to catch, and pass the right
answers."""

import math
import re

import pytest
import torch
import torch.nn.functional as F

from transformer_lib.exercises import ch01


def _verdict(ex, answer):
    v = ex.check(answer)
    assert isinstance(v.message, str) and "\n" not in v.message
    return v


# ---- exercise 2: a softmax that cannot overflow --------------------------------------


def good_softmax(s):
    e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


SOFTMAX_MISTAKES = {
    "wrong axis": (
        lambda s: torch.exp(s - s.amax(0)) / torch.exp(s - s.amax(0)).sum(0),
        "wrong axis",
    ),
    "no keepdim": (
        lambda s: torch.exp(s - s.max(-1).values)
        / torch.exp(s - s.max(-1).values).sum(-1, keepdim=True),
        "keepdim=True",
    ),
    "not normalised": (
        lambda s: torch.exp(s - s.max(-1, keepdim=True).values),
        "do not sum to 1",
    ),
    "naive, overflows": (
        lambda s: torch.exp(s) / torch.exp(s).sum(-1, keepdim=True),
        "overflows",
    ),
    "one global maximum": (
        lambda s: torch.exp(s - s.max()) / torch.exp(s - s.max()).sum(-1, keepdim=True),
        "one maximum for the whole tensor",
    ),
    "log of the softmax": (
        lambda s: (s - s.amax(-1, keepdim=True))
        - torch.exp(s - s.amax(-1, keepdim=True)).sum(-1, keepdim=True).log(),
        "logarithm of the softmax",
    ),
    "divided by the sum of the whole tensor": (
        lambda s: torch.exp(s - s.amax(-1, keepdim=True))
        / torch.exp(s - s.amax(-1, keepdim=True)).sum(),
        "whole tensor",
    ),
}


def test_ex2_right_answers_pass():
    assert _verdict(ch01.ex2, good_softmax).ok
    assert _verdict(
        ch01.ex2,
        lambda s: torch.exp(s - s.amax(-1, keepdim=True))
        / torch.exp(s - s.amax(-1, keepdim=True)).sum(-1, keepdim=True),
    ).ok
    assert repr(ch01.ex2.check(good_softmax)).startswith("✓ ")


def _swallowed(s):
    """Calls torch.softmax, catches what the check raises, and answers with a softmax of
    its own."""
    try:
        return torch.softmax(s, dim=-1)
    except Exception:
        return good_softmax(s)


# an alias the check must see through
from torch import softmax as imported_softmax

FORBIDDEN_SOFTMAX = {
    "torch.softmax": (lambda s: torch.softmax(s, dim=-1), "torch.softmax"),
    "F.softmax": (lambda s: F.softmax(s, dim=-1), "torch.nn.functional.softmax"),
    "Tensor.softmax": (lambda s: s.softmax(-1), "Tensor.softmax"),
    "nn.Softmax": (
        lambda s: torch.nn.Softmax(dim=-1)(s),
        "torch.nn.functional.softmax",
    ),
    "torch.special.softmax": (
        lambda s: torch.special.softmax(s, -1),
        "torch.special.softmax",
    ),
    "exp of log_softmax": (
        lambda s: torch.log_softmax(s, -1).exp(),
        "torch.log_softmax",
    ),
    "imported alias": (lambda s: imported_softmax(s, -1), "torch.softmax"),
    "exception swallowed": (_swallowed, "torch.softmax"),
}


@pytest.mark.parametrize("name", FORBIDDEN_SOFTMAX)
def test_ex2_rejects_pytorchs_softmax_and_names_it(name):
    fn, called = FORBIDDEN_SOFTMAX[name]
    v = _verdict(ch01.ex2, fn)
    assert not v.ok and f"calls {called}, which this exercise forbids" in v.message, (
        v.message
    )


@pytest.mark.parametrize("name", SOFTMAX_MISTAKES)
def test_ex2_names_each_mistake(name):
    fn, words = SOFTMAX_MISTAKES[name]
    v = _verdict(ch01.ex2, fn)
    assert not v.ok and words in v.message, v.message
    assert repr(v).startswith("✗ ")


def test_ex2_only_square_inputs():
    v = _verdict(ch01.ex2, lambda s: good_softmax(s) if s.dim() == 2 else s)
    assert not v.ok and re.search(r"wrong for a \(\d, \d, \d\) batch", v.message), (
        v.message
    )


def test_ex2_raises_wrong_type_wrong_shape():
    def boom(s):
        raise ValueError("not yet")

    v = _verdict(ch01.ex2, boom)
    assert not v.ok and "raised ValueError: not yet" in v.message
    v = _verdict(ch01.ex2, lambda s: s.tolist())
    assert not v.ok and "should be a torch.Tensor; got list" in v.message
    v = _verdict(ch01.ex2, lambda s: good_softmax(s).sum(-1))
    assert not v.ok and re.search(
        r"has shape \((\d),\), expected \(\1, \1\)", v.message
    ), v.message
    v = _verdict(ch01.ex2, "softmax")
    assert not v.ok and "should be a function" in v.message


# ---- exercise 3: attention with a mask -----------------------------------------------


def good_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    if mask is not None:
        w = w.masked_fill(~mask, 0.0)
    return w @ v, w


def _attn(
    scale=None,
    dim=-1,
    fill=float("-inf"),
    invert=False,
    use_mask=True,
    zero_rows=True,
    ret="both",
    transpose=lambda k: k.transpose(-2, -1),
    after=lambda w, q: w,
):
    def fn(q, k, v, mask=None):
        s = (q @ transpose(k)) * (
            1 / math.sqrt(q.shape[-1]) if scale is None else scale(q, v)
        )
        m = None if mask is None or not use_mask else (~mask if invert else mask)
        # fill=None: masked after the softmax only
        if m is not None and fill is not None:
            s = s.masked_fill(~m, fill)
        w = after(torch.softmax(s, dim=dim), q)
        if m is not None and zero_rows:
            w = w.masked_fill(~m, 0.0)
        out = w @ v
        return {"both": (out, w), "out": out, "weights": w, "scores": (out, s)}[ret]

    return fn


ATTENTION_MISTAKES = {
    "not scaled": (_attn(scale=lambda q, v: 1.0), "not divided by √d_k"),
    "divided by d_k": (
        _attn(scale=lambda q, v: 1 / q.shape[-1]),
        "divided the scores by d_k",
    ),
    "divided by sqrt(d_v)": (
        _attn(scale=lambda q, v: 1 / math.sqrt(v.shape[-1])),
        "√d_v",
    ),
    "softmax over queries": (_attn(dim=-2), "runs over the queries"),
    "weights, not output": (_attn(ret="weights"), "multiply the weights by v"),
    "k.T, not transpose(-2, -1)": (
        _attn(transpose=lambda k: k.T if k.dim() == 2 else k.transpose(-1, -3)),
        "leading dimensions",
    ),
    "mask ignored": (_attn(use_mask=False), "mask is ignored"),
    "mask inverted": (_attn(invert=True), "mask is inverted"),
    "masked scores set to 0": (
        _attn(fill=0.0, zero_rows=False),
        "set the masked scores to 0",
    ),
    "NaN for a fully masked row": (_attn(zero_rows=False), "gives NaN"),
    "-1e9 instead of -inf": (_attn(fill=-1e9, zero_rows=False), "mean of the values"),
    "scores returned as weights": (_attn(ret="scores"), "weights you return"),
    "masked after the softmax": (_attn(fill=None), "masked after the softmax"),
    "weights divided by sqrt(d_k)": (
        _attn(scale=lambda q, v: 1.0, after=lambda w, q: w / math.sqrt(q.shape[-1])),
        "divided the weights (after the softmax) by √d_k",
    ),
}


def test_ex3_right_answers_pass():
    assert _verdict(ch01.ex3, good_attention).ok
    # output only
    assert _verdict(
        ch01.ex3, lambda q, k, v, mask=None: good_attention(q, k, v, mask)[0]
    ).ok


def _via_multihead(q, k, v, mask=None):
    from transformer_lib import multihead

    # the library's function, reached another way
    return vars(multihead)["attention"](q, k, v, mask)


FORBIDDEN_ATTENTION = {
    "transformer_lib.attention itself": (
        lambda: __import__("transformer_lib").attention,
        "transformer_lib.attention",
    ),
    "a call of transformer_lib.attention": (
        lambda: lambda q, k, v, mask=None: __import__("transformer_lib").attention(
            q, k, v, mask
        ),
        "transformer_lib.attention",
    ),
    "reached through another module": (
        lambda: _via_multihead,
        "transformer_lib.attention",
    ),
    "F.scaled_dot_product_attention": (
        lambda: lambda q, k, v, mask=None: F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask
        ),
        "F.scaled_dot_product_attention",
    ),
}


def _copy_of_attention():
    """The library's `attention` defined again from its source, as chapter 1's own cell
    defines it."""
    import inspect
    import sys

    module = sys.modules["transformer_lib.attention"]
    namespace = dict(vars(module))
    exec(
        compile(inspect.getsource(module.attention), "<chapter cell>", "exec"),
        namespace,
    )
    assert namespace["attention"] is not module.attention
    return lambda q, k, v, mask=None: namespace["attention"](q, k, v, mask)


FORBIDDEN_ATTENTION["the chapter's own copy of attention"] = (
    _copy_of_attention,
    "transformer_lib.attention",
)


@pytest.mark.parametrize("name", FORBIDDEN_ATTENTION)
def test_ex3_rejects_the_library_and_sdpa_and_names_them(name):
    make, called = FORBIDDEN_ATTENTION[name]
    v = _verdict(ch01.ex3, make())
    assert not v.ok and f"calls {called}, which this exercise forbids" in v.message, (
        v.message
    )


@pytest.mark.parametrize("order", ["k, q, v", "v, q, k", "q, v, k"])
def test_ex3_arguments_in_another_order_are_named(order):
    names = [n.strip() for n in order.split(",")]

    def swapped(*args, mask=None):  # its parameters are in `order`
        got = dict(zip(names, args))
        return good_attention(got["q"], got["k"], got["v"], mask)

    v = _verdict(ch01.ex3, swapped)
    assert (
        not v.ok
        and f"in another order, ({order})" in v.message
        and "my_attention(q, k, v" in v.message
    ), v.message


@pytest.mark.parametrize("name", ATTENTION_MISTAKES)
def test_ex3_names_each_mistake(name):
    fn, words = ATTENTION_MISTAKES[name]
    v = _verdict(ch01.ex3, fn)
    assert not v.ok and words in v.message, v.message


def test_ex3_raises_wrong_type_wrong_shape():
    v = _verdict(ch01.ex3, lambda q, k, v: good_attention(q, k, v))  # no mask argument
    assert not v.ok and "raised TypeError" in v.message
    v = _verdict(ch01.ex3, lambda q, k, v, mask=None: 1.0)
    assert not v.ok and "should be a torch.Tensor; got float" in v.message
    v = _verdict(
        ch01.ex3,
        lambda q, k, v, mask=None: good_attention(q, k, v, mask)[0].transpose(-2, -1),
    )
    assert not v.ok and re.search(
        r"has shape \((\d), (\d)\), expected \(\2, \1\)", v.message
    ), v.message
    v = _verdict(ch01.ex3, None)
    assert not v.ok and "should be a function" in v.message


# ---- the issue's examples: a ban at the operator level, fresh inputs, side effects,
# dtypes, sentences --

SOFTMAX_BACK_DOORS = {
    "F.softmin of -s": (
        lambda s: F.softmin(-s, -1),
        "calls F.softmin and so runs PyTorch's softmax (the operator aten::_softmax)",
    ),
    "nn.Softmin of -s": (
        lambda s: torch.nn.Softmin(-1)(-s),
        "calls F.softmin and so runs PyTorch's softmax",
    ),
    "aten._softmax": (
        lambda s: torch.ops.aten._softmax(s, -1, False),
        "calls torch.ops.aten._softmax (PyTorch's softmax)",
    ),
    "aten._softmax.default": (
        lambda s: torch.ops.aten._softmax.default(s, -1, False),
        "torch.ops.aten._softmax",
    ),
    "sparse softmax": (
        lambda s: torch.sparse.softmax(s.to_sparse(), -1).to_dense(),
        "PyTorch's sparse softmax",
    ),
    "log_softmax by aten": (
        lambda s: torch.ops.aten._log_softmax(s, -1, False).exp(),
        "PyTorch's log-softmax",
    ),
}


@pytest.mark.parametrize("name", SOFTMAX_BACK_DOORS)
def test_ex2_bans_the_softmax_at_the_operator_level(name):
    fn, words = SOFTMAX_BACK_DOORS[name]
    v = _verdict(ch01.ex2, fn)
    assert (
        not v.ok and words in v.message and "which this exercise forbids" in v.message
    ), v.message


def test_ex2_in_place_and_dtype_and_fresh_inputs():
    def in_place(s):
        s -= s.max(dim=-1, keepdim=True).values
        e = s.exp()
        return e / e.sum(-1, keepdim=True)

    v = _verdict(ch01.ex2, in_place)
    assert not v.ok and "changed its argument s in place" in v.message, v.message
    v = _verdict(ch01.ex2, lambda s: good_softmax(s.double()))
    assert not v.ok and "is float64; keep the input's dtype (float32)" in v.message, (
        v.message
    )
    seen = []
    for _ in range(2):
        assert ch01.ex2.check(lambda s: seen.append(s.clone()) or good_softmax(s)).ok
    # each call draws its own scores
    assert not torch.equal(seen[0], seen[len(seen) // 2])
    # a table of the last two calls' cases
    table = {tuple(x.flatten().tolist()): good_softmax(x) for x in seen}
    assert not ch01.ex2.check(
        lambda s: table.get(tuple(s.flatten().tolist()), torch.zeros_like(s))
    ).ok


def test_ex3_bans_fused_attention_by_operator():
    v = _verdict(
        ch01.ex3,
        lambda q, k, v, mask=None: torch.ops.aten.scaled_dot_product_attention(
            q, k, v, attn_mask=mask
        ),
    )
    assert (
        not v.ok
        and "torch.ops.aten.scaled_dot_product_attention (PyTorch's fused attention)"
        in v.message
    ), v.message
    assert "which this exercise forbids" in v.message


def test_ex3_issue_sentences():
    v = _verdict(ch01.ex3, _attn(scale=lambda q, v: 1 / (q.shape[-1] ** 1 / 2)))
    assert not v.ok and "d_k ** 1/2" in v.message and "math.sqrt(d_k)" in v.message, (
        v.message
    )

    def divides_q_in_place(q, k, v, mask=None):
        q /= math.sqrt(q.shape[-1])
        return good_attention(q * math.sqrt(q.shape[-1]), k, v, mask)

    v = _verdict(ch01.ex3, divides_q_in_place)
    assert not v.ok and "changed its argument q in place" in v.message, v.message

    def nan_weights(q, k, v, mask=None):
        out, w = good_attention(q, k, v, mask)
        if mask is not None:
            w = w.masked_fill(~mask.any(-1, keepdim=True), float("nan"))
        return out, w

    v = _verdict(ch01.ex3, nan_weights)
    assert (
        not v.ok
        and "weights you return for a query whose keys are all masked are NaN"
        in v.message
    ), v.message
    v = _verdict(
        ch01.ex3,
        lambda q, k, v, mask=None: tuple(
            t.double() for t in good_attention(q, k, v, mask)
        ),
    )
    assert not v.ok and "is float64; keep the input's dtype (float32)" in v.message, (
        v.message
    )
