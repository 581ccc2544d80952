"""The one reader of the book's MyST: markdown-it-py with MyST-Parser's own plugins.

The HTML book is rendered by MyST-Parser, which parses each page with markdown-it-py and
its plugins (roles, targets, directives as fences, dollar maths). Every tool that reads
chapter prose (the runner editions, the translation checker, the glossary reader) reads
it through this module, so that what a tool calls a role, a code span, a formula or a
directive is exactly what the book's renderer calls one: no second grammar of regular
expressions.

    blocks("...")            # block tokens (fences, paragraphs, targets), line spans
    inline("...")            # a paragraph's pieces: text, roles, maths, code, links
    roles("...", "term")     # the roles (of one name)
    nested_roles("...")      # the roles, also inside directives' bodies at any depth
    code_blocks("...", "python")  # the contents of plain code fences
    headings("...")          # (level, title) of each heading
    has_maths("...")         # whether a text shows a formula
    directives("...")        # directives ({name}, ``` or :::): argument, options, body
    nested_directives("...") # the directives, and those they nest
    located("...")           # roles, code spans and formulas with where each is written
    substitute_roles("...", f)   # each role replaced by f(role), code and maths kept

The extensions are the book's (`_config.yml`, ``myst_enable_extensions``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser

from booktools import config


@functools.lru_cache(maxsize=None)
def parser() -> MarkdownIt:
    """The markdown-it parser MyST-Parser builds for the book's configuration."""
    extensions = config.myst_extensions()
    return create_md_parser(MdParserConfig(enable_extensions=extensions), RendererHTML)


def blocks(text: str) -> list[Token]:
    """The block-level tokens of `text` (a page or a markdown cell), each with `.map`
    (lines)."""
    return parser().parse(text)


# ---- inline: what a paragraph is made of ---------------------------------------------


@dataclass(frozen=True)
class Piece:
    """One inline piece of a paragraph, as MyST reads it.

    kind: "text", "role", "math" (inline or display ``$$``), "code", "link" (its
    target), or "other" (emphasis markers, line breaks, images ...). `source` is the
    piece as written in the Markdown (a role with its name and backticks, a formula with
    its dollars)."""

    kind: str
    content: str
    source: str
    name: str = ""  # a role's name ("term", "glue:text"), a link's href


def _ticks(content: str) -> str:
    """The shortest run of backticks that does not occur in `content` (how the span was
    fenced)."""
    n = 1
    while "`" * n in content:
        n += 1
    return "`" * n


def inline_piece(tok: Token) -> Piece:
    """The Piece an inline token (a child of a block's `inline` token) is."""
    if tok.type == "myst_role":
        name, ticks = str(tok.meta["name"]), _ticks(tok.content)
        return Piece(
            "role", tok.content, f"{{{name}}}{ticks}{tok.content}{ticks}", name
        )
    if tok.type in ("math_inline", "math_inline_double"):
        return Piece("math", tok.content, f"{tok.markup}{tok.content}{tok.markup}")
    if tok.type == "code_inline":
        return Piece("code", tok.content, f"{tok.markup}{tok.content}{tok.markup}")
    if tok.type == "link_open":
        href = str(tok.attrs.get("href", ""))
        return Piece("link", href, href, href)
    if tok.type == "text":
        return Piece("text", tok.content, tok.content)
    return Piece("other", tok.content, tok.markup or tok.content)


def inline(text: str) -> list[Piece]:
    """The inline pieces of every paragraph, heading, list item and table cell in
    `text`, in order (the contents of code blocks and directives' raw bodies are not
    inline text)."""
    return [
        inline_piece(child)
        for tok in blocks(text)
        if tok.type == "inline"
        for child in tok.children or []
    ]


def roles(text: str, name: Optional[str] = None) -> list[Piece]:
    """The roles of `text` (only those called `name`, when given)."""
    return [
        p for p in inline(text) if p.kind == "role" and (name is None or p.name == name)
    ]


# ---- blocks: directives and targets --------------------------------------------------


@dataclass(frozen=True)
class Directive:
    """A MyST directive: ```{name} argument (or :::{name}), its `:key:
    value` options, its body."""

    name: str
    argument: str
    options: dict[str, str] = field(default_factory=dict)
    body: str = ""
    # first and one-past-last line of the fence in the source
    lines: tuple[int, int] = (0, 0)
    fence: str = "```"  # the fence's marker as written: ```, ````, :::

    @property
    def body_lines(self) -> list[str]:
        return self.body.splitlines()


def _split_options(content: str) -> tuple[dict[str, str], str]:
    """The `:key: value` lines at the top of a directive's content, and the rest (its
    body)."""
    options: dict[str, str] = {}
    lines = content.splitlines(keepends=True)
    i = 0
    while i < len(lines) and lines[i].startswith(":") and ":" in lines[i][1:]:
        key, _, value = lines[i][1:].partition(":")
        if not key or " " in key.strip():
            break
        options[key.strip()] = value.strip()
        i += 1
    return options, "".join(lines[i:])


def directive_of(tok: Token) -> Optional[Directive]:
    """The directive a fence token opens, or None for a plain code fence (```python)."""
    if tok.type not in ("fence", "colon_fence"):
        return None
    info = tok.info.strip()
    if not (info.startswith("{") and "}" in info):
        return None
    name, _, argument = info[1:].partition("}")
    options, body = _split_options(tok.content)
    start, end = tok.map or (0, 0)
    return Directive(
        name.strip(), argument.strip(), options, body, (start, end), tok.markup
    )


def _walk(tokens: list[Token]) -> Iterator[Token]:
    for tok in tokens:
        yield tok
        if tok.children:
            yield from _walk(tok.children)


