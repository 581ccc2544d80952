"""Execute chapters top to bottom in a fresh kernel and store their outputs; know which
depend on which.

    python scripts/execute.py chapters/01_qkv_attention.ipynb [more.ipynb ...]
    python scripts/execute.py --check           # chapters whose recorded inputs changed
    python scripts/execute.py --makefile FILE [--since chapters/XX.ipynb]
    python scripts/execute.py --changed [BASE]  # what make test-quick runs under nbval

Each notebook runs with its own folder as the working directory, stores widget state
(so the HTML book can show the widgets) and fails loudly on the first error, except in
cells tagged ``raises-exception`` that demonstrate an error on purpose.

**Chapters that depend on chapters.** A chapter declares, in its notebook metadata under
``"book"``, the files it reads that something else writes and the files it writes
itself::

    "book": {"reads": {"runs/chapter_cpu/summary.json": "chapters/11b_training.ipynb",
                       "results/cpu-full/summary.json": "make train PRESET=cpu-full"},
             "writes": ["runs/chapter_cpu/summary.json"]}

Each read file names what writes it: another chapter (an edge of the dependency graph)
or a command. Executing a chapter records, under ``"book" -> "recorded"``, the content
hash of every file it read (``null`` where the file was missing) and, for each chapter
it reads from, a fingerprint of that chapter's glued values (the numbers it hands to the
prose); executing a chapter that declares ``"writes"`` records, under ``"book" ->
"wrote"``, the content hash of each file it wrote. Three comparisons follow, all between
committed files, so they hold on a clean clone (where ``runs/`` is absent) and whatever
nbval's runs, whose outputs are not stored, wrote:

- a file a command writes (``make bench``, a recorded run in ``results/``) is committed:
  its hash now against the hash its reader recorded (a file that was missing counts: one
  that appears or disappears is a change);
- a file a chapter writes (chapter 11b's run in ``runs/``, git-ignored): the hash its
  reader recorded against the hash its writer recorded writing. A reader executed on
  another run than the one the stored writer describes (nbval or a clean clone rewrote
  it) is named with its writer;
- the writer's glued values against the fingerprint its reader recorded: executing the
  writer again changes them (its run's time and speed at least), so every chapter that
  read the old run is named, even before the new run is compared.

``--check`` (and ``tests/test_staleness.py``) names every chapter to run again.

``--makefile`` writes a Make file with one stamp per chapter, each depending on the
stamps of the chapters it reads from; ``make execute NB=...`` uses it so that Make
re-executes the chapter, then every chapter that depends on it, in order. ``--since``
prepares the stamps: a missing stamp is created as old as can be (so a chapter never
executed through Make is not re-run for that alone) and the named chapter's stamp is
removed."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from booktools.paths import ROOT

KEY = "book"
_RECORD = "application/papermill.record/"


def sha256(path: Path) -> str | None:
    """The hex SHA-256 of a file's bytes; None when it does not exist."""
    if not path.is_file():
        return None
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def declared(nb) -> dict:
    """A chapter's declaration: {"reads": {path: producer}, "writes": [path, ...]}
    (empty where none)."""
    book = nb.metadata.get(KEY, {})
    return {
        "reads": dict(book.get("reads", {})),
        "writes": list(book.get("writes", [])),
    }


def glued_values(nb) -> dict[str, str]:
    """Each key a notebook's stored outputs glue, with its text/plain value."""
    values = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            book = out.get("metadata", {}).get("scrapbook")
            if book:
                values[book["name"]] = out.get("data", {}).get(
                    book["mime_prefix"] + "text/plain"
                )
    return values


def fingerprint(chapter: Path) -> str:
    """The SHA-256 of a chapter's glued values as stored: it changes whenever the
    chapter is run again."""
    nb = nbformat.read(chapter, as_version=4)
    return hashlib.sha256(
        json.dumps(glued_values(nb), sort_keys=True).encode()
    ).hexdigest()


def _producers(reads: dict[str, str]) -> list[str]:
    return sorted(
        {
            p
            for p in reads.values()
            if p.startswith("chapters/") and p.endswith(".ipynb")
        }
    )


def inputs_now(nb, root: Path = ROOT) -> dict:
    """What the chapter's declared inputs are on disk now: file hashes and producers'
    fingerprints."""
    reads = declared(nb)["reads"]
    return {
        "files": {p: sha256(root / p) for p in sorted(reads)},
        "chapters": {c: fingerprint(root / c) for c in _producers(reads)},
    }


