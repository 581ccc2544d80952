"""Check the Chinese edition's message catalogues against their English messages.

    .venv/bin/python scripts/check_translations.py                 # every catalogue
    .venv/bin/python scripts/check_translations.py path/to/page.po # some
    .venv/bin/python scripts/check_translations.py --terms         # the glossary table
    # refresh glued_values.po (make translations):
    .venv/bin/python scripts/check_translations.py --update-glued

For every message (locales/zh_CN/TRANSLATING.md says why each rule is there), read as
MyST reads it (booktools.myst: what a role, a formula, a code span or a link is):
- translated, and not marked fuzzy;
- the same glued values, maths, inline code, citations, link and reference targets, and
  the same numbers written in digits, in the translation as in the English; a number
  with million or billion may be written in 万 or 亿, converted right (4.5 million: 450
  万), never with 百万 or an English million;
- every ``{term}`` role keeps its target and shows the glossary's Chinese name;
- each idea in the term map's one word (locales/zh_CN/terms.yaml, booktools.terms): a
  rejected variant fails, naming the page and the message, unless its context makes it
  something else;
- the English gloss "（key）" after a term only on the page that introduces the term
  (required at its first {term} there, once) and in the glossary;
- "X 倍" not after a comparative (快了 1.8 倍 reads as 2.8 times); a page title ({doc}
  without a title) not glued to Chinese; the "Running this chapter" note worded as the
  term map's `note`;
- a quotation from a paper keeps its English original before the Chinese;
- no Markdown block syntax at the start, no line break the English lacks.

Glued values that are words, not only numbers ("lower", "about 3 min on a 2-core CPU"),
are the chapters' outputs, but the Chinese page should not show English inside a Chinese
sentence: they have their own catalogue, locales/zh_CN/glued_values.po (one message per
distinct text, its pages and keys in a comment), which
book/booktools/ext/translated_glue.py applies to the Chinese build. It is checked as the
others are: complete, not fuzzy, its numbers kept (or in 万/亿), its words the term
map's.

Prints the problems and, per catalogue, messages translated / total; exits 1 when there
is a problem."""

from __future__ import annotations

import argparse
import functools
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from babel.messages.pofile import read_po

from booktools import install_cell, myst, terms

# the checker's names, imported from here by its callers
from booktools.glossary import (  # noqa: F401
    GLOSSARY,
    Term,
    chinese_names,
    glossary_terms,
    term_index,
)
from booktools.paths import ROOT

LOCALE = ROOT / "locales" / "zh_CN" / "LC_MESSAGES"
GLUED = ROOT / "locales" / "zh_CN" / "glued_values.po"
CJK = re.compile(r"[\u4e00-\u9fff]")

# A number written in digits; not the digit inside a word ("seq2seq"), but a word's
# trailing digits ("float32").
NUMBER = re.compile(r"(?<![A-Za-z])\d+(?:[.,]\d+)*|\d+(?:[.,]\d+)*(?![A-Za-z\d])")
BLOCK_START = re.compile(r"^(?:[-*+]\s|>|#{1,6}\s|\d+[.)]\s)")
KEPT_ROLES = ("glue", "cite", "doc", "ref", "numref", "eq", "download", "math")


@dataclass(frozen=True)
class Problem:
    catalogue: str
    msgid: str
    what: str

    def __str__(self) -> str:
        head = self.msgid if len(self.msgid) <= 90 else self.msgid[:87] + "..."
        return f"{self.catalogue}: {self.what}\n    msgid: {head!r}"


def _block_quotes(text: str) -> list[list[str]]:
    """The paragraphs of each block quote of `text` (in list items and directives too),
    each as Sphinx writes it into a catalogue: its lines joined by spaces."""
    quotes: list[list[str]] = []
    depth = 0
    for tok in myst.blocks(text):
        if tok.type == "blockquote_open":
            depth += 1
            if depth == 1:
                quotes.append([])
        elif tok.type == "blockquote_close":
            depth -= 1
        elif tok.type == "inline" and depth:
            quotes[-1].append(
                " ".join(ln.strip() for ln in tok.content.splitlines()).strip()
            )
        elif (d := myst.directive_of(tok)) is not None:
            quotes += _block_quotes(d.body)
    return quotes


def _attributed(text: str) -> bool:
    """Whether `text` carries an attribution: a dash followed by a section sign or a
    citation role."""
    if re.search(r"—\s*§", text):
        return True
    return any(
        piece.name.startswith("cite") and text[:start].rstrip().endswith("—")
        for start, _, piece in myst.located(text)
    )


def _dash_against_attribution(found: list[myst.Piece]) -> bool:
    """'——§3.2' or '——{cite:t}`…`': an attribution's dash written against what it
    attributes."""
    for before, piece in zip([None, *found], found):
        if piece.kind == "text" and "——§" in piece.content:
            return True
        if (
            piece.kind == "role"
            and piece.name.startswith("cite")
            and before is not None
            and before.kind == "text"
            and before.content.endswith("——")
        ):
            return True
    return False


