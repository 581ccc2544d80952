"""Sphinx extension: the web book for every reader (phones, keyboards, screen readers,
slow links).

What it changes, at build time, in both editions (the chapters and their stored outputs
stay as they are):

- **The "Running this chapter" note** (the admonition under every chapter's title,
  booktools.install_cell) becomes one line that opens: a ``<details>`` whose summary
  shows the title, the run's time and the machine (the note's first two glued values)
  and folds the rest. HTML pages only: the one-page build that `make pdf` prints keeps
  the note open.
- **Alt text**: a figure's alt is its description, written in the metadata of the code
  cell that draws it (``"mystnb": {"image": {"alt": ...}}``, which MyST-NB makes the
  image's alt), in the edition's language (locales/<language>/alt_text.po, English when
  a text has no translation); the images a cell's widget draws get the same description
  (book/_static/web.js). The diagrams' alt text, SVG titles and descriptions and the
  intro's map, stored in English in the outputs, are translated through the same
  catalogue.
- **The theme's words** (header buttons, menus, landmarks, the search field, the footer)
  in the edition's language, from locales/<language>/theme.po (`translate_chrome`).
- **Names that match what is shown** (axe-core's label-content-name-mismatch): MyST-NB's
  "Toggle hidden content" label on a folded cell's summary is dropped, so the summary is
  named by its visible words ("Show code cell source"); the bibliography's entries are
  list items (``doc-biblioentry`` is a deprecated role, not allowed inside a list).
- **Lighter pages**: Font Awesome's 1.5-MB script is not loaded (the theme's web fonts
  draw the icons; templates/layout.html); the widgets are loaded when the reader comes
  near one (`widgets_on_demand`, book/_static/widgets.js: the widget scripts, require.js
  and the ipywidgets embedder, 3.6 MB, and the widgets' saved state leave the page), and
  require.js is told where the embedder's files are (book/_static/widget-paths.js: its
  fonts were asked for at chapters/@jupyter-widgets/..., 404); a figure is fetched when
  it comes near the screen (``loading="lazy"``); the search index is no longer loaded by
  every page (this book's search opens the search page, which loads it;
  templates/layout.html); in the Chinese edition the translator of chapter 12b is loaded
  from the English edition's folder, one copy of its model and runtime for both
  (scripts/build_book.py leaves the second copy out), and so are MathJax and the widget
  scripts, from the root's vendor/ folder (`shared_vendor`).
- **MathJax**: formulas are not Tab stops (``inTabOrder: false``), the menu stays on
  right click.
- book/_static/web.css and web.js on every page: sidebars that open below 992 px (the
  theme bug pydata-sphinx-theme #2451, see web.js), pages that fit a 320-px screen, a
  visible focus ring.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import yaml
from babel.messages.pofile import read_po
from docutils import nodes

from booktools.install_cell import NOTE_TITLE

TEMPLATES = Path(__file__).with_name("templates")
WIDGET_SCRIPTS = ("require.js", "embed-amd.js")
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW_TAG = '<script type="application/vnd.jupyter.widget-view+json">'


# ---- the run note --------------------------------------------------------------------
class run_note(nodes.General, nodes.Element):
    """The "Running this chapter" note as a <details>: `summary` holds the title and
    glued values."""


def _visit_run_note(self: Any, node: run_note) -> None:
    self.body.append(
        '<details class="admonition tip run-note">\n<summary class="admonition-title">'
    )
    self.body.append(node["summary_html"])
    self.body.append("</summary>\n")


def _depart_run_note(self: Any, node: run_note) -> None:
    self.body.append("</details>\n")


def _visit_plain(self: Any, node: Any) -> None:
    pass


def note_titles(srcdir: str, language: str | None) -> set[str]:
    """The run note's title in English and in `language` (the term map's
    `note: title`)."""
    titles = {NOTE_TITLE}
    path = Path(srcdir) / "locales" / (language or "en") / "terms.yaml"
    if language and path.exists():
        note = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get(
            "note"
        ) or {}
        if note.get("title"):
            titles.add(str(note["title"]))
    return titles


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fold_run_note(doctree: nodes.document, titles: set[str]) -> bool:
    """Replace the first admonition titled one of `titles` by a `run_note` node; False
    if none."""
    for admonition in doctree.findall(nodes.admonition):
        title = next(iter(admonition.findall(nodes.title)), None)
        if title is None or title.astext().strip() not in titles:
            continue
        glued = [
            n.astext()
            for n in admonition.findall(nodes.inline)
            if "pasted-text" in n["classes"]
        ]
        parts = [
            f'<span class="run-note-title">{_escape(title.astext().strip())}</span>'
        ]
        # the run's time, and the machine's name without its details in brackets (they
        # are below)
        shown = glued[:1] + [
            re.split(r"\s*[(（]", g, maxsplit=1)[0] for g in glued[1:2]
        ]
        parts += [
            f'<span class="run-note-value">{_escape(g)}</span>' for g in shown if g
        ]
        note = run_note(
            summary_html=" · ".join(parts)
            + '<span class="run-note-more" aria-hidden="true"></span>'
        )
        note += [child for child in admonition.children if child is not title]
        admonition.replace_self(note)
        return True
    return False


# ---- alt text ------------------------------------------------------------------------
def cell_description(cell: nodes.Element) -> str | None:
    """The description a code cell gives the figure it draws: its metadata's
    ``mystnb.image.alt``."""
    meta = cell.get("cell_metadata") or {}
    alt = ((meta.get("mystnb") or {}).get("image") or {}).get("alt")
    return (str(alt).strip() or None) if alt else None


def alt_catalogue(
    srcdir: str, language: str | None, name: str = "alt_text"
) -> dict[str, str]:
    """{English text: its translation} from locales/<language>/<name>.po (alt_text.po,
    theme.po)."""
    path = Path(srcdir) / "locales" / (language or "en") / f"{name}.po"
    if not language or language == "en" or not path.exists():
        return {}
    with path.open("rb") as f:
        return {
            str(m.id): str(m.string)
            for m in read_po(f)
            if m.id and m.string and not m.fuzzy
        }


def describe_outputs(doctree: nodes.document, catalogue: dict[str, str]) -> int:
    """Each figure a code cell draws described by its cell (`cell_description`), in the
    edition's language: the cell's images (MyST-NB wrote the English as their alt) and
    the images of its widgets (their view gets ``data-alt``, which book/_static/web.js
    gives the images the widget draws). How many outputs it described."""
    described = 0
    for cell in doctree.findall(nodes.container):
        if "cell" not in cell["classes"] or not (alt := cell_description(cell)):
            continue
        words = catalogue.get(alt, alt)
        for image in cell.findall(nodes.image):
            if image.get("alt") in (None, "", alt):
                image["alt"] = words
                described += 1
        for raw in list(cell.findall(nodes.raw)):
            text = raw.astext()
            if WIDGET_VIEW_TAG in text and "data-alt=" not in text:
                tag = WIDGET_VIEW_TAG[:-1] + f' data-alt="{html.escape(words)}">'
                raw.replace(raw[0], nodes.Text(text.replace(WIDGET_VIEW_TAG, tag, 1)))
                described += 1
    return described


_LINK_LABEL = re.compile(r'(<a\b[^>]*?)\s+aria-label="[^"]*"([^>]*>\s*<title>)')
_DESCRIPTIONS = re.compile(
    r'(?P<attr>\b(?:alt|aria-label)=")(?P<a>[^"]*)"'
    r"|(?P<open><(?P<tag>title|desc)\b[^>]*>)(?P<t>[^<]*)(?P<close></(?P=tag)>)"
)


def translate_descriptions(page: str, catalogue: dict[str, str]) -> str:
    """`page` with each alt, aria-label, SVG <title> and <desc> that the catalogue
    translates (the diagrams' descriptions and the intro's map, stored in the chapters'
    outputs in English) in the edition's language."""
    escape, unescape = html.escape, html.unescape

    def one(m: re.Match) -> str:
        text = m.group("a") if m.group("attr") else m.group("t")
        words = catalogue.get(unescape(text))
        if words is None:
            return m.group(0)
        if m.group("attr"):
            return f'{m.group("attr")}{escape(words)}"'
        return f"{m.group('open')}{escape(words, quote=False)}{m.group('close')}"

    return _DESCRIPTIONS.sub(one, page)


