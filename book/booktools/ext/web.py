"""Sphinx extension: the web book for every reader (phones, keyboards, screen readers, slow links).

What it changes, at build time, in both editions (the chapters and their stored outputs stay as
they are):

- **The "Running this chapter" note** (the admonition under every chapter's title,
  booktools.install_cell) becomes one line that opens: a ``<details>`` whose summary shows the
  title, the run's time and the machine (the note's first two glued values) and folds the rest.
  HTML pages only: the one-page build that `make pdf` prints keeps the note open.
- **Alt text**: a Matplotlib output's ``alt`` is its figure's title(s), read from the code cell that
  drew it (``set_title``, ``suptitle``, ``title=``), in the edition's language
  (locales/<language>/alt_text.po, English when a text has no translation), instead of the image's
  file path.
- **Names that match what is shown** (axe-core's label-content-name-mismatch): MyST-NB's "Toggle
  hidden content" label on a folded cell's summary is dropped, so the summary is named by its
  visible words ("Show code cell source"); the bibliography's entries are list items
  (``doc-biblioentry`` is a deprecated role, not allowed inside a list).
- **Lighter pages**: Font Awesome's 1.5-MB script is not loaded (the theme's web fonts draw the
  icons; templates/layout.html); the widget scripts (require.js and the ipywidgets embedder, 3.6 MB) are
  deferred and the widgets' saved state moves from ``<head>`` to the end of the page, so the text
  paints first, and require.js is told where the embedder's files are (book/_static/widget-paths.js:
  its fonts were asked for at chapters/@jupyter-widgets/..., 404); the search index is no longer
  loaded by every page (this book's search opens the search page, which loads it; book/booktools/ext/templates/layout.html); in the Chinese edition
  the translator of chapter 12b is loaded from the English edition's folder, one copy of its model
  and runtime for both (scripts/build_book.py leaves the second copy out).
- **MathJax**: formulas are not Tab stops (``inTabOrder: false``), the menu stays on right click.
- book/_static/web.css and web.js on every page: sidebars that open below 992 px (the theme bug
  pydata-sphinx-theme #2451, see web.js), pages that fit a 320-px screen, a visible focus ring.
"""
from __future__ import annotations

import ast
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
FIGURE = {"en": "Figure: {}", "zh_CN": "图：{}"}
PANELS = {"en": " / ", "zh_CN": " / "}


# ---- the run note ------------------------------------------------------------------------------
class run_note(nodes.General, nodes.Element):
    """The "Running this chapter" note as a <details>: `summary` holds the title and glued values."""


def _visit_run_note(self: Any, node: run_note) -> None:
    self.body.append('<details class="admonition tip run-note">\n<summary class="admonition-title">')
    self.body.append(node["summary_html"])
    self.body.append("</summary>\n")


def _depart_run_note(self: Any, node: run_note) -> None:
    self.body.append("</details>\n")


def _visit_plain(self: Any, node: Any) -> None:
    pass


def note_titles(srcdir: str, language: str | None) -> set[str]:
    """The run note's title in English and in `language` (the term map's `note: title`)."""
    titles = {NOTE_TITLE}
    path = Path(srcdir) / "locales" / (language or "en") / "terms.yaml"
    if language and path.exists():
        note = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("note") or {}
        if note.get("title"):
            titles.add(str(note["title"]))
    return titles


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fold_run_note(doctree: nodes.document, titles: set[str]) -> bool:
    """Replace the first admonition titled one of `titles` by a `run_note` node; False if none."""
    for admonition in doctree.findall(nodes.admonition):
        title = next(iter(admonition.findall(nodes.title)), None)
        if title is None or title.astext().strip() not in titles:
            continue
        glued = [n.astext() for n in admonition.findall(nodes.inline) if "pasted-text" in n["classes"]]
        parts = [f'<span class="run-note-title">{_escape(title.astext().strip())}</span>']
        # the run's time, and the machine's name without its details in brackets (they are below)
        shown = glued[:1] + [re.split(r"\s*[(（]", g, maxsplit=1)[0] for g in glued[1:2]]
        parts += [f'<span class="run-note-value">{_escape(g)}</span>' for g in shown if g]
        note = run_note(summary_html=" · ".join(parts) + '<span class="run-note-more" aria-hidden="true"></span>')
        note += [child for child in admonition.children if child is not title]
        admonition.replace_self(note)
        return True
    return False


# ---- alt text ------------------------------------------------------------------------------------
def _string(node: ast.AST) -> str | None:
    """A string literal's text; an f-string's with "…" for each value it formats."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "…" for v in node.values)
    return None


def titles_in(source: str) -> list[str]:
    """The titles a cell's code gives its figure: set_title/suptitle/title(...) and title=..., in order."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return []
    found: list[tuple[int, int, str, bool]] = []
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        candidates = [k.value for k in call.keywords if k.arg == "title"]
        if name in ("set_title", "suptitle", "title") and call.args:
            candidates.insert(0, call.args[0])
        for c in candidates:
            text = _string(c)
            if text and text.strip():
                found.append((c.lineno, c.col_offset, text, name == "suptitle"))
    # a figure's own title first (suptitle), then its panels'; a title made in a loop ("head …")
    # says little next to the figure's question, and is left out where there is another one
    found.sort(key=lambda f: (not f[3], f[0], f[1]))
    titles = [readable(t) for _, _, t, _ in found]
    plain = [t for t in titles if "…" not in t]
    return plain or titles


def readable(title: str) -> str:
    """A figure title as words: TeX's dollars and commands gone, lines joined."""
    text = re.sub(r"\\sqrt\{([^}]*)\}", r"√\1", title)
    text = re.sub(r"\\(mathrm|text|operatorname)\{([^}]*)\}", r"\2", text)
    text = text.replace("$", "").replace("\\", "")
    return re.sub(r"\s+", " ", text).strip()


