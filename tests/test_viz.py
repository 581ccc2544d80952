"""transformer_lib.viz: heatmap orientation, label checks, the no-kernel figure
selector, lazy imports."""

import subprocess
import sys

import pytest
import torch

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt

from transformer_lib.viz import (
    figure_selector,
    figure_to_png,
    plot_attention,
)


def test_plot_attention_orientation_and_labels():
    w = torch.softmax(torch.randn(2, 3), dim=-1)
    ax = plot_attention(w, ["q1", "q2"], ["a", "b", "c"], title="t", annotate=True)
    assert ax.images[0].get_array().shape == (2, 3)  # rows = queries, columns = keys
    assert [t.get_text() for t in ax.get_yticklabels()] == ["q1", "q2"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert (
        "query" in ax.get_ylabel()
        and "key" in ax.get_xlabel()
        and ax.get_title() == "t"
    )
    assert len(ax.figure.axes) == 2  # the heatmap and its colour bar
    assert len(ax.texts) == 6  # annotate: one number per cell
    plt.close(ax.figure)


def test_plot_attention_on_given_axes_and_errors():
    fig, axes = plt.subplots(1, 2)
    assert plot_attention(torch.eye(3), ax=axes[1]) is axes[1]
    with pytest.raises(ValueError, match="`weights` must be 2-D"):
        plot_attention(torch.rand(2, 3, 3))
    with pytest.raises(ValueError, match="`key_labels` has 2 labels"):
        plot_attention(torch.rand(3, 3), key_labels=["a", "b"])
    plt.close("all")


def test_plot_attention_shared_scale_and_one_colour_bar():
    """Maps drawn side by side share `vmax`; `colorbar=False` leaves the bar to the
    caller."""
    fig, axes = plt.subplots(1, 2)
    plot_attention(torch.full((2, 2), 0.25), ax=axes[0], vmax=1.0, colorbar=False)
    plot_attention(torch.full((2, 2), 0.25), ax=axes[1])
    assert axes[0].images[0].get_clim() == (0.0, 1.0)  # the shared scale
    # default: up to the largest weight
    assert axes[1].images[0].get_clim() == (0.0, 0.25)
    # one colour bar: only the second map's
    assert len(fig.axes) == 3
    for bad in (0, -1.0, "1", True):
        with pytest.raises(ValueError, match="vmax: got"):
            plot_attention(torch.rand(2, 2), vmax=bad)
    plt.close("all")


def test_figure_selector_links_dropdown_and_stack():
    widgets = pytest.importorskip("ipywidgets")
    figs = {}
    for name in ("one", "two"):
        fig, ax = plt.subplots()
        plot_attention(torch.rand(2, 2), ax=ax)
        figs[name] = fig
    figs["bytes"] = figure_to_png(plt.subplots()[0])
    box = figure_selector(figs, description="pick")
    dropdown, stack = box.children
    assert isinstance(stack, widgets.Stack) and len(stack.children) == 3
    assert list(dropdown.options) == ["one", "two", "bytes"]
    assert all(bytes(img.value).startswith(b"\x89PNG") for img in stack.children)
    link_cls = widgets.widgets.widget_link.Link
    links = [
        w
        for w in widgets.widgets.widget._instances.values()
        if isinstance(w, link_cls)
        and w.source == (dropdown, "index")
        and w.target == (stack, "selected_index")
    ]
    assert len(links) == 1  # a browser-side link: works without a kernel
    assert plt.get_fignums() == []  # the rendered figures were closed
    with pytest.raises(ValueError, match="`figures` is empty"):
        figure_selector({})


def test_viz_imports_without_matplotlib():
    code = (
        "import sys; sys.modules['matplotlib'] = None; sys.modules['ipywidgets'] ="
        " None\nimport transformer_lib, transformer_lib.viz\nassert not"
        " hasattr(transformer_lib, 'plot_attention')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
