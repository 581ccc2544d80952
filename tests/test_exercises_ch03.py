"""Chapter 3's checks name each mistake they claim to catch, and pass the right
answers."""

import pytest
import torch

from transformer_lib.exercises import ch03


def _verdict(ex, answer):
    v = ex.check(answer)
    assert isinstance(v.message, str) and "\n" not in v.message
    return v


# ---- exercise 2: the FLOPs of one layer ----------------------------------------------


def good_flops(L, d_model, n_heads):
    return 2 * (4 * L * d_model**2 + 2 * L**2 * d_model)


FLOP_MISTAKES = {
    "attention times h": (
        lambda L, d, h: 2 * (4 * L * d * d + 2 * L * L * d * h),
        "multiplied the attention by h",
    ),
    "one head's attention": (
        lambda L, d, h: 2 * (4 * L * d * d + 2 * L * L * (d // h)),
        "of one head",
    ),
    "one head's projections": (
        lambda L, d, h: 2 * (4 * L * d * (d // h) + 2 * L * L * d),
        "projections of one head",
    ),
    "multiply-adds": (lambda L, d, h: 4 * L * d * d + 2 * L * L * d, "multiply–adds"),
    "no W_O": (
        lambda L, d, h: 2 * (3 * L * d * d + 2 * L * L * d),
        "output projection W^O",
    ),
    "one L^2 product": (
        lambda L, d, h: 2 * (4 * L * d * d + L * L * d),
        "one of the two L² products",
    ),
    "something else": (
        lambda L, d, h: 4 * L * d * d,
        "four projections and the two products",
    ),
}


def test_ex2_right_answer_passes():
    assert _verdict(ch03.ex2, good_flops).ok
    assert _verdict(ch03.ex2, lambda L, d, h: float(good_flops(L, d, h))).ok


@pytest.mark.parametrize("name", FLOP_MISTAKES)
def test_ex2_names_each_mistake(name):
    fn, words = FLOP_MISTAKES[name]
    v = _verdict(ch03.ex2, fn)
    assert not v.ok and words in v.message, v.message


def test_ex2_raises_and_wrong_type():
    v = _verdict(ch03.ex2, lambda L, d: good_flops(L, d, 1))
    assert not v.ok and "raised TypeError" in v.message
    v = _verdict(ch03.ex2, lambda L, d, h: [good_flops(L, d, h)])
    assert not v.ok and "should be a finite number" in v.message


# ---- exercise 3: where the L^2 terms are half ----------------------------------------

HALF_MISTAKES = {
    "one against one": (lambda d: d, "set the two equal"),
    "no W_O": (lambda d: 1.5 * d, "output projection W^O"),
    "one L^2 product": (lambda d: 4 * d, "one of the two L² products"),
    "the base model's number for every width": (lambda d: 1024, "for every d_model"),
    "something else": (lambda d: d * d, "solve 2 L² d = 4 L d²"),
}


def test_ex3_right_answer_passes():
    assert _verdict(ch03.ex3, lambda d_model: 2 * d_model).ok


@pytest.mark.parametrize("name", HALF_MISTAKES)
def test_ex3_names_each_mistake(name):
    fn, words = HALF_MISTAKES[name]
    v = _verdict(ch03.ex3, fn)
    assert not v.ok and words in v.message, v.message


def test_ex3_raises_and_wrong_type():
    v = _verdict(ch03.ex3, lambda d_model: d_model / 0)
    assert not v.ok and "raised ZeroDivisionError" in v.message
    v = _verdict(ch03.ex3, lambda d_model: "2 d")
    assert not v.ok and "should be a finite number" in v.message


# ---- exercise 4: the causal mask in nn.MultiheadAttention's sign ---------------------


def good_mask(L):
    return torch.ones(L, L, dtype=torch.bool).triu(diagonal=1)


MASK_MISTAKES = {
    "this book's convention": (
        lambda L: torch.ones(L, L, dtype=torch.bool).tril(),
        "this book's convention",
    ),
    "diagonal blocked": (
        lambda L: torch.ones(L, L, dtype=torch.bool).triu(),
        "blocks the diagonal",
    ),
    "transposed": (
        lambda L: torch.ones(L, L, dtype=torch.bool).tril(diagonal=-1),
        "transposed",
    ),
    "float mask": (lambda L: good_mask(L).float(), "dtype torch.float32"),
    # PyTorch's own additive mask is valid for nn.MultiheadAttention: the message says
    # so, and how to convert
    "additive -inf mask": (
        lambda L: torch.nn.Transformer.generate_square_subsequent_mask(L),
        "additive float form (0 where allowed, -inf above the diagonal)",
    ),
    "not causal": (lambda L: torch.zeros(L, L, dtype=torch.bool), "not causal"),
}


def test_ex4_right_answers_pass():
    assert _verdict(ch03.ex4, good_mask).ok
    assert _verdict(
        ch03.ex4, lambda L: torch.nn.Transformer.generate_square_subsequent_mask(L) < 0
    ).ok


@pytest.mark.parametrize("name", MASK_MISTAKES)
def test_ex4_names_each_mistake(name):
    fn, words = MASK_MISTAKES[name]
    v = _verdict(ch03.ex4, fn)
    assert not v.ok and words in v.message, v.message


def test_ex4_additive_mask_is_called_valid_and_converted():
    v = _verdict(
        ch03.ex4, lambda L: torch.nn.Transformer.generate_square_subsequent_mask(L)
    )
    assert (
        not v.ok and "accepts it" in v.message and "torch.isinf(mask)" in v.message
    ), v.message
    # the conversion the message names gives the right answer
    assert _verdict(
        ch03.ex4,
        lambda L: torch.isinf(torch.nn.Transformer.generate_square_subsequent_mask(L)),
    ).ok


def test_ex4_raises_wrong_type_wrong_shape():
    v = _verdict(ch03.ex4, lambda L: good_mask(L)[None])
    assert not v.ok and "expected (5, 5)" in v.message
    v = _verdict(ch03.ex4, lambda L: good_mask(L).tolist())
    assert not v.ok and "should be a torch.Tensor; got list" in v.message
    v = _verdict(ch03.ex4, lambda: good_mask(5))
    assert not v.ok and "raised TypeError" in v.message


def test_a_table_of_the_checks_own_cases_fails():
    """Issue: a table of 03.2's fixed cases passed; one case is now drawn anew at every
    call."""
    table = {
        (5, 16, 4): good_flops(5, 16, 4),
        (3, 32, 8): good_flops(3, 32, 8),
        (16, 8, 2): good_flops(16, 8, 2),
        (7, 8, 1): good_flops(7, 8, 1),
    }
    v = ch03.ex2.check(lambda L, d, h: table.get((L, d, h), 0))
    assert not v.ok and "PyTorch counts" in v.message, v.message
    import numpy as np

    # a NumPy integer is a number
    assert ch03.ex2.check(lambda L, d, h: np.int64(good_flops(L, d, h))).ok
    assert not ch03.ex3.check(lambda d: {512: 1024, 1024: 2048, 64: 128}.get(d, 0)).ok
