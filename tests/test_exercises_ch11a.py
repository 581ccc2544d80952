"""Chapter 11a's check: each named mistake is recognised, the right answer passes, a
broken answer gets a sentence."""

import math

import numpy as np
import pytest

from transformer_lib.exercises import ch11a


def _paper(pairs=None, batches=None):
    """paper_batches, right unless `pairs(s, t, tokens)` or
    `batches(s, t, tokens, pairs)` replace a part."""

    def f(src, tgt, tokens=25_000):
        right = 2 * tokens / (np.mean(src) + np.mean(tgt))
        p = right if pairs is None else pairs(src, tgt, tokens)
        b = len(src) / right if batches is None else batches(src, tgt, tokens, p)
        return p, b

    return f


def test_ex4_right_answer_passes():
    for answer in (
        _paper(),
        _paper(
            pairs=lambda s, t, k: int(2 * k / (s.mean() + t.mean())),
            batches=lambda s, t, k, p: math.ceil(len(s) / p),
        ),
        lambda s, t, tokens=25_000: tuple(
            np.float32(x) for x in _paper()(s, t, tokens)
        ),
    ):
        v = ch11a.ex4.check(answer)
        assert v.ok, v.message


PAPER_MISTAKES = [
    (_paper(pairs=lambda s, t, k: k), "you counted sentences, not tokens"),
    (_paper(pairs=lambda s, t, k: 2 * k), "you counted sentences, not tokens"),
    (_paper(pairs=lambda s, t, k: k / s.mean()), "you counted the source side only"),
    (_paper(pairs=lambda s, t, k: k / t.mean()), "you counted the target side only"),
    (
        _paper(pairs=lambda s, t, k: k / max(s.mean(), t.mean())),
        "you let the longer side alone fill its budget",
    ),
    (_paper(pairs=lambda s, t, k: 2 * k / s.mean()), "by the source length alone"),
    (_paper(pairs=lambda s, t, k: 2 * k / t.mean()), "by the target length alone"),
    (
        _paper(pairs=lambda s, t, k: k / (s.mean() + t.mean())),
        "`tokens` counts one side",
    ),
    (
        _paper(pairs=lambda s, t, k: 2 * k / (np.median(s) + np.median(t))),
        "you used the median length",
    ),
    (
        _paper(pairs=lambda s, t, k: 2 * k / (s.mean() + t.mean() + 3)),
        "you added <bos>/<eos>",
    ),
    (
        _paper(pairs=lambda s, t, k: 50_000 / (s.mean() + t.mean())),
        "ignores the argument `tokens`",
    ),
    (
        lambda s, t, tokens=25_000: _paper()(s, t, tokens)[::-1],
        "you swapped the two numbers",
    ),
    (
        _paper(batches=lambda s, t, k, p: len(s) / k),
        "you divided the number of pairs by tokens",
    ),
    (
        _paper(batches=lambda s, t, k, p: s.sum() / k),
        "you counted the source tokens only",
    ),
    (
        _paper(batches=lambda s, t, k, p: t.sum() / k),
        "you counted the target tokens only",
    ),
    (
        _paper(batches=lambda s, t, k, p: (s.sum() + t.sum()) / k),
        "you gave twice as many batches",
    ),
    (_paper(batches=lambda s, t, k, p: 3.0), "an epoch is"),
    (_paper(pairs=lambda s, t, k: 1234.0), "a batch holds"),
]


@pytest.mark.parametrize(
    "answer,words", PAPER_MISTAKES, ids=[w for _, w in PAPER_MISTAKES]
)
def test_ex4_names_each_mistake(answer, words):
    v = ch11a.ex4.check(answer)
    assert not v.ok and words in v.message, v.message


def test_ex4_broken_answers_get_a_sentence():
    assert (
        "raised ZeroDivisionError"
        in ch11a.ex4.check(lambda s, t, tokens=1: 1 / 0).message
    )
    assert (
        "should return two numbers"
        in ch11a.ex4.check(lambda s, t, tokens=1: 5.0).message
    )
    assert "of length 3" in ch11a.ex4.check(lambda s, t, tokens=1: (1, 2, 3)).message
    assert (
        "should be a finite number"
        in ch11a.ex4.check(lambda s, t, tokens=1: ("a", 2)).message
    )
    assert (
        "should be a finite number"
        in ch11a.ex4.check(lambda s, t, tokens=1: (float("nan"), 2)).message
    )
    assert "should be a function" in ch11a.ex4.check("1720").message


def test_numpy_scalars_are_numbers():
    import numpy as np

    right = _paper()
    assert ch11a.ex4.check(
        lambda s, t, k: tuple(np.float64(x) for x in right(s, t, k))
    ).ok
