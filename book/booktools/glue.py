"""The one reader of the values the chapters glue into their prose (MyST-NB's ``glue``).

A chapter's code calls ``glue(key, value)``; MyST-NB stores the value as an output of
that cell (a mime bundle marked ``scrapbook``), and the prose pastes it with
``{glue:text}`key` `` or ``{glue:figure}``. The runner editions write the values in, and
the Chinese edition's checker finds the ones that are words, through this module.
"""

from __future__ import annotations

import functools
from pathlib import Path

import nbformat

_RECORD_TEXT = "text/plain"


class GlueError(ValueError):
    """A glued value that is not there (named, with the chapter)."""


def glued_outputs(nb: nbformat.NotebookNode) -> dict[str, dict]:
    """key -> the glued mime bundle (prefix removed), from MyST-NB's scrapbook
    outputs."""
    found: dict[str, dict] = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            book = out.get("metadata", {}).get("scrapbook")
            if not book:
                continue
            prefix = book.get("mime_prefix", "")
            found[book["name"]] = {
                mime[len(prefix) :]: data
                for mime, data in out.get("data", {}).items()
                if mime.startswith(prefix)
            }
    return found


@functools.lru_cache(maxsize=None)
def _glued_in(path: Path) -> dict[str, dict]:
    return glued_outputs(nbformat.read(path, as_version=4))


def glue_text(bundle: dict, fmt_spec: str = "s") -> str:
    """The text MyST-NB pastes for `{glue:text}`key:fmt`` (its own formatter)."""
    from myst_nb.core.variables import format_plain_text

    if _RECORD_TEXT not in bundle:
        raise KeyError("no text/plain in the glued data")
    text = bundle[_RECORD_TEXT]
    return format_plain_text(
        "".join(text) if isinstance(text, list) else text, fmt_spec
    )


class Glue:
    """The glued values of one chapter, and of the chapters it glues from
    (``path::key``)."""

    def __init__(self, nb: nbformat.NotebookNode, path: Path):
        self.own, self.folder, self.name = glued_outputs(nb), path.parent, path.name

    def bundle(self, ref: str) -> dict:
        doc, sep, key = ref.partition("::")
        table = self.own
        if sep:
            other = (self.folder / doc).with_suffix(".ipynb")
            if not other.exists():
                raise GlueError(
                    f"{self.name}: glue reference {ref!r}: no notebook {other.name}"
                )
            table = _glued_in(other.resolve())
        else:
            key = doc
        if key not in table:
            raise GlueError(
                f"{self.name}: glued key {key!r} has no value in the stored outputs "
                "(execute the chapter: scripts/execute.py)"
            )
        return table[key]

    def text(self, role_body: str) -> str:
        ref, fmt = role_body, "s"
        if ":" in role_body.replace("::", ""):
            ref, fmt = role_body.rsplit(":", 1)
        try:
            return glue_text(self.bundle(ref), fmt)
        except KeyError as exc:
            raise GlueError(f"{self.name}: glued key {ref!r}: {exc}") from None
