"""Chapter 2's checks name each mistake they claim to catch, and pass the right
answers."""

import math

import pytest
import torch

from transformer_lib.exercises import ch02


def _verdict(ex, answer):
    v = ex.check(answer)
    assert isinstance(v.message, str) and "\n" not in v.message
    return v


# ---- exercise 1: the scale for components of variance sigma^2 ------------------------

UNIT_SCALE_MISTAKES = {
    "sigma once": (lambda d, s: 1 / (s * math.sqrt(d)), "counted σ once"),
    "sigma ignored": (lambda d, s: 1 / math.sqrt(d), "ignores σ"),
    "divided by d_k": (lambda d, s: 1 / (s**2 * d), "divide by d_k"),
    "one over the variance": (lambda d, s: 1 / (s**4 * d), "one over the variance"),
    "the std, not its reciprocal": (lambda d, s: s**2 * math.sqrt(d), "reciprocal"),
    "something else": (lambda d, s: 0.5, "should have variance 1"),
}


def test_ex1_right_answer_passes():
    assert _verdict(ch02.ex1, lambda d_k, sigma: 1 / (sigma**2 * math.sqrt(d_k))).ok
    # a 0-d tensor is a number
    assert _verdict(ch02.ex1, lambda d_k, sigma: torch.tensor(sigma**-2 * d_k**-0.5)).ok


@pytest.mark.parametrize("name", UNIT_SCALE_MISTAKES)
def test_ex1_names_each_mistake(name):
    fn, words = UNIT_SCALE_MISTAKES[name]
    v = _verdict(ch02.ex1, fn)
    assert not v.ok and words in v.message, v.message


def test_ex1_raises_and_wrong_type():
    v = _verdict(ch02.ex1, lambda d_k: 1 / math.sqrt(d_k))  # forgot the second argument
    assert not v.ok and "raised TypeError" in v.message
    v = _verdict(ch02.ex1, lambda d_k, sigma: "1/(sigma^2 sqrt(d_k))")
    assert not v.ok and "should be a finite number" in v.message
    v = _verdict(ch02.ex1, lambda d_k, sigma: torch.ones(2))
    assert not v.ok and "should be a finite number" in v.message
    v = _verdict(ch02.ex1, 0.125)
    assert not v.ok and "should be a function" in v.message


# ---- exercise 2: the variance of q.k / d_k -------------------------------------------

VAR_MISTAKES = {
    "the std": (lambda d: 1 / math.sqrt(d), "standard deviation"),
    "forgot Var(q.k) = d_k": (lambda d: 1 / d**2, "Var(x/c) = Var(x)/c²"),
    "as if divided by sqrt(d_k)": (lambda d: 1.0, "after dividing by √d_k"),
    "unscaled": (lambda d: float(d), "unscaled"),
    "something else": (lambda d: 2 / d, "Var(q·k) / d_k²"),
}


def test_ex2_right_answer_passes():
    assert _verdict(ch02.ex2, lambda d_k: 1 / d_k).ok


@pytest.mark.parametrize("name", VAR_MISTAKES)
def test_ex2_names_each_mistake(name):
    fn, words = VAR_MISTAKES[name]
    v = _verdict(ch02.ex2, fn)
    assert not v.ok and words in v.message, v.message


def test_ex2_raises_and_wrong_type():
    v = _verdict(ch02.ex2, lambda d_k: 1 / (d_k - 1))  # fails at d_k = 1
    assert not v.ok and (
        "raised ZeroDivisionError" in v.message or "expected" in v.message
    )
    v = _verdict(ch02.ex2, lambda d_k: None)
    assert not v.ok and "should be a finite number; got None" in v.message
    v = _verdict(ch02.ex2, lambda d_k: float("nan"))
    assert not v.ok and "should be a finite number" in v.message


# ---- exercise 3: the largest score of additive attention -----------------------------

BOUND_MISTAKES = {
    "L2 norm": (lambda w: w.norm(), "‖w‖₂"),
    "no absolute values": (lambda w: w.sum(), "without absolute values"),
    "number of coordinates": (lambda w: w.numel(), "counts the coordinates"),
    "largest |w_i|": (lambda w: w.abs().max(), "not the largest one"),
    "something else": (lambda w: 2 * w.abs().sum(), "Σ|w_i| |tanh(u_i)|"),
}


def test_ex3_right_answer_passes():
    assert _verdict(ch02.ex3, lambda w: w.abs().sum()).ok
    assert _verdict(ch02.ex3, lambda w: float(sum(abs(x) for x in w.tolist()))).ok


@pytest.mark.parametrize("name", BOUND_MISTAKES)
def test_ex3_names_each_mistake(name):
    fn, words = BOUND_MISTAKES[name]
    v = _verdict(ch02.ex3, fn)
    assert not v.ok and words in v.message, v.message


def test_ex3_raises_and_wrong_type():
    v = _verdict(ch02.ex3, lambda w: w.abs().sum(dim=1))
    assert not v.ok and "raised IndexError" in v.message
    v = _verdict(ch02.ex3, lambda w: w.abs())  # a tensor, not a number
    assert not v.ok and "should be a finite number" in v.message


# ---- the examples: NumPy scalars are numbers; a table of the check's own cases
# fails


def test_numpy_scalars_are_numbers():
    import numpy as np

    assert _verdict(
        ch02.ex1, lambda d_k, sigma: np.float64(1 / (sigma**2 * math.sqrt(d_k)))
    ).ok
    assert _verdict(ch02.ex2, lambda d_k: np.float32(1 / d_k)).ok
    assert _verdict(ch02.ex3, lambda w: np.float64(w.abs().sum().item())).ok
    # a 0-d NumPy array too
    assert _verdict(ch02.ex3, lambda w: w.abs().sum().numpy()).ok


def test_a_table_of_the_checks_own_cases_fails():
    seen = {}
    assert ch02.ex1.check(
        lambda d_k, sigma: seen.setdefault(
            (d_k, sigma), 1 / (sigma**2 * math.sqrt(d_k))
        )
    ).ok
    v = _verdict(ch02.ex1, lambda d_k, sigma: seen.get((d_k, sigma), 1.0))
    assert not v.ok and "expected" in v.message, v.message
    widths = []
    assert ch02.ex2.check(lambda d_k: widths.append(d_k) or 1 / d_k).ok
    v = _verdict(ch02.ex2, lambda d_k: 1 / d_k if d_k in widths else 0.5)
    assert not v.ok and "expected" in v.message, v.message
