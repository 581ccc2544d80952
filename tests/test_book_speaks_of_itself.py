"""The book speaks of the Transformer and of what it measured, never of how it was
written.

A reader needs what the book measured and what it could not measure ("no GPU run has
been recorded yet"), not its history: which notes it grew from, what an earlier version
of a chapter said, what the people or sessions that wrote it had. A claim found wrong
elsewhere is stated as a common misconception. This test reads the prose of every
chapter (markdown cells), the README and the book's own pages."""

import re

import nbformat
import pytest

from conftest import ROOT

HISTORY = re.compile(
    "|".join(
        [
            r"\bseed\s+notes?\b",
            r"\bthe seed's\b",
            r"\bthe seed\s+(?:also|says|quotes|notes)\b",
            r"\bsource notes\b",
            r"\b(?:the|our)\s+study\s+notes\b",
            r"\bthe notes\s+(?:say|says|write|call|also)\b",
            r"\bnotes this book\b",
            r"\bthe book started from\b",
            r"\bthis book grew from\b",
            r"\b(?:earlier|first|previous)\s+version\s+of\s+this\s+(?:chapter|book)\b",
            r"\bwhen this chapter was written\b",
            r"\bsessions?\s+(?:that|which|who)\s+wr(?:ote|ite)\b",
            r"\bthis book's sessions\b",
            r"\bwriting this book\b",
            r"\blent to the sessions\b",
            r"\blent for\b",
            r"\bas first posed\b",
            r"\bthe same note\b",
            r"\b(?:the|this|that) note (?:adds|says|gives)\b",
        ]
    ),
    re.I,
)


def _texts():
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "markdown":
                yield f"{path.name} cell {i}", cell.source
    for path in [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "PYPI.md",
        *sorted((ROOT / "book").glob("*.md")),
    ]:
        yield path.name, path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "where,text",
    list(_texts()),
    ids=lambda v: v if isinstance(v, str) and len(v) < 60 else "",
)
def test_no_sentence_about_how_the_book_was_written(where, text):
    hits = [
        text[max(0, m.start() - 60) : m.end() + 40].replace("\n", " ")
        for m in HISTORY.finditer(text)
    ]
    assert not hits, f"{where} speaks of the book's own making: {hits}"


def test_the_pattern_catches_what_it_must():
    for bad in (
        "One of the seed notes says",
        "as our source notes put it",
        "an earlier version of this chapter",
        "a GPU that the sessions writing this book did not have",
        "the notes say attention weights",
        "One of the study notes remarks",
        "The exercise as first posed asked",
        "The same note adds that",
        "an H200, lent for minutes",
    ):
        assert HISTORY.search(bad), bad
    for fine in (
        "seeded at the top of every chapter",
        "a fixed seed",
        "one onnxruntime session per file",
        "a common misconception calls it",
    ):
        assert not HISTORY.search(fine), fine