def written(nb) -> dict[str, str | None] | None:
    """The hashes a chapter recorded of the files it wrote when last executed; None if
    it never recorded them."""
    wrote = nb.metadata.get(KEY, {}).get("wrote")
    return None if wrote is None else dict(wrote)


def _run_mismatches(
    name: str, reads: dict[str, str], recorded: dict, root: Path
) -> list[str]:
    """The files `name` read from a chapter that wrote other bytes, by the two chapters'
    committed records."""
    problems = []
    for writer in _producers(reads):
        wrote = written(nbformat.read(root / writer, as_version=4))
        files = sorted(f for f, p in reads.items() if p == writer)
        if wrote is None:
            problems.append(
                f"{name}: reads {', '.join(files)} from {writer}, which never recorded"
                f" what it wrote; run `make execute NB={writer}` (it runs {name} again"
                " after it)"
            )
            continue
        differ = [
            f"{f} ({name} read {_short(recorded['files'].get(f))}, {writer} wrote"
            f" {_short(wrote.get(f))})"
            for f in files
            if recorded["files"].get(f) != wrote.get(f)
        ]
        if differ:
            problems.append(
                f"{name}: read another run than the one {writer} recorded writing:"
                f" {'; '.join(differ)}; run `make execute NB={writer}` (it runs {name}"
                " again after it)"
            )
    return problems


def _short(digest: str | None) -> str:
    return "nothing" if digest is None else digest[:12]


def stale(root: Path = ROOT) -> list[str]:
    """One line per problem of a chapter whose recorded inputs differ from those on disk
    or from what their writer recorded writing, naming what changed and what to run."""
    problems = []
    for path in sorted((root / "chapters").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if not declared(nb)["reads"]:
            continue
        name = path.relative_to(root).as_posix()
        recorded, now = nb.metadata[KEY].get("recorded"), inputs_now(nb, root)
        if recorded is None:
            problems.append(
                f"{name}: its inputs were never recorded; run `make execute NB={name}`"
            )
            continue
        reads = declared(nb)["reads"]
        # a chapter's output: by its writer's record (below)
        changed = [
            f
            for f, h in now["files"].items()
            if not reads[f].startswith("chapters/") and recorded["files"].get(f) != h
        ]
        changed += [
            f"{c} (its glued values)"
            for c, h in now["chapters"].items()
            if recorded["chapters"].get(c) != h
        ]
        if changed:
            problems.append(
                f"{name}: read inputs that have changed since: {', '.join(changed)}; "
                f"run `make execute NB={name}` again"
            )
        problems += _run_mismatches(name, reads, recorded, root)
    return problems


def _git_lines(root: Path, *args: str) -> list[str]:
    proc = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise ValueError(
            f"git {' '.join(args)}: {proc.stderr.strip() or 'failed'} (expected a git"
            " checkout and a commit to compare with, e.g. HEAD or origin/main)"
        )
    return [line for line in proc.stdout.splitlines() if line]


def changed_chapters(root: Path = ROOT, base: str = "HEAD") -> list[str]:
    """The chapters to run again after a change, in the order Make would run them: each
    chapter whose notebook differs from `base` (a commit; HEAD: the changes not yet
    committed, untracked chapters included), each chapter `stale` names, and every
    chapter that reads from one of them."""
    paths = set(_git_lines(root, "diff", "--name-only", base, "--", "chapters"))
    paths |= set(
        _git_lines(root, "ls-files", "--others", "--exclude-standard", "--", "chapters")
    )
    chosen = {p for p in paths if p.endswith(".ipynb") and (root / p).is_file()}
    chosen |= {line.split(":", 1)[0] for line in stale(root)}
    deps = graph(root)
    grown = True
    while grown:  # the chapters that read from a chosen one, and theirs
        more = {c for c, producers in deps.items() if set(producers) & chosen} - chosen
        chosen |= more
        grown = bool(more)
    # graph() lists the chapters in the book's file order
    return [c for c in deps if c in chosen]


def execute(path: Path, timeout: int = 1200) -> float:
    nb = nbformat.read(path, as_version=4)
    # Reproducible, quiet runs: one thread of BLAS, no tqdm in monitor threads.
    os.environ.setdefault("PYTHONHASHSEED", "0")
    # Figures are displayed inline whatever the caller exported (MPLBACKEND=Agg shows
    # nothing, and the stored outputs would lose their figures); the kernel inherits
    # this environment.
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    from nbclient import NotebookClient

    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=True,
    )
    t0 = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - t0
    for cell in nb.cells:  # no per-cell execution metadata (timestamps churn in git)
        cell.metadata.pop("execution", None)
    root = path.resolve().parents[1]
    # the inputs as this run found them (after the run: a missing run is made)
    if declared(nb)["reads"]:
        nb.metadata[KEY]["recorded"] = inputs_now(nb, root)
    # what this run wrote, for its readers' records to be compared with
    if declared(nb)["writes"]:
        nb.metadata[KEY]["wrote"] = {
            p: sha256(root / p) for p in sorted(declared(nb)["writes"])
        }
    nbformat.write(nb, path)
    return elapsed


