"""The book's diagrams (book/booktools/diagrams.py): well-formed SVG with a text
alternative, the same on every run, one palette, and the committed static figures equal
to what the code draws."""

import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import ROOT

from booktools import diagrams

from transformer_lib import TransformerConfig

SVG = "{http://www.w3.org/2000/svg}"
CONFIG = TransformerConfig.base(37000)

DRAWINGS = {
    "query_path": lambda: diagrams.query_path(
        ["I", "love", "tea"], None, 4, 2, weights=[0.4, 0.2, 0.4]
    ),
    "attention_block": diagrams.attention_block,
    "multi_head": lambda: diagrams.multi_head(512, 8),
    "positional_sum": lambda: diagrams.positional_sum(
        [0.1] * 8, [0.0, 1.0] * 4, 32, 3, "token 7", 0.1
    ),
    "rope_vs_additive": diagrams.rope_vs_additive,
    "mask_grids": lambda: diagrams.mask_grids(
        list("abc"),
        list("abc"),
        {"causal": [[j <= i for j in range(3)] for i in range(3)]},
    ),
    "encoder_layer_ln": diagrams.encoder_layer_ln,
    "norm_axes": diagrams.norm_axes,
    "whole_model": lambda: diagrams.whole_model(CONFIG),
    "three_ways": diagrams.three_ways,
    "decoder_inputs": lambda: diagrams.decoder_inputs(["a", "cat", "sat"]),
    "kv_cache": lambda: diagrams.kv_cache(2, 4, 8, 5, 4),
    "training_pipeline": lambda: diagrams.training_pipeline(8000, 4096, 0.1, 4000, 512),
    "overview": diagrams.overview,
}


@pytest.mark.parametrize("name", DRAWINGS)
def test_diagram_is_valid_svg_with_a_text_alternative(name):
    svg = DRAWINGS[name]().svg()
    root = ET.fromstring(svg)  # well-formed XML
    assert (
        root.tag == SVG + "svg"
        and float(root.get("width")) > 0
        and float(root.get("height")) > 0
    )
    title, desc = root.find(SVG + "title"), root.find(SVG + "desc")
    assert title is not None and title.text and desc is not None and len(desc.text) > 60
    assert root.get("aria-labelledby") == "t d"
    assert len(root.findall(f".//{SVG}text")) >= 5  # labelled, not a bare picture
    assert len(svg) < 40_000, f"{name}: {len(svg)} bytes"  # small
    assert DRAWINGS[name]().svg() == svg  # the same on every call (nbval compares it)
    # no address in the text/plain twin
    assert not re.search(r"0x[0-9a-fA-F]{6,}", repr(DRAWINGS[name]()))


def test_shapes_come_from_the_config():
    small = TransformerConfig(
        src_vocab_size=10,
        tgt_vocab_size=10,
        d_model=32,
        n_heads=4,
        n_encoder_layers=2,
        n_decoder_layers=3,
        d_ff=64,
    )
    svg = diagrams.whole_model(small).svg()
    assert (
        "2 × EncoderLayer" in svg and "3 × DecoderLayer" in svg and "d_model=32" in svg
    )
    assert svg.count(">cross-attention</text>") == 3  # one per decoder layer
    assert "h = 4 heads" in diagrams.kv_cache(3, 4, 8, 5, 2).svg()


def test_mask_grid_draws_the_mask_it_is_given():
    mask = [[True, False], [True, True]]
    svg = diagrams.mask_grids(["a", "b"], ["a", "b"], {"causal": mask}).svg()
    assert "3 of 4 cells kept" in svg and svg.count(">×<") == 1
    with pytest.raises(ValueError, match="must be 2 x 2"):
        diagrams.mask_grids(["a", "b"], ["a", "b"], {"bad": [[True]]})


def test_overview_links_to_every_chapter():
    root = ET.fromstring(diagrams.overview().svg())
    hrefs = {a.get("href") for a in root.iter(SVG + "a")}
    for page in diagrams.CHAPTER_PAGES.values():
        assert f"../chapters/{page}.html" in hrefs, page
        assert (ROOT / "chapters" / f"{page}.ipynb").exists(), page
    # links stay reachable (not role="img")
    assert root.get("role") is None


def test_palette_one_colour_per_component():
    colours = list(diagrams.COLORS.values())
    assert len(set(colours)) == len(colours)
    for key in ("query", "key", "value", "mask", "encoder", "decoder"):
        assert key in diagrams.COLORS


def test_committed_static_figures_equal_the_code():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_figures.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr


def test_heatmaps_use_the_diagrams_colours():
    """transformer_lib.viz (the heatmaps' axis labels) and book/booktools/diagrams.py
    share one palette."""
    pytest.importorskip("matplotlib")
    from transformer_lib.viz import COMPONENT_COLORS

    for name, colour in COMPONENT_COLORS.items():
        assert diagrams.COLORS[name] == colour, name
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from transformer_lib.viz import plot_attention

    ax = plot_attention([[0.5, 0.5], [1.0, 0.0]], ["a", "b"], ["a", "b"])
    assert ax.yaxis.label.get_color() == COMPONENT_COLORS["query"]
    assert ax.xaxis.label.get_color() == COMPONENT_COLORS["key"]
    plt.close(ax.figure)
