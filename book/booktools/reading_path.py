"""The reading path of every chapter: the code a reader sees, and what is folded away.

A chapter's main path reads idea -> picture -> small code -> check -> measurement ->
summary. What a library needs beyond that (argument checks, device and dtype, compile
and export manners, benchmarks) stays in the chapter -- nbdev exports it, nbval runs it
-- but off the path:

* **Folded cells.** A code cell tagged ``hide-input`` is shown by the book behind a
  closed "Show code cell source" toggle (MyST-NB renders a ``<details>`` element), and
  the same cell carries ``metadata.jupyter.source_hidden = true``, so JupyterLab shows
  it collapsed too. Every exported cell longer than ``SMALL`` lines is folded; the
  markdown before it says in one sentence what it adds to the small form the reader has
  just seen.
* **Optional sections.** A level-2 heading that starts with "Under the hood" opens a
  section (up to the next level-2 heading) that the main path skips; it sits after ``##
  Summary`` and before ``## Exercises``.
* Cells tagged ``remove-cell`` (the install cell) are not shown at all.

The reading path is every other code cell. Its longest cell has at most ``LONGEST``
lines.

Usage:
    python scripts/reading_path.py                 # a table: shown / folded / optional
    lines python scripts/reading_path.py --fold
    chapters/07_decoder_cross_attention.ipynb
        # adds the Jupyter flag to every hide-input cell and folds every long exported
        cell
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from booktools import myst
from booktools.paths import ROOT

SMALL = 25  # an exported cell longer than this is folded
LONGEST = 40  # the longest code cell left on the reading path
FOLD_TAG = "hide-input"
# a level-2 section whose title starts so is optional reading
OPTIONAL = "Under the hood"
_EXPORT = re.compile(r"^#\|\s*export\b")


def n_lines(cell) -> int:
    return len(cell.source.strip("\n").splitlines())


def is_exported(cell) -> bool:
    return cell.cell_type == "code" and bool(_EXPORT.match(cell.source.lstrip()))


def is_folded(cell) -> bool:
    tags = cell.metadata.get("tags", [])
    return FOLD_TAG in tags or "hide-cell" in tags


def is_removed(cell) -> bool:
    return "remove-cell" in cell.metadata.get(
        "tags", []
    ) or "remove-input" in cell.metadata.get("tags", [])


def fold(cell) -> None:
    """Fold one code cell in the book (tag) and in JupyterLab (metadata)."""
    tags = cell.metadata.setdefault("tags", [])
    if FOLD_TAG not in tags and "hide-cell" not in tags:
        tags.append(FOLD_TAG)
    cell.metadata.setdefault("jupyter", {})["source_hidden"] = True


@dataclass
class ReadingPath:
    """What a reader of one chapter meets: code-line counts by kind, and the longest
    cell shown."""

    shown: int = 0
    folded: int = 0
    optional: int = 0
    longest: int = 0
    longest_cell: int | None = None
    # (cell index, lines) > LONGEST
    long_cells: list[tuple[int, int]] = field(default_factory=list)


def is_optional(head: str) -> bool:
    """Whether a section of this title is optional reading ("Under the hood ...")."""
    return (
        head == OPTIONAL
        or head.startswith(OPTIONAL + " ")
        or head.startswith(OPTIONAL + ":")
    )


def sections(nb) -> list[str]:
    """For every cell, the title of the level-2 heading it sits under ('' before the
    first)."""
    current, out = "", []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            tokens = myst.blocks(cell.source)
            heads = [
                title.content
                for opening, title in zip(tokens, tokens[1:])
                if opening.type == "heading_open" and opening.tag == "h2"
            ]
            if heads:
                current = heads[-1]
        out.append(current)
    return out


def reading_path(nb) -> ReadingPath:
    p = ReadingPath()
    for i, (cell, head) in enumerate(zip(nb.cells, sections(nb))):
        if cell.cell_type != "code" or is_removed(cell):
            continue
        n = n_lines(cell)
        if is_optional(head):
            p.optional += n
        elif is_folded(cell):
            p.folded += n
        else:
            p.shown += n
            if n > p.longest:
                p.longest, p.longest_cell = n, i
            if n > LONGEST:
                p.long_cells.append((i, n))
    return p


def apply_folds(path: Path) -> int:
    """Fold every long exported cell and give every hide-input cell the Jupyter flag;
    returns changes."""
    nb = nbformat.read(path, as_version=4)
    changed = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        # a removed cell is not shown: nothing to fold
        long = is_exported(cell) and n_lines(cell) > SMALL and not is_removed(cell)
        want = is_folded(cell) or long
        if want and (
            not is_folded(cell)
            or not cell.metadata.get("jupyter", {}).get("source_hidden")
        ):
            fold(cell)
            changed += 1
    if changed:
        nbformat.write(nb, path)
    return changed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--fold",
        action="store_true",
        help="fold long exported cells (writes the notebooks)",
    )
    ap.add_argument("notebooks", nargs="*", type=Path)
    args = ap.parse_args()
    books = args.notebooks or sorted((ROOT / "chapters").glob("*.ipynb"))
    print(
        f"{'chapter':42s} {'shown':>6s} {'folded':>6s} {'optional':>8s} {'longest':>8s}"
    )
    for f in books:
        if args.fold:
            apply_folds(f)
        p = reading_path(nbformat.read(f, as_version=4))
        flag = "" if p.longest <= LONGEST else f"  > {LONGEST}: cells {p.long_cells}"
        print(
            f"{f.stem:42s} {p.shown:6d} {p.folded:6d} {p.optional:8d} {p.longest:5d}"
            f" (cell {p.longest_cell}){flag}"
        )


if __name__ == "__main__":
    main()
