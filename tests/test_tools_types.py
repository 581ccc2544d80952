"""mypy on the book's tools (book/booktools), the command lines (scripts/) and the
benchmarks reports no error; and it really reads booktools, so the check cannot be
switched off unseen.

booktools is an editable install, which mypy does not follow: pyproject.toml's
[tool.mypy] names the folder (mypy_path = "book"). Without it, every
`from booktools import ...` would be Any under `ignore_missing_imports`, and the
scripts' calls into the tools would go unchecked while mypy still reported nothing."""

import collections
import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

CHECKED = ["book/booktools", "scripts", "benchmarks"]


def _mypy(
    paths: list[str], cache: Path = ROOT / ".mypy_cache"
) -> tuple[collections.Counter, str]:
    """mypy as the project runs it (the repository's pyproject.toml): errors per file,
    and its report."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-error-summary",
            "--cache-dir",
            str(cache),
            *paths,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    # mypy itself failed (a bad option)
    assert "error: " not in proc.stderr, proc.stderr
    errors = [ln for ln in proc.stdout.splitlines() if ": error:" in ln]
    return collections.Counter(ln.split(":", 1)[0] for ln in errors), proc.stdout


def test_mypy_reports_no_error_in_the_tools():
    """Every file of the tools, scripts and benchmarks type-checks, and every annotated
    body is checked."""
    counts, report = _mypy(CHECKED)
    assert not counts, f"mypy errors per file: {dict(counts)}\n{report}"
    assert "annotation-unchecked" not in report, report


def test_mypy_reads_booktools(tmp_path: Path):
    """A booktools function has its real type, not Any, and a wrong call to it is an
    error."""
    user = tmp_path / "user.py"
    user.write_text(
        "from booktools.nbpercent import py_to_cells\n"
        "reveal_type(py_to_cells)\n"
        "py_to_cells(3)\n"
    )
    # a cache of its own: mypy's cache keeps a module's errors under the path it had
    # then (user.py in an earlier tmp_path), and the repository's cache has no business
    # holding this file
    counts, report = _mypy([str(user)], tmp_path / ".mypy_cache")
    assert re.search(
        r'Revealed type is "def \(text: (builtins\.)?str\) -> (builtins\.)?list\[',
        report,
    ), report
    assert (
        'Argument 1 to "py_to_cells" has incompatible type "int"; expected "str"'
        in report
    ), report
    assert counts == {str(user): 1}, report
