"""Runner editions: every chapter as a plain notebook that Jupyter, JupyterLab and Colab
render.

The chapters are written in MyST for the book: their prose quotes computed numbers
through ``{glue:text}`` roles, links terms with ``{term}``, cites with ``{cite:t}``, and
folds hints and solutions into ``:::{dropdown}`` fences. Opened in a front end without a
MyST renderer, that source shows as raw markup. The edition of a chapter has the
chapter's code cells, with their outputs, and markdown that any notebook front end
renders:

- a glued value is written in as its text (formatted as MyST-NB formats it), a glued
  figure as the figure (a markdown attachment) with its caption;
- ``{term}`` links to the glossary of the published book, ``{cite:t}``/``{cite:p}`` read
  "Vaswani et al. (2017)" / "(Vaswani et al., 2017)" and link to its bibliography,
  ``{doc}`` links to the chapter's edition (a sibling notebook) or to the published
  page;
- admonitions become quoted blocks with their title; dropdowns (the hints and solutions)
  become ``<details>`` folded until clicked; folded code cells stay folded
  (``jupyter.source_hidden`` for JupyterLab, ``cellView: form`` for Colab);
- the first code cell, which installs the package where it is missing, also fetches the
  repository when the notebook came alone (Colab), so the chapter's ``../book`` and
  ``../results`` paths resolve.

A construct this script does not know is an error naming the chapter and the construct,
never left in the edition. The published book's address comes from ``_config.yml``
(``html.baseurl`` when set, else the GitHub Pages address of ``repository.url``).

    python scripts/make_notebooks.py               # all chapters into _build/notebooks/
    python scripts/make_notebooks.py --out DIR chapters/01_qkv_attention.ipynb

The output folder is laid out as the repository is (``chapters/NN.ipynb``), with links
to the repository's ``book``, ``results``, ``benchmarks`` and ``runs`` beside it, so an
edition opened there reads the same files as its chapter. Files are rewritten only when
they change."""

from __future__ import annotations

import argparse
import base64
import copy
import functools
import os
import re
import sys
from pathlib import Path
from dataclasses import dataclass
from typing import Callable, Optional

import nbformat
from markdown_it.token import Token

from booktools.paths import ROOT
from booktools import glossary, myst
from booktools.glossary import GLOSSARY
from booktools.glue import Glue, GlueError, glue_text
from booktools import config, site
from booktools.install_cell import INSTALL_MARK, edition_install_cell_source

OUT = ROOT / "_build" / "notebooks"
CHAPTERS = ROOT / "chapters"
BIB = ROOT / "book" / "references.bib"
# Folders of the repository that chapters read through "../": linked beside the
# editions.
SIBLINGS = ("book", "results", "benchmarks", "runs")

LOCALES = ROOT / "locales"
# The runner editions in other languages: chapters/NN.<suffix>.ipynb, beside the English
# ones, their markdown from the same catalogues as the HTML edition in that language
# (locales/<language>).
LANGUAGE_SUFFIX = {"zh_CN": "zh"}

ADMONITIONS = (
    "note",
    "tip",
    "hint",
    "important",
    "warning",
    "caution",
    "attention",
    "danger",
    "error",
    "seealso",
)


class EditionError(ValueError):
    """A construct of a chapter that has no plain-notebook form (named, with the
    chapter)."""


# --------------------------------------------------------------------------- the book's
# address


def book_url(language: str = "en") -> str:
    """The published book's address, ending in "/" (`booktools.site.site_url`), for the
    edition in `language` (its folder under the site, `language_editions` in
    `_config.yml`)."""
    base = site.site_url()
    if language == "en":
        return base
    folders = config.language_editions()
    return base + folders[language].strip("/") + "/"


def repository() -> tuple[str, str]:
    """(git URL, commit) that the runner editions install: `booktools.site`'s one
    setting."""
    return site.repository().url, site.ref()


