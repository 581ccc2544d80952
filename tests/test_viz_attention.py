"""transformer_lib.viz, chapter 12: recording attention maps of a Transformer,
subword-to-word merging, the grid selector and the attention explorer (tiny random
models, no data needed)."""

import math

import pytest
import torch

from transformer_lib import Transformer, TransformerConfig
from transformer_lib.viz import (
    ATTENTION_KINDS,
    AttentionRecord,
    merge_subwords,
    record_attention,
    translate_with_attention,
    word_attention,
)


def tiny_model(n_enc=2, n_dec=2, vocab=31, norm_first=False):
    torch.manual_seed(0)
    cfg = TransformerConfig(
        src_vocab_size=vocab,
        tgt_vocab_size=vocab,
        d_model=16,
        n_heads=2,
        n_encoder_layers=n_enc,
        n_decoder_layers=n_dec,
        d_ff=32,
        dropout=0.1,
        max_len=32,
        norm_first=norm_first,
    )
    return Transformer(cfg)


# ----- record_attention ---------------------------------------------------------------
def test_record_attention_shapes_rows_and_causality():
    model = tiny_model(n_enc=2, n_dec=3)
    src = torch.tensor([[5, 6, 7, 8, 0], [9, 10, 11, 12, 13]])  # (B=2, S=5), one padded
    tgt = torch.tensor([[1, 4, 5, 0], [1, 6, 7, 8]])  # (B=2, T=4)
    maps = record_attention(model, src, tgt)
    assert list(maps) == list(ATTENTION_KINDS)
    assert [tuple(w.shape) for w in maps["encoder self-attention"]] == [
        (2, 2, 5, 5)
    ] * 2
    assert [tuple(w.shape) for w in maps["decoder self-attention"]] == [
        (2, 2, 4, 4)
    ] * 3
    assert [tuple(w.shape) for w in maps["cross-attention"]] == [(2, 2, 4, 5)] * 3
    for layers in maps.values():
        for w in layers:
            assert torch.allclose(w.sum(-1), torch.ones(w.shape[:-1]), atol=1e-5)
    for w in maps["decoder self-attention"]:
        assert torch.triu(w, diagonal=1).abs().max() == 0  # never a later piece
    for w in maps["encoder self-attention"] + maps["cross-attention"]:
        assert w[0, :, :, 4].abs().max() == 0  # the padded source key


def test_record_attention_matches_a_hand_computation():
    model = tiny_model().eval()
    src = torch.tensor([[5, 6, 7, 8]])
    maps = record_attention(model, src, torch.tensor([[1, 4]]))
    attn = model.encoder.layers[0].self_attn
    x = model.embed_src(src)  # (1, S, d_model), eval: no dropout
    q, k, _ = attn.project(x, x, x)  # (1, h, S, d_k)
    expected = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    assert torch.allclose(maps["encoder self-attention"][0], expected, atol=1e-6)


def test_record_attention_restores_flags_and_mode():
    model = tiny_model().train()
    # a user's own setting
    model.decoder.layers[1].cross_attn.store_weights = True
    record_attention(model, torch.tensor([[5, 6]]), torch.tensor([[1, 4]]))
    flags = [
        m.store_weights for layer in model.encoder.layers for m in (layer.self_attn,)
    ]
    flags += [
        m.store_weights
        for layer in model.decoder.layers
        for m in (layer.self_attn, layer.cross_attn)
    ]
    assert flags == [False, False, False, False, False, True]
    assert model.training  # back in training mode
    # no gradients computed
    assert not any(p.grad is not None for p in model.parameters())


def test_record_attention_in_training_mode_model_is_deterministic():
    model = tiny_model().train()  # dropout 0.1 is switched off
    a = record_attention(model, torch.tensor([[5, 6, 7]]), torch.tensor([[1, 4, 5]]))
    b = record_attention(model, torch.tensor([[5, 6, 7]]), torch.tensor([[1, 4, 5]]))
    assert all(torch.equal(x, y) for k in a for x, y in zip(a[k], b[k]))


def test_record_attention_rejects_other_models():
    with pytest.raises(TypeError, match="transformer_lib.Transformer"):
        record_attention(
            torch.nn.Linear(3, 3),
            torch.zeros(1, 2, dtype=torch.long),
            torch.zeros(1, 2, dtype=torch.long),
        )