_FOLD_PROMPT = re.compile(
    r'(?P<open><p class="(?:collapsed|expanded)'
    r' admonition-title">)(?P<t>[^<]+)(?P<close></p>)'
)
_CHROME_ATTRIBUTE = re.compile(
    r'(?P<open>\b(?:title|aria-label|data-bs-title|placeholder|alt)=")(?P<a>[^"]*)"'
)
_CHROME_TEXT = re.compile(r">(?P<pre>\s*)(?P<t>[^<>]*?[^<>\s])(?P<post>\s*)<")
_ARTICLE = re.compile(
    r"<article\b.*?</article>|<script\b.*?</script>|<style\b.*?</style>", re.S
)


def translate_chrome(page: str, catalogue: dict[str, str]) -> str:
    """A rendered page whose theme words are in the edition's language
    (locales/<language>/theme.po): every title, aria-label, data-bs-title, placeholder
    and alt the catalogue has (the header's buttons, the sidebars' names, "Link to this
    heading"), a folded cell's summary ("Show code cell source"), and outside the
    article, scripts and styles, every text the catalogue has (a menu's items, the
    footer). The words come from the themes' templates, some written there in English
    (the sidebar toggles, ``<nav aria-label="Page">``), some through catalogues without
    Chinese for them ("Launch on", "Color mode")."""

    def attribute(m: re.Match) -> str:
        words = catalogue.get(html.unescape(m.group("a")))
        return (
            m.group(0) if words is None else f'{m.group("open")}{html.escape(words)}"'
        )

    def text(m: re.Match) -> str:
        words = catalogue.get(html.unescape(m.group("t")))
        return (
            m.group(0)
            if words is None
            else f">{m.group('pre')}{html.escape(words, quote=False)}{m.group('post')}<"
        )

    page = _CHROME_ATTRIBUTE.sub(attribute, page)
    # in the article, the words MyST-NB writes on a folded cell ("Show code cell
    # source")
    page = _FOLD_PROMPT.sub(
        lambda m: (
            m.group(0)
            if m.group("t").strip() not in catalogue
            else (
                f"{m.group('open')}"
                f"{html.escape(catalogue[m.group('t').strip()], quote=False)}"
                f"{m.group('close')}"
            )
        ),
        page,
    )
    parts, last = [], 0
    for kept in _ARTICLE.finditer(page):
        parts += [_CHROME_TEXT.sub(text, page[last : kept.start()]), kept.group(0)]
        last = kept.end()
    return "".join(parts) + _CHROME_TEXT.sub(text, page[last:])