def edition_name(name: str, language: str = "en") -> str:
    """The file name of a chapter's runner edition in `language`: 01_x.ipynb,
    01_x.zh.ipynb."""
    if language == "en":
        return name
    if language not in LANGUAGE_SUFFIX:
        raise ValueError(
            f"language: expected one of en, {', '.join(LANGUAGE_SUFFIX)}, got"
            f" {language!r}"
        )
    stem = name.removesuffix(".ipynb")
    return f"{stem}.{LANGUAGE_SUFFIX[language]}.ipynb"


# ---------------------------------------------------------------------------
# translation


@dataclass(frozen=True)
class Messages:
    """A language's translations for one chapter, as the HTML edition in that language
    uses them: the page's catalogue (msgid: the MyST source of a paragraph, heading,
    list item, table cell or directive title, its lines joined by spaces), and the glued
    words' catalogue."""

    language: str
    text: dict[str, str]
    glued: dict[str, str]

    def __call__(self, msgid: str) -> Optional[str]:
        return self.text.get(msgid)


@functools.lru_cache(maxsize=None)
def _catalogue(path: Path) -> dict[str, str]:
    """msgid -> msgstr of a .po file: the translated, non-fuzzy messages (what Sphinx
    uses)."""
    from babel.messages.pofile import read_po

    if not path.exists():
        return {}
    with path.open("rb") as f:
        cat = read_po(f)
    return {
        m.id: m.string
        for m in cat
        if isinstance(m.id, str)
        and m.id
        and isinstance(m.string, str)
        and m.string
        and not m.fuzzy
    }


def messages(chapter: Path, language: str) -> Optional[Messages]:
    """The translations of `chapter` into `language` (None for English)."""
    if language == "en":
        return None
    folder = LOCALES / language
    rel = (
        chapter.relative_to(ROOT)
        if chapter.is_relative_to(ROOT)
        else Path("chapters") / chapter.name
    )
    return Messages(
        language,
        _catalogue(folder / "LC_MESSAGES" / rel.with_suffix(".po")),
        _catalogue(folder / "glued_values.po"),
    )


MATH_BLOCKS = ("math_block", "math_block_label", "amsmath")


def formula(tr: "Messages", text: str) -> Optional[str]:
    """A display formula's translation: its message is the formula as written, with or
    without the line break after its opening fence."""
    for msgid in (text, text.strip(), "\n" + text.strip(), text.strip() + "\n"):
        if tr(msgid) is not None:
            return str(tr(msgid)).strip()
    return None


def translate_blocks(text: str, tr: Messages) -> str:
    """`text` (MyST between fences) with each paragraph, heading, list item and table
    cell that the catalogue translates replaced by its translation, the lines' quote and
    list markers kept."""
    lines = text.split("\n")
    found = [
        (t.map[0], t.map[1], t)
        for t in myst.blocks(text)
        if t.type in ("inline", *MATH_BLOCKS) and t.map and t.content.strip()
    ]
    for start, end, tok in sorted(found, key=lambda f: f[0], reverse=True):
        if tok.type in MATH_BLOCKS:  # a display formula: its message keeps its lines
            msgstr = formula(tr, tok.content)
            if msgstr is not None:
                lines[start:end] = (
                    "\n".join(lines[start:end])
                    .replace(tok.content.strip(), msgstr, 1)
                    .split("\n")
                )
            continue
        msgid = " ".join(tok.content.split("\n")).strip()
        msgstr = tr(msgid)
        if msgstr is None:
            continue
        first = tok.content.split("\n")[0]
        at = lines[start].find(first)
        if at < 0:
            continue
        # one line (a heading, a table cell)
        if end - start == 1 or "\n" not in tok.content:
            lines[start] = lines[start][:at] + lines[start][at:].replace(
                tok.content.strip(), msgstr, 1
            )
        else:  # a paragraph: its lines become one
            last = tok.content.split("\n")[-1]
            tail_at = lines[end - 1].rfind(last)
            tail = lines[end - 1][tail_at + len(last) :] if tail_at >= 0 else ""
            lines[start:end] = [lines[start][:at] + msgstr + tail]
        # a translation of several lines: each inside the same quote or list item
        if "\n" in msgstr:
            prefix = "".join(ch if ch in "> \t" else " " for ch in lines[start][:at])
            lines[start : start + 1] = (
                lines[start].replace("\n", "\n" + prefix).split("\n")
            )
    return "\n".join(lines)


