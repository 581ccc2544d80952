"""Check the Chinese edition's message catalogues against their English messages.

    .venv/bin/python scripts/check_translations.py                 # every catalogue
    .venv/bin/python scripts/check_translations.py path/to/page.po # some
    .venv/bin/python scripts/check_translations.py --terms         # the glossary's table
    .venv/bin/python scripts/check_translations.py --update-glued  # refresh glued_values.po (make translations)

For every message (locales/zh_CN/TRANSLATING.md says why each rule is there):
- translated, and not marked fuzzy;
- the same glued values, maths, inline code, citations, link and reference targets, and the same
  numbers written in digits, in the translation as in the English;
- every ``{term}`` role keeps its target and shows the glossary's Chinese name; the first use of a term
  on a page is followed by the English term in parentheses;
- a quotation from a paper keeps its English original before the Chinese;
- no Markdown block syntax at the start, no line break the English lacks.

Glued values that are words, not only numbers ("lower", "about 3 min on a 2-core CPU"), are the
chapters' outputs, but the Chinese page should not show English inside a Chinese sentence: they have
their own catalogue, locales/zh_CN/glued_values.po (one message per distinct text, its pages and keys in
a comment), which book/booktools/ext/translated_glue.py applies to the Chinese build. It is checked as the
others are: complete, not fuzzy, its numbers kept.

Prints the problems and, per catalogue, messages translated / total; exits 1 when there is a problem.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from babel.messages.pofile import read_po

from booktools import myst
from booktools.glossary import GLOSSARY, Term, chinese_names, glossary_terms, term_index  # noqa: F401 (the checker's names)
from booktools.paths import ROOT
LOCALE = ROOT / "locales" / "zh_CN" / "LC_MESSAGES"
GLUED = ROOT / "locales" / "zh_CN" / "glued_values.po"
CJK = re.compile(r"[\u4e00-\u9fff]")

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
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


def paper_quotes(root: Path = ROOT) -> set[str]:
    """The messages that quote a paper: paragraphs of a block quote that carries an attribution
    (a dash followed by a citation or a section sign), as Sphinx writes them into the catalogue."""
    texts = [p.read_text(encoding="utf-8") for p in sorted((root / "book").glob("*.md"))]
    for nb in sorted((root / "chapters").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        texts += ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    quotes = set()
    for text in texts:
        for block in re.finditer(r"(?:^[ \t]*>.*(?:\n|$))+", text, re.M):   # in a list item too
            lines = [re.sub(r"^\s*>\s?", "", ln) for ln in block.group(0).splitlines()]
            if not re.search(r"—\s*(\{cite|§)", " ".join(lines)):
                continue
            for para in re.split(r"\n\s*\n", "\n".join(lines)):
                para = " ".join(ln.strip() for ln in para.splitlines()).strip()
                if para and not para.startswith("—"):
                    quotes.add(para)
    return quotes


WORD = re.compile(r"[A-Za-z]{2,}")


def all_roles(text: str, name: str | None = None) -> list[myst.Piece]:
    """The roles of `text` and of the directives it holds (an admonition, a dropdown), at any depth."""
    return myst.roles(text, name) + [r for d in myst.directives(text) for r in all_roles(d.body, name)]


def glued_words(root: Path = ROOT) -> dict[str, list[str]]:
    """{text: ["page key", ...]} of every `{glue:text}` value that holds a word, as the page shows it
    (MyST-NB's own formatter, through the runner editions' `Glue`)."""
    import nbformat
    from booktools.editions import Glue
    found: dict[str, list[str]] = {}
    for path in sorted((root / "chapters").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        glue = Glue(nb, path)
        cells = [c.source for c in nb.cells if c.cell_type == "markdown"]
        for body in dict.fromkeys(r.content for c in cells for r in all_roles(c, "glue:text")):
            text = glue.text(body)
            if WORD.search(text):
                found.setdefault(text, []).append(f"{path.stem} {body}")
    return found


def update_glued(path: Path = GLUED) -> tuple[int, int]:
    """Write the glued words' catalogue: keep the translations of texts still glued, add new texts
    untranslated, drop the ones no chapter glues any more. (added, dropped)"""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po
    old = {}
    if path.exists():
        with path.open("rb") as f:
            old = {m.id: m for m in read_po(f) if m.id}
    words = glued_words()
    catalogue = Catalog(locale="zh_CN", project="The Transformer, Built: glued words", fuzzy=False)
    for text, where in sorted(words.items()):
        kept = old.get(text)
        catalogue.add(text, kept.string if kept else "", auto_comments=where,
                      flags=kept.flags if kept else ())
    same = {m.id: (m.string, m.auto_comments) for m in catalogue if m.id} == \
        {k: (m.string, m.auto_comments) for k, m in old.items()}
    if not same:                     # unchanged: leave the file (and its date) alone
        with path.open("wb") as f:
            write_po(f, catalogue, width=0, omit_header=False)
    return len(set(words) - set(old)), len(set(old) - set(words))


def check_glued(path: Path = GLUED) -> tuple[list[Problem], int, int]:
    """(problems, translated, total) of the glued words' catalogue against the chapters as they are."""
    words = glued_words()
    if not path.exists():
        return [Problem("glued_values.po", "", "missing: run `make translations`")], 0, len(words)
    with path.open("rb") as f:
        have = {m.id: m for m in read_po(f) if m.id}
    problems, done = [], 0
    for text in words:
        m = have.get(text)
        if m is None or not m.string:
            problems.append(Problem("glued_values.po", text, "untranslated (or not in the catalogue: `make translations`)"))
        elif m.fuzzy:
            problems.append(Problem("glued_values.po", text, "fuzzy"))
        else:
            done += 1
            lost = set(NUMBER.findall(text)) - set(NUMBER.findall(m.string))
            if lost:
                problems.append(Problem("glued_values.po", text, f"number differs: lost {sorted(lost)!r}"))
    return problems, done, len(words)


