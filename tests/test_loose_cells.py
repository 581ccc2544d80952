"""Which chapter cells strict nbval compares digit by digit, and which it does not.

The rule (CONTRIBUTING.md, "Same verdict on every machine"): a cell whose output any
IEEE machine reproduces exactly (counts, shapes, closed forms, masks, ids, booleans) is
compared strictly. A cell whose printed digits depend on the processor's floating-point
details (trained losses, BLEU, fitted slopes, max deviations) is a **loose** cell: it
starts with

    # NBVAL_IGNORE_OUTPUT
    # (claims, not digits: <what varies between machines>)

and asserts the claim its prose makes, with a tolerance backed by measured spread. A
cell whose output is not reproducible at all (timings, progress bars, the hardware's
name, GPU-only output) is an **ignored** cell and says so in the same second line.

This file keeps that honest: every ignored or loose cell gives its reason, a loose cell
that asserts nothing fails, nbval's tags (which hide the marker from a reader of the
code) are not used, strict cells stay the large majority, and the list of loose and
ignored cells is committed (`tests/loose_cells.txt`), so a new one is a reviewed change.
After a deliberate change:

    python tests/test_loose_cells.py --write      # rewrite tests/loose_cells.txt
    python tests/test_loose_cells.py              # print the counts per chapter
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
LISTING = ROOT / "tests" / "loose_cells.txt"
MARK = "# NBVAL_IGNORE_OUTPUT"
LOOSE_REASON = "# (claims, not digits:"
# the reasons that make an output legitimately not reproducible at all
IGNORED_REASON = re.compile(
    r"\b(timings?|time|progress|tokens/s|hardware|GPU|speed)\b", re.I
)
MIN_STRICT_SHARE = 0.75  # of all code cells of the book


def _source_lines(cell) -> list[str]:
    # IPython magics (`%pip`, `!cmd`) are not Python: blank them out before parsing
    return [
        ("" if line.lstrip().startswith(("%", "!")) else line)
        for line in cell.source.splitlines()
    ]


def asserts_something(cell) -> bool:
    """True if the cell's code holds an `assert` statement (not one in a string or
    comment)."""
    try:
        tree = ast.parse("\n".join(_source_lines(cell)))
    except SyntaxError:
        return False
    return any(isinstance(node, ast.Assert) for node in ast.walk(tree))


def classify(cell) -> tuple[str, str]:
    """(kind, reason): kind is "strict", "loose" or "ignored"; reason is the marker's
    second line."""
    lines = cell.source.splitlines()
    if MARK not in [line.strip() for line in lines]:
        return "strict", ""
    at = [line.strip() for line in lines].index(MARK)
    reason = lines[at + 1].strip() if at + 1 < len(lines) else ""
    return ("loose" if reason.startswith(LOOSE_REASON) else "ignored"), reason


def cells() -> list[tuple[str, str, str, str, object]]:
    """(chapter, cell id, kind, reason, cell) for every code cell of every chapter."""
    out = []
    for path in CHAPTERS:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                kind, reason = classify(cell)
                out.append((path.stem, cell.get("id", "?"), kind, reason, cell))
    return out


def listing() -> str:
    rows = [
        f"{ch}\t{cid}\t{kind}\t{reason}"
        for ch, cid, kind, reason, _ in cells()
        if kind != "strict"
    ]
    return (
        "# chapter\tcell id\tkind\treason (written by tests/test_loose_cells.py"
        " --write)\n" + "\n".join(rows) + "\n"
    )


def counts() -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for ch, _, kind, _, _ in cells():
        table.setdefault(ch, {"strict": 0, "loose": 0, "ignored": 0})[kind] += 1
    return table


def test_every_ignored_cell_says_why_and_every_loose_cell_asserts():
    bad = []
    for ch, cid, kind, reason, cell in cells():
        if kind == "loose" and not asserts_something(cell):
            bad.append(f"{ch} cell {cid}: a loose cell ({reason}) that asserts nothing")
        if (
            kind == "ignored"
            and "The time of this run" not in cell.source
            and not IGNORED_REASON.search(reason)
        ):
            bad.append(
                f"{ch} cell {cid}: ignored output without a timing/progress/hardware"
                f" reason: {reason!r}; a machine-dependent number is a loose cell"
                f" ({LOOSE_REASON} ...) with asserts"
            )
    assert not bad, "\n".join(bad)


def test_no_nbval_tags_and_no_skipped_cells():
    """Tags would hide the marker from a reader of the code; a skipped cell would hide a
    failure."""
    bad = []
    for ch, cid, _, _, cell in cells():
        tags = [t for t in cell.metadata.get("tags", []) if t.startswith("nbval")]
        if tags:
            bad.append(f"{ch} cell {cid}: nbval tags {tags}")
        if re.search(r"#\s*NBVAL_(SKIP|RAISES_EXCEPTION|CHECK_OUTPUT)", cell.source):
            bad.append(
                f"{ch} cell {cid}: an NBVAL_ marker other than NBVAL_IGNORE_OUTPUT"
            )
    assert not bad, "\n".join(bad)


def test_strict_cells_are_the_large_majority():
    table = counts()
    total = sum(sum(row.values()) for row in table.values())
    strict = sum(row["strict"] for row in table.values())
    assert strict / total >= MIN_STRICT_SHARE, (
        f"only {strict}/{total} code cells strictly compared"
    )
    # chapter 12 studies a trained model: most of it is loose
    for ch, row in table.items():
        assert row["strict"] >= sum(row.values()) / 3, f"{ch}: {row}"


def test_the_list_of_loose_and_ignored_cells_is_the_committed_one():
    assert LISTING.read_text(encoding="utf-8") == listing(), (
        "the loose/ignored cells differ from tests/loose_cells.txt; review the change,"
        " then run `python tests/test_loose_cells.py --write`"
    )


@pytest.mark.parametrize(
    "source,kind,asserts",
    [
        ("x = 1\nprint(x)", "strict", False),
        (f"{MARK}\n# (timings)\nprint(t)", "ignored", False),
        (
            f"{MARK}\n{LOOSE_REASON} trained)\nprint(bleu)\nassert bleu > 24",
            "loose",
            True,
        ),
        (
            f"{MARK}\n{LOOSE_REASON} trained)\nprint('assert bleu > 24')  # assert",
            "loose",
            False,
        ),
        (f"%pip install x\n{MARK}\n{LOOSE_REASON} x)\nassert y", "loose", True),
    ],
)
def test_the_classifier(source, kind, asserts):
    cell = nbformat.v4.new_code_cell(source)
    assert classify(cell)[0] == kind
    assert asserts_something(cell) is asserts


if __name__ == "__main__":
    if "--write" in sys.argv:
        LISTING.write_text(listing(), encoding="utf-8")
    table = counts()
    print(f"{'chapter':<32}{'strict':>7}{'loose':>7}{'ignored':>8}")
    for ch, row in table.items():
        print(f"{ch:<32}{row['strict']:>7}{row['loose']:>7}{row['ignored']:>8}")
    tot = {k: sum(r[k] for r in table.values()) for k in ("strict", "loose", "ignored")}
    print(f"{'all':<32}{tot['strict']:>7}{tot['loose']:>7}{tot['ignored']:>8}")
