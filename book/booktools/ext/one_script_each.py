"""Sphinx extension: every script a page loads is loaded once.

Jupyter Book 1 sets up sphinx-thebe, which adds its inline configuration
(`const THEBE_JS_URL = ...`) at every `env-before-read-docs`; in this build that happens
twice, so every page declared the constant twice and the browser reported a SyntaxError
("Identifier 'THEBE_JS_URL' has already been declared"). This drops the second copy of
any script (same file, same inline body) from the page, keeping the first and the order
of the rest."""

from __future__ import annotations

from typing import Any


def _key(script: Any) -> tuple[str, str]:
    filename = getattr(script, "filename", script) or ""  # an inline script has None
    body = getattr(script, "attributes", {}).get("body", "")
    return str(filename), body


def _once(
    app: Any, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple[str, str]] = set()
    kept = []
    for script in scripts:
        key = _key(script)
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", _once, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
