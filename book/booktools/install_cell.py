"""The two hidden cells every chapter has, written from one place.

1. **First code cell: install what is missing.** Opened from the book's Colab or Binder
   button, or in any Python without this project's set-up, a chapter starts by
   installing the package (`transformer-lib[viz,data]`, from the repository and branch
   set in `_config.yml`), the book's tools (`booktools`, from the repository's book/
   folder: the diagrams) and MyST-NB (the chapters glue computed numbers into their
   text). Where both are importable, as in `.venv` and under nbval, the cell does
   nothing and prints nothing. The environment variable ``TRANSFORMER_LIB_SOURCE``
   replaces the git URL (a local checkout: ``file:///path/to/checkout``);
   tests/test_publish.py uses it to run the cell in a fresh venv.
2. **Last code cell: the time of this run and the machine**, glued into the note under
   the chapter's title ("about 35 s on a 2-core CPU"; the CPU model, PyTorch's vector
   kernels (AVX512, AVX2 ...), the threads of each part, torch version, and the
   precision of the chapter's own training). Not reproducible on another machine, so
   nbval does not compare its output. The threads come from a hook the first cell
   registers: after each cell, a new thread count is noted with the chapter's
   `_note_part` at that moment ("2 threads, then 1 from link 4"). The precision is the
   chapter's `_note_training`, set in the cell that trains ("training in float32",
   "training a float64 toy model"); a chapter that sets none trained nothing. The runner
   edition of a chapter (scripts/make_notebooks.py) has a longer first cell,
   `edition_install_cell_source`: in Colab it also clones the repository and works in
   its chapters/ folder, so the chapter's `../book` and `../results` paths resolve.
3. **The note under the title** (in the first markdown cell): how long the chapter
   takes, whether it uses a GPU, how to run it. A new chapter gets the CPU-only wording;
   edit it if the chapter uses a GPU when one is present.

    python scripts/install_cell.py chapters/*.ipynb          # insert or update both
    python scripts/install_cell.py --check chapters/*.ipynb  # exit 1 if one is stale

Changing the repository URL in `_config.yml` and re-running this script updates every
chapter; the cells' outputs do not change (the install cell prints nothing where it has
nothing to do)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

from booktools import config

INSTALL_MARK = "# Colab, Binder or a Python without this book's package"
TIMER_MARK = "# The time of this run"
TAGS = ["remove-cell"]  # hidden in the HTML book; there in the notebook a reader runs


def repository(path: Path = config.CONFIG) -> tuple[str, str]:
    """(url, branch) of the book's repository, as `_config.yml` sets them (the chapters'
    own cell; the runner editions and the site take `booktools.site`'s setting)."""
    repo = config.repository_settings(path)
    return repo["url"].rstrip("/"), repo.get("branch", "main")


# The chapters' two cells as ruff formats them at the printed width (pyproject.toml), so
# that `make lint` passes over the chapters that hold them; {url} and {branch} are
# filled in.
_INSTALL = """\
INSTALL_MARK: install it (where it is
# installed, as with `make lab`, nothing happens).
import importlib.util
import os
import sys
import time

# for the note under the title: how long the chapter takes, and on how many threads
# (each new count after a cell, with `_note_part`)
_started = time.perf_counter()
_threads_seen = []


def _note_threads(*_):
    _torch = sys.modules.get("torch")
    if _torch is not None and (
        not _threads_seen or _threads_seen[-1][0] != _torch.get_num_threads()
    ):
        _threads_seen.append((_torch.get_num_threads(), globals().get("_note_part")))


get_ipython().events.register("post_run_cell", _note_threads)
if not all(
    importlib.util.find_spec(m) for m in ("transformer_lib", "booktools", "myst_nb")
):
    _source = os.environ.get(
        "TRANSFORMER_LIB_SOURCE",
        "git+{url}@{branch}",
    )
    # the book's tools (the diagrams), from the same source
    _git = _source.startswith("git+")
    _tools = _source + ("#subdirectory=book" if _git else "/book")
    _packages = (
        f'"transformer-lib[viz,data] @ {_source}" "transformer-book-tools @ {_tools}" '
        '"myst-nb>=1.1"'
    )
    %pip install --quiet {_packages}
    importlib.invalidate_caches()"""


def install_cell_source(url: str, branch: str) -> str:
    """The chapters' first cell: the clocks of the note under the title, then the
    install from the repository `url` at `branch` where the package is missing."""
    return (
        _INSTALL.replace("INSTALL_MARK", INSTALL_MARK, 1)
        .replace("{url}", url)
        .replace("{branch}", branch)
    )


