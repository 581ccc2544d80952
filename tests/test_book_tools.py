"""The book's tools (booktools): the one MyST reader, the glue of translated pages, the pinned toolchain.

booktools.myst is how every tool reads the chapters' MyST; these tests hold it to what MyST-Parser
itself reads (a role quoted in code is code, a directive's options are its options). The Chinese
edition's glued values go through MyST-NB's documented cross-document glue; the versions it was
written for are pinned in requirements.txt and checked here, so that an upgrade fails here, by name,
before it fails in the Chinese build.
"""
from __future__ import annotations

import importlib.metadata
import re

import pytest

from booktools import myst
from booktools.ext import translated_glue
from conftest import ROOT

# ------------------------------------------------------------------ the pinned toolchain

TOOLCHAIN = ("sphinx", "myst-nb", "myst-parser", "markdown-it-py", "mdit-py-plugins", "sphinx-book-theme",
             "pydata-sphinx-theme", "sphinx-external-toc", "jupyter-book")


def _pins() -> dict[str, str]:
    text = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    return {m[1].lower(): m[2] for m in re.finditer(r"^([A-Za-z0-9_.-]+)==(\S+)", text, re.M)}


@pytest.mark.parametrize("name", TOOLCHAIN)
def test_the_documentation_toolchain_is_pinned_and_installed_as_pinned(name):
    pins = _pins()
    assert name in pins, f"requirements.txt: pin {name} (==), the version the book builds with"
    assert importlib.metadata.version(name) == pins[name], (
        f"{name} {importlib.metadata.version(name)} is installed, requirements.txt pins {pins[name]}: `make venv`")


def test_translated_glue_runs_on_the_versions_it_was_written_for():
    """The extension relies on Sphinx's i18n naming a translated message's source "...<translated>"
    and on MyST-NB's glue cache; on another version, read both again before changing WRITTEN_FOR."""
    for name, version in translated_glue.WRITTEN_FOR.items():
        assert importlib.metadata.version(name) == version, (
            f"booktools.ext.translated_glue was written for {name} {version}, this is "
            f"{importlib.metadata.version(name)}: check that Sphinx still parses a translated message "
            "from a source ending in '<translated>' and that MyST-NB still resolves "
            "{glue:text}`page.ipynb::key` from its glue cache (make book, the Chinese pages' numbers), "
            "then update WRITTEN_FOR")


def test_a_translated_message_names_its_page_in_each_glued_key():
    message = ("约 {glue:text}`ch01_x:.2f` 秒，{glue:text}`ch01_n`，``{glue:text}`code` `` 不变，"
               "{glue:text}`other.ipynb::k:s` 亦然，{term}`Softmax` 与 $x_{glue}$ 也是。")
    got = translated_glue.with_page(message, "01_qkv_attention.ipynb")
    assert got == ("约 {glue:text}`01_qkv_attention.ipynb::ch01_x:.2f` 秒，{glue:text}`01_qkv_attention.ipynb::ch01_n:s`，"
                   "``{glue:text}`code` `` 不变，{glue:text}`other.ipynb::k:s` 亦然，{term}`Softmax` 与 $x_{glue}$ 也是。")


# ------------------------------------------------------------------ the MyST reader

def test_roles_are_what_myst_reads_as_roles():
    text = "A {term}`query <Query>`, ``{glue:text}`x` `` in code, $\\{a\\}$, {cite:t}`vaswani2017`."
    assert [(p.name, p.content) for p in myst.roles(text)] == [("term", "query <Query>"), ("cite:t", "vaswani2017")]
    assert myst.titled("query <Query>") == ("query", "Query") and myst.titled("Query") == ("Query", "Query")


def test_directives_their_arguments_options_and_bodies():
    text = ("(target)=\n::::{dropdown} Solution — exercise 1\n:class: tip\n:name: sol\n\nBody {term}`x`.\n\n"
            "```python\nprint(1)\n```\n::::\n\n```{glue:figure} fig_key\n:alt: A figure\nIts caption.\n```\n")
    first, second = myst.directives(text)
    assert (first.name, first.argument, first.options) == ("dropdown", "Solution — exercise 1",
                                                           {"class": "tip", "name": "sol"})
    assert first.body == "\nBody {term}`x`.\n\n```python\nprint(1)\n```\n" and first.fence == "::::"
    assert (second.name, second.argument, second.options, second.body) == (
        "glue:figure", "fig_key", {"alt": "A figure"}, "Its caption.\n")
    assert myst.targets(text) == ["target"]
    assert [d.name for d in myst.directives(first.body)] == []          # ```python is code, not a directive


def test_located_pieces_are_where_they_are_written():
    text = "x {glue:text}`a` y ``a `b` c`` z $m$ and\n  {doc}`other <02_scaling>` w"
    found = [(text[s:e], p.kind) for s, e, p in myst.located(text)]
    assert found == [("{glue:text}`a`", "role"), ("``a `b` c``", "code"), ("$m$", "math"),
                     ("{doc}`other <02_scaling>`", "role")]
    assert myst.substitute_roles(text, lambda r: r.name.upper()) == (
        "x GLUE:TEXT y ``a `b` c`` z $m$ and\n  DOC w")


def test_every_chapter_reads_without_surprise():
    """Every role of every chapter is found where it is written (the editions depend on it)."""
    import nbformat
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                for d in [None, *myst.directives(cell.source)]:
                    source = cell.source if d is None else d.body
                    assert all(source[s:e] == p.source for s, e, p in myst.located(source) if p.kind == "role")


def test_no_tool_finds_another_through_sys_path():
    """The book's tools are a package (booktools), the library is installed: nothing in the
    repository edits the import path to find one or the other."""
    import subprocess
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    mark = "sys.path" + ".insert("
    found = [f for f in tracked if f.endswith((".py", ".ipynb", ".md", ".sh", ".yml", ".cfg", ".toml"))
             and mark in (ROOT / f).read_text(encoding="utf-8", errors="replace")]
    assert not found, f"sys.path edited in: {found}"