def paper_quotes(root: Path = ROOT) -> set[str]:
    """The messages that quote a paper: paragraphs of a block quote that carries an
    attribution (a dash followed by a citation or a section sign), as Sphinx writes them
    into the catalogue."""
    texts = [
        p.read_text(encoding="utf-8") for p in sorted((root / "book").glob("*.md"))
    ]
    for nb in sorted((root / "chapters").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        texts += ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    quotes = set()
    for text in texts:
        for paragraphs in _block_quotes(text):
            if _attributed(" ".join(paragraphs)):
                quotes |= {
                    para for para in paragraphs if para and not para.startswith("—")
                }
    return quotes


WORD = re.compile(r"[A-Za-z]{2,}")


def glued_words(root: Path = ROOT) -> dict[str, list[str]]:
    """{text: ["page key", ...]} of every `{glue:text}` value that holds a word, as the
    page shows it (MyST-NB's own formatter, through the runner editions' `Glue`)."""
    import nbformat
    from booktools.editions import Glue

    found: dict[str, list[str]] = {}
    for path in sorted((root / "chapters").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        glue = Glue(nb, path)
        cells = [c.source for c in nb.cells if c.cell_type == "markdown"]
        for body in dict.fromkeys(
            r.content for c in cells for r in terms.all_roles(c, "glue:text")
        ):
            text = glue.text(body)
            if WORD.search(text):
                found.setdefault(text, []).append(f"{path.stem} {body}")
    return found


def update_glued(path: Path = GLUED) -> tuple[int, int]:
    """Write the glued words' catalogue: keep the translations of texts still glued, add
    new texts untranslated, drop the ones no chapter glues any more. (added, dropped)"""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    old = {}
    if path.exists():
        with path.open("rb") as f:
            old = {m.id: m for m in read_po(f) if m.id}
    words = glued_words()
    catalogue = Catalog(
        locale="zh_CN", project="The Transformer, Built: glued words", fuzzy=False
    )
    for text, where in sorted(words.items()):
        kept = old.get(text)
        catalogue.add(
            text,
            kept.string if kept else "",
            auto_comments=where,
            flags=kept.flags if kept else (),
        )
    same = {m.id: (m.string, m.auto_comments) for m in catalogue if m.id} == {
        k: (m.string, m.auto_comments) for k, m in old.items()
    }
    if not same:  # unchanged: leave the file (and its date) alone
        with path.open("wb") as f:
            write_po(f, catalogue, width=0, omit_header=False)
    return len(set(words) - set(old)), len(set(old) - set(words))


def _as_inline(text: str) -> str:
    """A message is the inline text of one block (a heading "1. Queries …", a
    paragraph): a leading list marker, `#` or `>` is escaped so that MyST reads it as
    the text it is in the book."""
    if re.match(r"\d+[.)]\s", text):
        return re.sub(r"^(\d+)", r"\1\\", text)
    return "\\" + text if BLOCK_START.match(text) else text


def pieces(text: str) -> list[myst.Piece]:
    """`text` as MyST reads it: its inline pieces (text, roles, maths, code, links), and
    a display formula or an amsmath environment written as a block of its own, as one
    more maths piece."""
    text = _as_inline(text)
    found = myst.inline(text)
    for tok in myst.blocks(text):
        if tok.type in ("math_block", "math_block_label", "amsmath"):
            found.append(myst.Piece("math", tok.content, f"$${tok.content}$$"))
    return found


def _words(found: list[myst.Piece]) -> list[myst.Piece]:
    """The text pieces a reader reads as words: not the address an autolink
    `<https://…>` shows."""
    return [
        p
        for i, p in enumerate(found)
        if p.kind == "text"
        and not (
            i + 1 < len(found)
            and found[i + 1].kind == "other"
            and found[i + 1].source == "autolink"
        )
    ]


def marked_prose(found: list[myst.Piece]) -> tuple[str, dict[int, myst.Piece]]:
    """The words of a message as one string, each role, formula and code span standing
    as 〇 (a value, a name: not a word of the language), markup dropped; and the piece
    at each 〇."""
    words, text, marks = {id(p) for p in _words(found)}, "", {}
    for p in found:
        if id(p) in words:
            text += p.content
        elif p.kind in ("role", "math", "code"):
            marks[len(text)] = p
            text += "〇"
    return text, marks


def prose(found: list[myst.Piece]) -> str:
    return marked_prose(found)[0]


def reading(found: list[myst.Piece]) -> str:
    """The words of a message as the reader reads them: its prose, with each {term} role
    as the words it shows and every other role, formula and code span as 〇 (the
    positive rule's text)."""
    words, text = {id(p) for p in _words(found)}, ""
    for p in found:
        if id(p) in words:
            text += p.content
        elif p.kind == "role" and p.name == "term":
            text += myst.titled(p.content)[0]
        elif p.kind in ("role", "math", "code"):
            text += "〇"
    return text


def _roles(text: str) -> list[tuple[str, str]]:
    """(name, content) of every role of `text`."""
    return [(p.name, p.content) for p in myst.roles(text)]


def _kept(text: str) -> dict[str, set[str]]:
    """What a translation must keep, each kind as a set."""
    found = pieces(text)
    return {
        "role": {
            p.source
            for p in found
            if p.kind == "role" and p.name.split(":")[0] in KEPT_ROLES
        },
        "maths": {
            TEXT_IN_MATHS.sub(r"\\text{…}", p.source) for p in found if p.kind == "math"
        },
        "inline code": {p.source for p in found if p.kind == "code"},
        "link target": {p.content for p in found if p.kind == "link"},
        "number": {n for p in _words(found) for n in NUMBER.findall(p.content)},
    }


# Words in a formula, `\text{ where masked}`: translated in the Chinese (the rest of the
# formula is kept).
TEXT_IN_MATHS = re.compile(r"\\text\{[^{}]*\}")
ENGLISH_IN_MATHS = re.compile(
    r"\\text\{((?=[^{}]*[A-Za-z]{3})(?:\s[^{}]*|[^{}]*\s|[^{}]*[A-Za-z]\s+[A-Za-z][^{}]*))\}"
)


def is_formula(msgid: str) -> bool:
    """A message that is a display formula (Sphinx writes a `$$` block's content as its
    own message)."""
    rest = re.sub(
        r"\\(?:operatorname|mathrm|mathbf|mathit)\{[^{}]*\}",
        " ",
        TEXT_IN_MATHS.sub(" ", msgid),
    )
    rest = re.sub(r"\\[A-Za-z]+", " ", rest)
    return "\\" in msgid and "$" not in msgid and not re.search(r"[A-Za-z]{3,}", rest)


def _formula_words(text: str, formula: bool) -> set[str]:
    maths = [text] if formula else [p.content for p in pieces(text) if p.kind == "math"]
    return {m.group(1).strip() for f in maths for m in ENGLISH_IN_MATHS.finditer(f)}


def formula_problems(msgid: str, text: str) -> list[str]:
    """The English words of the English message's formulas (`\text{ layers}`) left in
    the Chinese; a display formula kept as it is but for the words of its `\text{}`."""
    formula = is_formula(msgid)
    problems = [
        f"English words in a formula: translate \\text{{{w}}}"
        for w in sorted(_formula_words(msgid, formula) & _formula_words(text, formula))
    ]
    if formula and TEXT_IN_MATHS.sub("", text) != TEXT_IN_MATHS.sub("", msgid):
        problems.append(
            "maths differs: a display formula is kept as it is, but for the words of"
            " its \\text{}"
        )
    return problems


def stray_asterisks(text: str) -> int:
    """How many `*` Markdown leaves as text (roles, maths and code aside): an emphasis
    marker it did not read as one, as `**……。**默认` (a closing `**` after punctuation,
    before a letter)."""
    return sum(p.content.count("*") for p in pieces(text) if p.kind == "text")


# ---- numbers: 万 and 亿 --------------------------------------------------------------
SCALED_EN = re.compile(r"(\d+(?:,\d{3})*(?:\.\d+)?)(?:\s*(million|billion)\b|(M)\b)")
SCALED_ZH = re.compile(r"(\d+(?:,\d{3})*(?:\.\d+)?)\s*(万|亿)")
FACTOR = {"million": 1e6, "billion": 1e9, "M": 1e6, "万": 1e4, "亿": 1e8}


def _value(digits: str) -> float:
    return float(digits.replace(",", ""))


def _in_wan_yi(value: float) -> str:
    """`value` as Chinese writes it: "450 万", "2 亿"."""
    unit, size = ("亿", 1e8) if value >= 1e8 else ("万", 1e4)
    return f"{value / size:,.4f}".rstrip("0").rstrip(".") + " " + unit


def scaled_numbers(english: str) -> dict[str, float]:
    """The numbers of an English text written with a scale word ("4.5 million", "65M"):
    digits -> value."""
    return {
        m.group(1): _value(m.group(1)) * FACTOR[m.group(2) or m.group(3)]
        for m in SCALED_EN.finditer(english)
    }


def number_problems(english: str, chinese: str) -> list[str]:
    """The English text's numbers (digits) missing from the Chinese; a number written
    with million or billion may be written in 万 or 亿 instead, converted right (4.5
    million: 450 万; 200 million: 2 亿)."""
    scaled = scaled_numbers(english)
    wan_yi = [
        _value(m.group(1)) * FACTOR[m.group(2)] for m in SCALED_ZH.finditer(chinese)
    ]
    missing = set(NUMBER.findall(english)) - set(NUMBER.findall(chinese))
    missing -= {
        d
        for d in missing
        if d in scaled and any(math.isclose(scaled[d], v) for v in wan_yi)
    }
    missing -= {
        d
        for d in missing
        if _value(d) >= 1e4 and any(math.isclose(_value(d), v) for v in wan_yi)
    }
    if not missing:
        return []
    hints = [
        f"{d} {'million' if scaled[d] < 1e9 else 'billion'} is {_in_wan_yi(scaled[d])}"
        for d in sorted(missing)
        if d in scaled
    ]
    return [
        f"number differs: {sorted(missing)!r} not in the Chinese"
        + (f" ({'; '.join(hints)})" if hints else "")
    ]


# ---- the rules, message by message ---------------------------------------------------


@dataclass
class Book:
    """What the checker knows of the whole book: the glossary, the paper quotations, the
    term map."""

    index: dict[str, Term]
    quotes: set[str]
    ideas: terms.TermMap
    # the exemptions messages used
    exempted: set[terms.Exemption] = field(default_factory=set)
    # each English sentence quoted from a paper (a block quote's, or a short quotation's
    # "original"): its Chinese renderings, each with the pages that write it
    quoted: dict[str, dict[str, set[str]]] = field(default_factory=dict)

    def quote(self, english: str, chinese: str, page: str) -> None:
        self.quoted.setdefault(english.strip(), {}).setdefault(
            chinese.strip(), set()
        ).add(page)


@functools.lru_cache(maxsize=None)
def book() -> Book:
    return Book(term_index(glossary_terms()), paper_quotes(), terms.term_map())


@dataclass
class Page:
    """One catalogue's page ("chapters/01_qkv_attention", "book/glossary",
    "glued_values") and what its messages so far have done: the terms whose {term} role
    it has used, the ideas it has glossed."""

    name: str
    seen: set[Term] = field(default_factory=set)
    glossed: set[str] = field(default_factory=set)
    # (idea, its English word) glossed
    glossed_words: set[tuple[str, str]] = field(default_factory=set)


def page_of(path: Path) -> str:
    """The page a catalogue translates: LC_MESSAGES/chapters/01_qkv_attention.po ->
    chapters/01_qkv_attention."""
    return (
        (path.relative_to(LOCALE) if path.is_relative_to(LOCALE) else Path(path.name))
        .with_suffix("")
        .as_posix()
    )


def _structure(msgid: str, msgstr: str, quotes: set[str]) -> tuple[str, list[str]]:
    """(the Chinese part of the message, the problems of its shape): a paper's quotation
    keeps its English first; no line break or block syntax the English lacks; a numbered
    heading stays one."""
    problems, text = [], msgstr
    if msgid in quotes:
        if not msgstr.startswith(msgid + "\\\n") or not CJK.search(
            msgstr[len(msgid) :]
        ):
            problems.append(
                "a quotation from a paper: keep the English, then a backslash, a line"
                " break and the Chinese"
            )
        text = msgstr[len(msgid) + 2 :]
    elif "\n" in msgstr and "\n" not in msgid:
        problems.append("a line break the English does not have")
    if BLOCK_START.match(msgstr) and not BLOCK_START.match(msgid):
        problems.append(
            f"starts with Markdown block syntax: {msgstr[:12]!r} (a heading's '1.' is"
            " written '1\\.')"
        )
    if re.match(r"\d+\.\s", msgid) and not re.match(r"\d+\\\.\s", msgstr):
        problems.append(
            "a numbered heading: write its number as '1\\. ' so it stays a heading"
        )
    if stray_asterisks(text) > stray_asterisks(msgid):
        problems.append(
            "an emphasis marker Markdown does not read (next to Chinese punctuation:"
            " `**……**。`, not `**……。**`)"
        )
    return text, problems


def _kept_problems(msgid: str, text: str) -> list[str]:
    """The glued values, maths, code, citations, link targets and numbers the
    translation lost or changed."""
    english, chinese = _kept(msgid), _kept(text)
    problems = [
        f"{kind} differs: English {sorted(wanted)!r}, Chinese {sorted(chinese[kind])!r}"
        for kind, wanted in english.items()
        if kind != "number" and wanted ^ chinese[kind]
    ]
    en_words = " ".join(p.content for p in _words(pieces(msgid)))
    return problems + number_problems(
        en_words, " ".join(p.content for p in _words(pieces(text)))
    )


def _term_roles(
    msgid: str, found: list[myst.Piece], book: Book, page: Page
) -> list[str]:
    """Every {term} role keeps its target and shows the glossary's Chinese name; on the
    page that introduces a term, its first role is followed by the English in
    parentheses."""
    problems = []
    targets_en = [myst.titled(c)[1] for n, c in _roles(msgid) if n == "term"]
    roles_zh = [
        (i, myst.titled(p.content))
        for i, p in enumerate(found)
        if p.kind == "role" and p.name == "term"
    ]
    if sorted(t for _, (_, t) in roles_zh) != sorted(targets_en):
        problems.append(
            f"term roles differ: English targets {targets_en!r}, Chinese"
            f" {[t for _, (_, t) in roles_zh]!r}"
        )
    for i, (display, target) in roles_zh:
        term = book.index.get(target.lower())
        if term is None:
            problems.append(f"{{term}} target {target!r} is not in the glossary")
            continue
        idea = book.ideas.of_term(term)
        if (
            idea
            and idea.prose
            and display in chinese_names(term)
            and page.name not in (idea.introduced, terms.GLOSSARY_PAGE)
        ):
            problems.append(
                f"{{term}}`{found[i].content}`: write {' / '.join(idea.prose)} (the"
                f" Chinese name only on {idea.introduced}, which introduces it, and in"
                " the glossary)"
            )
        if display not in chinese_names(term) and not (
            idea and display in idea.prose + idea.accept
        ):
            problems.append(
                f"{{term}}`{found[i].content}`: shows {display!r}, the glossary says"
                f" {term.chinese!r}"
            )
        first_here, idea = term not in page.seen, book.ideas.of_term(term)
        page.seen.add(term)
        if (
            not first_here
            or idea is None
            or idea.introduced != page.name
            or idea.name in page.glossed
        ):
            continue
        next_text = (
            found[i + 1].content
            if i + 1 < len(found) and found[i + 1].kind == "text"
            else ""
        )
        after = re.match(r"\s*[（(]([^）)]+)[）)]", next_text)
        shown_en = [
            myst.titled(c)[0]
            for n, c in _roles(msgid)
            if n == "term" and myst.titled(c)[1] == target
        ]
        allowed = {e.lower() for e in term.english + (target,) + tuple(shown_en)}
        if CJK.search(term.chinese) and (
            not after or after.group(1).strip().lower() not in allowed
        ):
            problems.append(
                f"{term.chinese!r} is introduced on this page: follow its first"
                f" {{term}} with the English in parentheses, one of {sorted(allowed)!r}"
            )
    return problems


def _gloss_problems(
    msgid: str, found: list[myst.Piece], book: Book, page: Page
) -> list[str]:
    """An English gloss "（key）" after a term only on the page that introduces the term
    (once) and in the glossary; not after the name readers use in English
    (暂退法（Dropout）), nor where the English has it in parentheses too."""
    problems, (text, marks) = [], marked_prose(found)
    for gloss in terms.glosses(text):
        idea = _glossed_idea(gloss, marks, book)
        en = gloss.english.lower()
        if _shown_before(gloss, text, marks).lower().endswith(en):
            problems.append(
                f"English gloss '（{gloss.english}）' repeats the word before it"
            )
            continue
        if (
            idea is None
            or en == idea.chinese.lower()
            or f"({en})" in msgid.lower()
            or page.name == terms.GLOSSARY_PAGE
        ):
            continue
        if idea.introduced != page.name:
            where = (
                f"on {idea.introduced}, which introduces it"
                if idea.introduced
                else "nowhere but in the glossary"
            )
            problems.append(
                f"English gloss '（{gloss.english}）' of {idea.chinese!r}: write it"
                f" {where}"
            )
        # Post-LN and Pre-LN: two
        word = next((w for w in idea.english if en in terms.plurals(w)), en)
        if (idea.name, word) in page.glossed_words:
            problems.append(
                f"English gloss '（{gloss.english}）' of {idea.chinese!r} again: once"
                " on the page is enough"
            )
        page.glossed.add(idea.name)
        page.glossed_words.add((idea.name, word))
    return problems


def _shown_before(gloss: terms.Gloss, text: str, marks: dict[int, myst.Piece]) -> str:
    """What the reader sees right before a gloss: a role's text, or the prose."""
    role = marks.get(gloss.start - 1)
    if role is not None and role.kind == "role" and role.name == "term":
        return myst.titled(role.content)[0]
    return text[: gloss.start]


def _glossed_idea(
    gloss: terms.Gloss, marks: dict[int, myst.Piece], book: Book
) -> Optional[terms.Idea]:
    """The idea a gloss explains: the term role right before it, or else the idea of its
    English words."""
    role = marks.get(gloss.start - 1)
    if role is not None and role.kind == "role" and role.name == "term":
        term = book.index.get(myst.titled(role.content)[1].lower())
        if term is not None and book.ideas.of_term(term) is not None:
            return book.ideas.of_term(term)
    return book.ideas.by_english.get(gloss.english.lower())


COMPARATIVE = re.compile(
    r"(?:快|慢|(?<!大)大(?!约)|小|(?<!差不)(?<![最许])多|(?<![至最])少|高|低|增长)了?\s*"
    r"(?:约|大约|近|将近|超过)?\s*(?P<n>[\d.,〇⁰¹²³⁴⁵⁶⁷⁸⁹一二三四五六七八九十百千两几]+)"
    r"(?:\s*(?:到|至|~|～|–|-)\s*[\d.,〇⁰¹²³⁴⁵⁶⁷⁸⁹一二三四五六七八九十百千两几]+)?\s*倍"
)
ENGLISH_NUMBER_WORD = re.compile(r"(?i)(?<![a-z])(million|billion)s?(?![a-z])")
UNTITLED_REFERENCE = ("doc", "ref", "numref")
ENGLISH_UNIT = re.compile(r"\s*(s|min|h)(?![A-Za-z])")  # "耗时 {glue:text}`t` s": 秒
# The glossary's "† Usually written in English: NAME." names the English word: no idea's
# use of it.
USUALLY_ENGLISH_EN = re.compile(r"†\s*\*?Usually written in English:\*?\s*[^.]*\.")
USUALLY_ENGLISH_ZH = re.compile(r"†\s*\*?中文通常直接写英文\*?：\*?\s*[^。]*。")
# The paper's title names no idea ("Attention Is All You Need" is not the Attention of
# the term map).
TITLE = re.compile(r"\*?Attention Is All You Need\*?")
# a quotation kept in English
QUOTED_ENGLISH = re.compile(r'"[^"\u4e00-\u9fff]*"|“[^”\u4e00-\u9fff]*”')


def _wording(msgid: str, found: list[myst.Piece], book: Book, page: Page) -> list[str]:
    """The term map's words, 万 and 亿, X 倍 that reads one way only, a page title not
    glued to Chinese."""
    text = QUOTED_ENGLISH.sub("", terms.GLOSS.sub("", prose(found)))
    problems = terms.drift(book.ideas, msgid, text, page.name)
    problems += terms.english_in_chinese(
        book.ideas,
        TITLE.sub("", USUALLY_ENGLISH_ZH.sub("", text)),
        page.name,
        msgid,
        book.exempted,
    )
    english = TITLE.sub("", USUALLY_ENGLISH_EN.sub("", reading(pieces(msgid))))
    chinese = USUALLY_ENGLISH_ZH.sub("", reading(found))
    problems += terms.unrendered(
        book.ideas, english, chinese, page.name, msgid, book.exempted
    )
    if re.search(r"——(?:§|〇)", text) and _dash_against_attribution(found):
        problems.append(
            "an attribution: a space after the dash, '—— §3.2' or '—— {cite:t}`…`'"
        )
    for m in re.finditer(r"(?<![A-Za-z])([A-Za-z][A-Za-z0-9-]*)\s*[（(]\1[）)]", text):
        problems.append(
            f"{m.group(0)!r}: the English in parentheses repeats the word before it"
        )
    if re.search(r"\d\s*百万", text):
        problems.append("numbers: write 万 or 亿 (450 万, 2 亿), not 百万")
    if ENGLISH_NUMBER_WORD.search(text):
        problems.append(
            "numbers: an English million/billion in the Chinese; write 万 or 亿 (200"
            " million: 2 亿)"
        )
    for m in COMPARATIVE.finditer(text):
        problems.append(
            f"{m.group(0)!r} reads as (X+1) times in Chinese: write 是……的"
            f" {m.group('n')} 倍 (or 为……的 {m.group('n')} 倍)"
        )
    for i, p in enumerate(found):
        after = (
            found[i + 1].content
            if i + 1 < len(found) and found[i + 1].kind == "text"
            else ""
        )
        if (
            p.kind == "role"
            and p.name.startswith("glue")
            and (unit := ENGLISH_UNIT.match(after))
        ):
            chinese_unit = (
                "秒"
                if unit.group(1) == "s"
                else "分钟"
                if unit.group(1) == "min"
                else "小时"
            )
            problems.append(
                f"{p.source} {unit.group(1)}: a time in Chinese prose is written "
                f"{chinese_unit}"
            )
        if p.kind == "role" and p.name in UNTITLED_REFERENCE and "<" not in p.content:
            before = (
                found[i - 1].content[-1:] if i and found[i - 1].kind == "text" else ""
            )
            after = (
                found[i + 1].content[:1]
                if i + 1 < len(found) and found[i + 1].kind == "text"
                else ""
            )
            if CJK.match(before) or CJK.match(after):
                problems.append(
                    f"{p.source} shows the page's title: a space between it and the"
                    " Chinese beside it"
                )
    return problems


def as_written(found: list[myst.Piece]) -> str:
    """The Chinese as written (roles and all), from its pieces."""
    return "".join(p.source if p.kind != "text" else p.content for p in found)


# ---- spacing: one space between Chinese and Latin, none beside full-width punctuation
FULLWIDTH = "。，、；：！？（）“”"
# code, maths / a glued value, a page title / ** or *
LATIN_PIECE, OPAQUE, EMPHASIS = "\x01", "\x02", "\x03"
SPACE_MISSING = re.compile(
    rf"[\u4e00-\u9fff][A-Za-z0-9{LATIN_PIECE}]|[A-Za-z0-9{LATIN_PIECE}][\u4e00-\u9fff]"
)
# „…“: a German quotation, its “ no Chinese punctuation
GERMAN_QUOTE = re.compile(r"„[^“]*“")
SPACE_EXTRA = re.compile(rf"[{FULLWIDTH}] +(?=\S)|(?<=\S) +[{FULLWIDTH}]")


def spacing_text(found: list[myst.Piece]) -> str:
    """The words of a message with each piece as the spacing rules see it: code, maths,
    an HTML tag and a {term} shown in Latin letters as Latin; a glued value (a number,
    or a word translated in glued_values.po) and any other role as opaque."""
    words, text = {id(p) for p in _words(found)}, ""
    for p in found:
        if id(p) in words:
            text += p.content
        elif p.kind in ("math", "code"):
            text += LATIN_PIECE
        elif p.kind == "role" and p.name == "term":
            text += myst.titled(p.content)[0]
        elif p.kind in ("role", "link"):
            text += OPAQUE
        elif p.kind == "other" and p.source.strip("*_") == "" and p.source:
            # `**……）** 与`: Markdown needs the space after a closing marker
            text += EMPHASIS
    return text


def spacing_problems(found: list[myst.Piece]) -> list[str]:
    """A Chinese character right beside a Latin letter, a digit, code or maths (write
    one space), or a space beside full-width punctuation (write none)."""
    text = GERMAN_QUOTE.sub(OPAQUE, QUOTED_ENGLISH.sub(OPAQUE, spacing_text(found)))
    show = lambda m: repr(
        text[max(0, m.start() - 8) : m.end() + 8]
        .replace(LATIN_PIECE, "`…`")
        .replace(OPAQUE, "〇")
    )
    return [
        f"spacing: one space between Chinese and Latin text, code or maths: {show(m)}"
        for m in SPACE_MISSING.finditer(text)
    ] + [
        f"spacing: no space beside full-width punctuation: {show(m)}"
        for m in SPACE_EXTRA.finditer(text)
    ]


def _note_problems(msgid: str, msgstr: str, note: dict[str, str]) -> list[str]:
    """The "Running this chapter" note reads the same in every chapter (the term map's
    `note`)."""
    run = (install_cell.NOTE_RUN_TIME + install_cell.NOTE_MACHINE).strip()
    yourself = (
        install_cell.note("")
        .split(install_cell.NOTE_MACHINE, 1)[1]
        .split("\n:::")[0]
        .strip()
    )
    if msgid == install_cell.NOTE_TITLE and msgstr != note.get("title"):
        return [
            f"the note's title is {note.get('title')!r} in every chapter"
            " (locales/zh_CN/terms.yaml)"
        ]
    if not msgid.startswith(run):
        return []
    if not msgid.endswith(yourself):
        return [
            "the note's English changed: update its Chinese in locales/zh_CN/terms.yaml"
        ]
    if not (
        msgstr.startswith(note.get("run", "\0"))
        and msgstr.endswith(note.get("yourself", "\0"))
    ):
        return [
            "the note reads the same in every chapter: start and end it as"
            " locales/zh_CN/terms.yaml's `note` does"
        ]
    return []


SENTENCE_EN = re.compile(r"(?<=[.!?])\s+(?=\S)|\s*\[(?:\.\.\.|…)\]\s*")
SENTENCE_ZH = re.compile(r"(?<=[。！？])\s*|\s*\[(?:……|…|\.\.\.)\]\s*")
INLINE_QUOTE = re.compile(r'“([^”]+)”[（(]"([^"]+)"[）)]')


def _quotations(msgid: str, msgstr: str, book: Book, page: Page) -> None:
    """Record what the message quotes: a paper's block quote sentence by sentence (where
    the English and the Chinese have as many sentences), and each short quotation
    “中文”（"English"）."""
    if msgid in book.quotes and msgstr.startswith(msgid + "\\\n"):
        english = [t for t in SENTENCE_EN.split(msgid) if t.strip()]
        chinese = [t for t in SENTENCE_ZH.split(msgstr[len(msgid) + 2 :]) if t.strip()]
        if len(english) == len(chinese):
            for en, zh in zip(english, chinese):
                book.quote(en, zh, page.name)
    for m in INLINE_QUOTE.finditer(msgstr):
        book.quote(m.group(2).rstrip(".,;:"), m.group(1).rstrip("。，；："), page.name)


def quotation_problems(book: Book) -> list[Problem]:
    """A sentence quoted twice is rendered one way: each English sentence the catalogues
    quote has one Chinese rendering (checked once all catalogues are read)."""
    problems = []
    for english, renderings in sorted(book.quoted.items()):
        if len(renderings) > 1:
            ways = "; ".join(
                f"{zh!r} ({', '.join(sorted(pages))})"
                for zh, pages in sorted(renderings.items())
            )
            problems.append(
                Problem(
                    "quotations",
                    english,
                    f"a sentence quoted twice, rendered {len(renderings)} ways: {ways}",
                )
            )
    return problems


def exemption_problems(book: Book) -> list[Problem]:
    """An exemption of the term map that no message needed (checked once all catalogues
    are read)."""
    return [
        Problem(
            f"{e.page}.po",
            e.message,
            f"term map: the exemption for {e.english!r} is not needed any more: "
            "delete it from locales/zh_CN/terms.yaml",
        )
        for e in book.ideas.exemptions
        if e not in book.exempted
    ]


def check_message(msgid: str, msgstr: str, book: Book, page: Page) -> list[Problem]:
    """The problems of one translated message of `page`, which collects what the page's
    messages do."""
    text, whats = _structure(msgid, msgstr, book.quotes)
    whats += formula_problems(msgid, text)
    if is_formula(msgid):
        return [Problem(page.name + ".po", msgid, w) for w in whats]
    whats += _kept_problems(msgid, text)
    found = pieces(text)
    whats += _term_roles(msgid, found, book, page)
    # a glossary's term line, a formula: nothing to word
    if msgstr != msgid:
        whats += _gloss_problems(msgid, found, book, page)
        whats += _wording(msgid, found, book, page)
        whats += spacing_problems(found)
        _quotations(msgid, msgstr, book, page)
    whats += _note_problems(msgid, msgstr, book.ideas.note)
    return [
        Problem(
            page.name + ".po" if page.name != "glued_values" else "glued_values.po",
            msgid,
            w,
        )
        for w in whats
    ]


def check_catalogue(path: Path, book: Book) -> tuple[list[Problem], int, int]:
    """(problems, messages translated, messages) of one catalogue."""
    with path.open("rb") as f:
        catalogue = read_po(f)
    page = Page(page_of(path))
    problems, done, total = [], 0, 0
    for message in catalogue:
        msgid, msgstr = str(message.id or ""), str(message.string or "")
        if not msgid:
            continue
        total += 1
        if not msgstr:
            problems.append(Problem(f"{page.name}.po", msgid, "untranslated"))
        elif message.fuzzy:
            problems.append(
                Problem(
                    f"{page.name}.po",
                    msgid,
                    "fuzzy: revise the translation, then drop '#, fuzzy'",
                )
            )
        else:
            done += 1
            problems += check_message(msgid, msgstr, book, page)
    return problems, done, total


def check_glued(
    the_book: Optional[Book] = None, path: Path = GLUED
) -> tuple[list[Problem], int, int]:
    """(problems, translated, total) of the glued words' catalogue against the chapters
    as they are: each text the chapters glue translated, not fuzzy, its numbers kept (or
    in 万/亿), its words the term map's."""
    words = glued_words()
    if not path.exists():
        return (
            [Problem("glued_values.po", "", "missing: run `make translations`")],
            0,
            len(words),
        )
    with path.open("rb") as f:
        have = {str(m.id): m for m in read_po(f) if m.id}
    the_book = the_book or book()
    problems, done = [], 0
    for text in words:
        m = have.get(text)
        if m is None or not m.string:
            problems.append(
                Problem(
                    "glued_values.po",
                    text,
                    "untranslated (or not in the catalogue: `make translations`)",
                )
            )
        elif m.fuzzy:
            problems.append(Problem("glued_values.po", text, "fuzzy"))
        else:
            done += 1
            chinese = str(m.string)
            whats = (
                number_problems(text, chinese)
                + _wording(text, pieces(chinese), the_book, Page("glued_values"))
                + spacing_problems(pieces(chinese))
            )
            problems += [Problem("glued_values.po", text, w) for w in whats]
    return problems, done, len(words)


def _print_terms(ideas: terms.TermMap) -> None:
    for t in glossary_terms():
        idea = ideas.of_term(t)
        print(
            " / ".join(t.english),
            "→",
            t.chinese,
            *(f"(also {a})" for a in t.aliases),
            f"[introduced: {idea.introduced}]" if idea and idea.introduced else "",
        )
    for idea in ideas.ideas:
        if not idea.term:
            print(idea.name, "→", idea.chinese)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "catalogues", nargs="*", type=Path, help="the .po files (default: all)"
    )
    parser.add_argument(
        "--terms",
        action="store_true",
        help="print the glossary's table and the term map, and stop",
    )
    parser.add_argument(
        "--update-glued",
        action="store_true",
        help="refresh glued_values.po from the chapters",
    )
    args = parser.parse_args(argv)
    if args.update_glued:
        added, dropped = update_glued()
        print(f"{GLUED.relative_to(ROOT)}: {added} new glued texts, {dropped} dropped")
        return 0
    if args.terms:
        _print_terms(terms.term_map())
        return 0
    the_book = book()
    failed = 0
    for what in terms.problems_of_map(the_book.ideas, glossary_terms(), terms.pages()):
        print(f"{terms.TERM_MAP.relative_to(ROOT)}: {what}")
        failed += 1
    paths = [p.resolve() for p in args.catalogues] or sorted(LOCALE.rglob("*.po"))
    glued = GLUED.resolve() in paths or not args.catalogues
    for path in [p for p in paths if p != GLUED.resolve()]:
        problems, done, total = check_catalogue(path, the_book)
        failed += _report(
            problems, f"{page_of(path)}.po: {done}/{total} messages translated"
        )
    if glued:
        problems, done, total = check_glued(the_book)
        failed += _report(
            problems, f"glued_values.po: {done}/{total} glued texts translated"
        )
    if not args.catalogues:  # the whole book read: what only the whole book shows
        exemptions = the_book.ideas.exemptions
        failed += _report(
            quotation_problems(the_book) + exemption_problems(the_book),
            f"term map: {len(exemptions)} exemptions listed, {len(the_book.exempted)}"
            f" used; {len(the_book.quoted)} quoted sentences",
        )
    return 1 if failed else 0


def _report(problems: list[Problem], counts: str) -> int:
    for p in problems:
        print(p)
    print(f"{counts}, {len(problems)} problems")
    return len(problems)


if __name__ == "__main__":
    sys.exit(main())