def graph(root: Path = ROOT) -> dict[str, list[str]]:
    """Each chapter (path from the root) with the chapters it reads from."""
    return {
        p.relative_to(root).as_posix(): _producers(
            declared(nbformat.read(p, as_version=4))["reads"]
        )
        for p in sorted((root / "chapters").glob("*.ipynb"))
    }


def makefile(root: Path, stamps: str) -> str:
    """A Make file: one stamp per chapter, made by executing the chapter after the
    chapters it reads from."""
    lines = [
        (
            "# Generated by scripts/execute.py --makefile: chapters and the chapters"
            " they read from."
        ),
        f"PY ?= {sys.executable}",
        "ALL :=",
    ]
    for chapter, producers in graph(root).items():
        stamp = f"{stamps}/{Path(chapter).stem}.done"
        deps = " ".join(f"{stamps}/{Path(p).stem}.done" for p in producers)
        lines += [
            f"ALL += {stamp}",
            f"{stamp}: {deps}".rstrip(),
            f"\t$(PY) scripts/execute.py {chapter}",
            "\t@mkdir -p $(@D) && touch $@",
        ]
    lines += ["all: $(ALL)", ".PHONY: all", ".DEFAULT_GOAL := all"]
    return "\n".join(lines) + "\n"


def prepare_stamps(root: Path, stamps: Path, since: str) -> None:
    """Missing stamps as old as can be (1970), then the named chapter's stamp removed:
    Make runs it and its dependents."""
    stamps.mkdir(parents=True, exist_ok=True)
    for chapter in graph(root):
        stamp = stamps / f"{Path(chapter).stem}.done"
        if not stamp.exists():
            stamp.touch()
            os.utime(stamp, (0, 0))
    if not (root / since).is_file():
        raise ValueError(
            f"--since: no chapter {since!r} (expected a path like"
            " chapters/12_results_and_attention.ipynb)"
        )
    (stamps / f"{Path(since).stem}.done").unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", type=Path)
    parser.add_argument(
        "--check",
        action="store_true",
        help="name the chapters whose recorded inputs changed",
    )
    parser.add_argument(
        "--makefile", type=Path, help="write the chapters' Make file here"
    )
    parser.add_argument(
        "--since",
        help=(
            "with --makefile: prepare the stamps to re-run this chapter and its"
            " dependents"
        ),
    )
    parser.add_argument(
        "--changed",
        metavar="BASE",
        nargs="?",
        const="HEAD",
        help=(
            "print the chapters changed since the commit BASE (default HEAD: not yet"
            " committed), those --check names and their dependents, one a line (make"
            " test-quick)"
        ),
    )
    args = parser.parse_args(argv)
    try:
        return _run(args)
    # a bad --since or --changed: the message, not a traceback
    except ValueError as exc:
        print(f"execute: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    if args.changed:
        print("\n".join(changed_chapters(ROOT, args.changed)))
        return 0
    if args.makefile:
        stamps = args.makefile.parent / "stamps"
        args.makefile.parent.mkdir(parents=True, exist_ok=True)
        args.makefile.write_text(makefile(ROOT, stamps.as_posix()))
        if args.since:
            prepare_stamps(ROOT, stamps, args.since)
    if args.check:
        problems = stale()
        print(
            "\n".join(problems) or "every chapter's recorded inputs are those on disk"
        )
        return 1 if problems else 0
    for chapter in args.chapters:
        secs = execute(chapter)
        print(f"{chapter}: executed in {secs:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