def alt_catalogue(srcdir: str, language: str | None) -> dict[str, str]:
    """{English alt text: its translation} from locales/<language>/alt_text.po."""
    path = Path(srcdir) / "locales" / (language or "en") / "alt_text.po"
    if not language or language == "en" or not path.exists():
        return {}
    with path.open("rb") as f:
        return {str(m.id): str(m.string) for m in read_po(f) if m.id and m.string and not m.fuzzy}


def figure_alt(titles: list[str], language: str, catalogue: dict[str, str]) -> str:
    """The alt text of a figure whose panels have `titles`, in `language` where the catalogue has it."""
    lang = language if language in FIGURE else "en"
    words = [catalogue.get(t, t) for t in titles]
    return FIGURE[lang].format(PANELS[lang].join(words))


def describe_outputs(doctree: nodes.document, language: str, catalogue: dict[str, str]) -> int:
    """Give each output image without alt text its figure's titles as alt; how many it named."""
    named = 0
    for cell in doctree.findall(nodes.container):
        if "cell" not in cell["classes"]:
            continue
        source = "\n".join(b.astext() for b in cell.findall(nodes.literal_block)
                           if any("cell_input" in a["classes"] for a in _ancestors(b, cell)))
        images = [i for i in cell.findall(nodes.image) if not i.get("alt")]
        if not images:
            continue
        titles = titles_in(source)
        for image in images:
            if titles:
                image["alt"] = figure_alt(titles, language, catalogue)
            else:
                image["alt"] = catalogue.get("Figure drawn by the code above", "Figure drawn by the code above")
            named += 1
    return named


_LINK_LABEL = re.compile(r'(<a\b[^>]*?)\s+aria-label="[^"]*"([^>]*>\s*<title>)')
_DESCRIPTIONS = re.compile(r'(?P<attr>\b(?:alt|aria-label)=")(?P<a>[^"]*)"'
                           r'|(?P<open><(?P<tag>title|desc)\b[^>]*>)(?P<t>[^<]*)(?P<close></(?P=tag)>)')


def translate_descriptions(html: str, catalogue: dict[str, str]) -> str:
    """`html` with each alt, aria-label, SVG <title> and <desc> that the catalogue translates
    (the diagrams' descriptions and the intro's map, stored in the chapters' outputs in English)
    in the edition's language."""
    from html import escape, unescape

    def one(m: re.Match) -> str:
        text = m.group("a") if m.group("attr") else m.group("t")
        words = catalogue.get(unescape(text))
        if words is None:
            return m.group(0)
        if m.group("attr"):
            return f'{m.group("attr")}{escape(words)}"'
        return f'{m.group("open")}{escape(words, quote=False)}{m.group("close")}'
    return _DESCRIPTIONS.sub(one, html)


def _ancestors(node: nodes.Node, stop: nodes.Node):
    node = node.parent
    while node is not None and node is not stop:
        yield node
        node = node.parent


def _doctree_resolved(app: Any, doctree: nodes.document, docname: str) -> None:
    language = app.config.language or "en"
    if not hasattr(app, "_web_alt"):
        app._web_alt = alt_catalogue(app.srcdir, language)
        app._web_note_titles = note_titles(app.srcdir, language)
    describe_outputs(doctree, language, app._web_alt)
    if app.builder.name in ("html", "dirhtml"):
        fold_run_note(doctree, app._web_note_titles)


# ---- the page around the text --------------------------------------------------------------------
def _page(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    scripts = context.get("script_files") or []
    kept, states = [], []
    for script in scripts:
        attributes = getattr(script, "attributes", {})
        name = str(getattr(script, "filename", script) or "")
        if attributes.get("type") == WIDGET_STATE:
            states.append(attributes.get("body", ""))
            continue
        if name.split("?")[0].endswith(WIDGET_SCRIPTS):
            attributes["defer"] = "defer"
        if name.split("?")[0].endswith("embed-amd.js"):    # where the embedder's fonts are (widget-paths.js)
            kept.append(type(script)("_static/widget-paths.js", defer="defer"))
        kept.append(script)
    if scripts:
        context["script_files"] = kept
    body = context.get("body", "")
    body = body.replace('<summary aria-label="Toggle hidden content">', "<summary>")
    body = body.replace('role="doc-biblioentry"', 'role="listitem"')
    # a diagram's link (the intro's map) is named by its <title>, not by an aria-label that differs
    # from the words drawn on it (axe-core: label-content-name-mismatch)
    body = _LINK_LABEL.sub(r"\1\2", body)
    folder = (app.config.language_editions or {}).get(app.config.language or "en", "")
    if folder:      # the Chinese edition: chapter 12b's translator from the English edition's folder
        up = "../" * pagename.count("/")
        body = body.replace(f'"{up}_static/translator/', f'"{up}{"../" * (folder.count("/") + 1)}_static/translator/')
    if getattr(app, "_web_alt", None):
        body = translate_descriptions(body, app._web_alt)
    body += "".join(f'\n<script type="{WIDGET_STATE}">{state}</script>' for state in states)
    context["body"] = body


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
    app.add_node(run_note, html=(_visit_run_note, _depart_run_note),
                 latex=(_visit_plain, _visit_plain), text=(_visit_plain, _visit_plain))
    app.connect("config-inited", _config, priority=900)
    app.connect("doctree-resolved", _doctree_resolved, priority=600)
    app.connect("html-page-context", _page, priority=950)
    app.add_css_file("web.css")
    app.add_js_file("web.js", defer="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
