"""The checks judge the mistakes learners really make, and their comparison is out of
the answer's reach.

One test per kind of problem a learner's answers found (issue 56): natural bugs just
outside the drawn inputs (non-contiguous, half precision, long sequences, int32 ids, pad
ids other than 0, large logits, small eps, fill values that are not -inf), dropout that
is not dropout, routes to a forbidden kernel, answers that reach the comparison or
PyTorch's global state, and messages that hide the difference. Every wrong answer here
must be rejected on every call: each is checked `CALLS` times from fixed seeds
(`seeded`), so the draws are the same at every run."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import transformer_lib.exercises as exercises
from transformer_lib.exercises import (
    ch01,
    ch03,
    ch05,
    ch06,
    ch07,
    ch08,
    ch10,
    ch11a,
    ch13,
    seeded,
)

CALLS = 3


def _rejected(ex, answer, words: str, seed: int = 7, calls: int = CALLS) -> None:
    """`answer` is rejected on every one of `calls` seeded calls, with a sentence
    containing `words`."""
    with seeded(seed * 1000):
        for _ in range(calls):
            v = ex.check(answer)
            assert not v.ok, f"accepted: {v.message}"
            assert words in v.message, v.message
            assert "\n" not in v.message and "_OpWatch" not in v.message


def _softmax(s):
    e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def _attention(q, k, v, mask=None, fill=float("-inf")):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, fill)
    w = torch.softmax(s, -1).nan_to_num(0.0)
    if mask is not None:
        w = w * mask.any(-1, keepdim=True)  # a query with no allowed key: zeros
    return w @ v


def _layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta


# ---- 1. draws that cover what the component must handle ------------------------------


def test_softmax_that_needs_contiguous_input_is_rejected():
    _rejected(
        ch01.ex2,
        lambda s: _softmax(s.view(-1, s.shape[-1])).view(s.shape),
        "raised RuntimeError",
    )


def test_softmax_that_returns_float32_for_half_input_is_rejected():
    _rejected(
        ch01.ex2,
        lambda s: _softmax(s.float()) if s.dtype != torch.float64 else _softmax(s),
        "keep the input's dtype",
    )


def test_layer_norm_that_needs_contiguous_input_is_rejected():
    _rejected(
        ch06.ex5,
        lambda x, g, b, eps: _layer_norm(x.view(-1, x.shape[-1]), g, b, eps).view(
            x.shape
        ),
        "raised RuntimeError",
    )


def test_layer_norm_that_computes_half_input_in_float32_is_rejected():
    _rejected(
        ch06.ex5,
        lambda x, g, b, eps: (
            _layer_norm(x.float(), g.float(), b.float(), eps)
            if x.dtype != torch.float64
            else _layer_norm(x, g, b, eps)
        ),
        "keep the input's dtype",
    )


def test_layer_norm_with_its_own_eps_is_rejected():
    """eps=1e-5 written in, the argument ignored: seen on the drawn batch of variance
    1e-6 with eps=1e-8."""
    _rejected(
        ch06.ex5,
        lambda x, g, b, eps: _layer_norm(x, g, b, 1e-5 if eps < 1e-5 else eps),
        "ignores its eps",
    )


def test_attention_with_a_finite_fill_is_rejected():
    """A fill of -16 (the fully masked query handled) passed 79 % of calls: allowed
    scores far below it now."""
    _rejected(
        ch01.ex3,
        lambda q, k, v, mask=None: _attention(q, k, v, mask, fill=-16.0),
        "fill the masked scores with -inf",
        seed=3,
    )


@pytest.mark.parametrize("dtype", [torch.int8, torch.float16])
def test_masks_from_narrow_positions_are_rejected(dtype):
    """Positions in int8 wrap at 128; float16 holds whole numbers only up to 2048."""

    def positions(L):
        return torch.arange(L).to(dtype)

    def prefix(L, P):
        i = positions(L)
        return (i[None, :] <= i[:, None]) | (i[None, :] < P)

    def torch_causal(L):
        i = positions(L)
        return i[None, :] > i[:, None]

    def local(L, r):
        i = positions(L).float()
        return (i[:, None] - i[None, :]).abs() <= r

    _rejected(ch05.ex1, prefix, "your mask")
    _rejected(ch03.ex4, torch_causal, "not causal")
    _rejected(ch13.ex4, local, "local_mask(")


def test_masks_sliced_from_a_small_table_are_rejected():
    table = torch.ones(1024, 1024, dtype=torch.bool).tril()
    _rejected(ch05.ex1, lambda L, P: table[:L, :L] | (torch.arange(L) < P), "raised")
    _rejected(ch03.ex4, lambda L: ~table[:L, :L], "L =")


def test_teacher_forcing_with_f_pad_default_fill_is_rejected():
    """F.pad fills with 0: it passed whenever pad_id was 0; pad_id is never 0 now."""

    def shift(tgt, bos, eos, pad):
        labels = F.pad(tgt, (0, 1))
        lengths = (tgt != pad).sum(1)
        labels[torch.arange(len(tgt)), lengths] = eos
        return F.pad(tgt, (1, 0), value=bos), labels

    # the old draws gave pad_id 0 one call in 10
    _rejected(ch07.ex5, shift, "not with pad_id", calls=30)


def test_teacher_forcing_that_returns_int64_for_int32_ids_is_rejected():
    def shift(tgt, bos, eos, pad):
        tgt = tgt.long()
        labels = F.pad(tgt, (0, 1), value=pad)
        labels[torch.arange(len(tgt)), (tgt != pad).sum(1)] = eos
        return F.pad(tgt, (1, 0), value=bos), labels

    _rejected(ch07.ex5, shift, "keep the target's dtype")


def test_teacher_forcing_with_ids_below_50_only_is_rejected():
    """A vocabulary assumed small (ids below 50) fails on ids up to 32,000."""

    def shift(tgt, bos, eos, pad):
        table = torch.arange(50)
        tgt = table[tgt.clamp(max=49)].to(tgt.dtype)
        labels = F.pad(tgt, (0, 1), value=pad)
        labels[torch.arange(len(tgt)), (tgt != pad).sum(1)] = eos
        return F.pad(tgt, (1, 0), value=bos), labels

    _rejected(ch07.ex5, shift, "should be <bos> followed by")


def _naive_softmax(z):
    e = z.exp()
    return e / e.sum(-1, keepdim=True)


def test_top_k_without_the_maximum_subtracted_is_rejected():
    def topk(z, T, k):
        z = z / T
        kth = z.topk(k, -1).values[..., -1:]
        return _naive_softmax(z.masked_fill(z < kth, float("-inf")))

    _rejected(ch10.ex2, topk, "subtract each row's maximum")


def test_top_p_without_the_maximum_subtracted_is_rejected():
    def top_p(z, p):
        probs, order = _naive_softmax(z).sort(-1, descending=True)
        drop = probs.cumsum(-1) - probs >= p
        return z.masked_fill(drop.scatter(-1, order, drop), float("-inf"))

    _rejected(ch10.ex3, top_p, "subtract each row's maximum")


def test_a_table_of_the_dropout_variance_cases_is_rejected():
    table = {
        (1.0, 0.1): 1 / 9,
        (2.0, 0.4): 4 * 0.4 / 0.6,
        (-3.0, 0.3): 9 * 0.3 / 0.7,
        (0.5, 0.0): 0.0,
    }
    _rejected(ch08.ex5, lambda x, p: table.get((x, p), 0.0), "the variance is")


def _old_paper_cases():
    """The four corpora 11a.4 used to check on every call (numpy seeds 1 to 8), with
    their token budgets."""

    def lengths(seed, n, low, high, long_share=0.0):
        rng = np.random.default_rng(seed)
        out = rng.integers(low, high + 1, size=n)
        longer = rng.random(n) < long_share
        out[longer] += rng.integers(20, 60, size=int(longer.sum()))
        return out

    return (
        (lengths(1, 20_000, 5, 20, 0.2), lengths(2, 20_000, 5, 20, 0.2), 25_000),
        (lengths(3, 20_000, 5, 9), lengths(4, 20_000, 25, 35), 25_000),
        (lengths(5, 12_000, 30, 50), lengths(6, 12_000, 4, 8), 25_000),
        (lengths(7, 5_000, 10, 20), lengths(8, 5_000, 12, 22), 4_000),
    )


def test_a_table_of_the_paper_batches_cases_is_rejected():
    """Sentences counted instead of tokens, except on a table of the corpora the check
    used to draw the same at every call: the check's corpora are drawn anew at each call
    now, so the table never answers."""

    def key(src, tgt, tokens):
        return len(src), int(np.sum(src)), int(np.sum(tgt)), tokens

    table = {
        key(s, t, k): (2 * k / (s.mean() + t.mean()), (s.sum() + t.sum()) / (2 * k))
        for s, t, k in _old_paper_cases()
    }

    def paper_batches(src, tgt, tokens=25_000):
        return table.get(key(src, tgt, tokens), (tokens, len(src) / tokens))

    _rejected(ch11a.ex4, paper_batches, "you counted sentences, not tokens", calls=10)


# ---- 2. dropout checked as dropout ---------------------------------------------------


def _dropout(make_mask, scale=lambda x, p: x / (1 - p)):
    def f(x, p, training=True):
        if not training or p == 0:
            return x
        if p == 1:
            return torch.zeros_like(x)
        return scale(x, p) * make_mask(x, p)

    return f


DROPOUT_MISTAKES = {
    "forgets x": (
        _dropout(
            lambda x, p: torch.rand_like(x) >= p,
            scale=lambda x, p: torch.ones_like(x) / (1 - p),
        ),
        "whatever x is",
    ),
    "squares x": (
        _dropout(
            lambda x, p: torch.rand_like(x) >= p, scale=lambda x, p: x * x / (1 - p)
        ),
        "a survivor should be x / (1 - p)",
    ),
    "mask shared across the batch": (
        _dropout(lambda x, p: torch.rand_like(x[:1]) >= p),
        "shared across the batch",
    ),
    "mask shared across the positions": (
        _dropout(lambda x, p: torch.rand_like(x[..., :1, :]) >= p),
        "shared across the positions",
    ),
    "rate shifted by <=": (
        _dropout(lambda x, p: torch.rand_like(x) > p + 0.005),
        "your drop rate is off",
    ),
    "8-bit draws": (
        _dropout(lambda x, p: torch.randint(0, 256, x.shape) >= int(p * 256)),
        "your drop rate is off",
    ),
    "rate rounded to 1/10": (
        _dropout(lambda x, p: torch.rand_like(x) >= round(p, 1)),
        "your drop rate is off",
    ),
    "float64 scaled in float32": (
        _dropout(
            lambda x, p: torch.rand_like(x) >= p,
            scale=lambda x, p: (x.float() / (1 - p)).to(x.dtype),
        ),
        "float64",
    ),
}


@pytest.mark.parametrize("name", DROPOUT_MISTAKES)
def test_dropout_mistakes_are_rejected(name):
    answer, words = DROPOUT_MISTAKES[name]
    _rejected(ch08.ex4, answer, words, calls=2)


def test_dropout_false_rejection_rate_and_power_are_computed_and_stated():
    """The rates the check states are sums of exact probabilities: the binomial sum and
    Fisher's hypergeometric tail agree with integer arithmetic on small cases; the
    docstring states the computed values."""
    n, q = 200, 0.1
    exact = sum(math.comb(n, k) * q**k * (1 - q) ** (n - k) for k in range(10, 31))
    assert ch08._binomial_mass(n, q, 10, 30) == pytest.approx(exact, rel=1e-9)
    first, second = torch.zeros(60, dtype=torch.bool), torch.zeros(60, dtype=torch.bool)
    # 20 and 15 dropped, 10 of them together
    first[:20], second[:10], second[30:35] = True, True, True
    tail = sum(
        math.comb(20, k) * math.comb(40, 15 - k) for k in range(10, 16)
    ) / math.comb(60, 15)
    assert ch08._together(first, second)[:3] == pytest.approx(
        (10 / 60, 20 * 15 / 60 / 60, tail), rel=1e-9
    )
    # the normal approximation's 3.8e-8
    normal = math.erfc(ch08.Z / math.sqrt(2))
    assert ch08.Z == 5.5 and 0.9 * normal < ch08.FALSE_REJECTION < 1.1 * normal
    assert (
        ch08.FALSE_REJECTION_PER_CALL
        == 3 * ch08.FALSE_REJECTION + 7 * ch08.ALPHA
        < 1e-6
    )
    assert ch08.MISS_COARSE < 1e-6
    doc = " ".join(ch08._check_dropout.__doc__.split())  # its words, however wrapped
    for name in ("FALSE_REJECTION_PER_CALL", "FALSE_REJECTION", "ALPHA", "MISS_COARSE"):
        # 2.5e-7, as the docstring writes it
        value = f"{getattr(ch08, name):.1e}".replace("e-0", "e-")
        assert f"{name} = {value}" in doc, name
    calls = 1 / ch08.FALSE_REJECTION_PER_CALL / 1e6
    assert f"once in {calls:.1f} million calls" in doc


# ---- 3. forbidden kernels, by what they compute --------------------------------------


def _eye_like(s):
    return torch.eye(s.shape[-1], dtype=s.dtype)


SOFTMAX_ROUTES = {
    "fused attention": (
        lambda s: F.scaled_dot_product_attention(
            s.unsqueeze(-2), _eye_like(s), _eye_like(s), scale=1.0
        ).squeeze(-2)
    ),
    "torch._refs": lambda s: torch._refs.softmax(s, -1),
    "torch._decomp": lambda s: torch._decomp.decompositions._softmax(s, -1, False),
}


@pytest.mark.parametrize("name", SOFTMAX_ROUTES)
def test_softmax_routes_are_forbidden(name):
    import torch._decomp.decompositions  # noqa: F401
    import torch._refs  # noqa: F401

    _rejected(ch01.ex2, SOFTMAX_ROUTES[name], "which this exercise forbids", calls=1)


def _tokens(x):
    return x.reshape(-1, x.shape[-1])


NORM_ROUTES = {
    "batch norm of the transposed tokens": (
        lambda x, g, b, eps: F.batch_norm(
            _tokens(x).T, None, None, training=True, eps=eps
        ).T.reshape(x.shape)
        * g
        + b
    ),
    "instance norm": (
        lambda x, g, b, eps: F.instance_norm(_tokens(x)[:, None, :], eps=eps).reshape(
            x.shape
        )
        * g
        + b
    ),
    "RMS norm of the centred input": (
        lambda x, g, b, eps: F.rms_norm(
            x - x.mean(-1, keepdim=True), x.shape[-1:], eps=eps
        )
        * g
        + b
    ),
    "torch._refs layer norm": lambda x, g, b, eps: torch._refs.nn.functional.layer_norm(
        x, x.shape[-1:], g, b, eps
    ),
}


@pytest.mark.parametrize("name", NORM_ROUTES)
def test_layer_norm_routes_are_forbidden(name):
    import torch._refs.nn.functional  # noqa: F401

    _rejected(ch06.ex5, NORM_ROUTES[name], "which this exercise forbids", calls=1)


def test_decomposed_dropout_is_forbidden():
    import torch._refs.nn.functional  # noqa: F401

    _rejected(
        ch08.ex4,
        lambda x, p, training=True: torch._refs.nn.functional.dropout(x, p, training),
        "which this exercise forbids",
        calls=1,
    )


# ---- 4. a comparison the answer cannot reach -----------------------------------------


def _from_the_callers_frames(name):
    """A tensor called `name` in one of the calling frames (the check's expected value),
    if any."""
    frame = sys._getframe(2)
    while frame is not None:
        if isinstance(frame.f_locals.get(name), torch.Tensor):
            return frame.f_locals[name]
        frame = frame.f_back
    return None


def test_sublayer_check_computes_its_expected_value_after_the_call():
    def peek(x, sublayer, norm, dropout, norm_first):
        want = _from_the_callers_frames("want")
        return want.clone() if want is not None else x * 0

    _rejected(ch06.ex6, peek, "your")


def test_decoder_layer_check_computes_its_expected_value_after_the_call():
    def peek(layer, x, memory, tgt_mask, memory_mask):
        want = _from_the_callers_frames("want")
        return want.clone() if want is not None and want.shape == x.shape else x * 0

    _rejected(ch07.ex6, peek, "your")


class _Agreeable(torch.Tensor):
    """A tensor subclass whose comparisons always say yes."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (
            torch.allclose,
            torch.equal,
            torch.Tensor.allclose,
            torch.Tensor.equal,
        ):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


