"""Chapter 11b's check: each named mistake is recognised, the right answer passes, a
broken answer gets a sentence."""

import pytest

from transformer_lib.exercises import ch11b


def _flops(layers="decoder", entries="above", factor=4, per_head=False, passes=3):
    """masked_flops, written right or with one mistake (which layers, which entries, the
    cost per entry)."""

    def f(config, T):
        n = {
            "decoder": config.n_decoder_layers,
            "one": 1,
            "encoder": config.n_encoder_layers,
            "both": config.n_encoder_layers + config.n_decoder_layers,
        }[layers]
        count = {
            "above": T * (T - 1) / 2,
            "all": T * T,
            "half": T * T / 2,
            "kept": T * (T + 1) / 2,
        }[entries]
        width = config.d_model / config.n_heads if per_head else config.d_model
        return passes * n * factor * width * count

    return f


def test_ex4_right_answer_passes():
    v = ch11b.ex4.check(_flops())
    assert v.ok, v.message
    # an int works too
    assert ch11b.ex4.check(
        lambda c, T: 6 * c.n_decoder_layers * c.d_model * T * (T - 1)
    ).ok


MISTAKES = [
    (_flops(entries="all"), "whole T × T score matrix"),
    (_flops(entries="half"), "you took half of T × T"),
    (_flops(entries="kept"), "you counted the entries the mask keeps"),
    (_flops(factor=2), "half the right count"),  # a multiply-add counted as 1 FLOP ...
    # ... or A V forgotten: the same count, one sentence
    (_flops(factor=2), "only one of the two products"),
    (_flops(per_head=True), "you counted one head's d_k"),
    (_flops(passes=1), "forward pass only"),
    (_flops(layers="one"), "you counted one decoder layer"),
    (_flops(layers="encoder"), "you used n_encoder_layers"),
    (_flops(layers="both"), "the encoder's self-attention too"),
]


@pytest.mark.parametrize("answer,words", MISTAKES, ids=[w for _, w in MISTAKES])
def test_ex4_names_each_mistake(answer, words):
    v = ch11b.ex4.check(answer)
    assert not v.ok and words in v.message, v.message


def test_ex4_single_token_costs_nothing():
    v = ch11b.ex4.check(lambda c, T: _flops()(c, T) if T > 1 else 1.0)
    assert not v.ok and "with T = 1" in v.message, v.message


def test_ex4_broken_answers_get_a_sentence():
    assert "raised ZeroDivisionError" in ch11b.ex4.check(lambda c, T: 1 / 0).message
    assert (
        "should be a finite number" in ch11b.ex4.check(lambda c, T: "7004160").message
    )
    assert "should be a function" in ch11b.ex4.check(7004160).message
    v = ch11b.ex4.check(lambda c, T: 7.0)
    assert (
        not v.ok
        and ("not 7,004,160" in v.message or "not 120,960" in v.message)
        and "\n" not in v.message
    ), v.message


# ---- forgetting the /2 was once told "you counted the encoder too" -------------------
def test_ex4_forgetting_the_half_is_named():
    v = ch11b.ex4.check(
        lambda c, T: 6 * c.n_decoder_layers * c.d_model * T * (T - 1) * 2
    )
    assert not v.ok and "you left out the /2" in v.message, v.message
    v = ch11b.ex4.check(_flops(layers="both"))
    assert not v.ok and "encoder's self-attention too" in v.message, v.message


def test_ex4_a_table_of_the_checks_own_cases_fails():
    right, seen = _flops(), {}
    assert ch11b.ex4.check(
        lambda c, T: seen.setdefault(
            (c.d_model, c.n_heads, c.n_encoder_layers, c.n_decoder_layers, T),
            right(c, T),
        )
    ).ok
    fixed = {k: v for k, v in seen.items() if k[:4] in ((96, 6, 3, 5), (512, 8, 6, 6))}
    v = ch11b.ex4.check(
        lambda c, T: fixed.get(
            (c.d_model, c.n_heads, c.n_encoder_layers, c.n_decoder_layers, T), 0
        )
    )
    assert not v.ok, v.message


def test_ex4_numpy_scalars_are_numbers():
    import numpy as np

    assert ch11b.ex4.check(lambda c, T: np.float64(_flops()(c, T))).ok
