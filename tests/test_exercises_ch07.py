"""Chapter 7's checks: each named mistake is recognised, the right answer passes, a
broken answer gets a sentence."""

import pytest
import torch
import torch.nn.functional as F

from transformer_lib.exercises import ch07
from transformer_lib.masks import teacher_forcing


def _tf(tgt, bos, eos, pad):
    """Teacher forcing written out (the chapter's solution): the library's own is
    forbidden to answers."""
    pad_col = torch.full((tgt.shape[0], 1), pad, dtype=tgt.dtype)
    lengths = (tgt != pad).sum(dim=1, keepdim=True)
    return torch.cat([torch.full_like(pad_col, bos), tgt], 1), torch.cat(
        [tgt, pad_col], 1
    ).scatter(1, lengths, eos)


def _right_shift(tgt, bos, eos, pad):
    return _tf(tgt, bos, eos, pad)


def _pad_col(tgt, value):
    return torch.full((tgt.shape[0], 1), value, dtype=tgt.dtype)


SHIFT_MISTAKES = [
    (lambda t, b, e, p: (_tf(t, b, e, p)[1], _tf(t, b, e, p)[1]), "not shifted right"),
    (
        lambda t, b, e, p: (torch.cat([t, _pad_col(t, p)], 1), _tf(t, b, e, p)[1]),
        "not shifted right",
    ),
    (
        lambda t, b, e, p: (torch.cat([_pad_col(t, p), t], 1), _tf(t, b, e, p)[1]),
        "starts with the padding id",
    ),
    (
        lambda t, b, e, p: (_tf(t, b, e, p)[0], _tf(t, b, e, p)[0]),
        "labels are the decoder input",
    ),
    (
        lambda t, b, e, p: (_tf(t, b, e, p)[0], torch.cat([t, _pad_col(t, p)], 1)),
        "labels have no <eos>",
    ),
    (
        lambda t, b, e, p: (_tf(t, b, e, p)[0], torch.cat([t, _pad_col(t, e)], 1)),
        "at the end of the row",
    ),
    (
        lambda t, b, e, p: (
            torch.cat([_pad_col(t, b), t, _pad_col(t, e)], 1),
            _tf(t, b, e, p)[1],
        ),
        "<eos> is never fed",
    ),
    (
        lambda t, b, e, p: (torch.cat([_pad_col(t, b), t[:, :-1]], 1), t),
        "one longer than the target",
    ),
    (
        lambda t, b, e, p: tuple(x.float() for x in _tf(t, b, e, p)),
        "keep the target's dtype",
    ),
]


def test_ex5_right_answer_passes():
    v = ch07.ex5.check(_right_shift)
    assert v.ok, v.message


@pytest.mark.parametrize(
    "answer,words",
    SHIFT_MISTAKES,
    ids=[f"{i}-{w}" for i, (_, w) in enumerate(SHIFT_MISTAKES)],
)
def test_ex5_names_each_mistake(answer, words):
    v = ch07.ex5.check(answer)
    assert not v.ok and words in v.message, v.message


def test_ex5_broken_answers_get_a_sentence():
    assert "raised ValueError" in ch07.ex5.check(lambda t, b, e, p: int("x")).message
    assert "should return a pair" in ch07.ex5.check(lambda t, b, e, p: t).message
    assert (
        "should be a torch.Tensor"
        in ch07.ex5.check(lambda t, b, e, p: (t.tolist(), t)).message
    )
    assert (
        "should be <bos> followed by"
        in ch07.ex5.check(
            lambda t, b, e, p: (_tf(t, b, e, p)[0] * 0, _tf(t, b, e, p)[1])
        ).message
    )


def _norm(layer, which, d):
    """One of the layer's norms by name, or a LayerNorm without γ and β ("free",
    "fresh"), or none."""
    if which == "free":
        return lambda h: F.layer_norm(h, (d,))
    if which == "fresh":
        return torch.nn.LayerNorm(d)  # a new module: γ = 1, β = 0
    if which == "none":
        return lambda h: h
    return getattr(layer, which)