# ----- translate_with_attention -------------------------------------------------------
class CharTokenizer:
    """A stand-in for SubwordTokenizer: one piece per character, "▁" before each
    word."""

    pad_id, bos_id, eos_id = 0, 1, 2
    alphabet = "▁abcdefghijklmnopqrstuvwxyz."

    def encode(self, text, *, bos=False, eos=False):
        ids = [4 + self.alphabet.index(c) for c in "▁" + text.replace(" ", "▁")]
        return [self.bos_id] * bos + ids + [self.eos_id] * eos

    def id_to_token(self, i):
        return (
            ["<pad>", "<bos>", "<eos>", "<unk>"][i] if i < 4 else self.alphabet[i - 4]
        )

    def decode(self, ids):
        ids = list(ids)
        ids = ids[: ids.index(self.eos_id)] if self.eos_id in ids else ids
        return (
            "".join(self.id_to_token(i) for i in ids if i >= 4)
            .replace("▁", " ")
            .strip()
        )


@pytest.mark.parametrize("norm_first", [False, True])
def test_translate_with_attention_is_consistent_with_greedy_decoding(norm_first):
    model, tok = tiny_model(norm_first=norm_first).eval(), CharTokenizer()
    rec = translate_with_attention(model, tok, "a dog", max_len=9)
    S, T = len(rec.src_tokens), len(rec.tgt_tokens)
    assert rec.src_tokens == ["▁", "a", "▁", "d", "o", "g", "<eos>"] and S == 7
    assert rec.tgt_tokens[0] == "<bos>" and rec.out_tokens[-1] == "<eos>"
    # at most max_len inputs
    assert rec.out_tokens[:-1] == rec.tgt_tokens[1:] and 1 <= T <= 9
    assert [tuple(w.shape) for w in rec.maps["cross-attention"]] == [(2, T, S)] * 2
    assert [tuple(w.shape) for w in rec.maps["decoder self-attention"]] == [
        (2, T, T)
    ] * 2
    # the teacher-forced pass that recorded the maps predicts exactly the greedy output
    special = {"<pad>": 0, "<bos>": 1, "<eos>": 2, "<unk>": 3}
    tgt_ids = [
        special.get(p, 4 + tok.alphabet.index(p) if p in tok.alphabet else -1)
        for p in rec.tgt_tokens
    ]
    with torch.no_grad():
        logits = model(
            torch.tensor([tok.encode("a dog", eos=True)]), torch.tensor([tgt_ids])
        )
    written = [tok.id_to_token(i) for i in logits.argmax(-1)[0].tolist()]
    assert written[:-1] == rec.out_tokens[:-1]
    assert rec.axis_labels("cross-attention") == (rec.out_tokens, rec.src_tokens)
    assert rec.axis_labels("decoder self-attention") == (rec.out_tokens, rec.tgt_tokens)
    with pytest.raises(ValueError, match="kind"):
        rec.axis_labels("self")
    with pytest.raises(TypeError, match="sentence"):
        translate_with_attention(model, tok, ["a"])


# ----- words --------------------------------------------------------------------------
def test_merge_subwords():
    pieces = ["▁Ein", "▁Mann", ",", "▁der", "▁an", "st", "ar", "rt", ".", "<eos>"]
    words, groups = merge_subwords(pieces)
    assert words == ["Ein", "Mann", ",", "der", "anstarrt", ".", "<eos>"]
    assert groups == [[0], [1], [2], [3], [4, 5, 6, 7], [8], [9]]
    words, groups = merge_subwords(["<bos>", "▁s", "aft", "ig", "-", "grü", "nes"])
    assert words == ["<bos>", "saftig", "-", "grünes"]  # punctuation stands alone
    assert [i for g in groups for i in g] == list(range(7))
    assert merge_subwords(["ab", "c"]) == (["abc"], [[0, 1]])  # no marker at the start
    assert merge_subwords([]) == ([], [])
    with pytest.raises(TypeError, match="pieces"):
        merge_subwords("▁Ein ▁Mann")