def test_a_tensor_subclass_cannot_answer_for_itself():
    _rejected(
        ch01.ex2, lambda s: torch.zeros_like(s).as_subclass(_Agreeable), "your softmax"
    )
    _rejected(
        ch06.ex6, lambda x, *a: torch.zeros_like(x).as_subclass(_Agreeable), "your"
    )
    _rejected(
        ch07.ex5,
        lambda tgt, *a: (
            torch.zeros(len(tgt), tgt.shape[1] + 1, dtype=tgt.dtype).as_subclass(
                _Agreeable
            ),
        )
        * 2,
        "your",
    )


def test_a_right_answer_returned_as_a_subclass_passes():
    with seeded(5):
        assert ch01.ex2.check(lambda s: _softmax(s).as_subclass(_Agreeable)).ok


def test_global_state_changes_are_named_and_undone():
    def dtype(s):
        torch.set_default_dtype(torch.float64)
        return _softmax(s)

    def grad(s):
        torch.set_grad_enabled(False)
        return _softmax(s)

    def reseed(s):
        torch.manual_seed(0)
        return _softmax(s)

    _rejected(ch01.ex2, dtype, "changed PyTorch's default dtype", calls=1)
    assert torch.get_default_dtype() == torch.float32
    _rejected(ch01.ex2, grad, "turned gradient tracking off", calls=1)
    assert torch.is_grad_enabled()
    _rejected(ch01.ex2, reseed, "reseeded PyTorch's random generator", calls=1)
    _rejected(
        ch08.ex4,
        _dropout(lambda x, p: (torch.manual_seed(0), torch.rand_like(x) >= p)[1]),
        "reseeds PyTorch's random generator",
        calls=1,
    )


