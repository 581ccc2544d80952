"""Sphinx extension: glued values inside translated paragraphs (the Chinese edition).

Sphinx's i18n parses every translated message as a small document of its own. MyST-NB parses
such a message as plain MyST (its notebook parser gives way when the source ends in
``<translated>``), and there the ``{glue:...}`` roles find no notebook to read their values from:
"No key found in glue data for this document". This parser hands that small document the
renderer of the notebook it belongs to, so a glued value in a translation is the chapter's own
stored output, exactly as in the English edition. (MyST-NB drops the renderer from the notebook's
document at the end of its parse, before Sphinx translates; `_KeepRenderer` keeps it aside.)
"""
from __future__ import annotations

from typing import Any

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


def setup(app: Any) -> dict[str, Any]:
    app.add_source_parser(TranslatedGlueParser, override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
