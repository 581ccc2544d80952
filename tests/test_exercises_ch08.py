"""Chapter 8's checks: each named mistake is recognised, the right answer passes, a
broken answer gets a sentence."""

import pytest
import torch

from transformer_lib.exercises import ch08


def _dropout(
    keep_prob="1-p",
    scale="1/(1-p)",
    eval_mode="identity",
    mask="elementwise",
    p_one="zeros",
    inplace=False,
    fixed=False,
):
    def f(x, p, training=True):
        if not training:
            return {
                "identity": x,
                "drop": x * (torch.rand_like(x) >= p),
                "scale": x * (1 - p),
            }[eval_mode]
        if p == 1 and p_one == "zeros":
            return torch.zeros_like(x)
        if fixed:
            torch.manual_seed(0)
        q = 1 - p if keep_prob == "1-p" else p
        shape = {
            "elementwise": x.shape,
            "shared": x.shape[-1:],
            "rows": x.shape[:-1] + (1,),
        }[mask]
        keep = (torch.rand(shape) < q).to(x.dtype)
        s = {
            "1/(1-p)": 1 / (1 - p) if p < 1 else float("nan"),
            "none": 1.0,
            "(1-p)": 1 - p,
            "1/p": 1 / p if p > 0 else 1.0,
        }[scale]
        if inplace:
            return x.mul_(keep * s)
        return x * keep * s

    return f


def _fixed_generator(x, p, training=True):
    """A mask from a generator of its own, seeded the same at every call: the same
    numbers every time."""
    if not training or p == 0:
        return x
    if p == 1:
        return torch.zeros_like(x)
    keep = torch.rand(x.shape, generator=torch.Generator().manual_seed(0)) >= p
    return x * keep / (1 - p)


def test_ex4_right_answer_passes():
    v = ch08.ex4.check(_dropout())
    assert v.ok, v.message


DROPOUT_MISTAKES = [
    (_dropout(eval_mode="drop"), "drops in eval mode"),
    (_dropout(eval_mode="scale"), "in eval mode you multiplied by 1 - p"),
    (_dropout(keep_prob="p", scale="1/p"), "you used p as the keep probability"),
    (_dropout(scale="none"), "the survivors are not scaled"),
    (_dropout(scale="(1-p)"), "you multiplied the survivors by 1 - p"),
    (_dropout(scale="1/p"), "you divided the survivors by p"),
    (lambda x, p, training=True: x.clone(), "drops nothing in training mode"),
    (_dropout(mask="shared"), "your masks are shared across the positions"),
    (_dropout(mask="rows"), "your masks are shared across the features"),
    (_dropout(fixed=True), "reseeds PyTorch's random generator"),
    (_fixed_generator, "two calls gave the same mask"),
    (_dropout(inplace=True), "changed its argument x in place"),
    (_dropout(p_one="nan"), "with p=1 your dropout gives NaN"),
]


@pytest.mark.parametrize(
    "answer,words", DROPOUT_MISTAKES, ids=[w for _, w in DROPOUT_MISTAKES]
)
def test_ex4_names_each_mistake(answer, words):
    v = ch08.ex4.check(answer)
    assert not v.ok and words in v.message, v.message


def test_ex4_broken_answers_get_a_sentence():
    assert (
        "raised RuntimeError"
        in ch08.ex4.check(
            lambda x, p, training=True: torch.zeros(2) + torch.zeros(3)
        ).message
    )
    assert (
        "should be a torch.Tensor"
        in ch08.ex4.check(lambda x, p, training=True: 1.0).message
    )
    assert "has shape" in ch08.ex4.check(lambda x, p, training=True: x[0]).message
    assert "should be a function" in ch08.ex4.check("dropout").message


def test_ex4_leaves_the_random_state_alone():
    torch.manual_seed(123)
    want = torch.rand(3)
    torch.manual_seed(123)
    ch08.ex4.check(_dropout())
    assert torch.equal(torch.rand(3), want)