# --------------------------------------------------------------------------- citations,
# terms


@functools.lru_cache(maxsize=None)
def bibliography(path: Path = BIB) -> dict[str, tuple[str, str]]:
    """key -> (authors as the book's author-year style writes them, year)."""
    from pybtex.database import parse_file
    from pybtex.richtext import Text

    def surname(person) -> str:
        return Text.from_latex(
            " ".join(person.prelast_names + person.last_names)
        ).render_as("text")

    table = {}
    for key, entry in parse_file(str(path)).entries.items():
        people = [
            surname(p)
            for p in entry.persons.get("author", entry.persons.get("editor", []))
        ]
        if not people:
            raise EditionError(f"{path.name}: entry {key!r} has no author")
        names = (
            people[0]
            if len(people) == 1
            else (
                f"{people[0]} and {people[1]}"
                if len(people) == 2
                else f"{people[0]} et al."
            )
        )
        table[key] = (names, entry.fields.get("year", "n.d."))
    return table


def cite(kind: str, body: str, base: str, chapter: str) -> str:
    keys = [k.strip() for k in body.split(",") if k.strip()]
    bib = bibliography()
    missing = [k for k in keys if k not in bib]
    if missing:
        raise EditionError(f"{chapter}: citation keys not in {BIB.name}: {missing}")
    link = f"{base}book/bibliography.html"
    if kind in ("cite:t", "cite:ts"):
        return "; ".join(f"[{bib[k][0]} ({bib[k][1]})]({link})" for k in keys)
    return "(" + "; ".join(f"[{bib[k][0]}, {bib[k][1]}]({link})" for k in keys) + ")"


@functools.lru_cache(maxsize=None)
def doc_title(path: Path) -> str:
    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4)
        text = next(c.source for c in nb.cells if c.cell_type == "markdown")
    else:
        text = path.read_text(encoding="utf-8")
    tokens = myst.blocks(text)
    for opening, content in zip(tokens, tokens[1:]):
        if opening.type == "heading_open" and opening.tag == "h1":
            return content.content.strip()
    raise EditionError(f"{path.name}: no title")


# --------------------------------------------------------------------------- markdown


