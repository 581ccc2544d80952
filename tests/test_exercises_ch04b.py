"""Chapter 4b's checks: each named mistake is recognised, the right answer passes, a
broken answer gets a sentence."""

import math

import pytest
import torch

from transformer_lib.exercises import ch04b


def _verdict(ex, answer):
    v = ex.check(answer)
    assert isinstance(v.message, str) and "\n" not in v.message
    return v


def _angles(k, d):
    return k * 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)


def _blocks(k, d, top=1.0, bottom=-1.0, scale=1.0):
    """Block-diagonal [[cos, top sin], [bottom sin, cos]] per pair, times scale (M_k by
    default)."""
    a = _angles(k, d)
    M = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = scale * torch.tensor(
            [
                [math.cos(a[i]), top * math.sin(a[i])],
                [bottom * math.sin(a[i]), math.cos(a[i])],
            ]
        )
    return M


def _order(d):
    return torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])


# ---- exercise 1: M'_k for the layout "all sines, then all cosines" -------------------


def _sines_first(k, d, sign=1.0, rows=True, cols=True):
    a = _angles(k, d)
    C, S = torch.diag(torch.cos(a)), torch.diag(torch.sin(a))
    right = torch.cat([torch.cat([C, sign * S], 1), torch.cat([-sign * S, C], 1)], 0)
    if rows and cols:
        return right
    M, o = _blocks(k, d), _order(d)
    return M[o] if rows else M[:, o]


def test_ex1_right_answer_passes():
    assert _verdict(ch04b.ex1, _sines_first).ok
    assert _verdict(ch04b.ex1, lambda k, d: _sines_first(k, d).float()).ok


SINES_FIRST_MISTAKES = {
    "the interleaved M_k": (_blocks, "that is the interleaved M_k"),
    "turns the other way": (lambda k, d: _sines_first(k, d, sign=-1.0), "PE'(pos - k)"),
    "rows only": (lambda k, d: _sines_first(k, d, cols=False), "only the rows"),
    "columns only": (lambda k, d: _sines_first(k, d, rows=False), "only the columns"),
    "something else": (lambda k, d: torch.eye(d), "misses PE'(pos + 3) by up to"),
}


@pytest.mark.parametrize("name", SINES_FIRST_MISTAKES)
def test_ex1_names_each_mistake(name):
    fn, words = SINES_FIRST_MISTAKES[name]
    v = _verdict(ch04b.ex1, fn)
    assert not v.ok and words in v.message, v.message


# ---- exercise 2: the matrix of PE(pos) -> PE(pos - k) --------------------------------


def test_ex2_right_answer_passes():
    for answer in (
        lambda k, d: _blocks(k, d).T,
        lambda k, d: torch.linalg.inv(_blocks(k, d)),
        lambda k, d: _blocks(-k, d),
        lambda k, d: _blocks(k, d).T.float(),
    ):
        assert _verdict(ch04b.ex2, answer).ok


SHIFT_BACK_MISTAKES = {
    "M_k itself": (_blocks, "that is M_k itself"),
    "-M_k": (lambda k, d: _blocks(k, d, scale=-1.0), "-M_k is not M_(-k)"),
    "upper sine flipped": (
        lambda k, d: _blocks(k, d, top=-1.0),
        "only one sine per block",
    ),
    "lower sine flipped": (
        lambda k, d: _blocks(k, d, bottom=1.0),
        "only one sine per block",
    ),
    "something else": (lambda k, d: torch.eye(d), "misses PE(pos - 3) by up to"),
}


@pytest.mark.parametrize("name", SHIFT_BACK_MISTAKES)
def test_ex2_names_each_mistake(name):
    fn, words = SHIFT_BACK_MISTAKES[name]
    v = _verdict(ch04b.ex2, fn)
    assert not v.ok and words in v.message, v.message