def _as_inline(text: str) -> str:
    """A message is the inline text of one block (a heading "1. Queries …", a paragraph): a leading
    list marker, `#` or `>` is escaped so that MyST reads it as the text it is in the book."""
    if re.match(r"\d+[.)]\s", text):
        return re.sub(r"^(\d+)", r"\1\\", text)
    return "\\" + text if BLOCK_START.match(text) else text


def pieces(text: str) -> list[myst.Piece]:
    """`text` as MyST reads it: its inline pieces (text, roles, maths, code, links), and a display
    formula or an amsmath environment written as a block of its own, as one more maths piece."""
    text = _as_inline(text)
    found = myst.inline(text)
    for tok in myst.blocks(text):
        if tok.type in ("math_block", "math_block_label", "amsmath"):
            found.append(myst.Piece("math", tok.content, f"$${tok.content}$$"))
    return found


def _words(found: list[myst.Piece]) -> list[myst.Piece]:
    """The text pieces a reader reads as words: not the address an autolink `<https://…>` shows."""
    return [p for i, p in enumerate(found) if p.kind == "text"
            and not (i + 1 < len(found) and found[i + 1].kind == "other" and found[i + 1].source == "autolink")]


def _roles(text: str) -> list[tuple[str, str]]:
    """(name, content) of every role of `text`."""
    return [(p.name, p.content) for p in myst.roles(text)]


def _kept(text: str) -> dict[str, set[str]]:
    """What a translation must keep, each kind as a set."""
    found = pieces(text)
    return {
        "role": {p.source for p in found if p.kind == "role" and p.name.split(":")[0] in KEPT_ROLES},
        "maths": {p.source for p in found if p.kind == "math"},
        "inline code": {p.source for p in found if p.kind == "code"},
        "link target": {p.content for p in found if p.kind == "link"},
        "number": {n for p in _words(found) for n in NUMBER.findall(p.content)},
    }


def stray_asterisks(text: str) -> int:
    """How many `*` Markdown leaves as text (roles, maths and code aside): an emphasis marker it did
    not read as one, as `**……。**默认` (a closing `**` after punctuation, before a letter)."""
    return sum(p.content.count("*") for p in pieces(text) if p.kind == "text")