class Converter:
    """MyST markdown of one chapter -> CommonMark with HTML that notebook front ends
    render."""

    def __init__(
        self, path: Path, glue: Glue, base: str, tr: Optional[Messages] = None
    ):
        self.path, self.glue, self.base, self.name = path, glue, base, path.name
        self.tr = tr  # the translations, for an edition in another language
        self.attachments: dict[str, dict] = {}

    def _words(self, text: str) -> str:
        """A glued value in the edition's language (the glued words' catalogue), else as
        it is."""
        return self.tr.glued.get(text, text) if self.tr else text

    def _translated(self, text: str) -> str:
        return translate_blocks(text, self.tr) if self.tr else text

    # ---- inline
    def _role(self, name: str, body: str) -> str:
        if name in ("glue", "glue:text"):
            try:
                return escape_markdown(self._words(self.glue.text(body)))
            except GlueError as exc:
                raise EditionError(str(exc)) from None
        if name in ("cite", "cite:p", "cite:t", "cite:ps", "cite:ts"):
            return cite(
                "cite:p" if name == "cite" else name, body, self.base, self.name
            )
        if name == "term":
            text, target = myst.titled(body)
            anchor = glossary.anchors().get(target.lower())
            if anchor is None:
                raise EditionError(
                    f"{self.name}: {{term}} {target!r} is not in {GLOSSARY.name}"
                )
            return f"[{text}]({self.base}book/glossary.html#{anchor})"
        if name == "doc":
            text, target = myst.titled(body)
            return self._doc_link(text if text != target else None, target)
        if name == "math":
            return f"${body}$"
        text, target = myst.titled(body)
        if name in ("ref", "numref") and text != target:
            return f"[{text}](#{target})"
        raise EditionError(
            f"{self.name}: role {{{name}}}`{body}` has no plain-notebook form"
        )

    def _doc_link(self, text: Optional[str], target: str) -> str:
        if target.startswith("/"):
            rel = Path(target.lstrip("/"))
        else:
            folder = (
                self.path.parent.relative_to(ROOT)
                if self.path.is_relative_to(ROOT)
                # a copy elsewhere (the tests') stands for chapters/
                else Path("chapters")
            )
            rel = folder / target
        rel = Path(*_normalise(rel.parts))
        for suffix in (".ipynb", ".md"):
            if (ROOT / rel).with_suffix(suffix).exists():
                source = (ROOT / rel).with_suffix(suffix)
                break
        else:
            raise EditionError(f"{self.name}: {{doc}} target {target!r} does not exist")
        title = text or doc_title(source)
        # the title as the target page's own catalogue translates it
        if self.tr and not text:
            title = (messages(source, self.tr.language) or self.tr)(title) or title
        if rel.parent == Path("chapters") and source.suffix == ".ipynb":
            # the sibling edition
            return (
                f"[{title}]("
                f"{edition_name(source.name, self.tr.language if self.tr else 'en')})"
            )
        return f"[{title}]({self.base}{rel.as_posix()}.html)"

    def inline(self, text: str) -> str:
        """`text` with each role (as MyST reads it: not inside code or maths) in its
        plain form."""
        try:
            return myst.substitute_roles(
                text, lambda role: self._role(role.name, role.content)
            )
        except myst.PlacementError as exc:
            raise EditionError(f"{self.name}: {exc}") from None

    # ---- blocks
    def convert(self, source: str) -> str:
        return "\n".join(self._blocks(source.split("\n"))).strip("\n")

    def _blocks(self, lines: list[str]) -> list[str]:
        """The lines of a cell (or a directive's body): targets and fences as MyST reads
        them, converted; the runs of lines between them converted inline."""
        out: list[str] = []
        at = 0
        for tok in _special_blocks("\n".join(lines)):
            start, end = tok.map or (0, 0)
            if start > at:
                out.extend(
                    self.inline(self._translated("\n".join(lines[at:start]))).split(
                        "\n"
                    )
                )
            out.extend(self._special(tok, lines[start:end]))
            at = end
        if at < len(lines):
            out.extend(self.inline(self._translated("\n".join(lines[at:]))).split("\n"))
        return out

    def _special(self, tok: Token, lines: list[str]) -> list[str]:
        if tok.type == "myst_target":
            return [f'<a id="{tok.content}"></a>']
        d = myst.directive_of(tok)
        indent = lines[0][: len(lines[0]) - len(lines[0].lstrip())]
        if not (len(lines) > 1 and lines[-1].strip().startswith(tok.markup)):
            raise EditionError(
                f"{self.name}: fence {lines[0].strip()!r} is never closed"
            )
        if d is None:
            if tok.type == "colon_fence":
                raise EditionError(
                    f"{self.name}: colon fence {lines[0].strip()!r} without a directive"
                )
            return lines  # a code block, verbatim
        return [
            indent + b if b else b
            for b in self._directive(d.name, d.argument, d.body_lines, d.options)
        ]

    def _directive(
        self, name: str, arg: str, body: list[str], options: dict[str, str]
    ) -> list[str]:
        inner = self._blocks(body)
        if self.tr and arg:
            arg = self.tr(" ".join(arg.split())) or arg
        anchor = [f'<a id="{options["name"]}"></a>', ""] if "name" in options else []
        if name == "dropdown" or (
            name in ADMONITIONS + ("admonition",)
            and "dropdown" in options.get("class", "")
        ):
            title = self.inline(arg) or name.capitalize()
            return (
                anchor
                + ["<details>", f"<summary>{title}</summary>", ""]
                + inner
                + ["", "</details>"]
            )
        if name == "admonition" or name in ADMONITIONS:
            title = (
                self.inline(arg)
                if name == "admonition"
                else (self.inline(arg) or name.capitalize())
            )
            if not title:
                raise EditionError(f"{self.name}: admonition without a title")
            quoted = [f"> **{title}**", ">"] + [
                ("> " + b) if b.strip() else ">" for b in inner
            ]
            return anchor + quoted
        if name in ("glue:figure", "glue", "glue:any"):
            return anchor + self._figure(arg, options, inner)
        if name == "math":
            translated = formula(self.tr, "\n".join(body)) if self.tr else None
            return (
                anchor
                + ["$$"]
                + (translated.split("\n") if translated else body)
                + ["$$"]
            )
        raise EditionError(
            f"{self.name}: directive {{{name}}} has no plain-notebook form"
        )

    def _figure(self, key: str, options: dict, caption: list[str]) -> list[str]:
        try:
            bundle = self.glue.bundle(key)
        except GlueError as exc:
            raise EditionError(str(exc)) from None
        for mime, ext in (
            ("image/svg+xml", "svg"),
            ("image/png", "png"),
            ("image/jpeg", "jpg"),
        ):
            if mime in bundle:
                data = bundle[mime]
                data = "".join(data) if isinstance(data, list) else data
                # nbformat keeps svg as text; attachments are base64
                if mime == "image/svg+xml":
                    data = base64.b64encode(data.encode("utf-8")).decode("ascii")
                fname = f"{key.split('::')[-1]}.{ext}"
                self.attachments[fname] = {mime: data}
                alt = options.get("alt", key).replace("[", "(").replace("]", ")")
                lines = [f"![{alt}](attachment:{fname})"]
                break
        else:
            lines = [escape_markdown(glue_text(bundle))]
        # the caption, as the paragraph under the figure
        if any(c.strip() for c in caption):
            lines += [""] + caption
        return lines


