"""Every number in a chapter's prose is computed, or on a short reviewed allow-list.

The book's promise is that every number a reader sees was produced by the code on the
page. A figure the prose quotes (a BLEU score, a ratio, a count, a threshold) is
therefore glued from the code with MyST-NB (``glue("name", f"{x:.2f}", display=False)``
in a code cell, ``{glue:text}`name``` in the text), and strict nbval compares the glued
value on every run.

This test reads the markdown cells of every chapter, removes what is not prose (code,
glued values, links, citations, references to the paper's sections, tables and
equations) and fails on any number left that is not on the allow-list in
``prose_allowlist.py``: the paper's own numbers, formula constants, the chapter's chosen
inputs, dates. Each entry carries its reason."""

import re

import nbformat
import pytest

from booktools import myst
from conftest import ROOT
from prose_allowlist import ALLOWED, GLOBAL, SMALL_INTEGER_MAX

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))

# References to the paper's (or another text's) sections, tables, figures, equations:
# numbers that name a place, not a result (a pattern of English prose, not of MyST).
PLACE_REFERENCE = re.compile(
    r"(?:§|\b(?:[Ss]ections?|[Tt]ables?|[Ff]igures?|[Ee]q(?:uation)?s?\.?|"
    r"[Cc]hapters?|[Ss]eeds?|[Ee]xercises?|[Ss]teps?|[Rr]ows?|[Ll]ines?|[Pp]arts?))"
    r"\s*\(?\d+(?:\.\d+)*[a-c]?\)?(?:\s*(?:,|and|or|–|-|to)\s*\(?\d+(?:\.\d+)*[a-c]?\)?)*"
)
# A number: not part of an identifier (fp16, Multi30k, W_1, \frac12), with decimals and
# thousands separators; a trailing unit letter (37k, 65M) is allowed and ignored.
NUMBER = re.compile(r"(?<![A-Za-z_\\\d.,])\d+(?:[.,]\d+)*")


def _paragraph(tok) -> str:
    """An inline token's prose as the reader sees it: its text and formulas; roles
    (glued values, citations, references), code spans, link targets and HTML tags are
    gaps."""
    parts = []
    for child in tok.children or []:
        piece = myst.inline_piece(child)
        parts.append(piece.content if piece.kind in ("text", "math") else " ")
    return "".join(parts)


def prose(source: str) -> list[str]:
    """The prose and formulas of a markdown cell as MyST reads it (booktools.myst):
    paragraphs, headings, list items and table cells, display maths, and the bodies of
    `:::` directives (dropdowns, at any depth); not code blocks,
    ``` directives, targets or HTML blocks."""
    found = []
    for tok in myst.blocks(source):
        if tok.type == "inline":
            found.append(_paragraph(tok))
        elif tok.type in myst.MATH_BLOCKS:  # display maths: its digits count
            found.append(tok.content)
        elif tok.type == "colon_fence" and (d := myst.directive_of(tok)) is not None:
            found += prose(d.body)
    return found


def prose_numbers(source: str) -> list[str]:
    numbers = []
    for text in prose(source):
        # LaTeX thousands separator: 4{,}194{,}304
        text = PLACE_REFERENCE.sub(" ", text.replace("{,}", ","))
        numbers += [m.group() for m in NUMBER.finditer(text)]
    return numbers


def _is_small_integer(token: str) -> bool:
    return token.isdigit() and int(token) <= SMALL_INTEGER_MAX


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_prose_numbers_are_glued_or_allowed(path):
    allowed = {**GLOBAL, **ALLOWED.get(path.stem, {})}
    nb = nbformat.read(path, as_version=4)
    bad = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for token in prose_numbers(cell.source):
            if not _is_small_integer(token) and token not in allowed:
                bad.append(f"cell {index}: {token!r}")
    assert not bad, (
        f"{path.name}: numbers typed into the prose (glue them from the code, or add "
        "them with a reason to tests/prose_allowlist.py):\n  " + "\n  ".join(bad)
    )


def test_allow_list_entries_are_used_and_explained():
    """A reviewed list stays short: every entry has a reason and still occurs in its
    chapter."""
    stems = {p.stem for p in CHAPTERS}
    assert set(ALLOWED) <= stems, set(ALLOWED) - stems
    for stem, entries in ALLOWED.items():
        nb = nbformat.read(ROOT / "chapters" / f"{stem}.ipynb", as_version=4)
        found = {
            t
            for c in nb.cells
            if c.cell_type == "markdown"
            for t in prose_numbers(c.source)
        }
        for token, reason in entries.items():
            assert isinstance(reason, str) and len(reason) > 10, (stem, token)
            assert token in found, (
                f"{stem}: allow-list entry {token!r} no longer occurs: remove it"
            )
    for token, reason in GLOBAL.items():
        assert isinstance(reason, str) and len(reason) > 10, token


def test_the_check_catches_a_typed_number():
    """The extraction is not vacuous: a typed-in result is found, a glued one is not."""
    assert prose_numbers("BLEU reaches 27.3 on the test set") == ["27.3"]
    assert prose_numbers("BLEU reaches {glue:text}`bleu` on the test set") == []
    assert (
        prose_numbers("as the paper says (§3.2.1, Table 3), `x[0, 12]` in fp16") == []
    )
    assert prose_numbers("a 37k vocabulary and 65M parameters") == ["37", "65"]
    assert prose_numbers("$\\sqrt{d_k} = 8$ for $d_k = 64$") == ["8", "64"]
    assert prose_numbers("$4 \\cdot 262{,}144 = 4{,}194{,}304$") == [
        "4",
        "262,144",
        "4,194,304",
    ]
    assert prose_numbers(
        ":::{dropdown} Solution — exercise 2\nBLEU reaches 27.3\n:::\n"
    ) == ["27.3"]
    assert prose_numbers("$$\nd_k = 64\n$$\n") == ["64"]
    assert prose_numbers("```{code-cell}\nx = 27.3\n```\n") == []
    assert prose_numbers("[27.3 BLEU](https://example.org/run/12) and <b>4.5</b>") == [
        "27.3",
        "4.5",
    ]


_NUMBER_WORD = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen"
    r"|twenty|thirty|forty|fifty|sixty)"
)
DURATION_IN_WORDS = re.compile(
    rf"\b{_NUMBER_WORD}[- ](?:minutes?|seconds?|hours?|milliseconds?)\b", re.I
)


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_no_duration_typed_in_words(path):
    """ "About five minutes" is a measurement typed by hand: glue the measured time
    instead."""
    nb = nbformat.read(path, as_version=4)
    bad = [
        f"cell {i}: {m.group(0)!r}"
        for i, c in enumerate(nb.cells)
        if c.cell_type == "markdown"
        for m in DURATION_IN_WORDS.finditer(c.source)
    ]
    assert not bad, (
        f"{path.name}: durations typed in words (glue the measured time): {bad}"
    )


def test_duration_pattern():
    assert DURATION_IN_WORDS.search("in about five minutes of training")
    assert DURATION_IN_WORDS.search("the recorded twenty-minute run")
    assert not DURATION_IN_WORDS.search("in a few seconds")