def test_an_answer_that_cuts_the_graph_is_rejected():
    _rejected(ch01.ex2, lambda s: _softmax(s).detach(), "no gradient flows", calls=1)
    _rejected(
        ch01.ex3,
        lambda q, k, v, mask=None: _attention(q.detach(), k, v, mask),
        "no gradient reaches q",
        calls=1,
    )
    _rejected(
        ch06.ex5,
        lambda x, g, b, eps: _layer_norm(x, g.detach(), b, eps),
        "no gradient reaches gamma",
        calls=1,
    )
    _rejected(
        ch07.ex6,
        lambda layer, x, memory, t, m: (
            layer(x, memory.detach(), t, m)
            if False
            else _decoder(layer, x, memory.detach(), t, m)
        ),
        "no gradient reaches memory",
        calls=1,
    )
    _rejected(
        ch08.ex4,
        _dropout(
            lambda x, p: torch.rand_like(x) >= p,
            scale=lambda x, p: x.detach() / (1 - p),
        ),
        "no gradient flows",
        calls=1,
    )


def _decoder(layer, x, memory, tgt_mask, memory_mask):
    x = layer.norm1(x + layer.self_attn(x, x, x, tgt_mask))
    x = layer.norm2(x + layer.cross_attn(x, memory, memory, memory_mask))
    return layer.norm3(x + layer.ffn(x))


