"""Sphinx extension: glued values inside translated paragraphs (the Chinese edition).

Sphinx's i18n parses every translated message as a small document of its own. MyST-NB
parses such a message as plain MyST (its notebook parser gives way when the source ends
in ``<translated>``), and there a ``{glue:text}`key` `` role finds no notebook to read
its value from: "No key found in glue data for this document". MyST-NB documents a way
to glue from another document, ``{glue:text}`page.ipynb::key` ``: the value is read,
after parsing, from the glue cache MyST-NB writes for every notebook it reads. This
parser writes each glued key of a translated message in that form, naming the notebook
the message belongs to, so a glued value in a translation is the chapter's own stored
output, exactly as in the English edition.

A glued value that is words ("lower", "about 3 min on a 2-core CPU") is shown in the
edition's language: in a translated edition, every glued text found in
locales/<language>/glued_values.po (written by `make translations`, see
booktools.translations) is replaced by its translation, once the cross-document values
are in place (``doctree-resolved``). Numbers alone are never in that catalogue: they are
the same in every language.

Written for Sphinx 7.4 and MyST-NB 1.4 (the ``<translated>`` source name is Sphinx's
i18n's); tests/test_book.py checks the versions and the Chinese pages' glued values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from babel.messages.pofile import read_po
from docutils import nodes
from myst_nb.sphinx_ import Parser

from booktools import myst

WRITTEN_FOR = {"sphinx": "7.4.7", "myst-nb": "1.4.0"}
_GLUE_TEXT = "glue:text"


def with_page(message: str, page: str) -> str:
    """`message` with each ``{glue:text}`key[:format]` `` of its own page written as
    ``{glue:text}`page::key:format` `` (``s`` where it had none: MyST-NB splits the
    format off at the last colon); a key that already names a page is left as it is."""

    def own_page(role: myst.Piece) -> str:
        if role.name != _GLUE_TEXT or "::" in role.content:
            return role.source
        # MyST-NB reads
        key_format = role.content if ":" in role.content else role.content + ":s"
        # page::key:format, its format required
        return f"{{{_GLUE_TEXT}}}`{page}::{key_format}`"

    return myst.substitute_roles(message, own_page)


class TranslatedGlueParser(Parser):
    """MyST-NB's parser; a translated message's own glued keys name their notebook."""

    def parse(self, inputstring: str, document: nodes.document) -> None:
        env = document.settings.env
        page = Path(env.doc2path(env.docname))
        if document.current_source.endswith("<translated>") and page.suffix == ".ipynb":
            inputstring = with_page(inputstring, page.name)
        super().parse(inputstring, document)


def glued_translations(srcdir: str, language: str | None) -> dict[str, str]:
    """{glued text: its translation} for `language` (empty for English or without a
    catalogue)."""
    path = Path(srcdir) / "locales" / (language or "en") / "glued_values.po"
    if not language or language == "en" or not path.exists():
        return {}
    with path.open("rb") as f:
        return {
            str(m.id): str(m.string)
            for m in read_po(f)
            if m.id and m.string and not m.fuzzy
        }


def _translate_glued_words(app: Any, doctree: nodes.document, docname: str) -> None:
    words = getattr(app, "_glued_translations", None)
    if words is None:
        words = app._glued_translations = glued_translations(
            app.srcdir, app.config.language
        )
    if not words:
        return
    for node in doctree.findall(nodes.inline):
        if "pasted-text" in node["classes"] and node.astext() in words:
            node.replace(node.children[0], nodes.Text(words[node.astext()]))


def setup(app: Any) -> dict[str, Any]:
    app.add_source_parser(TranslatedGlueParser, override=True)
    app.connect("doctree-resolved", _translate_glued_words)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