@pytest.mark.parametrize("ex", [ch04b.ex1, ch04b.ex2], ids=["ex1", "ex2"])
def test_ex1_ex2_broken_answers_get_a_sentence(ex):
    assert "raised IndexError" in _verdict(ex, lambda k, d: torch.eye(d)[d + 5]).message
    assert "should be a torch.Tensor" in _verdict(ex, lambda k, d: [[1.0]]).message
    assert (
        "has shape (8, 4), expected (8, 8)"
        in _verdict(ex, lambda k, d: torch.eye(d)[:, : d // 2]).message
    )
    assert (
        "floating-point matrix"
        in _verdict(ex, lambda k, d: torch.eye(d, dtype=torch.long)).message
    )
    assert "should be a function" in _verdict(ex, torch.eye(8)).message


# ---- exercise 4: the RoPE score from complex numbers ---------------------------------


def _rope_score(q, k, m, n, phase_sign=1, conjugate=True, halves=False, freq="2i"):
    d = q.shape[-1]
    if halves:
        qc, kc = (
            torch.complex(q[: d // 2], q[d // 2 :]),
            torch.complex(k[: d // 2], k[d // 2 :]),
        )
    else:
        qc, kc = torch.complex(q[0::2], q[1::2]), torch.complex(k[0::2], k[1::2])
    j = torch.arange(d // 2, dtype=torch.float32)
    theta = 10000.0 ** (-(2 * j if freq == "2i" else j) / d)
    phase = phase_sign * (m - n) * theta if conjugate else (m + n) * theta
    return (qc * (kc.conj() if conjugate else kc) * torch.exp(1j * phase)).real.sum()


def test_ex4_right_answer_passes():
    assert _verdict(ch04b.ex4, _rope_score).ok
    assert _verdict(ch04b.ex4, lambda q, k, m, n: _rope_score(q, k, m, n).item()).ok
    # a NumPy scalar
    assert _verdict(ch04b.ex4, lambda q, k, m, n: _rope_score(q, k, m, n).numpy()).ok


ROPE_MISTAKES = {
    "phase n - m": (
        lambda q, k, m, n: _rope_score(q, k, m, n, phase_sign=-1),
        "your phase is (n - m)θ_i",
    ),
    "no conjugate": (
        lambda q, k, m, n: _rope_score(q, k, m, n, conjugate=False),
        "without conjugating k",
    ),
    "no conjugate, formula as written": (
        lambda q, k, m, n: (
            torch.complex(q[0::2], q[1::2])
            * torch.complex(k[0::2], k[1::2])
            * torch.exp(
                1j
                * (m - n)
                * 10000.0 ** (-torch.arange(0, q.shape[-1], 2) / q.shape[-1])
            )
        ).real.sum(),
        "without conjugating k",
    ),
    "rotate-half pairs": (
        lambda q, k, m, n: _rope_score(q, k, m, n, halves=True),
        "rotate-half layout",
    ),
    "frequencies 10000^(-i/d)": (
        lambda q, k, m, n: _rope_score(q, k, m, n, freq="i"),
        "10000^(-i/d)",
    ),
    "complex result": (
        lambda q, k, m, n: (
            torch.complex(q[0::2], q[1::2]) * torch.complex(k[0::2], k[1::2]).conj()
        ).sum(),
        "your score is complex",
    ),
    "something else": (lambda q, k, m, n: q @ k, "but the rotated q and k give"),
}


@pytest.mark.parametrize("name", ROPE_MISTAKES)
def test_ex4_names_each_mistake(name):
    fn, words = ROPE_MISTAKES[name]
    v = _verdict(ch04b.ex4, fn)
    assert not v.ok and words in v.message, v.message


def test_ex4_broken_answers_get_a_sentence():
    assert (
        "raised RuntimeError"
        in _verdict(ch04b.ex4, lambda q, k, m, n: q @ k[:2]).message
    )
    assert (
        "got a tensor of shape (8,): sum over the pairs"
        in _verdict(ch04b.ex4, lambda q, k, m, n: q * k).message
    )
    assert (
        "one finite real number"
        in _verdict(ch04b.ex4, lambda q, k, m, n: "1.0").message
    )
    assert "should be a function" in _verdict(ch04b.ex4, 1.0).message
