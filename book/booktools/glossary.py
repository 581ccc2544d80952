"""The one reader of the book's glossary (book/glossary.md): its entries, their names
and anchors.

The glossary is a MyST ``{glossary}`` directive (read through `booktools.myst`): each
entry is a group of term lines (its English names, its Chinese name, then any other
Chinese name readers also meet: an alias, 前瞻掩码 for 因果掩码), then its indented
definition. A definition that starts ``† *Usually written in English:* NAME`` marks a
term Chinese writing keeps in English; an entry with no Chinese line (Softmax, Logits,
BLEU, Dropout) is written NAME in the Chinese edition too. The Chinese edition's
checker, the runner editions' links and the Chinese search dictionary all read it here.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from booktools import myst
from booktools.paths import ROOT

GLOSSARY = ROOT / "book" / "glossary.md"
CJK = re.compile(r"[\u4e00-\u9fff]")
DAGGER = re.compile(
    r"†\s*\*Usually written in English:\*\s*(?P<name>[^(（.]+?)\s*[(（.]"
)


@dataclass(frozen=True)
class Term:
    english: tuple[str, ...]  # the entry's English names, as the glossary writes them
    chinese: str  # its Chinese name (the English NAME of its † for a term written so)
    definition: str = ""  # its text, as written (Markdown)
    # other Chinese names readers meet (for search, not for {term} roles)
    aliases: tuple[str, ...] = ()
    # the † NAME: how Chinese writing usually writes the term ("" unmarked)
    in_english: str = ""


def _body(path: Path) -> list[str]:
    found = myst.directives(path.read_text(encoding="utf-8"), "glossary")
    if len(found) != 1:
        raise ValueError(
            f"{path.name}: expected one glossary directive, found {len(found)}"
        )
    return found[0].body_lines


@functools.lru_cache(maxsize=None)
def glossary_terms(path: Path = GLOSSARY) -> list[Term]:
    """The glossary's entries: a group of term lines (English names and one Chinese),
    then the text."""
    terms: list[Term] = []
    names: list[str] = []
    text: list[str] = []

    def close() -> None:
        terms.append(_entry(names, "\n".join(text).strip()))

    for line in _body(path):
        if line and not line[0].isspace():
            if text:
                close()
                names, text = [], []
            names.append(line.strip())
        elif names:
            text.append(line.strip())
    if names:
        close()
    return terms


def _entry(names: list[str], definition: str) -> Term:
    """One entry from its term lines and its text."""
    chinese = [n for n in names if CJK.search(n)]
    dagger = DAGGER.match(definition)
    in_english = dagger.group("name") if dagger else ""
    if definition.startswith("†") and not dagger:
        raise ValueError(
            f"glossary entry {names!r}: a † starts '† *Usually written in English:*"
            " NAME'"
        )
    if not chinese and not in_english:
        raise ValueError(
            f"glossary entry {names!r}: no Chinese name, and no † naming the"
            " English one"
        )
    english = tuple(n for n in names if n not in chinese)
    name = chinese[0] if chinese else in_english
    return Term(english, name, definition, tuple(chinese[1:]), in_english)


def chinese_names(term: Term) -> set[str]:
    """The Chinese names a {term} role may show: the glossary's, and for an entry that
    names a pair ("后置/前置层归一化" for Post-LN / Pre-LN) each of the two
    ("后置层归一化", "前置层归一化")."""
    names = {term.chinese}
    if "/" in term.chinese:
        first, last = term.chinese.split("/", 1)
        names |= {first + last[len(first) :], last}
    return names


def term_index(terms: list[Term]) -> dict[str, Term]:
    """Each English name, lower-cased (Sphinx finds terms case-insensitively), to its
    entry."""
    return {name.lower(): t for t in terms for name in t.english}


@functools.lru_cache(maxsize=None)
def anchors(path: Path = GLOSSARY) -> dict[str, str]:
    """lower-case term -> its anchor in the published glossary, as Sphinx makes it (a
    term Sphinx cannot slug, a Chinese one, gets a serial id there, so it has no anchor
    here)."""
    from sphinx.util.nodes import _make_id

    found: dict[str, str] = {}
    for term in glossary_terms(path):
        for name in term.english + (term.chinese,):
            anchor = _make_id("term-" + name)
            if anchor != "term":
                found.setdefault(name.lower(), anchor)
    return found
