"""The README and CONTRIBUTING.md state no figure that the chapters do not state, and
hold together.

The README is the front door, and it drifts: a chapter is re-executed, its numbers move,
and the README keeps the old ones (a BLEU score, a speed-up, a count of dropout sites).
So every number in the prose, tables and code comments of the README and of
CONTRIBUTING.md is one of two kinds:

- a figure, listed in ``FIGURES`` with the chapter and glue key it comes from, and equal
  to that key's stored value — re-executing a chapter that moves the figure fails this
  test until the file says the new value;
- a fixed quantity that is not a measurement (a version, the paper's own numbers, a
  setting the reader passes), listed with its reason in ``FIXED``.

Small integers (chapter numbers, layer counts) pass, as in the chapters' prose test.
Anything else fails, naming the file, the number and the line it is on.

The README stays a front door: at most ``README_MAX_LINES`` lines, linking
CONTRIBUTING.md, with a usage example that runs and the section the chapters' notes
cite; every relative link of both files resolves to a file of the repository (and an
anchor to a heading of that file)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from booktools import myst
from booktools.install_cell import NOTE_MACHINE
from conftest import ROOT
from test_glue_keys import glued_values
from test_prose_numbers import _is_small_integer, prose_numbers

README = ROOT / "README.md"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
DOCS = [README, CONTRIBUTING]
README_MAX_LINES = 120

# Text of the README or CONTRIBUTING.md -> (chapter, glue key): the figure must equal
# the key's stored value.
FIGURES: dict[str, tuple[str, str]] = {
    "63,082,496": ("09_parameter_counting", "ch9_base_exact"),
    "214,245,376": ("09_parameter_counting", "ch9_big_exact"),
    "27.9": ("11b_training", "ch11b_bleu_greedy"),
    "615": ("11b_training", "ch11b_steps"),
    "1,800": ("12_results_and_attention", "ch12_full_steps"),
    "38.0": ("12_results_and_attention", "ch12_full_greedy"),
    "39.1": ("12_results_and_attention", "ch12_full_beam"),
    "39.92": ("12_results_and_attention", "ch12_30m_greedy"),
    "40.16": ("12_results_and_attention", "ch12_30m_beam"),
}
# Figures written in words: (chapter, glue key, the phrase with the value in it).
PHRASES: list[tuple[str, str, str]] = [
    ("08_dropout", "ch08_n_sites_word", "{} dropout sites"),
]
# Numbers that are not measurements, each with its reason.
FIXED: dict[str, str] = {
    "2017": "the paper's year",
    "30": "a preset's name: cpu-30min, trained for half an hour",
    "8.6": "the printed code's font size in points (book/_static/print.css)",
    "3.11": "the Python version the project pins",
    "65": "the paper's parameter count of the base model (65M), quoted to compare",
    "213": "the paper's parameter count of the big model (213M), quoted to compare",
    "256": (
        "a setting the reader passes (d_model of the cpu-full preset and of the usage"
        " example)"
    ),
    "390": "the width in pixels of the small screen the explorer test emulates",
    "320": (
        "a screen width the web tests open every page at (tests/test_web.py, WIDTHS)"
    ),
    "768": (
        "a screen width the web tests open every page at (tests/test_web.py, WIDTHS)"
    ),
    "1280": (
        "a screen width the web tests open every page at (tests/test_web.py, WIDTHS)"
    ),
    "300": (
        "a setting: the calls per exercise check in make test-slow (EXERCISE_CALLS=300)"
    ),
    "512": "AVX-512, an instruction set",
    "2.0": "the version of the Apache licence",
    "16": "a format: 16-bit dropout draws and 16-bit weights",
    "20": "the max_len the usage example passes",
    "40": "the reading path's limit on a cell's lines (tests/test_reading_path.py)",
    "60": (
        "a setting: the seconds of training steps in the GPU check's core"
        " (scripts/gpu_check.py)"
    ),
    "25": "a setting: the slowest tests `make test` prints (--durations=25)",
    "82": (
        "the suite's own CPU use in one process, sampled once (CONTRIBUTING: why two"
        " processes)"
    ),
    "31": (
        "the suite's own CPU use in one process, sampled once (CONTRIBUTING: why two"
        " processes)"
    ),
    "900": "a setting: nbval's cell limit (--nbval-cell-timeout=900)",
    "200": (
        "the suite's own time: 11b's training cell alone, measured (CONTRIBUTING: two"
        " processes)"
    ),
    "3,915": (
        "the suite's own time in one process, measured (CONTRIBUTING: two processes)"
    ),
    "21.9": (
        "the suite's own time: .ci/run on a fresh clone, measured (CONTRIBUTING: two"
        " processes)"
    ),
    "1,315": (
        "the suite's own time: make test on a fresh clone, measured (CONTRIBUTING: two"
        " processes)"
    ),
    "758": (
        "the suite's own time: its two-process pass, measured (CONTRIBUTING: two"
        " processes)"
    ),
    "342": (
        "the suite's own time: the training chapters, measured (CONTRIBUTING: two"
        " processes)"
    ),
    "88": (
        "the suite's own time: the second other-processor pass, measured (CONTRIBUTING:"
        " two processes); and a setting, ruff's line length: the printed code column"
    ),
    "67": (
        "the suite's own time: the first other-processor pass, measured (CONTRIBUTING:"
        " two processes)"
    ),
    "62": (
        "the quick tier's own time, measured on a quiet machine (CONTRIBUTING: the"
        " quick tier)"
    ),
    "57": (
        "the quick tier's tests' own time, measured on a quiet machine (CONTRIBUTING:"
        " the quick tier)"
    ),
}


def readme_numbers(text: str) -> list[tuple[int, str]]:
    """(line number, number) for each number of the README's prose, tables and code
    comments."""
    found = []
    in_code = False
    # tags, even over lines
    text = re.sub(
        r"<[A-Za-z/!][^>]*>", lambda m: re.sub(r"[^\n]", " ", m.group()), text
    )
    # ``code with a ` inside``
    text = re.sub(r"``.+?``", lambda m: " " * len(m.group()), text)
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:  # code: only its comments are prose
            line = line.split("#", 1)[1] if "#" in line else ""
        found += [(lineno, n) for n in prose_numbers(line)]
    return found


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _numbers_in_docs() -> set[str]:
    return {n for path in DOCS for _, n in readme_numbers(_text(path))}


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_every_readme_number_is_a_chapter_figure_or_fixed(path):
    bad = [
        f"line {ln}: {n!r}"
        for ln, n in readme_numbers(_text(path))
        if not _is_small_integer(n) and n not in FIGURES and n not in FIXED
    ]
    assert not bad, (
        f"numbers in {path.name} that no chapter glues (add them to FIGURES with their"
        " glue key, or to FIXED with a reason, or remove them):\n  " + "\n  ".join(bad)
    )


@pytest.mark.parametrize("text", sorted(FIGURES))
def test_readme_figure_equals_the_chapter(text):
    chapter, key = FIGURES[text]
    values = glued_values(
        nbformat.read(ROOT / "chapters" / f"{chapter}.ipynb", as_version=4)
    )
    assert key in values, (
        f"{chapter} no longer glues {key!r} (README or CONTRIBUTING quotes {text})"
    )
    assert values[key] == text, (
        f"README or CONTRIBUTING says {text}; {chapter} glues {key} = {values[key]!r}:"
        " update it"
    )
    assert text in _numbers_in_docs(), (
        f"FIGURES lists {text}, which neither README nor CONTRIBUTING states any"
        " longer: remove the entry"
    )


@pytest.mark.parametrize("chapter,key,phrase", PHRASES, ids=[k for _, k, _ in PHRASES])
def test_readme_phrase_equals_the_chapter(chapter, key, phrase):
    values = glued_values(
        nbformat.read(ROOT / "chapters" / f"{chapter}.ipynb", as_version=4)
    )
    assert key in values, f"{chapter} no longer glues {key!r}"
    assert any(phrase.format(values[key]) in _text(path) for path in DOCS), (
        f"README or CONTRIBUTING should say {phrase.format(values[key])!r} ({chapter},"
        f" {key})"
    )


def test_fixed_entries_are_used():
    unused = sorted(set(FIXED) - _numbers_in_docs())
    assert not unused, (
        f"FIXED entries neither README nor CONTRIBUTING states any longer: {unused}"
    )


def test_readme_is_a_front_door():
    """Short, and linking the contributors' material that it leaves out."""
    text = _text(README)
    n_lines = len(text.splitlines())
    assert n_lines <= README_MAX_LINES, (
        f"README.md has {n_lines} lines (at most {README_MAX_LINES}): move contributor"
        " material to CONTRIBUTING.md"
    )
    assert any(target.split("#")[0] == "CONTRIBUTING.md" for target in links(text)), (
        "README.md does not link CONTRIBUTING.md"
    )