def edition_install_cell_source(url: str, ref: str, tools: bool = True) -> str:
    """The first cell of a runner edition (booktools.editions). It records the clocks of
    the chapter's cell; then, where the package is missing, it installs exactly the code
    the notebook was made from: the repository `url` at the commit `ref`
    (`booktools.site`: the workflow's own repository and commit). A notebook that came
    alone (Colab opens one file) fetches that commit first, a shallow fetch, and works
    in its chapters/ folder, so the chapter's `../book`, `../results` and
    `../benchmarks` resolve as in a checkout; in a checkout (the editions branch,
    Binder, `make lab`) it installs from the checkout. Where the package is installed it
    does nothing. No network, a failed fetch or a failed install is one sentence
    (`BookSetupError`), not a traceback. The book's tools (`booktools`: the diagrams)
    are installed only where the chapter imports them (`tools`)."""
    needs = (
        '"transformer_lib", "booktools", "myst_nb"'
        if tools
        else '"transformer_lib", "myst_nb"'
    )
    # the tools' own dependencies are for building the book (Sphinx, Jupyter Book ...):
    # the diagrams need none of them, so the tools come without (--no-deps)
    tools_line = (
        "        _run(\n"
        "            *_PIP,\n"
        '            "--no-deps",\n'
        '            f"transformer-book-tools @ file://{_root}/book",\n'
        "        )\n"
    )
    chapter = install_cell_source(url, ref)
    head = chapter[: chapter.index("\nif not all(") + 1]
    return head + (
        _EDITION.replace("{url}", url)
        .replace("{ref}", ref)
        .replace("{needs}", needs)
        .replace("{name}", _name(url))
        .replace("{tools_line}", tools_line if tools else "")
    )


_EDITION = """\
# the code this notebook was made from
_REPOSITORY, _COMMIT = "{url}", "{ref}"
_PIP = (sys.executable, "-m", "pip", "install", "--quiet")


class BookSetupError(RuntimeError):
    \"\"\"Setting up the book failed: said in one sentence (Jupyter shows no traceback
    for it).\"\"\"

    def _render_traceback_(self):
        return [str(self)]


def _run(*command):
    import subprocess

    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        said = done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}"
        tool = "pip" if command[0] == sys.executable else command[0]
        raise BookSetupError(f"{tool} failed: {said.splitlines()[-1]}")


def _fetch(folder):
    \"\"\"The repository at _COMMIT into `folder` (one commit, no history).\"\"\"
    if _REPOSITORY.startswith(("https://", "http://")):
        import socket
        import urllib.parse

        host = urllib.parse.urlsplit(_REPOSITORY).hostname
        try:
            socket.create_connection((host, 443), timeout=10).close()
        except OSError:
            raise BookSetupError(
                "No network: this notebook installs the book's package from "
                f"{_REPOSITORY}; connect to the internet (in Colab: Runtime, then "
                "Reconnect) and run this cell again."
            ) from None
    _run("git", "init", "--quiet", folder)
    _run("git", "-C", folder, "fetch", "--quiet", "--depth", "1", _REPOSITORY, _COMMIT)
    _run("git", "-C", folder, "checkout", "--quiet", "FETCH_HEAD")


# in a checkout, Binder, `make lab`: the files are there
_beside_files = os.path.isdir("../book")
_needed = ({needs})
if not all(importlib.util.find_spec(m) for m in _needed) or not _beside_files:
    _in_checkout = os.path.isfile("../pyproject.toml")
    _root = os.path.abspath(".." if _in_checkout else "{name}")
    # alone (Colab): fetch its own commit
    if not os.path.isfile(os.path.join(_root, "pyproject.toml")):
        _fetch(_root)
    if not all(importlib.util.find_spec(m) for m in _needed):
        print(f"Installing transformer_lib (commit {_COMMIT[:12]}): about a minute ...")
        _run(
            *_PIP,
            f"transformer-lib[viz,data] @ file://{_root}",
            "myst-nb>=1.1",
        )
{tools_line}\
        importlib.invalidate_caches()
    if not _beside_files:
        os.chdir(os.path.join(_root, "chapters"))"""


def _name(url: str) -> str:
    """The folder a clone of `url` gets."""
    return url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")