def test_word_attention_sums_keys_and_averages_queries():
    w = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8], [0.2, 0.2, 0.6]])
    ww = word_attention(w, [[0, 1], [2]], [[0], [1, 2]])
    assert torch.allclose(ww, torch.tensor([[0.3, 0.7], [0.2, 0.8]]))
    torch.manual_seed(0)
    heads = torch.softmax(torch.randn(4, 6, 5), dim=-1)  # (h, L_q, L_k)
    wh = word_attention(heads, [[0], [1, 2, 3], [4, 5]], [[0, 1], [2], [3, 4]])
    assert wh.shape == (4, 3, 3) and torch.allclose(wh.sum(-1), torch.ones(4, 3))
    assert torch.allclose(
        word_attention(heads[0], [[i] for i in range(6)], [[i] for i in range(5)]),
        heads[0],
    )
    with pytest.raises(ValueError, match="key_groups"):
        word_attention(w, [[0], [1], [2]], [[0], [1]])  # index 2 missing
    with pytest.raises(ValueError, match="query_groups"):
        word_attention(w, [[0, 1], [1, 2]], [[0], [1], [2]])  # index 1 twice
    with pytest.raises(ValueError, match="weights"):
        word_attention([[1.0]], [[0]], [[0]])


# ----- widgets ------------------------------------------------------------------------
def _links(widgets):
    link_cls = widgets.widgets.widget_link.Link
    return [
        w for w in widgets.widgets.widget._instances.values() if isinstance(w, link_cls)
    ]


def test_figure_grid_selector_nests_stacks_and_links_every_level():
    widgets = pytest.importorskip("ipywidgets")
    from transformer_lib.viz import figure_grid_selector

    png = b"\x89PNG\r\n\x1a\nfake"
    figs = {
        (s, k, h): png + f"{s}{k}{h}".encode()
        for s in ("s1", "s2")
        for k in ("enc", "dec", "cross")
        for h in (1, 2)
    }
    box = figure_grid_selector(figs, ["sentence", "kind", "head"])
    dropdowns, root = box.children[0].children, box.children[1]
    assert [list(d.options) for d in dropdowns] == [
        ["s1", "s2"],
        ["enc", "dec", "cross"],
        ["1", "2"],
    ]
    assert isinstance(root, widgets.Stack) and len(root.children) == 2
    leaf = root.children[1].children[2].children[0]  # s2, cross, head 1
    assert isinstance(leaf, widgets.Image) and bytes(leaf.value) == png + b"s2cross1"
    links = [l for l in _links(widgets) if l.source[0] in dropdowns]
    per_dropdown = [sum(l.source[0] is d for l in links) for d in dropdowns]
    assert per_dropdown == [1, 2, 6]  # every stack of each level
    assert all(
        l.source[1] == "index" and l.target[1] == "selected_index" for l in links
    )
    with pytest.raises(ValueError, match="not a full grid"):
        figure_grid_selector({("a", 1): png, ("b", 2): png}, ["x", "y"])
    with pytest.raises(ValueError, match="tuple of 2 values"):
        figure_grid_selector({("a",): png}, ["x", "y"])
    with pytest.raises(ValueError, match="empty"):
        figure_grid_selector({}, ["x"])


def test_attention_explorer_draws_every_map():
    widgets = pytest.importorskip("ipywidgets")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from transformer_lib.viz import attention_explorer

    model, tok = tiny_model(n_enc=1, n_dec=2).eval(), CharTokenizer()
    records = [
        translate_with_attention(model, tok, s, max_len=5) for s in ("a dog", "cats")
    ]
    box = attention_explorer(records, labels=["one", "two"], dpi=30)
    dropdowns, root = box.children[0].children, box.children[1]
    assert [d.description for d in dropdowns] == [
        "sentence",
        "attention",
        "layer",
        "head",
    ]
    # 2 layers: the deeper stack
    assert [len(d.options) for d in dropdowns] == [2, 3, 2, 2]
    images = []

    def collect(w):
        if isinstance(w, widgets.Image):
            images.append(w)
        else:
            for c in w.children:
                collect(c)

    collect(root)
    assert len(images) == 2 * 3 * 2 * 2 and all(
        bytes(i.value).startswith(b"\x89PNG") for i in images
    )
    assert plt.get_fignums() == []  # figures rendered and closed
    with pytest.raises(ValueError, match="labels"):
        attention_explorer(records, labels=["one"])
    with pytest.raises(ValueError, match="empty"):
        attention_explorer([])
    assert isinstance(records[0], AttentionRecord) and "maps" not in repr(records[0])
