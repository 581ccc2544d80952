"""`make test` runs the suite in two processes (pytest-xdist); conftest.py's `work_unit`
says what must run whole, in order, on one of them. These tests hold it to what the
files do: a chapter that reads what another chapter writes is in that chapter's unit,
every test file that builds or reads the built book (_build/html, _build/pdf) is in the
book's unit, and each unit keeps its tests in order."""

import ast
import importlib.util
import json
import re

import pytest

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
root_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(root_conftest)
work_unit = root_conftest.work_unit
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9]*.ipynb"))


def _declared(nb) -> tuple[set[str], set[str]]:
    """(what a chapter declares it writes, what it declares it reads): its staleness
    metadata."""
    book = json.loads(nb.read_text(encoding="utf-8"))["metadata"].get("book", {})
    return set(book.get("writes", [])) | set(book.get("wrote", [])), set(
        book.get("reads", [])
    )


def test_a_chapter_that_reads_what_another_writes_runs_in_its_unit():
    writers = {path: nb for nb in CHAPTERS for path in _declared(nb)[0]}
    pairs = [
        (writers[path], nb)
        for nb in CHAPTERS
        for path in _declared(nb)[1]
        if path in writers
    ]
    assert pairs, (
        "no chapter declares reading what another writes: the check would be empty"
    )
    for writer, reader in pairs:
        assert work_unit(f"chapters/{writer.name}::Cell 0") == work_unit(
            f"chapters/{reader.name}::Cell 0"
        ), (
            f"{reader.name} reads what {writer.name} writes: put them in one unit"
            " (conftest.TRAINING_CHAPTERS)"
        )


def test_chapters_that_use_runs_folder_share_a_unit():
    """A chapter whose code names the runs/ folder (a tokenizer or a run another chapter
    left there) runs in the training unit, in order."""
    for nb in CHAPTERS:
        code = "\n".join(
            "".join(c["source"])
            for c in json.loads(nb.read_text(encoding="utf-8"))["cells"]
            if c["cell_type"] == "code"
        )
        if re.search(r"""["'/]runs["'/]|multi30k_bpe|chapter_cpu""", code):
            assert work_unit(f"chapters/{nb.name}::Cell 0") == "training-chapters", (
                nb.name
            )


def _path_parts(node) -> list[str]:
    """The string parts of a path written `a / "b" / "c"` (left to right)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _path_parts(node.left) + _path_parts(node.right)
    return (
        [node.value]
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        else []
    )


def _names_built_book(path) -> bool:
    """Whether a test file builds the book or reads what a build wrote: a path through
    _build/html or _build/pdf, the scripts that build them
    (`ROOT / "scripts" / "build_book.py"`), or a name imported from the tests that
    do."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module in (
            "test_book",
            "test_web",
            "test_pdf",
        ):
            # the built book's folders, imported
            return True
        parts = _path_parts(node) if isinstance(node, ast.BinOp) else []
        if any(
            a == "_build" and b in ("html", "pdf", "pdf-pages")
            for a, b in zip(parts, parts[1:])
        ):
            return True
        if {"build_book.py", "make_pdf.py"} & set(parts):
            return True
    return False


def test_every_test_of_the_built_book_runs_in_the_books_unit():
    found = [
        p.name
        for p in sorted((ROOT / "tests").glob("test_*.py"))
        if _names_built_book(p)
    ]
    assert "test_book.py" in found and "test_pdf.py" in found, found
    for name in found:
        assert work_unit(f"tests/{name}::test") == "the-built-book", (
            f"{name} builds or reads the built book: add it to conftest.BOOK_TESTS"
        )


@pytest.mark.parametrize(
    "nodeid, unit",
    [
        ("chapters/11b_training.ipynb::Cell 3", "training-chapters"),
        ("chapters/12b_in_the_browser.ipynb::Cell 0", "training-chapters"),
        ("chapters/01_qkv_attention.ipynb::Cell 7", "chapters/01_qkv_attention.ipynb"),
        ("tests/test_web.py::test_no_request_fails", "the-built-book"),
        ("tests/test_api.py::test_x[a::b]", "tests/test_api.py"),
    ],
)
def test_work_units(nodeid, unit):
    assert work_unit(nodeid) == unit


def test_the_long_units_are_collected_first(request):
    """The training chapters and the book's tests come first in the collection (xdist
    hands units out in that order), each unit's tests kept in their order."""
    items = request.session.items
    units = [work_unit(item.nodeid) for item in items]
    first_other = next(
        (i for i, u in enumerate(units) if u not in root_conftest.FIRST), len(units)
    )
    assert all(u not in root_conftest.FIRST for u in units[first_other:])


def test_the_makefile_runs_the_training_unit_alone_after_the_rest():
    """`make test` leaves the training chapters out of the two-process run and runs them
    after it, alone: the Makefile's list is exactly the training unit's chapters, in the
    book's order."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    listed = (
        re.search(r"^TRAINING_NB := ((?:.*\\\n)*.*)$", makefile, re.M)
        .group(1)
        .replace("\\\n", " ")
        .split()
    )
    unit = [
        f"chapters/{nb.name}"
        for nb in CHAPTERS
        if work_unit(f"chapters/{nb.name}::Cell 0") == "training-chapters"
    ]
    assert listed == unit
    assert re.search(
        r"-n \$\(WORKERS\) .*\$\(addprefix --ignore=,\$\(TRAINING_NB\)\)", makefile
    )
    assert re.search(
        r"^\t\$\(PY\) -m pytest \$\(TRAINING_NB\) \$\(NBVAL_ARGS\)", makefile, re.M
    )