def test_ex5_right_answer_passes():
    v = ch08.ex5.check(lambda x, p: p / (1 - p) * x**2)
    assert v.ok, v.message


VARIANCE_MISTAKES = [
    (lambda x, p: p * (1 - p) * x**2, "variance of the 0/1 mask"),
    (lambda x, p: x**2 / (1 - p), "second moment"),
    (lambda x, p: (1 - p) / p * x**2 if p else 0.0, "swapped keep and drop"),
    (lambda x, p: p / (1 - p), "does not grow with x^2"),
    (lambda x, p: p / (1 - p) * x, "forgot to square x"),
]


@pytest.mark.parametrize(
    "answer,words", VARIANCE_MISTAKES, ids=[w for _, w in VARIANCE_MISTAKES]
)
def test_ex5_names_each_mistake(answer, words):
    v = ch08.ex5.check(answer)
    assert not v.ok and words in v.message, v.message


def test_ex5_broken_answers_get_a_sentence():
    assert "raised ZeroDivisionError" in ch08.ex5.check(lambda x, p: 1 / 0).message
    assert "should be a finite number" in ch08.ex5.check(lambda x, p: "0.11").message
    assert "the variance is" in ch08.ex5.check(lambda x, p: 7.0).message


# ---- the examples: PyTorch's dropout by any door, 3-D activations, the
# argument order, dtypes --

DROPOUT_DOORS = {
    "F.dropout": (
        lambda x, p, training=True: torch.nn.functional.dropout(x, p, training),
        "calls F.dropout",
    ),
    "nn.Dropout": (
        lambda x, p, training=True: torch.nn.Dropout(p).train(training)(x),
        "calls F.dropout",
    ),
    "torch.dropout": (
        lambda x, p, training=True: torch.dropout(x, p, training),
        "calls torch.dropout",
    ),
    "aten.native_dropout": (
        lambda x, p, training=True: torch.ops.aten.native_dropout(x, p, training)[0],
        "torch.ops.aten.native_dropout (PyTorch's dropout)",
    ),
    "the library's fast_dropout": (
        lambda x, p, training=True: __import__("transformer_lib").fast_dropout(
            x, p, training
        ),
        "calls transformer_lib.fast_dropout",
    ),
}


@pytest.mark.parametrize("name", DROPOUT_DOORS)
def test_ex4_bans_dropout_by_any_door(name):
    fn, words = DROPOUT_DOORS[name]
    v = ch08.ex4.check(fn)
    assert (
        not v.ok and words in v.message and "which this exercise forbids" in v.message
    ), v.message


def test_ex4_a_2d_mask_fails_on_3d_activations():
    def two_d(x, p, training=True):
        if not training:
            return x
        return x * (torch.rand(x.shape[0], x.shape[1]) >= p) / (1 - p)

    v = ch08.ex4.check(two_d)
    assert (
        not v.ok and "raised RuntimeError" in v.message and "of shape (" in v.message
    ), v.message


def test_ex4_arguments_in_another_order_are_named():
    right = _dropout()
    v = ch08.ex4.check(lambda x, training, p: right(x, p, training))
    assert (
        not v.ok
        and "in another order, (x, training, p)" in v.message
        and "my_dropout(x, p, training)" in v.message
    ), v.message


def test_ex4_a_numpy_mask_in_float64_is_named_not_a_crash():
    import numpy as np

    def numpy_mask(x, p, training=True):
        if not training or p == 0:
            return x
        # float64, as NumPy computes it
        keep = torch.from_numpy((np.random.rand(*x.shape) >= p) / (1 - p))
        return x * keep

    v = ch08.ex4.check(numpy_mask)
    assert not v.ok and "is float64; keep the input's dtype (float32)" in v.message, (
        v.message
    )

    assert ch08.ex5.check(lambda x, p: np.float64(p / (1 - p) * x * x)).ok