def directives(text: str, name: Optional[str] = None) -> list[Directive]:
    """Every directive at the top level of `text`, in order (only those called `name`,
    when given). A directive's body is not parsed here: call `directives(d.body)` for
    the ones it nests."""
    found = [directive_of(tok) for tok in _walk(blocks(text))]
    return [d for d in found if d is not None and (name is None or d.name == name)]


# Directives whose body is not MyST markdown (maths, code): their bodies are not read
# for roles.
RAW_BODIES = frozenset(
    {"math", "code", "code-block", "code-cell", "raw", "mermaid", "literalinclude"}
)


def nested_directives(text: str, name: Optional[str] = None) -> list[Directive]:
    """Every directive of `text` and of the directives it nests, outermost first, in
    order (only those called `name`, when given)."""
    found: list[Directive] = []
    for d in directives(text):
        if name is None or d.name == name:
            found.append(d)
        if d.name not in RAW_BODIES:
            found += nested_directives(d.body, name)
    return found


def nested_roles(text: str, name: Optional[str] = None) -> list[Piece]:
    """The roles of `text` and of the markdown bodies of its directives, at any depth
    (only those called `name`, when given): what a page shows, wherever it is
    written."""
    found = roles(text, name)
    for d in directives(text):
        if d.name not in RAW_BODIES:
            found += nested_roles(d.body, name)
    return found


def code_blocks(text: str, language: Optional[str] = None) -> list[str]:
    """The contents of the plain code fences of `text`
    (```python), in order, also inside directives' markdown bodies (only those whose
    info string names `language`, when given). A directive is not a code block."""
    found = []
    for tok in _walk(blocks(text)):
        if tok.type in ("fence", "colon_fence") and directive_of(tok) is None:
            if language is None or tok.info.strip().split(" ")[0] == language:
                found.append(tok.content)
    for d in directives(text):
        if d.name not in RAW_BODIES:
            found += code_blocks(d.body, language)
    return found


def headings(text: str) -> list[tuple[int, str]]:
    """(level, title as written) of each heading of `text`, in order (none from code
    blocks)."""
    toks = blocks(text)
    return [
        (int(tok.tag[1]), toks[i + 1].content)
        for i, tok in enumerate(toks)
        if tok.type == "heading_open"
    ]


MATH_BLOCKS = frozenset({"math_block", "math_block_label", "amsmath"})


def has_maths(text: str) -> bool:
    """Whether `text` shows a formula: inline or display maths, also inside directives'
    markdown bodies (code is not maths)."""
    if any(p.kind == "math" for p in inline(text)) or any(
        tok.type in MATH_BLOCKS for tok in blocks(text)
    ):
        return True
    return any(has_maths(d.body) for d in directives(text) if d.name not in RAW_BODIES)


def targets(text: str) -> list[str]:
    """The labels of the `(label)=` targets of `text`, in order."""
    return [tok.content for tok in blocks(text) if tok.type == "myst_target"]


def titled(content: str) -> tuple[str, str]:
    """(title, target) of a role's content written `title <target>`; (content, content)
    if plain. This is how MyST-Parser's roles ({doc}, {ref}, {term}) read their
    content."""
    content = content.strip()
    if content.endswith(">") and "<" in content:
        title, _, target = content[:-1].rpartition("<")
        if title.strip():
            return title.strip(), target.strip()
    return content, content


# ---- where inline pieces are written -------------------------------------------------


class PlacementError(ValueError):
    """A piece MyST read that cannot be found where it was written (never expected)."""


def _ticks_of(piece: Piece) -> str:
    return piece.source[: len(piece.source) - len(piece.source.lstrip("`"))]


def _find(text: str, piece: Piece, at: int) -> int:
    """Where `piece` starts in `text`, from `at` on (-1: not found). A code span is
    found by its run of backticks (markdown-it reports its content with spaces
    normalised)."""
    if piece.kind != "code":
        return text.find(piece.source, at)
    ticks = _ticks_of(piece)
    start = text.find(ticks, at)
    while start >= 0 and (
        text.startswith("`", start + len(ticks))
        or (start > 0 and text[start - 1] == "`")
    ):
        start = text.find(ticks, start + 1)
    return start


def _end(text: str, piece: Piece, start: int) -> int:
    if piece.kind != "code":
        return start + len(piece.source)
    ticks = _ticks_of(piece)
    close = text.find(ticks, start + len(ticks))
    while close >= 0 and text.startswith("`", close + len(ticks)):
        close = text.find(ticks, close + len(ticks) + 1)
    if close < 0:
        raise PlacementError(f"the code span {piece.source!r} is never closed")
    return close + len(ticks)


def located(text: str) -> list[tuple[int, int, Piece]]:
    """The roles, code spans and formulas of `text`, each with where it is written:
    (start, end). `text` may be a run of lines cut from a page (a list item's tail):
    each line is read without its indentation, so that a continuation line does not read
    as an indented code block."""
    flat = "\n".join(line.lstrip() for line in text.split("\n"))
    found, at = [], 0
    for piece in inline(flat):
        if piece.kind not in ("role", "code", "math"):
            continue
        start = _find(text, piece, at)
        if start < 0:
            raise PlacementError(f"cannot place {piece.source!r} in its paragraph")
        at = _end(text, piece, start)
        found.append((start, at, piece))
    return found


def substitute_roles(text: str, replace: Callable[[Piece], str]) -> str:
    """`text` with every role replaced by `replace(role)`; code spans and maths left as
    written (a role quoted in code is code)."""
    out, at = [], 0
    for start, end, piece in located(text):
        if piece.kind == "role":
            out += [text[at:start], replace(piece)]
            at = end
    return "".join(out) + text[at:]
