"""Sphinx extension: the table of contents' part captions in the edition's language.

Jupyter Book's table of contents (`_toc.yml`) becomes toctree nodes that
sphinx-external-toc inserts into the root page by a transform of priority 100, after
Sphinx's i18n has translated that page (priority 20). Sphinx's gettext builder sees the
captions ("Attention", "The model", ...) and puts them in the root page's catalogue, but
nothing applies their translations: the sidebar of the Chinese edition would list its
parts in English. This transform, run after the toctrees are inserted and before Sphinx
collects them, translates each caption from the same catalogue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx import addnodes
from sphinx.locale import init as init_locale
from sphinx.transforms import SphinxTransform
from sphinx.util.i18n import docname_to_domain


class TranslateTocCaptions(SphinxTransform):
    # after InsertToctrees (100), before the toctree collector (880)
    default_priority = 150

    def apply(self, **kwargs: Any) -> None:
        language = self.config.language
        toctrees = [
            n for n in self.document.findall(addnodes.toctree) if n.get("caption")
        ]
        if not toctrees or not language or language == "en":
            return
        domain = docname_to_domain(self.env.docname, self.config.gettext_compact)
        dirs = [str(Path(self.env.srcdir, d)) for d in self.config.locale_dirs]
        catalog, found = init_locale(dirs, language, domain)
        if not found:
            return
        for node in toctrees:
            node["caption"] = catalog.gettext(node["caption"])


def setup(app: Any) -> dict[str, Any]:
    app.add_transform(TranslateTocCaptions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
