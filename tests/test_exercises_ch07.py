"""Chapter 7's checks: each named mistake is recognised, the right answer passes, a broken answer gets a sentence."""
import pytest
import torch

from transformer_lib.exercises import ch07
from transformer_lib.masks import teacher_forcing


def _right_shift(tgt, bos, eos, pad):
    return teacher_forcing(tgt, bos, eos, pad)


def _pad_col(tgt, value):
    return torch.full((tgt.shape[0], 1), value, dtype=tgt.dtype)


SHIFT_MISTAKES = [
    (lambda t, b, e, p: (teacher_forcing(t, b, e, p)[1], teacher_forcing(t, b, e, p)[1]), "not shifted right"),
    (lambda t, b, e, p: (torch.cat([t, _pad_col(t, p)], 1), teacher_forcing(t, b, e, p)[1]), "not shifted right"),
    (lambda t, b, e, p: (torch.cat([_pad_col(t, p), t], 1), teacher_forcing(t, b, e, p)[1]), "starts with the padding id"),
    (lambda t, b, e, p: (teacher_forcing(t, b, e, p)[0], teacher_forcing(t, b, e, p)[0]), "labels are the decoder input"),
    (lambda t, b, e, p: (teacher_forcing(t, b, e, p)[0], torch.cat([t, _pad_col(t, p)], 1)), "labels have no <eos>"),
    (lambda t, b, e, p: (teacher_forcing(t, b, e, p)[0], torch.cat([t, _pad_col(t, e)], 1)), "at the end of the row"),
    (lambda t, b, e, p: (torch.cat([_pad_col(t, b), t, _pad_col(t, e)], 1), teacher_forcing(t, b, e, p)[1]),
     "<eos> is never fed"),
    (lambda t, b, e, p: (torch.cat([_pad_col(t, b), t[:, :-1]], 1), t), "one longer than the target"),
    (lambda t, b, e, p: tuple(x.float() for x in teacher_forcing(t, b, e, p)), "keep the target's dtype"),
]


def test_ex5_right_answer_passes():
    v = ch07.ex5.check(_right_shift)
    assert v.ok, v.message


@pytest.mark.parametrize("answer,words", SHIFT_MISTAKES, ids=[f"{i}-{w}" for i, (_, w) in enumerate(SHIFT_MISTAKES)])
def test_ex5_names_each_mistake(answer, words):
    v = ch07.ex5.check(answer)
    assert not v.ok and words in v.message, v.message


def test_ex5_broken_answers_get_a_sentence():
    assert "raised ValueError" in ch07.ex5.check(lambda t, b, e, p: int("x")).message
    assert "should return a pair" in ch07.ex5.check(lambda t, b, e, p: t).message
    assert "should be a torch.Tensor" in ch07.ex5.check(lambda t, b, e, p: (t.tolist(), t)).message
    assert "should be <bos> followed by" in ch07.ex5.check(
        lambda t, b, e, p: (teacher_forcing(t, b, e, p)[0] * 0, teacher_forcing(t, b, e, p)[1])).message


def _layer(q="h", k="m", v="m", self_mask="tgt", cross_mask="mem", pre=False, cross_residual=True):
    def f(layer, x, memory, tgt_mask, memory_mask):
        masks = {"tgt": tgt_mask, "mem": memory_mask, None: None}
        if pre:
            y1 = x + layer.self_attn(layer.norm1(x), layer.norm1(x), layer.norm1(x), tgt_mask)
            y2 = y1 + layer.cross_attn(layer.norm2(y1), memory, memory, memory_mask)
            return y2 + layer.ffn(layer.norm3(y2))
        h = layer.norm1(x + layer.self_attn(x, x, x, masks[self_mask]))
        pick = {"h": h, "m": memory, "x": x}
        c = layer.cross_attn(pick[q], pick[k], pick[v], masks[cross_mask])
        h = layer.norm2(h + c if cross_residual else c)
        return layer.norm3(h + layer.ffn(h))
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
]


def test_ex6_right_answer_passes():
    v = ch07.ex6.check(_layer())
    assert v.ok, v.message


@pytest.mark.parametrize("answer,words", LAYER_MISTAKES, ids=[w for _, w in LAYER_MISTAKES])
def test_ex6_names_each_mistake(answer, words):
    v = ch07.ex6.check(answer)
    assert not v.ok and words in v.message, v.message


def test_ex6_queries_from_memory_with_other_lengths():
    def q_from_memory(layer, x, memory, tgt_mask, memory_mask):     # right while S == T... then (B, S, d)
        if memory.shape == x.shape:
            return _layer()(layer, x, memory, tgt_mask, memory_mask)
        return memory
    v = ch07.ex6.check(q_from_memory)
    assert not v.ok and "queries must come from the decoder" in v.message, v.message


def test_ex6_broken_answers_get_a_sentence():
    assert "raised" in ch07.ex6.check(lambda layer, x, m, t, mm: layer.nope).message
    assert "should be a torch.Tensor" in ch07.ex6.check(lambda layer, x, m, t, mm: None).message
    assert "differs from DecoderLayer" in ch07.ex6.check(lambda layer, x, m, t, mm: x).message


def test_ex6_leaves_the_random_state_alone():
    torch.manual_seed(123)
    want = torch.rand(3)
    torch.manual_seed(123)
    ch07.ex6.check(_layer())
    assert torch.equal(torch.rand(3), want)
