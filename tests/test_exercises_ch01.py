"""Chapter 1's checks name each mistake they claim to catch, and pass the right answers."""
import math

import pytest
import torch

from transformer_lib.exercises import ch01


def _verdict(ex, answer):
    v = ex.check(answer)
    assert isinstance(v.message, str) and "\n" not in v.message
    return v


# ---- exercise 2: a softmax that cannot overflow -------------------------------------------------

def good_softmax(s):
    e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


SOFTMAX_MISTAKES = {
    "wrong axis": (lambda s: torch.softmax(s, dim=0), "wrong axis"),
    "no keepdim": (lambda s: torch.exp(s - s.max(-1).values) / torch.exp(s - s.max(-1).values).sum(-1, keepdim=True),
                   "keepdim=True"),
    "not normalised": (lambda s: torch.exp(s - s.max(-1, keepdim=True).values), "do not sum to 1"),
    "naive, overflows": (lambda s: torch.exp(s) / torch.exp(s).sum(-1, keepdim=True), "overflows"),
    "one global maximum": (lambda s: torch.exp(s - s.max()) / torch.exp(s - s.max()).sum(-1, keepdim=True),
                           "one maximum for the whole tensor"),
}


def test_ex2_right_answers_pass():
    assert _verdict(ch01.ex2, good_softmax).ok
    assert _verdict(ch01.ex2, lambda s: torch.softmax(s, dim=-1)).ok
    assert repr(ch01.ex2.check(good_softmax)).startswith("✓ ")


@pytest.mark.parametrize("name", SOFTMAX_MISTAKES)
def test_ex2_names_each_mistake(name):
    fn, words = SOFTMAX_MISTAKES[name]
    v = _verdict(ch01.ex2, fn)
    assert not v.ok and words in v.message, v.message
    assert repr(v).startswith("✗ ")


def test_ex2_only_square_inputs():
    v = _verdict(ch01.ex2, lambda s: good_softmax(s) if s.dim() == 2 else s)
    assert not v.ok and "(2, 3, 5) batch" in v.message


def test_ex2_raises_wrong_type_wrong_shape():
    def boom(s):
        raise ValueError("not yet")
    v = _verdict(ch01.ex2, boom)
    assert not v.ok and "raised ValueError: not yet" in v.message
    v = _verdict(ch01.ex2, lambda s: s.tolist())
    assert not v.ok and "should be a torch.Tensor; got list" in v.message
    v = _verdict(ch01.ex2, lambda s: good_softmax(s).sum(-1))
    assert not v.ok and "has shape (4,), expected (4, 4)" in v.message
    v = _verdict(ch01.ex2, "softmax")
    assert not v.ok and "should be a function" in v.message


# ---- exercise 3: attention with a mask -----------------------------------------------------------

def good_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    if mask is not None:
        w = w.masked_fill(~mask, 0.0)
    return w @ v, w


def _attn(scale=None, dim=-1, fill=float("-inf"), invert=False, use_mask=True, zero_rows=True, ret="both",
          transpose=lambda k: k.transpose(-2, -1)):
    def fn(q, k, v, mask=None):
        s = (q @ transpose(k)) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale(q, v))
        m = None if mask is None or not use_mask else (~mask if invert else mask)
        if m is not None:
            s = s.masked_fill(~m, fill)
        w = torch.softmax(s, dim=dim)
        if m is not None and zero_rows:
            w = w.masked_fill(~m, 0.0)
        out = w @ v
        return {"both": (out, w), "out": out, "weights": w, "scores": (out, s)}[ret]
    return fn


ATTENTION_MISTAKES = {
    "not scaled": (_attn(scale=lambda q, v: 1.0), "not divided by √d_k"),
    "divided by d_k": (_attn(scale=lambda q, v: 1 / q.shape[-1]), "divided the scores by d_k"),
    "divided by sqrt(d_v)": (_attn(scale=lambda q, v: 1 / math.sqrt(v.shape[-1])), "√d_v"),
    "softmax over queries": (_attn(dim=-2), "runs over the queries"),
    "weights, not output": (_attn(ret="weights"), "multiply the weights by v"),
    "k.T, not transpose(-2, -1)": (_attn(transpose=lambda k: k.T if k.dim() == 2 else k.transpose(-1, -3)),
                                   "leading dimensions"),
    "mask ignored": (_attn(use_mask=False), "mask is ignored"),
    "mask inverted": (_attn(invert=True), "mask is inverted"),
    "masked scores set to 0": (_attn(fill=0.0, zero_rows=False), "set the masked scores to 0"),
    "NaN for a fully masked row": (_attn(zero_rows=False), "gives NaN"),
    "-1e9 instead of -inf": (_attn(fill=-1e9, zero_rows=False), "mean of the values"),
    "scores returned as weights": (_attn(ret="scores"), "weights you return"),
}


def test_ex3_right_answers_pass():
    assert _verdict(ch01.ex3, good_attention).ok
    assert _verdict(ch01.ex3, lambda q, k, v, mask=None: good_attention(q, k, v, mask)[0]).ok   # output only
    from transformer_lib import attention
    assert _verdict(ch01.ex3, attention).ok


@pytest.mark.parametrize("name", ATTENTION_MISTAKES)
def test_ex3_names_each_mistake(name):
    fn, words = ATTENTION_MISTAKES[name]
    v = _verdict(ch01.ex3, fn)
    assert not v.ok and words in v.message, v.message


def test_ex3_raises_wrong_type_wrong_shape():
    v = _verdict(ch01.ex3, lambda q, k, v: good_attention(q, k, v))        # no mask argument
    assert not v.ok and "raised TypeError" in v.message
    v = _verdict(ch01.ex3, lambda q, k, v, mask=None: 1.0)
    assert not v.ok and "should be a torch.Tensor; got float" in v.message
    v = _verdict(ch01.ex3, lambda q, k, v, mask=None: good_attention(q, k, v, mask)[0].transpose(-2, -1))
    assert not v.ok and "expected (3, 2)" in v.message
    v = _verdict(ch01.ex3, None)
    assert not v.ok and "should be a function" in v.message