def _special_blocks(text: str) -> list[Token]:
    """The targets and fences of `text` (in list items and quotes too), outermost first,
    in order."""
    found, end = [], -1
    for tok in myst.blocks(text):
        if (
            tok.type in ("myst_target", "fence", "colon_fence")
            and tok.map
            and tok.map[0] >= end
        ):
            found.append(tok)
            end = tok.map[1]
    return found


def _normalise(parts: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for p in parts:
        if p == "..":
            if not out:
                raise EditionError(f"path leaves the repository: {'/'.join(parts)}")
            out.pop()
        elif p not in (".", ""):
            out.append(p)
    return out


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|$])")


def escape_markdown(text: str) -> str:
    """A glued value as literal text in markdown (it may hold *, _, |, $ or <)."""
    return _MD_SPECIAL.sub(r"\\\1", text).replace("<", "&lt;").replace(">", "&gt;")


# --------------------------------------------------------------------------- notebooks


def edition(
    path: Path,
    base: Optional[str] = None,
    repo: Optional[tuple[str, str]] = None,
    language: str = "en",
) -> nbformat.NotebookNode:
    """The runner edition of the chapter at `path` in `language` (the chapter itself is
    not changed): `repo` is the (git URL, commit) its first cell installs, `base` the
    published book's address."""
    path = Path(path).resolve()
    if not path.exists():
        raise FileNotFoundError(f"path: no chapter at {path}")
    edition_name(path.name, language)  # a ValueError for a language without editions
    nb = nbformat.read(path, as_version=4)
    base = base or book_url(language)
    url, commit = repo or repository()
    glue, tr = Glue(nb, path), messages(path, language)
    uses_tools = any(
        c.cell_type == "code"
        and re.search(r"^\s*(from|import) booktools\b", c.source, re.M)
        for c in nb.cells
    )
    ed = copy.deepcopy(nb)
    for cell in ed.cells:
        if cell.cell_type == "markdown":
            conv = Converter(path, glue, base, tr)
            cell.source = conv.convert(cell.source)
            # folded by <details> instead: the summary stays visible
            cell.metadata.pop("jupyter", None)
            if conv.attachments:
                cell["attachments"] = conv.attachments
            else:
                cell.pop("attachments", None)
        elif cell.cell_type == "code":
            if INSTALL_MARK in cell.source:
                cell.source = edition_install_cell_source(url, commit, tools=uses_tools)
            if cell.metadata.get("jupyter", {}).get("source_hidden"):
                cell.metadata["cellView"] = "form"  # Colab's fold for a code cell
    ed.metadata["colab"] = {"name": edition_name(path.name, language), "provenance": []}
    if language != "en":
        ed.metadata["language"] = language
    return ed