def _layer(
    q="h",
    k="m",
    v="m",
    self_mask="tgt",
    cross_mask="mem",
    pre=False,
    cross_residual=True,
    self_residual=True,
    ffn_residual=True,
    norms=("norm1", "norm2", "norm3"),
):
    def f(layer, x, memory, tgt_mask, memory_mask):
        n1, n2, n3 = (_norm(layer, n, x.shape[-1]) for n in norms)
        masks = {"tgt": tgt_mask, "mem": memory_mask, None: None}
        if pre:
            y1 = x + layer.self_attn(
                layer.norm1(x), layer.norm1(x), layer.norm1(x), tgt_mask
            )
            y2 = y1 + layer.cross_attn(layer.norm2(y1), memory, memory, memory_mask)
            return y2 + layer.ffn(layer.norm3(y2))
        a = layer.self_attn(x, x, x, masks[self_mask])
        h = n1(x + a if self_residual else a)
        pick = {"h": h, "m": memory, "x": x}
        c = layer.cross_attn(pick[q], pick[k], pick[v], masks[cross_mask])
        h = n2(h + c if cross_residual else c)
        return n3(h + layer.ffn(h) if ffn_residual else layer.ffn(h))

    return f


LAYER_MISTAKES = [
    (_layer(k="h"), "reads the decoder's states as keys"),
    (_layer(v="h"), "reads the decoder's states as values"),
    (_layer(k="h", v="h"), "attends over the decoder's own states"),
    (_layer(q="m", k="h", v="h"), "takes its queries from memory"),
    (_layer(self_mask="mem", cross_mask="tgt"), "you swapped the masks"),
    (_layer(q="x"), "queries are the layer's input x"),
    (_layer(self_mask=None), "ignores tgt_mask"),
    (_layer(cross_mask=None), "ignores memory_mask"),
    (_layer(pre=True), "pre-LN"),
    (_layer(cross_residual=False), "no residual connection around the cross-attention"),
    (_layer(self_residual=False), "no residual connection around the self-attention"),
    (_layer(ffn_residual=False), "no residual connection around the FFN"),
    # the LayerNorms: the check's layer has its own γ and β in each, so none of these
    # can pass
    (_layer(norms=("norm1", "norm3", "norm2")), "you swapped norm2 and norm3"),
    (_layer(norms=("norm2", "norm1", "norm3")), "you swapped norm1 and norm2"),
    (_layer(norms=("norm1", "norm1", "norm1")), "you used norm1 3 times"),
    (_layer(norms=("norm1", "norm2", "norm2")), "you used norm2 2 times"),
    (
        _layer(norms=("norm2", "norm3", "norm1")),
        "LayerNorms are in the wrong order (norm2, norm3, norm1)",
    ),
    (
        _layer(norms=("free", "free", "free")),
        (
            "without the layer's γ and β after the self-attention (use layer.norm1) "
            "and the cross-attention (use layer.norm2) and the FFN (use layer.norm3)"
        ),
    ),
    (
        _layer(norms=("norm1", "norm2", "free")),
        "without the layer's γ and β after the FFN (use layer.norm3)",
    ),
    (
        _layer(norms=("fresh", "norm2", "norm3")),
        "without the layer's γ and β after the self-attention",
    ),
    (
        _layer(norms=("norm1", "none", "norm3")),
        "no LayerNorm after the cross-attention (layer.norm2)",
    ),
]


def test_ex6_right_answer_passes():
    v = ch07.ex6.check(_layer())
    assert v.ok, v.message


@pytest.mark.parametrize(
    "answer,words", LAYER_MISTAKES, ids=[w for _, w in LAYER_MISTAKES]
)
def test_ex6_names_each_mistake(answer, words):
    v = ch07.ex6.check(answer)
    assert not v.ok and words in v.message, v.message


def test_ex6_queries_from_memory_with_other_lengths():
    # right while S == T... then (B, S, d)
    def q_from_memory(layer, x, memory, tgt_mask, memory_mask):
        if memory.shape == x.shape:
            return _layer()(layer, x, memory, tgt_mask, memory_mask)
        return memory

    v = ch07.ex6.check(q_from_memory)
    assert not v.ok and "queries must come from the decoder" in v.message, v.message


