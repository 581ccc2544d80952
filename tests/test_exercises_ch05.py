"""Chapter 5's checks: each named mistake is recognised, the right answer passes, a
broken answer gets a sentence."""

import pytest
import torch

from transformer_lib import causal_mask
from transformer_lib.exercises import ch05


def _right(L, P):
    return causal_mask(L) | (torch.arange(L) < P)


def test_ex1_right_answer_passes():
    v = ch05.ex1.check(_right)
    assert v.ok, v.message


def test_ex1_other_right_forms_pass():
    block = lambda L, P: causal_mask(L) | (
        (torch.arange(L)[:, None] < P) & (torch.arange(L) < P)
    )

    def loops(L, P):
        return torch.tensor(
            [[j <= i or (i < P and j < P) for j in range(L)] for i in range(L)]
        )

    for answer in (block, loops):
        v = ch05.ex1.check(answer)
        assert v.ok, v.message


PREFIX_MISTAKES = [
    (
        lambda L, P: causal_mask(L),
        "your prefix is causal too: with P=3, position 0 cannot see position 1",
    ),
    (lambda L, P: ~_right(L, P), "your mask is inverted (True where a key is hidden)"),
    (
        lambda L, P: causal_mask(L) | (torch.arange(L) < P)[:, None],
        (
            "your prefix sees the future beyond it: with L=5, P=3, position 0 sees"
            " position 4"
        ),
    ),
    (
        lambda L, P: _right(L, P + 1) if P < L else _right(L, P),
        "your prefix is one token too long: with P=3, position 0 sees position 3",
    ),
    (
        lambda L, P: _right(L, max(P - 1, 0)),
        (
            "your prefix is one token too short: with P=3, position 0 cannot see"
            " position 2"
        ),
    ),
    (lambda L, P: _right(L, P).T, "your mask is transposed"),
    (
        lambda L, P: _right(L, P) & ~torch.eye(L, dtype=torch.bool),
        "your mask hides position 0 from itself",
    ),
    (
        lambda L, P: torch.ones(L, L, dtype=torch.bool),
        "your mask lets position 0 see position 3",
    ),
    (
        lambda L, P: _right(L, P)
        & ~((torch.arange(L)[:, None] == 2) & (torch.arange(L) == 0)),
        "with L=5, P=3 your mask hides position 0 from position 2, which must see it",
    ),
    (
        lambda L, P: _right(L, P).int(),
        "your mask is torch.int32; the library's masks are torch.bool",
    ),
    (
        lambda L, P: torch.zeros(L, L).masked_fill(~_right(L, P), float("-inf")),
        "your mask is torch.float32",
    ),
    (
        lambda L, P: _right(L, P)[None, None],
        "has shape (1, 1, 5, 5), expected (5, 5): return (L, L)",
    ),
    (
        lambda L, P: _right(L, P)[None],
        "has shape (1, 5, 5), expected (5, 5): return (L, L)",
    ),
]


@pytest.mark.parametrize(
    "answer,words", PREFIX_MISTAKES, ids=[w[:40] for _, w in PREFIX_MISTAKES]
)
def test_ex1_names_each_mistake(answer, words):
    v = ch05.ex1.check(answer)
    assert not v.ok and words in v.message, v.message


def test_ex1_edge_cases_are_checked():
    """P = 0, P = 1 and P = L are tried: an answer wrong only there is caught."""
    wrong_at_full = lambda L, P: (causal_mask(L) if P == L else _right(L, P))
    v = ch05.ex1.check(wrong_at_full)
    assert (
        not v.ok
        and "your prefix is causal too: with P=4, position 0 cannot see position 1"
        in v.message
    ), v.message
    wrong_at_zero = lambda L, P: (
        _right(L, P) if P else torch.ones(L, L, dtype=torch.bool)
    )
    v = ch05.ex1.check(wrong_at_zero)
    assert (
        not v.ok
        and "with L=4, P=0 your mask lets position 0 see position 1" in v.message
    ), v.message
    wrong_at_one = lambda L, P: (
        torch.ones(L, L, dtype=torch.bool) if P == 1 else _right(L, P)
    )
    v = ch05.ex1.check(wrong_at_one)
    assert (
        not v.ok
        and "with L=5, P=1 your mask lets position 0 see position 1" in v.message
    ), v.message


def test_ex1_broken_answers_get_a_sentence():
    assert "raised ZeroDivisionError" in ch05.ex1.check(lambda L, P: 1 / 0).message
    assert (
        "should be a torch.Tensor; got list"
        in ch05.ex1.check(lambda L, P: _right(L, P).tolist()).message
    )
    assert "should be a function" in ch05.ex1.check("prefix_lm_mask").message


def test_ex4_right_answer_passes():
    for answer in ({4}, [4], (4,), 4, torch.tensor([4]), frozenset({4})):
        v = ch05.ex4.check(answer)
        assert v.ok, (answer, v.message)


AGREEING_MISTAKES = [
    ({0, 1, 2, 3, 4}, "every position agrees only with the causal mask"),
    (
        {0},
        (
            "position 0 does not agree: without the mask the full pass lets it read"
            " positions 1 to 4"
        ),
    ),
    (
        {3, 4},
        (
            "position 3 does not agree: without the mask the full pass lets it read"
            " position 4,"
        ),
    ),
    (set(), "the last, of length 5, is the whole sentence"),
    ({5}, "positions are counted from 0"),
    ({4, 7}, "position 7 is outside the sentence"),
]


@pytest.mark.parametrize(
    "answer,words", AGREEING_MISTAKES, ids=[w[:40] for _, w in AGREEING_MISTAKES]
)
def test_ex4_names_each_mistake(answer, words):
    v = ch05.ex4.check(answer)
    assert not v.ok and words in v.message, v.message


def test_ex4_broken_answers_get_a_sentence():
    for answer in ("4", None, {True}, {4.0}, {"last": 4}):
        v = ch05.ex4.check(answer)
        assert (
            not v.ok and "give the agreeing positions as a set of ints" in v.message
        ), (answer, v.message)