def _link_siblings(out: Path) -> None:
    for name in SIBLINGS:
        link, target = out / name, ROOT / name
        if not target.exists():
            continue
        if link.is_symlink() and link.resolve() == target.resolve():
            continue
        if link.is_symlink() or link.is_file():
            link.unlink()
        elif link.exists():
            continue  # a real folder (a published copy): keep it
        link.symlink_to(
            os.path.relpath(target, out.resolve()), target_is_directory=True
        )


def write_editions(
    chapters: list[Path],
    out: Path = OUT,
    *,
    link_siblings: bool = True,
    log: Callable[[str], None] = print,
    languages: tuple[str, ...] = ("en", *LANGUAGE_SUFFIX),
) -> list[Path]:
    """Write the edition of every chapter in every language to out/chapters/ (NN.ipynb,
    NN.zh.ipynb); returns the paths (unchanged files kept)."""
    if not chapters:
        raise ValueError("chapters: expected at least one chapter notebook, got none")
    repo = repository()
    folder = Path(out) / "chapters"
    folder.mkdir(parents=True, exist_ok=True)
    written, errors = [], []
    for chapter, language in [(c, lang) for lang in languages for c in chapters]:
        target = folder / edition_name(Path(chapter).name, language)
        try:
            text = (
                nbformat.writes(edition(chapter, book_url(language), repo, language))
                + "\n"
            )
        # the others are still written; all failures are named at the end
        except EditionError as exc:
            errors.append(str(exc))
            continue
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
            log(
                f"{target.relative_to(out) if target.is_relative_to(out) else target}:"
                " written"
            )
        written.append(target)
    if link_siblings:
        _link_siblings(Path(out))
    if errors:
        raise EditionError("\n".join(errors))
    return written


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "chapters", nargs="*", type=Path, help="chapter notebooks (default: all)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=OUT,
        help="output folder (default: _build/notebooks)",
    )
    parser.add_argument(
        "--language",
        action="append",
        choices=["en", *LANGUAGE_SUFFIX],
        help="only the editions in this language (repeatable; default: all)",
    )
    parser.add_argument(
        "--no-links",
        action="store_true",
        help=(
            "do not link book/, results/ ... beside the editions (a published copy has"
            " them)"
        ),
    )
    args = parser.parse_args(argv)
    chapters = args.chapters or sorted(CHAPTERS.glob("*.ipynb"))
    try:
        paths = write_editions(
            chapters,
            args.out,
            link_siblings=not args.no_links,
            languages=tuple(args.language or ("en", *LANGUAGE_SUFFIX)),
        )
    except EditionError as exc:
        print(f"make_notebooks: {exc}", file=sys.stderr)
        return 1
    print(f"{len(paths)} runner editions in {args.out}/chapters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
