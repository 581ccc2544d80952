"""Chapter 4's checks: each named mistake is recognised, the right answer passes, a
broken answer gets a sentence."""

import math

import pytest
import torch

from transformer_lib.exercises import ch04


def _verdict(ex, answer):
    v = ex.check(answer)
    assert isinstance(v.message, str) and "\n" not in v.message
    return v


# ---- exercise 1: the wavelength of column pair i -------------------------------------


def test_ex1_right_answer_passes():
    assert _verdict(ch04.ex1, lambda i, d: 2 * math.pi * 10000 ** (2 * i / d)).ok
    # float32 tensor
    assert _verdict(
        ch04.ex1, lambda i, d: 2 * torch.pi / torch.tensor(10000.0) ** (-2 * i / d)
    ).ok


WAVELENGTH_MISTAKES = {
    "i instead of 2i": (
        lambda i, d: 2 * math.pi * 10000 ** (i / d),
        "your exponent is i/d_model",
    ),
    "no 2 pi": (lambda i, d: 10000 ** (2 * i / d), "you forgot the 2π"),
    "pi, half the period": (
        lambda i, d: math.pi * 10000 ** (2 * i / d),
        "half the right ones",
    ),
    "base 1000": (lambda i, d: 2 * math.pi * 1000 ** (2 * i / d), "base 1000"),
    "angular frequency": (
        lambda i, d: 10000 ** (-2 * i / d),
        "you returned a frequency",
    ),
    "cycles per position": (
        lambda i, d: 10000 ** (-2 * i / d) / (2 * math.pi),
        "you returned a frequency",
    ),
    "pairs counted from 1": (
        lambda i, d: 2 * math.pi * 10000 ** (2 * (i + 1) / d),
        "counted the pairs from 1",
    ),
    "something else": (lambda i, d: 7.0, "repeats every"),
}


@pytest.mark.parametrize("name", WAVELENGTH_MISTAKES)
def test_ex1_names_each_mistake(name):
    fn, words = WAVELENGTH_MISTAKES[name]
    v = _verdict(ch04.ex1, fn)
    assert not v.ok and words in v.message, v.message


def test_ex1_broken_answers_get_a_sentence():
    assert "raised ZeroDivisionError" in _verdict(ch04.ex1, lambda i, d: 1 / 0).message
    assert (
        "should be a finite number" in _verdict(ch04.ex1, lambda i, d: "6.28").message
    )
    assert (
        "should be a finite number"
        in _verdict(ch04.ex1, lambda i, d: torch.ones(2)).message
    )
    assert "should be a function" in _verdict(ch04.ex1, 6.28).message


# ---- exercise 3: the width at which the position's share of the norm falls below 1%


def test_ex3_right_answer_passes():
    for width in (5000, 4999.5, 5002, torch.tensor(5000)):
        assert _verdict(ch04.ex3, width).ok, width


WIDTH_MISTAKES = {
    "share of the squared norm": (50, "squared norm"),
    "|PE| = sqrt(d)": (10000, "you took |PE| = √d_model"),
    "first power of two": (8192, "first power of two"),
    "never": (math.inf, "the share does fall below 1%"),
    "not positive": (-5000, "a width is positive"),
    "something else": (512, "at width 512 the position's share is 3.12%"),
}


@pytest.mark.parametrize("name", WIDTH_MISTAKES)
def test_ex3_names_each_mistake(name):
    answer, words = WIDTH_MISTAKES[name]
    v = _verdict(ch04.ex3, answer)
    assert not v.ok and words in v.message, v.message


def test_ex3_wrong_type_gets_a_sentence():
    assert "should be a finite number" in _verdict(ch04.ex3, "5000").message
    assert "should be a finite number" in _verdict(ch04.ex3, None).message
    assert "should be a finite number" in _verdict(ch04.ex3, lambda: 5000).message


def test_ex3_window_excludes_the_norms_added():
    """Issue: 4902, from adding the norms instead of their squares, fell inside the old
    ±3% window."""
    import math

    added = next(
        w
        for w in range(2, 20000, 2)
        if math.sqrt(w / 2) / (w + math.sqrt(w / 2)) < 0.01
    )
    assert added == 4902
    v = ch04.ex3.check(added)
    assert not v.ok and "adding the norms" in v.message and "Pythagoras" in v.message, (
        v.message
    )
    import numpy as np

    assert ch04.ex3.check(np.int64(5000)).ok and ch04.ex3.check(5000.0).ok
    assert "does fall below 1%" in ch04.ex3.check(np.float64("inf")).message


def test_ex1_a_table_of_the_checks_own_cases_fails():
    import math

    table = {
        (i, d): 2 * math.pi * 10000 ** (2 * i / d)
        for i, d in ((128, 512), (255, 512), (0, 512), (3, 8), (10, 64), (0, 2))
    }
    v = ch04.ex1.check(lambda i, d: table.get((i, d), 1.0))
    assert not v.ok and "repeats every" in v.message, v.message
