"""The Chinese edition's term map (locales/zh_CN/terms.yaml): one Chinese word for one
idea.

Each idea (every glossary entry, and the other words the edition must write one way:
堆叠, 批量, notebook …) has its one Chinese word, the page that introduces it, and the
variants that must not appear. `booktools.translations` applies the map to every message
of every catalogue:

- `drift(...)`: a rejected variant in a message's Chinese prose (its code, maths, roles
  and link targets aside), unless the variant's own context allows it (位置嵌入 where
  the English says "embedding", 可选参数, the glossary's explanation);
- `glosses(...)`: the English glosses "（key）" after Chinese words, for the rule that a
  term is glossed only on the page that introduces it, and in the glossary.

The map is data; `problems_of_map` checks it against the glossary (every entry has its
idea, with the glossary's Chinese name) and the book (every page it names exists).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from booktools import config, myst
from booktools.glossary import Term, glossary_terms
from booktools.paths import ROOT

TERM_MAP = ROOT / "locales" / "zh_CN" / "terms.yaml"
GLOSSARY_PAGE = "book/glossary"
CJK = re.compile(r"[\u4e00-\u9fff]")
# An English gloss: Latin words in parentheses right after a Chinese character (or a
# term role).
GLOSS = re.compile(
    r"(?<=[\u4e00-\u9fff\u3007])\s?[（(]"
    r"\s*(?P<en>[A-Za-z][A-Za-z0-9 .,/'’–-]*?)\s*[）)]"
)


@dataclass(frozen=True)
class Variant:
    """A rejected way of writing an idea, with the contexts where it is something
    else."""

    word: re.Pattern[str]
    # wrong only where the English matches this
    if_english: Optional[re.Pattern[str]] = None
    # right where the English matches this
    unless_english: Optional[re.Pattern[str]] = None
    allowed_on: tuple[str, ...] = ()  # pages where it is right
    # what to write instead (default: the idea's word)
    say: str = ""

    def applies(self, english: str, page: str, hits: int = 1) -> bool:
        """Whether `hits` uses of the variant in a message of `page` are wrong: each use
        needs its own English context ("检验" twice beside one "test" is one drift)."""
        if page in self.allowed_on:
            return False
        if self.if_english and not self.if_english.search(english):
            return False
        return not (
            self.unless_english and len(self.unless_english.findall(english)) >= hits
        )


@dataclass(frozen=True)
class Idea:
    # the glossary entry's English name, or the idea in words
    name: str
    english: tuple[str, ...]  # its English words, lower case
    chinese: str  # the one Chinese word
    term: str = ""  # the glossary entry, if it is one
    # the page that introduces it ("" none: glossed nowhere else)
    introduced: str = ""
    reject: tuple[Variant, ...] = ()
    # other Chinese that renders it (注意力 inside 自注意力, 多头注意力)
    accept: tuple[str, ...] = ()
    # English beside the word that makes it another thing
    unless_near: tuple[re.Pattern[str], ...] = ()
    # a generic word: the idea only beside one of these
    only_near: tuple[re.Pattern[str], ...] = ()
    # a † name written in English after its introduction (FLOPs)
    prose: tuple[str, ...] = ()

    def rendered(self, chinese: str, english_word: str = "") -> bool:
        """Whether `chinese` (a message's Chinese words) holds this idea's word: the one
        Chinese word, one it accepts, or, for an idea written in English (softmax, GPU),
        the English word."""
        words = (*names(self.chinese), *self.accept, *self.prose)
        if not CJK.search(self.chinese) and english_word:
            words += (english_word,)
        low = chinese.lower()
        return any(w.lower() in low for w in words)


@dataclass(frozen=True)
class Exemption:
    """A message where an idea's English word is rightly rendered without the idea's
    Chinese word."""

    page: str  # "chapters/01_qkv_attention"
    message: str  # the start of its msgid
    english: str  # the English word (lower case)
    reason: str

    def covers(self, page: str, msgid: str, english: str) -> bool:
        return (
            page == self.page
            and msgid.startswith(self.message)
            and english.lower() in plurals(self.english)
        )


@dataclass(frozen=True)
class TermMap:
    ideas: tuple[Idea, ...]
    # the "Running this chapter" note's Chinese
    note: dict[str, str] = field(default_factory=dict)
    exemptions: tuple[Exemption, ...] = ()

    @functools.cached_property
    def patterns(self) -> list[tuple[Idea, re.Pattern[str]]]:
        """Each English word of each idea as a pattern that finds it (and its plurals)
        as a word, longest first, so that "multi-head attention" is found before
        "attention"."""
        words = sorted(
            {(w, i) for i, idea in enumerate(self.ideas) for w in idea.english},
            key=lambda wi: (-len(wi[0]), wi[0]),
        )
        return [(self.ideas[i], english_pattern(w)) for w, i in words]

    @functools.cached_property
    def by_english(self) -> dict[str, Idea]:
        """Every English word (and its plural) of every idea, lower case, to the
        idea."""
        found: dict[str, Idea] = {}
        for idea in self.ideas:
            for word in idea.english:
                for form in plurals(word):
                    found.setdefault(form, idea)
        return found

    @functools.cached_property
    def by_term(self) -> dict[str, Idea]:
        """A glossary entry's English name, lower case, to its idea."""
        return {idea.term.lower(): idea for idea in self.ideas if idea.term}

    def of_term(self, term: Term) -> Optional[Idea]:
        return next(
            (
                self.by_term[n.lower()]
                for n in term.english
                if n.lower() in self.by_term
            ),
            None,
        )


def plurals(word: str) -> set[str]:
    """`word` and the plurals an English sentence may gloss it with (key: keys; query:
    queries)."""
    word = word.lower()
    forms = {word, word + "s", word + "es"}
    if word.endswith("y"):
        forms.add(word[:-1] + "ies")
    if word.endswith("s"):
        forms.add(word[:-1])
    return forms


def names(chinese: str) -> tuple[str, ...]:
    """The words of an idea's Chinese: itself, and for a pair ("后置/前置层归一化") each
    of the two."""
    if "/" not in chinese or not CJK.search(chinese):
        return (chinese,)
    first, last = chinese.split("/", 1)
    return (chinese, first + last[len(first) :], last)


def _variant(raw: Any) -> Variant:
    if isinstance(raw, str):
        return Variant(re.compile(raw))

    def pattern(key: str) -> Optional[re.Pattern[str]]:
        return re.compile(raw[key]) if raw.get(key) else None

    return Variant(
        re.compile(raw["word"]),
        pattern("if_english"),
        pattern("unless_english"),
        tuple(raw.get("allowed_on", ())),
        str(raw.get("say", "")),
    )


def _idea(raw: dict[str, Any], introduced: dict[str, str]) -> Idea:
    term = str(raw.get("term", ""))
    page = str(raw.get("introduced", "")) or introduced.get(term.lower(), "")
    return Idea(
        term or str(raw.get("idea", "")),
        tuple(str(e).lower() for e in raw.get("english", ())),
        str(raw["chinese"]),
        term,
        page,
        tuple(_variant(v) for v in raw.get("reject", ())),
        tuple(str(a) for a in raw.get("accept", ())),
        tuple(re.compile(u, re.I) for u in raw.get("unless_near", ())),
        tuple(re.compile(u, re.I) for u in raw.get("only_near", ())),
        tuple(str(w) for w in raw.get("prose", ())),
    )


@functools.lru_cache(maxsize=None)
def term_map(path: Path = TERM_MAP) -> TermMap:
    """The term map, each glossary idea introduced where the map says or else where the
    chapters first link it."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    introduced = introductions()
    return TermMap(
        tuple(_idea(raw, introduced) for raw in data["ideas"]),
        {k: str(v) for k, v in (data.get("note") or {}).items()},
        tuple(
            Exemption(
                str(e["page"]),
                str(e["message"]),
                str(e["english"]).lower(),
                str(e["reason"]),
            )
            for e in data.get("exemptions") or ()
        ),
    )


# ---- where a term is introduced ------------------------------------------------------


def pages(root: Path = ROOT) -> list[str]:
    """The book's pages in reading order (`_toc.yml`): "book/intro",
    "chapters/01_qkv_attention" …"""
    return config.pages(root / config.TOC.name)


def all_roles(text: str, name: Optional[str] = None) -> list[myst.Piece]:
    """The roles of `text` and of the directives it holds (an admonition, a dropdown),
    at any depth."""
    return myst.roles(text, name) + [
        r for d in myst.directives(text) for r in all_roles(d.body, name)
    ]


def _markdown(page: str, root: Path) -> list[str]:
    notebook = root / f"{page}.ipynb"
    if notebook.exists():
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        return ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    path = root / f"{page}.md"
    return [path.read_text(encoding="utf-8")] if path.exists() else []


@functools.lru_cache(maxsize=None)
def introductions(root: Path = ROOT) -> dict[str, str]:
    """Each glossary entry's English name (lower case) -> the chapter that introduces
    the term: the first chapter its glossary text refers to
    ({doc}`/chapters/06_encoder`), or else the first chapter, in reading order, whose
    English links it with a {term} role."""
    terms = glossary_terms()
    index = {name.lower(): t for t in terms for name in t.english}
    found: dict[str, str] = {}
    for term in terms:
        chapters = [
            myst.titled(r.content)[1].strip("/")
            for r in myst.roles(term.definition, "doc")
        ]
        chapters = [c for c in chapters if c.startswith("chapters/")]
        if chapters:
            found[term.english[0].lower()] = chapters[0]
    for page in pages(root):
        if not page.startswith("chapters/"):
            continue
        for cell in _markdown(page, root):
            for role in all_roles(cell, "term"):
                linked = index.get(myst.titled(role.content)[1].lower())
                if linked is not None:
                    found.setdefault(linked.english[0].lower(), page)
    return found


# ---- the rules -----------------------------------------------------------------------


def drift(ideas: TermMap, english: str, prose: str, page: str) -> list[str]:
    """The rejected variants in `prose` (a message's Chinese words), each as a problem
    to print."""
    found = []
    for idea in ideas.ideas:
        if idea.prose and page not in (idea.introduced, GLOSSARY_PAGE):
            for name in sorted(names(idea.chinese), key=len, reverse=True):
                if name in prose:
                    found.append(
                        f"term map: {name!r} for {idea.name!r}: write"
                        f" {' / '.join(idea.prose)} (the Chinese name only on"
                        f" {idea.introduced}, which introduces it, and in the glossary)"
                    )
                    break
        for variant in idea.reject:
            hit = variant.word.search(prose)
            if (
                hit
                and page == GLOSSARY_PAGE
                and any(hit.group(0).lower() in plurals(e) for e in idea.english)
            ):
                # the glossary names a term's English: "† 中文通常直接写英文：LayerNorm"
                continue
            if hit and variant.applies(english, page, len(variant.word.findall(prose))):
                instead = variant.say or idea.chinese
                found.append(
                    f"term map: {hit.group(0)!r} for {idea.name!r}: write {instead}"
                )
    return found


# ---- the positive rule: an English word asks for its Chinese word --------------------


def english_pattern(word: str) -> re.Pattern[str]:
    """`word` (and its plurals) as a whole word of English prose, any case: not part of
    a longer word or of a hyphenated one ("attention" is not found in "self-attention",
    "head" not in "multi-head"), a space matching any run of spaces."""
    forms = sorted(plurals(word), key=len, reverse=True)
    body = "|".join(re.escape(f).replace(r"\ ", r"\s+") for f in forms)
    return re.compile(
        rf"(?<![A-Za-z0-9_\-–\[])(?:{body})(?![A-Za-z0-9_\]]|[-–][A-Za-z])", re.I
    )


# Where a clause ends: a sentence's end, a semicolon, a colon, a comma, a dash, a
# parenthesis.
CLAUSE_END = re.compile(r"[.!?](?=\s|$)|[;:,()—]|\s[–-]\s")


def clause(text: str, start: int, end: int) -> str:
    """The clause of `text` that holds `text[start:end]`: from the punctuation before it
    to the punctuation after it (a full stop, a semicolon, a colon, a comma, a dash or a
    parenthesis). This is "near the word": the context that makes an English word
    something else is judged here only."""
    before = [m.end() for m in CLAUSE_END.finditer(text, 0, start)]
    after = CLAUSE_END.search(text, end)
    return text[(before[-1] if before else 0) : (after.start() if after else len(text))]


@dataclass(frozen=True)
class Occurrence:
    idea: Idea
    word: str  # as the English writes it
    near: str  # its clause


def occurrences(ideas: TermMap, english: str) -> list[Occurrence]:
    """Each word of the term map in `english` (a message's words), the longest first: a
    word inside a longer one that was found ("attention" in "multi-head attention") is
    that longer word's."""
    taken: list[tuple[int, int]] = []
    found = []
    for idea, pattern in ideas.patterns:
        for m in pattern.finditer(english):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            found.append(
                (
                    m.start(),
                    Occurrence(idea, m.group(0), clause(english, m.start(), m.end())),
                )
            )
    return [o for _, o in sorted(found, key=lambda x: x[0])]


def unrendered(
    ideas: TermMap,
    english: str,
    chinese: str,
    page: str,
    msgid: str,
    used: Optional[set[Exemption]] = None,
) -> list[str]:
    """The positive rule: each idea's English word in `english` (a message's words, code
    and roles aside, a {term}'s display kept) asks for the idea's Chinese word in
    `chinese`, unless one of the idea's `unless_near` contexts is in the clause that
    holds the word, or the message is exempt."""
    problems, reported = [], set()
    for occ in occurrences(ideas, english):
        if occ.idea.name in reported or occ.idea.rendered(chinese, occ.word):
            continue
        if any(u.search(occ.near) for u in occ.idea.unless_near):
            continue
        if occ.idea.only_near and not any(
            u.search(occ.near) for u in occ.idea.only_near
        ):
            continue
        exempt = next(
            (e for e in ideas.exemptions if e.covers(page, msgid, occ.word)), None
        )
        if exempt is not None:
            if used is not None:
                used.add(exempt)
            continue
        reported.add(occ.idea.name)
        problems.append(
            f"term map: the English says {occ.word!r} ({occ.idea.name}) and the Chinese"
            f" lacks its word: write {occ.idea.chinese}"
        )
    return problems


def english_in_chinese(
    ideas: TermMap,
    chinese: str,
    page: str = "",
    msgid: str = "",
    used: Optional[set[Exemption]] = None,
) -> list[str]:
    """English words of an idea whose Chinese word is Chinese, left in Chinese prose
    ("self-attention" in a Chinese sentence), unless the message is exempt for that
    word."""
    problems = []
    for occ in occurrences(ideas, chinese):
        if CJK.search(occ.idea.chinese) and not any(
            occ.word.lower() == w.lower() for w in occ.idea.prose
        ):
            exempt = next(
                (e for e in ideas.exemptions if e.covers(page, msgid, occ.word)), None
            )
            if exempt is not None:
                if used is not None:
                    used.add(exempt)
                continue
            problems.append(
                f"term map: English {occ.word!r} in the Chinese: write"
                f" {occ.idea.chinese}"
            )
    return problems


@dataclass(frozen=True)
class Gloss:
    english: str  # the English in the parentheses, as written
    start: int  # where the gloss starts in the prose (its parenthesis)
    end: int


def glosses(prose: str) -> list[Gloss]:
    """The English glosses in `prose`: Latin words in parentheses right after a Chinese
    character (a term role stands in the prose as 〇, so a gloss after a role is found
    too)."""
    return [Gloss(m.group("en"), m.start(), m.end()) for m in GLOSS.finditer(prose)]


def problems_of_map(
    ideas: TermMap, terms: list[Term], book_pages: list[str]
) -> list[str]:
    """What is wrong with the map itself: a glossary entry without its idea or with
    another Chinese word, a page it names that the book does not have, an idea without
    English words."""
    problems = []
    for term in terms:
        idea = ideas.of_term(term)
        if idea is None:
            problems.append(
                f"glossary entry {term.english[0]!r} has no idea in the term map"
            )
        elif idea.chinese != term.chinese:
            problems.append(
                f"{term.english[0]!r}: the term map says {idea.chinese!r}, the glossary"
                f" {term.chinese!r}"
            )
    names = {n.lower() for t in terms for n in t.english}
    for idea in ideas.ideas:
        if idea.term and idea.term.lower() not in names:
            problems.append(f"term map: {idea.term!r} is not in the glossary")
        if not idea.english:
            problems.append(f"term map: {idea.name!r} has no English words")
        for page in (idea.introduced, *[p for v in idea.reject for p in v.allowed_on]):
            if page and page not in book_pages:
                problems.append(
                    f"term map: {idea.name!r} names {page!r}, not a page of the book"
                )
    return problems
