"""Every number the prose glues exists in its chapter's stored outputs.

The book build (`jupyter-book build -W`) fails on a `{glue}` reference whose key no code
cell glued, but only after every chapter has been executed and the whole book rendered.
This test reads the stored outputs directly and names the chapter, the missing key and
its nearest spelling in seconds, so a typo never reaches the build. Keys glued from
another document (`path::key`) are looked up in that document.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import nbformat
import pytest

from booktools import myst

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
_RECORD = "application/papermill.record/"


def glued_keys(nb) -> set[str]:
    """The keys a notebook's stored outputs carry (MyST-NB's `glue` writes scrapbook
    metadata)."""
    return {
        o.metadata["scrapbook"]["name"]
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if "scrapbook" in o.get("metadata", {})
    }


def glued_values(nb) -> dict[str, str]:
    """Each glued key of a notebook's stored outputs with its text as the prose shows it
    (quotes removed)."""
    values = {}
    for c in nb.cells:
        for o in c.get("outputs", []) if c.cell_type == "code" else []:
            book = o.get("metadata", {}).get("scrapbook")
            text = book and o.get("data", {}).get(book["mime_prefix"] + "text/plain")
            if text is not None:
                values[book["name"]] = (
                    text[1:-1] if text[:1] == text[-1:] and text[:1] in "'\"" else text
                )
    return values


def referenced_keys(nb) -> list[str]:
    """Every key the markdown cells ask for, as MyST reads them (booktools.myst): the
    roles {glue}`key`, {glue:text}`key:fmt` and the directives
    ```{glue:figure} key, also inside other directives' bodies (a `path::key` kept
    whole)."""
    refs: list[str] = []
    for c in nb.cells:
        if c.cell_type == "markdown":
            refs += [
                r.content.split(" ")[0]
                for r in myst.nested_roles(c.source)
                if r.name.split(":")[0] == "glue"
            ]
            refs += [
                d.argument.split()[0]
                for d in myst.nested_directives(c.source)
                if d.name.split(":")[0] == "glue"
            ]
    return refs


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_glue_reference_has_its_key(path):
    nb = nbformat.read(path, as_version=4)
    own = glued_keys(nb)
    missing = []
    for ref in referenced_keys(nb):
        if "::" in ref:
            doc, key = ref.split("::", 1)
            other = (ROOT / doc).with_suffix(".ipynb")
            if not other.exists() or key not in glued_keys(
                nbformat.read(other, as_version=4)
            ):
                missing.append(ref)
        elif ref not in own:
            near = difflib.get_close_matches(ref, own, n=1)
            missing.append(ref + (f" (glued: {near[0]!r}?)" if near else ""))
    assert not missing, f"{path.name}: glue references with no glued key: {missing}"


def test_the_reader_finds_a_missing_key():
    """The check is not vacuous: a reference to an unglued key is found, a glued one is
    not."""
    nb = nbformat.v4.new_notebook()
    out = nbformat.v4.new_output(
        "display_data",
        data={_RECORD + "text/plain": "'3'"},
        metadata={"scrapbook": {"name": "steps", "mime_prefix": _RECORD}},
    )
    code = nbformat.v4.new_code_cell("glue('steps', '3')")
    code.outputs = [out]
    nb.cells = [
        code,
        nbformat.v4.new_markdown_cell(
            "{glue:text}`steps` of {glue:text}`stepz` and\n```{glue:figure} fig\n```"
        ),
    ]
    assert glued_keys(nb) == {"steps"}
    assert referenced_keys(nb) == ["steps", "stepz", "fig"]
