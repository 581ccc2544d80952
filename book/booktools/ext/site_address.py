"""Sphinx extension: the site's links and buttons follow the book's one address setting.

`_config.yml` holds the placeholder repository ``https://github.com/OWNER/…`` (Jupyter
Book needs a value to start). Before anything reads it, this replaces it with
`booktools.site.repository()` (``BOOK_REPOSITORY``, which the workflow sets from
``github.repository``, else the checkout's GitHub remote): the theme's repository,
issues, edit, Colab and Binder buttons are made from it. It also sets ``html_baseurl``
(canonical links) from `booktools.site.site_url()`, and rewrites the first cell of each
page's downloadable notebook (``_sources/…ipynb``) to install from the same repository.
A build with ``BOOK_PUBLISH=1`` whose setting is missing or a placeholder stops with the
setting's name (`booktools.site.SiteError`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
from sphinx.errors import ConfigError

from booktools import site
from booktools.install_cell import INSTALL_MARK, install_cell_source


def _set_address(app: Any, config: Any) -> None:
    try:
        repo = site.repository()
        base = site.site_url()
    except site.SiteError as exc:
        raise ConfigError(str(exc)) from None
    options = dict(config.html_theme_options or {})
    if "repository_url" in options:
        options["repository_url"] = repo.web_url
        options["repository_branch"] = repo.branch
    config.html_theme_options = options
    if not config.html_baseurl and not repo.placeholder:
        language = config.language if config.language not in (None, "en") else None
        folder = (
            (getattr(config, "language_editions", {}) or {}).get(language, "")
            if language
            else ""
        )
        config.html_baseurl = base + (folder + "/" if folder else "")
    app.env_site_repository = repo  # for build-finished


def _downloads(app: Any, exception: Any) -> None:
    """The downloadable notebooks' install cell installs from the setting's
    repository."""
    if exception is not None or app.builder.format != "html":
        return
    repo = getattr(app, "env_site_repository", None) or site.repository()
    source = install_cell_source(repo.url, repo.branch)
    for path in Path(app.outdir, "_sources").rglob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        cells = [
            c for c in nb.cells if c.cell_type == "code" and INSTALL_MARK in c.source
        ]
        if cells and cells[0].source != source:
            cells[0].source = source
            nbformat.write(nb, path)


def setup(app: Any) -> dict[str, Any]:
    # before the theme reads its options
    app.connect("config-inited", _set_address, priority=400)
    app.connect("build-finished", _downloads)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
