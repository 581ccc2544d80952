"""The book as its users meet it, from outside the repository: each test starts from a
fresh virtual environment in an empty folder, with no checkout on the path.

- *runner*: a Colab-like Python (only the packages Colab ships that the book uses, and
  nbclient); a runner edition copied alone into an empty folder, as Colab opens it,
  whose own first cell fetches the repository at the edition's commit and installs the
  library from it (the address setting, `booktools.site`, pointed at this checkout:
  ``BOOK_REPOSITORY=file://…``). Chapters 1, 5, 8 and 10, in English and in Chinese, run
  top to bottom.
- *importer*: ``pip install`` of the built wheel, without extras and then with
  ``[train]``; the README's example, then ``python -m transformer_lib.train --preset
  tiny --data toy``, from an empty folder.
- *reader*: the README's build command is the one the suite's book build runs
  (tests/test_book.py builds the site the browser tests open; in CI, from a fresh
  clone).

The runner and importer tests install from the network (PyPI) and take minutes: they are
marked `acceptance`, left out of `make test` and run by `make test-slow` (CI runs both).
The runner editions install the code of a commit, so they see what is committed. A
failure says which step of the user's path failed, in the user's words."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT

from booktools import editions as mk
from booktools import myst, site

acceptance = pytest.mark.acceptance

RUNNER_CHAPTERS = ["01_qkv_attention", "05_masking", "08_dropout", "10_decoding"]
# What Colab ships that the book's chapters use (the first cell installs the rest), and
# nbclient
COLAB_PACKAGES = [
    "torch",
    "numpy",
    "matplotlib",
    "ipywidgets",
    "ipykernel",
    "nbclient",
    "tqdm",
    "pyyaml",
]


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^\s;#]+)", line.strip())
        if m:
            pins[m.group(1).lower()] = m.group(2)
    return pins


def _step(what: str, command: list, **kwargs) -> subprocess.CompletedProcess:
    """Run one step of a user's path; a failure names the step and shows what the user
    would see."""
    proc = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, **kwargs
    )
    if proc.returncode != 0:
        pytest.fail(
            f"{what} failed (exit"
            f" {proc.returncode}):\n{(proc.stdout + proc.stderr)[-4000:]}"
        )
    return proc


def _fresh_env() -> dict:
    """The environment of a user's shell: nothing of this checkout or its venv."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("PYTHON", "VIRTUAL_ENV", "BOOK_", "TRANSFORMER_", "JUPYTER", "MPLBACKEND")
        )
    }
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p
    )
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1")
    return env


def _venv(folder: Path, packages: list[str]) -> Path:
    """A fresh venv in `folder` with `packages` at the project's pins; its python."""
    base_python = getattr(sys, "_base_executable", sys.executable)
    _step(
        "creating a virtual environment",
        [base_python, "-m", "venv", folder],
        timeout=300,
    )
    python = folder / "bin" / "python"
    pins = _pins()
    wanted = [f"{p}=={pins[p.lower()]}" if p.lower() in pins else p for p in packages]
    _step(
        f"pip install {' '.join(wanted)}",
        [python, "-m", "pip", "install", "--quiet", *wanted],
        env=_fresh_env(),
        timeout=1800,
    )
    return python


def _no_checkout_on_path(python: Path, cwd: Path) -> None:
    proc = _step(
        "importing in the fresh venv",
        [
            python,
            "-c",
            (
                "import importlib.util as u, sys; "
                "print(u.find_spec('transformer_lib'), u.find_spec('booktools'))"
            ),
        ],
        cwd=cwd,
        env=_fresh_env(),
    )
    assert proc.stdout.strip() == "None None", (
        f"the fresh venv already sees the book: {proc.stdout}"
    )


# --------------------------------------------------------------------------- runner


@pytest.fixture(scope="module")
def colab(tmp_path_factory) -> Path:
    """A Colab-like Python: its packages, none of this book's."""
    folder = tmp_path_factory.mktemp("colab")
    python = _venv(folder / "venv", COLAB_PACKAGES)
    _no_checkout_on_path(python, folder)
    return python