def test_the_section_the_chapters_cite_is_in_the_readme():
    """Every chapter's note on its machine cites a README section by its title."""
    cited = re.findall(r"README, \*([^*]+)\*", NOTE_MACHINE)
    assert cited, "NOTE_MACHINE no longer cites a README section: update this test"
    titles = {title for _, title in headings(_text(README))}
    assert set(cited) <= titles, (
        "README.md lacks the section(s) the chapters cite:"
        f" {sorted(set(cited) - titles)}"
    )


def test_readme_example_runs():
    """The usage example of the README, run as it is written."""
    blocks = myst.code_blocks(_text(README), "python")
    assert len(blocks) == 1, "the README should hold one python example"
    namespace: dict = {}
    exec(compile(blocks[0], "README.md example", "exec"), namespace)
    assert namespace["logits"].shape == (2, 9, 8000) and namespace["out"].shape[0] == 2


LINK = re.compile(
    r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|<(?:img|a)\b[^>]*?\b(?:src|href)=\"([^\"]+)\"",
    re.S,
)


def links(text: str) -> list[str]:
    """The targets of the markdown links and of the HTML img/a tags of a text."""
    return [m.group(1) or m.group(2) for m in LINK.finditer(text)]


def headings(text: str) -> list[tuple[str, str]]:
    """(GitHub anchor, title) of each markdown heading outside code blocks."""
    titles = [title.strip() for _, title in myst.headings(text)]
    return [(re.sub(r"[^\w\- ]", "", t.lower()).replace(" ", "-"), t) for t in titles]


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_relative_links_resolve(path):
    bad = []
    for target in links(_text(path)):
        # https:, mailto: ...: not a file here
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists() or ROOT not in [dest, *dest.parents]:
            bad.append(f"{target}: no such file in the repository")
        elif anchor and anchor not in {a for a, _ in headings(_text(dest))}:
            bad.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not bad, f"links of {path.name} that do not resolve:\n  " + "\n  ".join(bad)


def test_the_check_can_fail():
    """A drifted figure and an unlisted number are both found."""
    assert readme_numbers(
        "28.0 BLEU\n```bash\nmake train   # 8.4 minutes here\nx = 8000\n```\n"
    ) == [(1, "28.0"), (3, "8.4")]
    assert (
        not re.fullmatch(r"\d+", "8.4") and "8.4" not in FIGURES and "8.4" not in FIXED
    )
    assert links('[a](x.md#y) <img src="f.png" width="3"> [b](https://e.org)') == [
        "x.md#y",
        "f.png",
        "https://e.org",
    ]
    assert headings(
        "## Same verdict on every machine\n```\n# not a heading\n```\n## What `make"
        " test` runs\n"
    ) == [
        ("same-verdict-on-every-machine", "Same verdict on every machine"),
        ("what-make-test-runs", "What `make test` runs"),
    ]