def test_exit_and_other_base_exceptions_get_a_sentence():
    class Stop(BaseException):
        pass

    def stop(s):
        raise Stop("halt")

    _rejected(ch01.ex2, lambda s: sys.exit(1), "called exit()", calls=1)
    _rejected(ch01.ex2, lambda s: exit(), "called exit()", calls=1)
    _rejected(ch01.ex2, stop, "raised Stop, which is not an ordinary error", calls=1)


def test_keyboard_interrupt_still_stops_the_check():
    def interrupted(s):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ch01.ex2.check(interrupted)


def test_an_answer_that_never_returns_is_stopped(monkeypatch):
    monkeypatch.setattr(exercises, "TIME_LIMIT", 0.5)

    def forever(s):
        while True:
            pass

    _rejected(ch01.ex2, forever, "did not return within 0.5 seconds", calls=1)

    def forever_catching(s):
        while True:
            try:
                while True:
                    pass
            except Exception:  # an ordinary except clause does not hold the limit off
                pass

    _rejected(ch01.ex2, forever_catching, "did not return within 0.5 seconds", calls=1)


# ---- 5. messages that show the difference --------------------------------------------


def test_numbers_are_shown_to_the_digits_that_differ():
    from transformer_lib.exercises import digits

    assert digits(11840.4, 11840) == ("11840.4", "11840")
    assert digits(0.123456789, 0.1234571) == ("0.1234568", "0.1234571")
    _rejected(
        ch03.ex2,
        lambda L, d, h: 2 * (4 * L * d * d + 2 * L * L * d) + 0.4,
        "you return",
        calls=1,
    )
    with seeded(1):
        v = ch03.ex2.check(lambda L, d, h: 2 * (4 * L * d * d + 2 * L * L * d) + 0.4)
    got, want = v.message.split("you return ")[1].split(", PyTorch counts ")
    assert got.rstrip(":").split(":")[0] != want.split(":")[0], v.message
    v = ch08.ex5.check(lambda x, p: p / (1 - p) * x * x + 1e-4)
    assert "0.11111" in v.message and "0.11121" in v.message, v.message


