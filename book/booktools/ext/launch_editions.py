"""Sphinx extension: the launch buttons (Colab, Binder) open the runner editions of the
chapters.

A chapter's source is MyST, which Colab and a plain JupyterLab show as raw markup; the
runner editions (scripts/make_notebooks.py, `make notebooks`) are the same chapters as
plain notebooks. The book's workflow publishes them, with the rest of the repository, to
the branch named by ``launch_editions_branch`` (``_config.yml``, ``sphinx.config``), at
the same paths (``chapters/NN.ipynb``). sphinx-book-theme builds every button from
``repository.url`` and ``repository.branch``; this moves only the launch buttons to the
editions' branch, after the theme made them, so the repository, edit and issue buttons
keep the source branch and the repository's address stays set once. A launch URL of a
shape this does not know stops the build (a theme update must not leave the buttons on
the MyST sources unnoticed).

On the pages of an edition in another language (Sphinx's ``language``, e.g. the Chinese
one), the buttons open that language's runner editions, published beside the English
ones as ``chapters/NN.<suffix>.ipynb`` (`booktools.editions.LANGUAGE_SUFFIX`:
``.zh.ipynb``)."""

from __future__ import annotations

import re
from typing import Any

from sphinx.errors import ExtensionError

LAUNCHERS = {  # the theme's URL shapes (sphinx_book_theme/header_buttons/launch.py)
    "Colab": re.compile(
        r"^(?P<head>.+/github/[^/]+/[^/]+/blob/)(?P<branch>[^/]+)(?P<tail>/.+)$"
    ),
    "Binder": re.compile(
        r"^(?P<head>.+/v2/gh/[^/]+/[^/]+/)(?P<branch>[^/?]+)(?P<tail>\?.+)$"
    ),
}


def retarget(
    url: str, kind: str, source_branch: str, editions_branch: str, language: str = "en"
) -> str:
    """`url` of a `kind` launch button, moved from `source_branch` to `editions_branch`,
    and to the runner edition in `language` (a notebook beside the English one)."""
    m = LAUNCHERS[kind].match(url)
    if not m or m["branch"] != source_branch:
        raise ExtensionError(
            f"launch_editions: unexpected {kind} URL {url!r} (expected the branch "
            f"{source_branch!r} in it): the theme's launch URLs changed"
        )
    tail = m["tail"]
    if language != "en":
        from booktools.editions import edition_name

        path, sep, query = tail.partition("?")
        if kind == "Binder":  # /v2/gh/o/r/BRANCH?urlpath=lab/tree/chapters/NN.ipynb
            query = re.sub(
                r"[^/=]+\.ipynb$", lambda n: edition_name(n.group(0), language), query
            )
        else:
            path = re.sub(
                r"[^/]+\.ipynb$", lambda n: edition_name(n.group(0), language), path
            )
        if (path + sep + query) == tail:
            raise ExtensionError(
                f"launch_editions: no notebook in the {kind} URL {url!r}"
            )
        tail = path + sep + query
    return m["head"] + editions_branch + tail


def _launch_to_editions(
    app: Any, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    editions = app.config.launch_editions_branch
    if not editions:
        return
    source = app.config.html_theme_options.get("repository_branch") or "master"
    language = app.config.language or "en"
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons", []):
            if button.get("text") in LAUNCHERS and button.get("url"):
                button["url"] = retarget(
                    button["url"], button["text"], source, editions, language
                )


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("launch_editions_branch", "", "html", types=[str])
    # after sphinx-book-theme's add_launch_buttons (priority 501), before the page is
    # written
    app.connect("html-page-context", _launch_to_editions, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