_TIMER = """\
# NBVAL_IGNORE_OUTPUT
TIMER_MARK, glued into the note under the chapter's title with the machine
# (nbval ignores it).
from myst_nb import glue

_seconds = time.perf_counter() - _started
_rounded = (
    f"{5 * max(1, round(_seconds / 5))} s"
    if _seconds < 90
    else f"{round(_seconds / 30) / 2:g} min"
)
glue(
    "chapter_run_time",
    f"about {_rounded} on a {os.cpu_count()}-core CPU",
    display=False,
)
import torch
from transformer_lib import hardware_info

_hw = hardware_info("cpu")
_threads = [
    (
        f"{n} thread{'s' * (n != 1)}"
        if not i
        else f"then {n}" + (f" from {part}" if part else "")
    )
    for i, (n, part) in enumerate(_threads_seen or [(torch.get_num_threads(), None)])
]
# `_note_training`: what the chapter's own training used, set where it trains (none: no
# training)
glue(
    "chapter_machine",
    f"{_hw['cpu']} ({torch.backends.cpu.get_cpu_capability()} kernels, "
    f"{', '.join(_threads)}, torch {torch.__version__}; "
    f"{globals().get('_note_training', 'no training')})",
    display=False,
)"""


def timer_cell_source() -> str:
    """The chapters' last cell: the run's time and machine, glued into the note."""
    return _TIMER.replace("TIMER_MARK", TIMER_MARK, 1)


NOTE_TITLE = "Running this chapter"
NOTE_CPU = "It runs on the CPU and does not use a GPU, even where there is one."
NOTE_RUN_TIME = (
    "Top to bottom, the run stored here took {glue:text}`chapter_run_time`. "
)
NOTE_MACHINE = (
    "Its numbers come from {glue:text}`chapter_machine`: a rerun elsewhere repeats "
    "counts, shapes and exact results digit for digit, and trained or rounded results "
    "only up to the claims the chapter asserts (see the README, *Same verdict on every "
    "machine*). "
)


def note(gpu_sentence: str = NOTE_CPU) -> str:
    return (
        "\n\n:::{admonition} "
        + NOTE_TITLE
        + "\n:class: tip\n"
        + NOTE_RUN_TIME
        + NOTE_MACHINE
        + gpu_sentence
        + " To run it yourself: `make lab` on your machine, or the launch button (the "
        "rocket at the top of the page) for Colab or Binder, where the chapter's first "
        "cell installs `transformer_lib`.\n:::"
    )


def _is(cell, mark: str) -> bool:
    return cell.cell_type == "code" and mark in cell.source


def apply(nb: nbformat.NotebookNode, url: str, branch: str) -> bool:
    """Insert or update both cells in `nb`; True if anything changed."""
    changed = False
    wanted = [
        (INSTALL_MARK, install_cell_source(url, branch)),
        (TIMER_MARK, timer_cell_source()),
    ]
    for mark, source in wanted:
        found = [c for c in nb.cells if _is(c, mark)]
        if found:
            cell = found[0]
            if cell.source != source or cell.metadata.get("tags") != TAGS:
                cell.source, changed = source, True
                cell.metadata["tags"] = list(TAGS)
            continue
        cell = nbformat.v4.new_code_cell(source, metadata={"tags": list(TAGS)})
        if mark == INSTALL_MARK:  # the first code cell: right after the title cell
            first_code = next(
                i for i, c in enumerate(nb.cells) if c.cell_type == "code"
            )
            nb.cells.insert(first_code, cell)
        else:  # the last cell
            nb.cells.append(cell)
        changed = True
    first = next(c for c in nb.cells if c.cell_type == "markdown")
    if NOTE_TITLE not in first.source:
        first.source = first.source.rstrip("\n") + note()
        changed = True
    elif (
        NOTE_MACHINE not in first.source and NOTE_RUN_TIME in first.source
    ):  # an older note
        first.source = first.source.replace(
            NOTE_RUN_TIME, NOTE_RUN_TIME + NOTE_MACHINE, 1
        )
        changed = True
    return changed


def problems(nb: nbformat.NotebookNode, url: str, branch: str) -> list[str]:
    """What is wrong with a chapter's two cells, as messages (empty: all good)."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    out = []
    if not code or code[0].source != install_cell_source(url, branch):
        out.append(
            "the first code cell is not the install cell for " + f"{url}@{branch}"
        )
    if not code or code[-1].source != timer_cell_source():
        out.append("the last code cell is not the run-time cell")
    first = next((c for c in nb.cells if c.cell_type == "markdown"), None)
    if first is None or "{glue:text}`chapter_run_time`" not in first.source:
        out.append("the first markdown cell has no note with the run time")
    elif NOTE_MACHINE not in first.source:
        out.append(
            "the note under the title does not say which machine produced the numbers"
        )
    for c in code[:1] + code[-1:]:
        if c.metadata.get("tags") != TAGS:
            out.append(f"cell not tagged {TAGS}: {c.source.splitlines()[0]!r}")
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [Path(a) for a in argv if a != "--check"]
    url, branch = repository()
    bad = 0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if check:
            for msg in problems(nb, url, branch):
                print(f"{path}: {msg}")
                bad += 1
        elif apply(nb, url, branch):
            nbformat.write(nb, path)
            print(f"{path}: updated")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
