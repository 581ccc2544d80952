"""The reading path stays one a learner can finish (scripts/reading_path.py states the
rules).

In every chapter: the longest code cell a reader meets on the main path (not folded, not
in an "Under the hood" section) has at most `LONGEST` lines; every exported cell longer
than `SMALL` lines is folded, in the book (tag `hide-input`) and in JupyterLab
(`jupyter.source_hidden`); optional sections sit between the summary and the exercises;
and the components that had no small form (the decoder layer, cached decoding, beam
search) have one, checked equal to the library's. The browser test (tests/test_book.py)
checks that the book shows folded cells closed."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
from booktools import reading_path as rp

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def _read(path: Path):
    return nbformat.read(path, as_version=4)


@pytest.mark.parametrize("nb", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_longest_cell_on_the_reading_path(nb):
    p = rp.reading_path(_read(nb))
    assert p.longest <= rp.LONGEST, (
        f"{nb.stem}: code cells {p.long_cells} (index, lines) are on the reading path"
        f" and longer than {rp.LONGEST} lines: show a small form and fold the long one"
        " (`hide-input` tag and jupyter.source_hidden), split it, or move it under a"
        " '## Under the hood' heading"
    )


@pytest.mark.parametrize("nb", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_long_exported_cells_are_folded_in_book_and_jupyter(nb):
    cells = _read(nb).cells
    unfolded = [
        i
        for i, c in enumerate(cells)
        if rp.is_exported(c)
        and rp.n_lines(c) > rp.SMALL
        and not rp.is_folded(c)
        and not rp.is_removed(c)
    ]
    assert not unfolded, (
        f"{nb.stem}: exported cells {unfolded} are longer than {rp.SMALL} lines and not"
        f" folded (python scripts/reading_path.py --fold {nb.relative_to(ROOT)})"
    )
    half = [
        i
        for i, c in enumerate(cells)
        if c.cell_type == "code"
        and rp.is_folded(c) != bool(c.metadata.get("jupyter", {}).get("source_hidden"))
    ]
    assert not half, (
        f"{nb.stem}: cells {half} are folded in the book or in JupyterLab but not both"
    )


@pytest.mark.parametrize("nb", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_under_the_hood_sits_between_summary_and_exercises(nb):
    heads = [h for h in dict.fromkeys(rp.sections(_read(nb))) if h]
    optional = [i for i, h in enumerate(heads) if rp.is_optional(h)]
    if not optional:
        return
    assert "Summary" in heads and "Exercises" in heads, f"{nb.stem}: headings {heads}"
    summary, exercises = heads.index("Summary"), heads.index("Exercises")
    misplaced = [heads[i] for i in optional if not summary < i < exercises]
    assert not misplaced, (
        f"{nb.stem}: {misplaced} must come after '## Summary' and before '## Exercises'"
    )


def test_the_rules_see_a_long_cell():
    """The measure itself can fail: a 41-line unfolded cell is flagged, folded it is
    not."""
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("\n".join(f"x{i} = {i}" for i in range(41)))]
    )
    assert rp.reading_path(nb).long_cells == [(0, 41)]
    rp.fold(nb.cells[0])
    assert rp.reading_path(nb).longest == 0 and rp.reading_path(nb).folded == 41
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("## Under the hood: checks"))
    nb.cells[1].metadata = {}
    assert rp.reading_path(nb).optional == 41


# The components that had no small form: (chapter, the small form's definition, the
# library name its check compares it with). Each must be on the main path, short, and
# checked.
SMALL_FORMS = [
    ("07_decoder_cross_attention", "class SmallDecoderLayer", "DecoderLayer"),
    ("07_decoder_cross_attention", "class SmallDecoder(", "Decoder("),
    ("10_decoding", "def greedy_cached", "IncrementalDecoder"),
    ("10_decoding", "def beam_search_one", "beam_search"),
]


@pytest.mark.parametrize(
    "stem, definition, library",
    SMALL_FORMS,
    ids=[f"{s}:{d}" for s, d, _ in SMALL_FORMS],
)
def test_small_form_in_view_and_checked_equal(stem, definition, library):
    nb = _read(ROOT / "chapters" / f"{stem}.ipynb")
    heads = rp.sections(nb)
    where = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and definition in c.source
    ]
    assert len(where) == 1, f"{stem}: {definition!r} defined in cells {where}"
    i = where[0]
    cell = nb.cells[i]
    assert not rp.is_folded(cell) and not rp.is_optional(heads[i]), (
        f"{stem}: the small form is off the path"
    )
    assert rp.n_lines(cell) <= 30, (
        f"{stem}: the small form has {rp.n_lines(cell)} lines"
    )
    name = definition.split()[1].split("(")[0]
    checks = [
        c
        for c in nb.cells[i + 1 :]
        if c.cell_type == "code"
        and name in c.source
        and library in c.source
        and "assert" in c.source
    ]
    assert checks, f"{stem}: no cell after {name} asserts it equal to {library}"


def test_a_removed_cell_is_not_folded(tmp_path):
    """A long exported cell tagged remove-cell is not in the book: --fold leaves it
    alone (a fold there made the page show one toggle fewer than the notebook's
    folds)."""
    nb = nbformat.v4.new_notebook()
    long = "#| export\n" + "".join(f"x{i} = {i}\n" for i in range(rp.SMALL + 5))
    nb.cells = [
        nbformat.v4.new_code_cell(long, metadata={"tags": ["remove-cell"]}),
        nbformat.v4.new_code_cell(long),
    ]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    assert rp.apply_folds(path) == 1
    removed, shown = nbformat.read(path, as_version=4).cells
    assert not rp.is_folded(removed) and rp.is_folded(shown)
