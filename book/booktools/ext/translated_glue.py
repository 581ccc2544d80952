"""Sphinx extension: glued values inside translated paragraphs (the Chinese edition).

Sphinx's i18n parses every translated message as a small document of its own. MyST-NB parses
such a message as plain MyST (its notebook parser gives way when the source ends in
``<translated>``), and there the ``{glue:...}`` roles find no notebook to read their values from:
"No key found in glue data for this document". This parser hands that small document the
renderer of the notebook it belongs to, so a glued value in a translation is the chapter's own
stored output, exactly as in the English edition. (MyST-NB drops the renderer from the notebook's
document at the end of its parse, before Sphinx translates; `_KeepRenderer` keeps it aside.)

A glued value that is words ("lower", "about 3 min on a 2-core CPU") is shown in the edition's
language: in a translated edition, every glued text found in locales/<language>/glued_values.po
(written by `make translations`, see scripts/check_translations.py) is replaced by its translation.
Numbers alone are never in that catalogue: they are the same in every language.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from babel.messages.pofile import read_po
from docutils import nodes
from myst_nb.sphinx_ import Parser

_RENDERER = "translated_glue_renderer"   # env.temp_data key: the notebook being read


class _KeepRenderer(dict):
    """A document's attributes that remember the notebook renderer MyST-NB pops at the end."""

    renderer: Any = None

    def pop(self, key: str, *default: Any) -> Any:
        if key == "nb_renderer" and key in self:
            self.renderer = self[key]
        return super().pop(key, *default)


class TranslatedGlueParser(Parser):
    """MyST-NB's parser, which also lends a notebook's glue data to its translated messages."""

    def parse(self, inputstring: str, document: nodes.document) -> None:
        env = document.settings.env
        if document.current_source.endswith("<translated>"):
            renderer = env.temp_data.get(_RENDERER)
            if renderer is not None:
                document["nb_renderer"] = renderer
            super().parse(inputstring, document)
            document.attributes.pop("nb_renderer", None)   # the translated nodes are pickled with it
            return
        env.temp_data.pop(_RENDERER, None)
        document.attributes = attributes = _KeepRenderer(document.attributes)
        super().parse(inputstring, document)
        document.attributes = dict(attributes)   # a plain dict again: the doctree is pickled
        if attributes.renderer is not None:
            env.temp_data[_RENDERER] = attributes.renderer


def glued_translations(srcdir: str, language: str | None) -> dict[str, str]:
    """{glued text: its translation} for `language` (empty for English or without a catalogue)."""
    path = Path(srcdir) / "locales" / (language or "en") / "glued_values.po"
    if not language or language == "en" or not path.exists():
        return {}
    with path.open("rb") as f:
        return {m.id: m.string for m in read_po(f) if m.id and m.string and not m.fuzzy}


def _translate_glued_words(app: Any, doctree: nodes.document) -> None:
    words = getattr(app, "_glued_translations", None)
    if words is None:
        words = app._glued_translations = glued_translations(app.srcdir, app.config.language)
    if not words:
        return
    for node in doctree.findall(nodes.inline):
        if "pasted-text" in node["classes"] and node.astext() in words:
            node.replace(node.children[0], nodes.Text(words[node.astext()]))


def setup(app: Any) -> dict[str, Any]:
    app.add_source_parser(TranslatedGlueParser, override=True)
    app.connect("doctree-read", _translate_glued_words)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
