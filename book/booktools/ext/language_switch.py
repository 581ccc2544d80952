"""Sphinx extension: a language switch on every page, to the same page in the other
edition.

The book is built twice from the same sources (scripts/build_book.py): the English
edition at the site's root and the Chinese one under ``zh/`` (``language_editions`` in
``_config.yml`` names each edition's folder). Every page gets a button in the header,
beside the launch and download buttons, that opens the same page in the other edition,
and a ``<link rel="alternate" hreflang>`` for each edition. The links are relative, so
the site works from any address and from the file system."""

from __future__ import annotations

from typing import Any

# The button's text is the other edition's language, written in that language (and
# marked so, for a screen reader); its tooltip is in the other language too (the Chinese
# edition's words for the English button come from locales/zh_CN/theme.po, as the
# theme's do: booktools.ext.web).
NAMES = {
    "en": ('<span lang="en">English</span>', "Read this page in English"),
    "zh_CN": ('<span lang="zh-CN">中文</span>', "阅读本页的中文版"),
}
HREFLANG = {"en": "en", "zh_CN": "zh-CN"}


def edition_url(pagename: str, here: str, there: str, folders: dict[str, str]) -> str:
    """The relative URL, from page `pagename` of edition `here`, of the same page in
    edition `there`."""
    depth = pagename.count("/") + (1 if folders[here] else 0)
    folder = folders[there]
    return "../" * depth + (f"{folder}/" if folder else "") + f"{pagename}.html"


def _add_switch(
    app: Any, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    folders: dict[str, str] = app.config.language_editions
    here = app.config.language or "en"
    if here not in folders or len(folders) < 2:
        return
    links = []
    for there in folders:
        url = edition_url(pagename, here, there, folders)
        links.append(
            f'<link rel="alternate" hreflang="{HREFLANG[there]}" href="{url}" />'
        )
        if there == here:
            continue
        text, tooltip = NAMES[there]
        context.setdefault("header_buttons", []).insert(
            0,
            {
                "type": "javascript",
                "javascript": f"window.location.href='{url}'" + "+window.location.hash",
                "tooltip": tooltip,
                "text": text,
                "label": "language-switch",
            },
        )
    context["metatags"] = context.get("metatags", "") + "\n".join(links)


def setup(app: Any) -> dict[str, Any]:
    # {language: the edition's folder under the site's root}; the root edition's folder
    # is ""
    app.add_config_value("language_editions", {}, "html", types=[dict])
    # after sphinx-book-theme has made its header buttons (priority 501)
    app.connect("html-page-context", _add_switch, priority=650)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