def check_message(msgid: str, msgstr: str, index: dict[str, Term], quotes: set[str],
                  seen: set[Term] | None, catalogue: str) -> list[Problem]:
    """The problems of one translated message; `seen` collects the page's terms in use so far
    (None: the page does not name a term's English at its first use, as the glossary itself)."""
    problems = []

    def bad(what: str) -> None:
        problems.append(Problem(catalogue, msgid, what))

    text = msgstr
    if msgid in quotes:
        if not msgstr.startswith(msgid + "\\\n") or not CJK.search(msgstr[len(msgid):]):
            bad("a quotation from a paper: keep the English, then a backslash, a line break and the Chinese")
        text = msgstr[len(msgid) + 2:]
    elif "\n" in msgstr and "\n" not in msgid:
        bad("a line break the English does not have")
    if BLOCK_START.match(msgstr) and not BLOCK_START.match(msgid):
        bad(f"starts with Markdown block syntax: {msgstr[:12]!r} (a heading's '1.' is written '1\\.')")
    if re.match(r"\d+\.\s", msgid) and not re.match(r"\d+\\\.\s", msgstr):
        bad("a numbered heading: write its number as '1\\. ' so it stays a heading")

    if stray_asterisks(text) > stray_asterisks(msgid):
        bad("an emphasis marker Markdown does not read (next to Chinese punctuation: `**……**。`, not `**……。**`)")

    english, chinese = _kept(msgid), _kept(text)
    for kind, wanted in english.items():
        got = chinese[kind]
        missing = wanted - got if kind == "number" else wanted ^ got
        if missing:
            bad(f"{kind} differs: English {sorted(wanted)!r}, Chinese {sorted(got)!r}")

    found = pieces(text)
    targets_en = [myst.titled(c)[1] for n, c in _roles(msgid) if n == "term"]
    roles_zh = [(i, myst.titled(p.content)) for i, p in enumerate(found) if p.kind == "role" and p.name == "term"]
    if sorted(t for _, (_, t) in roles_zh) != sorted(targets_en):
        bad(f"term roles differ: English targets {targets_en!r}, Chinese {[t for _, (_, t) in roles_zh]!r}")
    for i, (display, target) in roles_zh:
        term = index.get(target.lower())
        if term is None:
            bad(f"{{term}} target {target!r} is not in the glossary")
            continue
        if display not in chinese_names(term):
            bad(f"{{term}}`{found[i].content}`: shows {display!r}, the glossary says {term.chinese!r}")
        if seen is None or term in seen:
            continue
        seen.add(term)
        next_text = found[i + 1].content if i + 1 < len(found) and found[i + 1].kind == "text" else ""
        after = re.match(r"\s*[（(]([^）)]+)[）)]", next_text)
        shown_en = [myst.titled(c)[0] for n, c in _roles(msgid) if n == "term" and myst.titled(c)[1] == target]
        allowed = {e.lower() for e in term.english + (target,) + tuple(shown_en)}
        if not after or after.group(1).strip().lower() not in allowed:
            bad(f"first use of {term.chinese!r} on the page: follow it with the English in parentheses, "
                f"one of {sorted(allowed)!r}")
    return problems


def check_catalogue(path: Path, index: dict[str, Term], quotes: set[str]) -> tuple[list[Problem], int, int]:
    """(problems, messages translated, messages) of one catalogue."""
    with path.open("rb") as f:
        catalogue = read_po(f)
    name = str(path.relative_to(LOCALE)) if path.is_relative_to(LOCALE) else str(path)
    seen: set[Term] | None = None if name.startswith("book/glossary") else set()
    problems, done, total = [], 0, 0
    for message in catalogue:
        if not message.id:
            continue
        total += 1
        if not message.string:
            problems.append(Problem(name, message.id, "untranslated"))
            continue
        if message.fuzzy:
            problems.append(Problem(name, message.id, "fuzzy: revise the translation, then drop '#, fuzzy'"))
            continue
        done += 1
        problems += check_message(message.id, message.string, index, quotes, seen, name)
    return problems, done, total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("catalogues", nargs="*", type=Path, help="the .po files (default: all)")
    parser.add_argument("--terms", action="store_true", help="print the glossary's table and stop")
    parser.add_argument("--update-glued", action="store_true", help="refresh glued_values.po from the chapters")
    args = parser.parse_args(argv)
    if args.update_glued:
        added, dropped = update_glued()
        print(f"{GLUED.relative_to(ROOT)}: {added} new glued texts, {dropped} dropped")
        return 0
    terms = glossary_terms()
    if args.terms:
        for t in terms:
            print(" / ".join(t.english), "→", t.chinese)
        return 0
    index, quotes = term_index(terms), paper_quotes()
    paths = [p.resolve() for p in args.catalogues] or sorted(LOCALE.rglob("*.po"))
    if GLUED.resolve() in paths:
        paths.remove(GLUED.resolve())
        paths.append(GLUED.resolve())
    failed = 0
    for path in paths:
        problems, done, total = check_catalogue(path, index, quotes)
        for p in problems:
            print(p)
        failed += len(problems)
        print(f"{path.relative_to(LOCALE) if path.is_relative_to(LOCALE) else path}: "
              f"{done}/{total} messages translated, {len(problems)} problems")
    if not args.catalogues or GLUED.resolve() in paths:
        problems, done, total = check_glued()
        for p in problems:
            print(p)
        failed += len(problems)
        print(f"glued_values.po: {done}/{total} glued texts translated, {len(problems)} problems")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