@pytest.mark.parametrize(
    "order",
    [
        ("memory", "x", "tgt_mask", "memory_mask"),
        ("x", "memory", "memory_mask", "tgt_mask"),
        ("tgt_mask", "memory_mask", "x", "memory"),
    ],
    ids=", ".join,
)
def test_ex6_arguments_in_another_order_are_named(order):
    def swapped(layer, *args):  # its parameters after `layer` are in `order`
        got = dict(zip(order, args))
        return _layer()(
            layer, got["x"], got["memory"], got["tgt_mask"], got["memory_mask"]
        )

    v = ch07.ex6.check(swapped)
    assert not v.ok, v.message
    # with T == S this is the swapped-masks mistake
    if order[2:] == ("memory_mask", "tgt_mask"):
        assert "you swapped the masks" in v.message, v.message
    else:
        assert f"in another order, ({', '.join(order)})" in v.message, v.message


def test_ex6_broken_answers_get_a_sentence():
    assert "raised" in ch07.ex6.check(lambda layer, x, m, t, mm: layer.nope).message
    assert (
        "should be a torch.Tensor"
        in ch07.ex6.check(lambda layer, x, m, t, mm: None).message
    )
    assert (
        "differs from DecoderLayer"
        in ch07.ex6.check(lambda layer, x, m, t, mm: x).message
    )


def test_ex6_leaves_the_random_state_alone():
    torch.manual_seed(123)
    want = torch.rand(3)
    torch.manual_seed(123)
    ch07.ex6.check(_layer())
    assert torch.equal(torch.rand(3), want)


# ---- the examples: the library's answer, fresh special ids, F.pad's 0,
# in-place changes


def test_ex5_bans_teacher_forcing_and_names_it():
    v = ch07.ex5.check(lambda t, b, e, p: teacher_forcing(t, b, e, p))
    assert (
        not v.ok
        and (
            "calls transformer_lib.teacher_forcing"
            " (the library's answer to this exercise)"
        )
        in v.message
    ), v.message
    v = ch07.ex5.check(teacher_forcing)
    assert not v.ok and "which this exercise forbids" in v.message, v.message


def test_ex5_special_ids_are_drawn_anew():
    hard_coded = lambda t, b, e, p: _tf(t, 1, 2, 0)
    v = ch07.ex5.check(hard_coded)
    assert not v.ok, "ids hard-coded as 1/2/0 must fail"
    ids = set()
    for _ in range(3):
        assert ch07.ex5.check(
            lambda t, b, e, p: ids.add((b, e, p)) or _tf(t, b, e, p)
        ).ok
    assert len(ids) > 1


def test_ex5_f_pad_pads_with_zero_not_pad_id():
    def with_f_pad(t, b, e, p):
        dec = torch.cat([torch.full((t.shape[0], 1), b, dtype=t.dtype), t], 1)
        lengths = (t != p).sum(1, keepdim=True)
        return dec, F.pad(t, (0, 1)).scatter(1, lengths, e)

    for _ in range(5):  # pad_id 0 is drawn now and then: then it is right
        v = ch07.ex5.check(with_f_pad)
        if not v.ok:
            break
    assert not v.ok and "not with pad_id" in v.message and "F.pad" in v.message, (
        v.message
    )


def test_ex5_in_place():
    def in_place(t, b, e, p):
        dec, lab = _tf(t.clone(), b, e, p)
        t[t == p] = 0 if p else 1
        return dec, lab

    v = ch07.ex5.check(in_place)
    assert not v.ok and "changed its argument t in place" in v.message, v.message


def test_ex6_bans_the_layer_itself_and_names_float64():
    v = ch07.ex6.check(
        lambda layer, x, memory, tgt_mask, memory_mask: layer(
            x, memory, tgt_mask, memory_mask
        )
    )
    assert (
        not v.ok
        and "calls layer(x, memory, ...) (DecoderLayer's own forward pass)" in v.message
    ), v.message
    v = ch07.ex6.check(
        lambda layer, x, memory, tgt_mask, memory_mask: layer.forward(
            x, memory, tgt_mask, memory_mask
        )
    )
    assert not v.ok and "which this exercise forbids" in v.message, v.message
    v = ch07.ex6.check(lambda *a: _layer()(*a).double())
    assert not v.ok and "is float64; keep the input's dtype (float32)" in v.message, (
        v.message
    )

    def in_place(layer, x, memory, tgt_mask, memory_mask):
        out = _layer()(layer, x, memory, tgt_mask, memory_mask)
        memory.zero_()
        return out

    v = ch07.ex6.check(in_place)
    assert not v.ok and "changed its argument memory in place" in v.message, v.message
