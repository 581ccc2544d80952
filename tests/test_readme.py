"""The README states no figure that the chapters do not state.

The README is the front door, and it drifts: a chapter is re-executed, its numbers move, and the
README keeps the old ones (a BLEU score, a speed-up, a count of dropout sites). So every number
in the README's prose, tables and code comments is one of two kinds:

- a figure, listed in ``FIGURES`` with the chapter and glue key it comes from, and equal to that
  key's stored value — re-executing a chapter that moves the figure fails this test until the
  README says the new value;
- a fixed quantity that is not a measurement (a version, the paper's own numbers, a setting the
  reader passes), listed with its reason in ``FIXED``.

Small integers (chapter numbers, layer counts) pass, as in the chapters' prose test. Anything
else fails, naming the number and the line it is on.
"""
from __future__ import annotations

import re

import nbformat
import pytest

from conftest import ROOT
from test_glue_keys import glued_values
from test_prose_numbers import _is_small_integer, prose_numbers

README = ROOT / "README.md"

# README text -> (chapter, glue key): the figure must equal the key's stored value.
FIGURES: dict[str, tuple[str, str]] = {
    "63,082,496": ("09_parameter_counting", "ch9_base_exact"),
    "214,245,376": ("09_parameter_counting", "ch9_big_exact"),
    "27.9": ("11b_training", "ch11b_bleu_greedy"),
    "615": ("11b_training", "ch11b_steps"),
    "1,800": ("12_results_and_attention", "ch12_full_steps"),
    "38.0": ("12_results_and_attention", "ch12_full_greedy"),
    "39.1": ("12_results_and_attention", "ch12_full_beam"),
}
# Figures the README writes in words: (chapter, glue key, the README's phrase with the value in it).
PHRASES: list[tuple[str, str, str]] = [
    ("08_dropout", "ch08_n_sites_word", "{} dropout sites"),
]
# Numbers that are not measurements, each with its reason.
FIXED: dict[str, str] = {
    "2017": "the paper's year",
    "3.11": "the Python version the project pins",
    "65": "the paper's parameter count of the base model (65M), quoted to compare",
    "213": "the paper's parameter count of the big model (213M), quoted to compare",
    "256": "a setting the reader passes (d_model of the cpu-full preset and of the usage example)",
    "390": "the width in pixels of the small screen the explorer test emulates",
    "512": "the paper's d_model, quoted",
    "2.0": "the version of the Apache licence",
    "16": "a format: 16-bit dropout draws and 16-bit weights",
    "20": "the max_len the usage example passes",
    "40": "the reading path's limit on a cell's lines (tests/test_reading_path.py)",
    "60": "a setting: the seconds of training steps in the GPU check's core (scripts/gpu_check.py)",
}


def readme_numbers(text: str) -> list[tuple[int, str]]:
    """(line number, number) for each number of the README's prose, tables and code comments."""
    found = []
    in_code = False
    text = re.sub(r"<[A-Za-z/!][^>]*>", lambda m: re.sub(r"[^\n]", " ", m.group()), text)   # tags, even over lines
    text = re.sub(r"``.+?``", lambda m: " " * len(m.group()), text)                # ``code with a ` inside``
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:                                   # code: only its comments are prose
            line = line.split("#", 1)[1] if "#" in line else ""
        found += [(lineno, n) for n in prose_numbers(line)]
    return found


def test_every_readme_number_is_a_chapter_figure_or_fixed():
    bad = [f"line {ln}: {n!r}" for ln, n in readme_numbers(README.read_text(encoding="utf-8"))
           if not _is_small_integer(n) and n not in FIGURES and n not in FIXED]
    assert not bad, ("numbers in the README that no chapter glues (add them to FIGURES with their glue "
                     "key, or to FIXED with a reason, or remove them):\n  " + "\n  ".join(bad))


@pytest.mark.parametrize("text", sorted(FIGURES))
def test_readme_figure_equals_the_chapter(text):
    chapter, key = FIGURES[text]
    values = glued_values(nbformat.read(ROOT / "chapters" / f"{chapter}.ipynb", as_version=4))
    assert key in values, f"{chapter} no longer glues {key!r} (the README quotes {text})"
    assert values[key] == text, f"README says {text}; {chapter} glues {key} = {values[key]!r}: update the README"
    assert any(n == text for _, n in readme_numbers(README.read_text(encoding="utf-8"))), \
        f"FIGURES lists {text}, which the README no longer states: remove the entry"


@pytest.mark.parametrize("chapter,key,phrase", PHRASES, ids=[k for _, k, _ in PHRASES])
def test_readme_phrase_equals_the_chapter(chapter, key, phrase):
    values = glued_values(nbformat.read(ROOT / "chapters" / f"{chapter}.ipynb", as_version=4))
    assert key in values, f"{chapter} no longer glues {key!r}"
    assert phrase.format(values[key]) in README.read_text(encoding="utf-8"), \
        f"the README should say {phrase.format(values[key])!r} ({chapter}, {key})"


def test_fixed_entries_are_used():
    used = {n for _, n in readme_numbers(README.read_text(encoding="utf-8"))}
    assert set(FIXED) <= used, f"FIXED entries the README no longer states: {sorted(set(FIXED) - used)}"


def test_the_check_can_fail():
    """A drifted figure and an unlisted number are both found."""
    assert readme_numbers("28.0 BLEU\n```bash\nmake train   # 8.4 minutes here\nx = 8000\n```\n") == \
        [(1, "28.0"), (3, "8.4")]
    assert not re.fullmatch(r"\d+", "8.4") and "8.4" not in FIGURES and "8.4" not in FIXED