def _doctree_resolved(app: Any, doctree: nodes.document, docname: str) -> None:
    language = app.config.language or "en"
    if not hasattr(app, "_web_alt"):
        app._web_alt = alt_catalogue(app.srcdir, language)
        app._web_note_titles = note_titles(app.srcdir, language)
    describe_outputs(doctree, app._web_alt)
    if app.builder.name in ("html", "dirhtml"):
        fold_run_note(doctree, app._web_note_titles)


# ---- the page around the text --------------------------------------------------------
_IMG = re.compile(r"<img\b(?![^>]*\bloading=)")


def widgets_on_demand(
    app: Any, pagename: str, context: dict, scripts: list, states: list[str]
) -> list:
    """The page's widgets loaded when the reader comes near one: the widget scripts
    (require.js and the embedder, 3.6 MB, 0.9 MB compressed) and the widgets' saved
    state (up to 0.4 MB compressed, written beside the page as <page>.widget-state.json)
    leave the page, and book/_static/widgets.js fetches them when a widget is about to
    scroll into view (or the page is printed). `scripts` is the page's script list;
    returns it without the widget scripts and with widgets.js."""
    merged: dict[str, Any] = {}
    for state in states:
        data = json.loads(state)
        merged = {**data, "state": {**merged.get("state", {}), **data.get("state", {})}}
    out = Path(app.outdir) / f"{pagename}.widget-state.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(merged, separators=(",", ":")), encoding="utf-8")
    kept, load = [], []
    for script in scripts:
        name = str(getattr(script, "filename", script) or "").split("?")[0]
        if name.endswith(WIDGET_SCRIPTS):
            attributes = {
                k: v
                for k, v in getattr(script, "attributes", {}).items()
                if k not in ("priority", "defer")
            }
            # where the embedder's files are (its fonts: widget-paths.js)
            if name.endswith("embed-amd.js"):
                load.append(
                    {
                        "src": context["pathto"]("_static/widget-paths.js", 1),
                        "attributes": {
                            "data-dist": context["pathto"](name.rsplit("/", 1)[0], 1)
                        },
                    }
                )
            load.append({"src": context["pathto"](name, 1), "attributes": attributes})
        else:
            kept.append(script)
    if load:
        kept.append(
            type(scripts[0])(
                "_static/widgets.js",
                defer="defer",
                **{
                    "data-state": Path(pagename).name + ".widget-state.json",
                    "data-scripts": json.dumps(load, separators=(",", ":")),
                },
            )
        )
    return kept


# MathJax, require.js, the widget embedder: html_extra_path's book/_vendor
VENDOR = "_static/../vendor/"
_VENDOR_CHECKSUM = re.compile(r'(\bsrc="[^"?]*/vendor/[^"?]*)\?v=[0-9a-f]+"')