def test_a_tensor_difference_names_the_element_and_the_precision():
    """A float32 layer norm computed in float16 inside: off by about 1e-3, named with
    its digits."""
    _rejected(
        ch06.ex5,
        lambda x, g, b, eps: _layer_norm(x.half(), g.half(), b.half(), eps).to(x.dtype),
        "more than float32 precision allows at this magnitude",
        calls=1,
    )
    from transformer_lib.exercises import mismatch

    said = mismatch(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0001, 3.0]))
    assert said.startswith(
        "at [1] you return 2, expected 2.0001: a difference of 0.0001"
    ), said


def test_no_internal_name_reaches_a_sentence():
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    def complains(s):
        raise RuntimeError(f"cannot run under {_get_current_dispatch_mode()!r}")

    _rejected(ch01.ex2, complains, "the check's watch for forbidden functions", calls=1)


@pytest.mark.parametrize(
    "answer, words",
    [
        (lambda s: torch.zeros_like(s, device="meta"), "meta device"),
        (lambda s: iter([s]), "should be a torch.Tensor"),
    ],
)
def test_odd_returns_get_their_own_sentence(answer, words):
    _rejected(ch01.ex2, answer, words, calls=1)


def test_the_catch_all_says_what_it_was_reading():
    class Unreadable:
        def __getattr__(self, name):
            raise RuntimeError("no attributes here")

    v = ch05.ex4.check(Unreadable())
    assert not v.ok and "\n" not in v.message
