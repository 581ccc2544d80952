"""The chapters' figures do not depend on the caller's environment.

With ``MPLBACKEND=Agg`` exported (common on servers and CI images) a Jupyter kernel
would show no figure at all and strict nbval would fail on every figure cell.
``conftest.py`` (repository root) and ``scripts/execute.py`` force the kernel's inline
backend. These tests run a figure cell with ``MPLBACKEND=Agg`` exported, once through
scripts/execute.py and once through strict nbval, and check that the figure is
displayed; the control run without the root conftest shows that the check can fail.
"""

import os
import subprocess
import sys
import tempfile

import nbformat
import pytest

from conftest import ROOT

FIGURE_CELL = (
    "import matplotlib.pyplot as plt\n"
    "fig, ax = plt.subplots(figsize=(2, 2))\n"
    "ax.plot([0, 1], [0, 1])\n"
    "plt.show()"
)


def _env_with_agg():
    env = dict(os.environ)
    env["MPLBACKEND"] = "Agg"
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _execute(path):
    """scripts/execute.py in a fresh process whose environment says MPLBACKEND=Agg."""
    code = (
        "from pathlib import Path; from booktools import execute;"
        f"execute.execute(Path({str(path)!r}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=_env_with_agg(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.fixture(scope="module")
def figure_notebook():
    # Under tests/ so that a pytest run on it loads the repository's conftest.py files.
    with tempfile.TemporaryDirectory(dir=ROOT / "tests", prefix="_mpl_check_") as tmp:
        path = os.path.join(tmp, "figure.ipynb")
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(FIGURE_CELL)]
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nbformat.write(nb, path)
        _execute(path)
        yield path


def test_execute_displays_figures_under_agg(figure_notebook):
    outputs = nbformat.read(figure_notebook, as_version=4).cells[0].outputs
    kinds = [o.output_type for o in outputs]
    assert any("image/png" in o.get("data", {}) for o in outputs), (
        f"no figure displayed: {kinds}"
    )
    assert any(
        "Figure size" in o.get("data", {}).get("text/plain", "") for o in outputs
    )


def _nbval(path, *extra):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            path,
            "--nbval",
            "--nbval-current-env",
            "-p",
            "no:cacheprovider",
            "-q",
            "--rootdir",
            str(ROOT),
            *extra,
        ],
        cwd=ROOT,
        env=_env_with_agg(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_strict_nbval_sees_figures_under_agg(figure_notebook):
    proc = _nbval(figure_notebook)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "1 passed" in proc.stdout


def test_without_the_root_conftest_the_figure_is_missing(figure_notebook):
    """Control: the same run without the conftest files fails, so the check above can
    fail."""
    proc = _nbval(figure_notebook, "--noconftest")
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "1 failed" in proc.stdout