@pytest.fixture(scope="module")
def runner_editions(tmp_path_factory) -> dict[str, Path]:
    """The runner editions of the runner chapters in both languages, made with the
    address setting pointed at this checkout at its HEAD commit (what the workflow does
    with its own repository)."""
    out = tmp_path_factory.mktemp("editions")
    commit = site.ref({})
    # the chapters as committed (the edition of a commit installs that commit's package)
    committed = tmp_path_factory.mktemp("committed")
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "chapters"],
        capture_output=True,
        check=True,
    )
    subprocess.run(
        ["tar", "-x", "-C", str(committed)], input=archive.stdout, check=True
    )
    env = {
        "BOOK_REPOSITORY": ROOT.as_uri(),
        "BOOK_SITE_URL": "https://example.org/book/",
        "BOOK_REF": commit,
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        paths = mk.write_editions(
            [committed / "chapters" / f"{c}.ipynb" for c in RUNNER_CHAPTERS],
            out,
            link_siblings=False,
            log=lambda _: None,
        )
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return {p.name: p for p in paths}


RUN_NOTEBOOK = """
import sys, nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
nb = nbformat.read(sys.argv[1], as_version=4)
try:
    NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": "."}}
    ).execute()
except CellExecutionError as exc:
    failed = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code" and any(
        o.get("output_type") == "error" for o in c.get("outputs", []))), "?")
    print(f"cell {failed} stopped with: {exc.ename}: {exc.evalue}", file=sys.stderr)
    sys.exit(1)
print("ran", sum(c.cell_type == "code" for c in nb.cells), "code cells")
"""


@acceptance
@pytest.mark.parametrize(
    "name", [f"{c}{s}.ipynb" for c in RUNNER_CHAPTERS for s in ("", ".zh")]
)
def test_runner_edition_runs_alone_in_a_colab_like_python(
    name, colab, runner_editions, tmp_path
):
    """As on Colab: the notebook alone in an empty folder; its first cell fetches the
    book at its commit and installs the library; every cell then runs."""
    folder = tmp_path / "content"
    folder.mkdir()
    notebook = folder / name
    shutil.copy2(runner_editions[name], notebook)
    (folder / "run.py").write_text(RUN_NOTEBOOK, encoding="utf-8")
    env = {**_fresh_env(), "MPLBACKEND": "agg"}
    proc = subprocess.run(
        [colab, "run.py", name],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert proc.returncode == 0, (
        f"The runner edition {name}, opened alone as on Colab, did not run "
        f"top to bottom: {proc.stderr.strip()[-3000:]}"
    )
    assert any(
        (d / "chapters" / name.replace(".zh.", ".")).exists()
        for d in folder.iterdir()
        if d.is_dir()
    ), (
        "the first cell did not fetch the book's files (at the edition's commit) beside"
        " the notebook"
    )


def test_runner_edition_without_network_says_so_in_one_sentence(
    runner_editions, tmp_path
):
    """No network: the first cell answers with one sentence, not a traceback from git or
    pip."""
    cell = next(
        c.source
        for c in nbformat.read(
            runner_editions["01_qkv_attention.ipynb"], as_version=4
        ).cells
        if c.cell_type == "code"
    )
    cell = re.sub(
        r'_REPOSITORY, _COMMIT = "[^"]+"',
        '_REPOSITORY, _COMMIT = "https://no-network.invalid/o/r"',
        cell,
    )
    script = tmp_path / "cell.py"
    script.write_text(
        "from IPython.core.interactiveshell import InteractiveShell\n"
        f"InteractiveShell.instance().run_cell({cell!r})\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    shown = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert (
        len(shown) == 1
        and shown[0].startswith("No network:")
        and "run this cell again" in shown[0]
    ), shown


# --------------------------------------------------------------------------- importer


def _readme_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use the library", 1)[1]
    return myst.code_blocks(section, "python")[0]


def _wheel(tmp: Path) -> Path:
    """The library's wheel, built from a copy of its sources (as the workflow builds
    it)."""
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "PYPI.md", "LICENSE", "README.md"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "transformer_lib",
        src / "transformer_lib",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    _step(
        "building the wheel",
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            tmp / "dist",
            src,
        ],
        timeout=600,
    )
    [wheel] = (tmp / "dist").glob("transformer_lib-*.whl")
    return wheel


@acceptance
def test_importer_installs_the_wheel_and_runs_the_readme_then_trains(tmp_path):
    wheel = _wheel(tmp_path)
    python = _venv(tmp_path / "venv", ["torch", "numpy"])
    empty = tmp_path / "empty"
    empty.mkdir()
    env = _fresh_env()
    _no_checkout_on_path(python, empty)
    _step(
        f"pip install {wheel.name} (no extras)",
        [python, "-m", "pip", "install", "--quiet", wheel],
        env=env,
        timeout=600,
    )
    (empty / "example.py").write_text(_readme_example(), encoding="utf-8")
    _step(
        "the README's example (after `pip install transformer-lib`)",
        [python, "example.py"],
        cwd=empty,
        env=env,
        timeout=600,
    )
    _step(
        f"pip install '{wheel.name}[train]'",
        [python, "-m", "pip", "install", "--quiet", f"{wheel}[train]"],
        env=env,
        timeout=900,
    )
    proc = _step(
        "python -m transformer_lib.train --preset tiny --data toy",
        [
            python,
            "-m",
            "transformer_lib.train",
            "--preset",
            "tiny",
            "--data",
            "toy",
            "--out",
            "run",
        ],
        cwd=empty,
        env=env,
        timeout=1800,
    )
    assert (
        "test BLEU (greedy)" in proc.stdout
        and (empty / "run" / "summary.json").exists()
    ), proc.stdout[-2000:]


# --------------------------------------------------------------------------- reader


def test_readers_build_command_is_the_one_the_suite_builds_with():
    """The README tells a reader `make book`; the Makefile's `book` runs the build
    script that the suite's book build (tests/test_book.py, on a fresh clone in CI)
    runs, so the browser tests open the site a reader's command produces."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"^make book\b", readme, re.M), (
        "the README no longer says how to build the book"
    )
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^book:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe and "scripts/build_book.py" in recipe.group(1), (
        "`make book` no longer runs scripts/build_book.py"
    )
    fixture = (ROOT / "tests" / "test_book.py").read_text(encoding="utf-8")
    assert '"scripts" / "build_book.py"' in fixture, (
        "the suite's book build is not the README's"
    )