def shared_vendor(scripts: list, folder: str) -> list:
    """`scripts` with the vendored ones (MathJax, the widget scripts) read from the site
    root's vendor/ folder instead of the edition's own, for an edition in `folder` (zh):
    one copy for both editions, which a reader who switches language does not download
    again (scripts/build_book.py leaves the edition's copy out)."""
    up = "../" * (folder.count("/") + 1)
    return [
        (
            type(s)(
                VENDOR.replace("vendor/", up + "vendor/")
                + str(s.filename)[len(VENDOR) :],
                priority=s.priority,
                **s.attributes,
            )
            if str(getattr(s, "filename", "") or "").startswith(VENDOR)
            else s
        )
        for s in scripts
    ]


def _page(
    app: Any, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    folder = (app.config.language_editions or {}).get(app.config.language or "en", "")
    scripts = context.get("script_files") or []
    if folder and app.builder.name in ("html", "dirhtml"):
        scripts = context["script_files"] = shared_vendor(scripts, folder)
    states = [
        getattr(s, "attributes", {}).get("body", "")
        for s in scripts
        if getattr(s, "attributes", {}).get("type") == WIDGET_STATE
    ]
    scripts = [
        s for s in scripts if getattr(s, "attributes", {}).get("type") != WIDGET_STATE
    ]
    web = app.builder.name in ("html", "dirhtml")
    if states and web:
        context["script_files"] = widgets_on_demand(
            app, pagename, context, scripts, states
        )
    # another builder: the widget scripts deferred, the state at the end of the page
    elif scripts:
        kept = []
        for script in scripts:
            if (
                str(getattr(script, "filename", script) or "")
                .split("?")[0]
                .endswith(WIDGET_SCRIPTS)
            ):
                script.attributes["defer"] = "defer"
                if str(script.filename).split("?")[0].endswith("embed-amd.js"):
                    kept.append(type(script)("_static/widget-paths.js", defer="defer"))
            kept.append(script)
        context["script_files"] = kept
    body = context.get("body", "")
    body = body.replace('<summary aria-label="Toggle hidden content">', "<summary>")
    body = body.replace('role="doc-biblioentry"', 'role="listitem"')
    # a diagram's link (the intro's map) is named by its <title>, not by an aria-label
    # that differs from the words drawn on it (axe-core: label-content-name-mismatch)
    body = _LINK_LABEL.sub(r"\1\2", body)
    # the Chinese edition: chapter 12b's translator from the English edition's folder
    if folder:
        up = "../" * pagename.count("/")
        body = body.replace(
            f'"{up}_static/translator/',
            f'"{up}{"../" * (folder.count("/") + 1)}_static/translator/',
        )
    if getattr(app, "_web_alt", None):
        body = translate_descriptions(body, app._web_alt)
    if web:  # a figure below the first screen is fetched when the reader comes near it
        body = _IMG.sub('<img loading="lazy"', body)
    if states and not web:
        body += "".join(
            f'\n<script type="{WIDGET_STATE}">{state}</script>' for state in states
        )
    context["body"] = body


def _builder_inited(app: Any) -> None:
    """Every page the builder renders, finished: the theme's words in the edition's
    language (`translate_chrome` with locales/<language>/theme.po), and the vendored
    scripts without Sphinx's checksum (``?v=``), which differs between editions (the
    Chinese edition's pages cannot see the root's files when it is built), so that both
    editions ask for the same address and one copy serves both."""
    catalogue = alt_catalogue(app.srcdir, app.config.language, "theme")
    templates = getattr(app.builder, "templates", None)
    if (
        app.builder.name not in ("html", "dirhtml")
        or templates is None
        or not hasattr(templates, "render")
    ):
        return
    render = templates.render

    def render_finished(template: str, context: dict) -> str:
        page = _VENDOR_CHECKSUM.sub(r'\1"', render(template, context))
        return translate_chrome(page, catalogue) if catalogue else page

    templates.render = render_finished


def _config(app: Any, config: Any) -> None:
    config.templates_path = [str(TEMPLATES), *config.templates_path]
    mathjax = dict(config.mathjax3_config or {})
    options = dict(mathjax.get("options") or {})
    menu = dict(options.get("menuOptions") or {})
    menu["settings"] = {**(menu.get("settings") or {}), "inTabOrder": False}
    options["menuOptions"] = menu
    mathjax["options"] = options
    config.mathjax3_config = mathjax


def setup(app: Any) -> dict[str, Any]:
    app.add_node(
        run_note,
        html=(_visit_run_note, _depart_run_note),
        latex=(_visit_plain, _visit_plain),
        text=(_visit_plain, _visit_plain),
    )
    app.connect("config-inited", _config, priority=900)
    app.connect("builder-inited", _builder_inited)
    app.connect("doctree-resolved", _doctree_resolved, priority=600)
    app.connect("html-page-context", _page, priority=950)
    app.add_css_file("web.css")
    app.add_js_file("web.js", defer="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
