"""No chapter can go stale behind another.

A chapter declares in its metadata (``"book"``) the files it reads that something else
writes, each with what writes it, and ``scripts/execute.py`` records, when it executes
the chapter, the content hash of each such file and a fingerprint of the glued values of
each chapter it reads from; a chapter that declares what it writes records the hashes of
what it wrote. These tests fail when a stored chapter's recorded inputs differ from
those on disk, or from what their writer recorded writing (naming the chapters to run
again), show that the check catches chapter 11b's run changing without chapters 12 and
12b being run again (on a copy, and without ``runs/``, as on a clean clone), and check
that ``make execute`` re-runs a chapter with its dependents, in order, through Make (and
that ``make -n execute`` prints that plan)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import torch
import pytest

from conftest import ROOT

from booktools import execute as ex

# the chapters that read the book's best recorded run, results/cpu-30min (12b: the
# page's model)
RUN_READERS = [
    "chapters/12_results_and_attention.ipynb",
    "chapters/12b_in_the_browser.ipynb",
]
RUN_WRITER = "chapters/11b_training.ipynb"


def test_no_chapter_read_inputs_that_changed_since():
    problems = ex.stale(ROOT)
    assert not problems, "chapters to execute again:\n" + "\n".join(problems)


def test_every_read_names_what_writes_it():
    graph = ex.graph(ROOT)
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        book = ex.declared(nbformat.read(path, as_version=4))
        for file, producer in book["reads"].items():
            assert not file.startswith(("/", "..")), (
                f"{path.name}: {file} is not a path from the root"
            )
            assert producer, f"{path.name}: nothing named as the writer of {file}"
            if producer.startswith("chapters/"):
                assert producer in graph, (
                    f"{path.name}: {file}'s writer {producer} is no chapter"
                )
                assert producer != f"chapters/{path.name}", (
                    f"{path.name} names itself as a writer"
                )
                writes = ex.declared(nbformat.read(ROOT / producer, as_version=4))[
                    "writes"
                ]
                assert not writes or file in writes, (
                    f"{path.name} reads {file} from {producer}, which does not"
                    " declare it"
                )
    for reader in RUN_READERS:
        assert RUN_WRITER in graph[reader], (
            f"{reader} does not declare that it reads {RUN_WRITER}'s run"
        )


def test_chapter_12_declares_the_gpu_run_it_would_show():
    """Chapter 12 adds a row and a curve for a recorded GPU run when `results/gpu-base`
    holds one: such a run appearing (or changing) must name chapter 12 stale, so it
    declares both files."""
    reads = ex.declared(nbformat.read(ROOT / RUN_READERS[0], as_version=4))["reads"]
    for name in ("summary.json", "metrics.jsonl"):
        assert reads.get(f"results/gpu-base/{name}", "").endswith(
            "scripts/gpu_run.sh"
        ), sorted(reads)


def _copy(tmp: Path) -> Path:
    """The run's writer, its readers and every file they read (where it exists), under
    tmp, made consistent as `make execute NB=<writer>` leaves them: the writer's record
    of what it wrote (where the stored writer has none yet, what its readers recorded
    reading), and each reader's record of the writer's glued values, of the run and of
    the committed files, as they are in the copy. The tests on copies test the
    mechanism; `test_no_chapter_read_inputs_that_changed_since` holds the stored
    chapters as they are."""
    for chapter in [RUN_WRITER, *RUN_READERS]:
        (tmp / chapter).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / chapter, tmp / chapter)
        for file in ex.declared(nbformat.read(ROOT / chapter, as_version=4))["reads"]:
            if (ROOT / file).is_file():
                (tmp / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(ROOT / file, tmp / file)
    writer = nbformat.read(tmp / RUN_WRITER, as_version=4)
    if ex.written(writer) is None:
        read = nbformat.read(tmp / RUN_READERS[0], as_version=4).metadata["book"][
            "recorded"
        ]["files"]
        writer.metadata["book"]["wrote"] = {
            f: read.get(f) for f in ex.declared(writer)["writes"]
        }
        nbformat.write(writer, tmp / RUN_WRITER)
    wrote = ex.written(writer)
    for reader in RUN_READERS:
        nb = nbformat.read(tmp / reader, as_version=4)
        reads = ex.declared(nb)["reads"]
        nb.metadata["book"]["recorded"] = {
            "files": {
                f: wrote[f] if p == RUN_WRITER else ex.sha256(tmp / f)
                for f, p in sorted(reads.items())
            },
            "chapters": {RUN_WRITER: ex.fingerprint(tmp / RUN_WRITER)},
        }
        nbformat.write(nb, tmp / reader)
    return tmp


def _edit_record(path: Path, key: str, file: str) -> None:
    """One hex digit of the hash a stored chapter recorded (under "book" -> key) for
    `file` changed."""
    nb = nbformat.read(path, as_version=4)
    record = nb.metadata["book"][key]
    record = record["files"] if key == "recorded" else record
    record[file] = record[file][:-1] + ("1" if record[file][-1] == "0" else "0")
    nbformat.write(nb, path)


def _named(problems: list[str]) -> set[str]:
    return {p.split(":")[0] for p in problems}


def test_a_changed_committed_input_makes_its_readers_stale(tmp_path):
    root = _copy(tmp_path)
    assert ex.stale(root) == []
    # written by a command, committed
    summary = root / "results" / "cpu-30min" / "summary.json"
    record = json.loads(summary.read_text())
    record["train_time_s"] += 1.0
    summary.write_text(json.dumps(record))
    problems = ex.stale(root)
    assert _named(problems) == set(RUN_READERS), problems
    assert all(
        "results/cpu-30min/summary.json" in p and "make execute NB=" in p
        for p in problems
    )


RUN_SUMMARY = "runs/chapter_cpu/summary.json"


@pytest.mark.parametrize("edited", ["reader", "writer"])
def test_a_reader_of_another_run_than_its_writer_recorded_is_named_with_its_writer(
    tmp_path, edited
):
    """11b records the hashes of the run it wrote, 12 and 12b those of the run they
    read: committed records compared with committed records, so the check needs no
    `runs/` (removed here, as on a clean clone, where nbval rewrites the run with other
    digits). One digit of one hash changed."""
    root = _copy(tmp_path)
    shutil.rmtree(root / "runs", ignore_errors=True)
    assert ex.stale(root) == []
    if edited == "reader":
        _edit_record(root / RUN_READERS[1], "recorded", RUN_SUMMARY)
    else:
        _edit_record(root / RUN_WRITER, "wrote", RUN_SUMMARY)
    problems = ex.stale(root)
    assert _named(problems) == (
        {RUN_READERS[1]} if edited == "reader" else set(RUN_READERS)
    ), problems
    for p in problems:
        assert (
            RUN_SUMMARY in p
            and RUN_WRITER in p
            and f"make execute NB={RUN_WRITER}" in p
        ), p
        # only the file whose hashes differ
        assert "runs/chapter_cpu/model.pt" not in p, p


def test_a_writer_that_never_recorded_what_it_wrote_is_named(tmp_path):
    root = _copy(tmp_path)
    nb = nbformat.read(root / RUN_WRITER, as_version=4)
    del nb.metadata["book"]["wrote"]
    nbformat.write(nb, root / RUN_WRITER)
    problems = ex.stale(root)
    assert _named(problems) == set(RUN_READERS), problems
    assert all(
        "never recorded what it wrote" in p and RUN_WRITER in p for p in problems
    ), problems


def test_a_committed_input_that_appears_or_disappears_is_a_change(tmp_path):
    """A chapter may declare a file a command writes before it exists (a GPU run in
    results/gpu-base/, recorded as missing); it is named when the file is committed
    later, and a reader is named when a file it read is removed."""
    root = _copy(tmp_path)
    nb = nbformat.read(root / RUN_READERS[0], as_version=4)
    nb.metadata["book"]["reads"]["results/gpu-base/summary.json"] = (
        "scripts/gpu_run.sh (the base preset)"
    )
    nb.metadata["book"]["recorded"]["files"]["results/gpu-base/summary.json"] = None
    nbformat.write(nb, root / RUN_READERS[0])
    assert ex.stale(root) == []
    (root / "results" / "gpu-base").mkdir(parents=True)
    (root / "results" / "gpu-base" / "summary.json").write_text("{}")
    assert _named(ex.stale(root)) == {RUN_READERS[0]}
    shutil.rmtree(root / "results" / "gpu-base")
    (root / "results" / "cpu-30min" / "summary.json").unlink()
    problems = ex.stale(root)
    assert _named(problems) == set(RUN_READERS) and all(
        "results/cpu-30min/summary.json" in p for p in problems
    )


def test_executing_a_chapter_records_what_it_read_and_wrote(tmp_path):
    """The records are written by the execution itself (a two-cell chapter in a fresh
    kernel)."""
    (tmp_path / "chapters").mkdir()
    (tmp_path / "in.txt").write_text("read me")
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "from pathlib import"
                " Path\nPath('../out.txt').write_text(Path('../in.txt').read_text() +"
                " '!')"
            )
        ]
    )
    nb.metadata["book"] = {
        "reads": {"in.txt": "a command"},
        "writes": ["out.txt", "never.txt"],
    }
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, tmp_path / "chapters" / "x.ipynb")
    ex.execute(tmp_path / "chapters" / "x.ipynb", timeout=120)
    book = nbformat.read(tmp_path / "chapters" / "x.ipynb", as_version=4).metadata[
        "book"
    ]
    assert book["recorded"]["files"] == {"in.txt": ex.sha256(tmp_path / "in.txt")}
    assert book["wrote"] == {
        "never.txt": None,
        "out.txt": ex.sha256(tmp_path / "out.txt"),
    }
    assert (tmp_path / "out.txt").read_text() == "read me!"


def test_a_new_run_of_11b_makes_12_and_12b_stale_on_a_clean_clone(tmp_path):
    root = _copy(tmp_path)
    # runs/ is git-ignored: a clean clone has none
    shutil.rmtree(root / "runs", ignore_errors=True)
    assert ex.stale(root) == []
    nb = nbformat.read(root / RUN_WRITER, as_version=4)
    for cell in nb.cells:  # 11b executed again: its glued time changes
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            book = out.get("metadata", {}).get("scrapbook")
            if book and book["name"] == "ch11b_train_time":
                key = book["mime_prefix"] + "text/plain"
                out["data"][key] = repr(
                    f"{float(out['data'][key].strip(chr(39))) + 0.1:.1f}"
                )
    nbformat.write(nb, root / RUN_WRITER)
    problems = ex.stale(root)
    assert _named(problems) == set(RUN_READERS), problems
    assert all(f"{RUN_WRITER} (its glued values)" in p for p in problems)


def test_a_chapter_never_recorded_is_named(tmp_path):
    root = _copy(tmp_path)
    nb = nbformat.read(root / RUN_READERS[0], as_version=4)
    del nb.metadata["book"]["recorded"]
    nbformat.write(nb, root / RUN_READERS[0])
    assert [p for p in ex.stale(root) if "never recorded" in p][0].startswith(
        RUN_READERS[0]
    )


def _plan(folder: Path, since: str) -> list[str]:
    """The chapters `make execute NB=since` would execute, in order (Make's dry run)."""
    mk = folder / "chapters.mk"
    mk.parent.mkdir(parents=True, exist_ok=True)
    mk.write_text(ex.makefile(ROOT, (folder / "stamps").as_posix()))
    ex.prepare_stamps(ROOT, folder / "stamps", since)
    plan = subprocess.run(
        ["make", "-n", "-f", str(mk), "PY=python"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [ln.split()[-1] for ln in plan.splitlines() if "scripts/execute.py" in ln]


def test_make_execute_runs_a_chapter_then_its_dependents_in_order(tmp_path):
    assert _plan(tmp_path / "a", RUN_WRITER) == [RUN_WRITER, *RUN_READERS]
    assert _plan(tmp_path / "b", "chapters/01_qkv_attention.ipynb") == [
        "chapters/01_qkv_attention.ipynb"
    ]
    assert _plan(tmp_path / "c", RUN_READERS[0]) == [RUN_READERS[0]]


def test_make_dry_run_of_execute_prints_the_plan(tmp_path):
    """`make -n execute NB=...` shows the chapters it would execute, in order, and
    executes none."""
    before = {p: p.stat().st_mtime_ns for p in (ROOT / "chapters").glob("*.ipynb")}
    out = subprocess.run(
        [
            "make",
            "-n",
            "execute",
            f"NB={RUN_WRITER}",
            f"EXECUTE_DIR={tmp_path}",
            f"PY={sys.executable}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    plan = [
        ln.split()[-1]
        for ln in out.stdout.splitlines()
        if re.search(r"scripts/execute.py chapters/\S+$", ln)
    ]
    assert plan == [RUN_WRITER, *RUN_READERS], out.stdout
    assert before == {
        p: p.stat().st_mtime_ns for p in (ROOT / "chapters").glob("*.ipynb")
    }


def test_prepare_stamps_rejects_a_missing_chapter(tmp_path):
    with pytest.raises(ValueError, match="--since"):
        ex.prepare_stamps(ROOT, tmp_path, "chapters/99_nothing.ipynb")


def test_chapter_12_shows_the_run_time_that_11b_glues():
    glued = {
        c: ex.glued_values(nbformat.read(ROOT / c, as_version=4))
        for c in (RUN_WRITER, RUN_READERS[0])
    }
    assert (
        glued[RUN_READERS[0]]["ch12_cpu_minutes"]
        == glued[RUN_WRITER]["ch11b_train_time"]
    ), (
        "chapter 12 shows another training time than chapter 11b's run: execute chapter"
        " 12 again"
    )


NOTE = re.compile(
    r"^(?P<cpu>.+) \((?P<kernels>\w+) kernels, (?P<threads>\d+ threads?(, then \d+("
    r" from [^,]+)?)*), "
    r"torch (?P<torch>[^;]+); (?P<training>no training|training .+)\)$"
)


@pytest.mark.parametrize(
    "path", sorted((ROOT / "chapters").glob("*.ipynb")), ids=lambda p: p.stem
)
def test_the_note_under_the_title_says_what_the_chapter_did(path):
    """The machine, the threads of each part ("2 threads, then 1 from link 4") and the
    precision of the chapter's own training ("no training" where it trained nothing), in
    plain grammar."""
    note = ex.glued_values(nbformat.read(path, as_version=4)).get("chapter_machine")
    assert note, (
        f"{path.name}: no note glued; run `python scripts/install_cell.py"
        f" {path.relative_to(ROOT)}`"
    )
    # the repr's quotes
    note = note[1:-1] if note[:1] == note[-1:] and note[:1] in "'\"" else note
    match = NOTE.match(note)
    assert match, (
        f"{path.name}: the note {note!r} is not of the form the timer cell writes;"
        " execute the chapter again"
    )
    first, word = match["threads"].split(" ")[:2]
    assert word.rstrip(",") == ("thread" if first == "1" else "threads"), (
        f"{path.name}: {note!r}"
    )
    assert "bf16" not in match["training"] or "AVX512" in note or "AMX" in note, (
        f"{path.name}: bf16 training claimed on a CPU without native bf16: {note!r}"
    )


def test_the_hidden_cells_note_each_thread_count_with_its_part_and_the_training():
    """The first cell's hook notes a new thread count after each cell, with the
    chapter's `_note_part`; the last cell glues them and `_note_training` ("no training"
    where a chapter sets none)."""
    from booktools import install_cell as ic
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    threads = torch.get_num_threads()
    # (torch is imported here already: the hook sees it at once)
    torch.set_num_threads(2)
    try:
        for source in (
            ic.install_cell_source(*ic.repository()),
            "import torch\ntorch.set_num_threads(2)",
            "x = 1",
            "torch.set_num_threads(1)\n_note_part = 'link 4'",
            "y = 2",
        ):
            shell.run_cell(source).raise_error()
        assert shell.user_ns["_threads_seen"] == [(2, None), (1, "link 4")]
        shell.run_cell(
            "from unittest import mock\n_glued = {}\nwith mock.patch('myst_nb.glue',"
            " lambda k, v, display: _glued.__setitem__(k, v)):\n    exec("
            + repr(ic.timer_cell_source())
            + ")"
        ).raise_error()
        note = shell.user_ns["_glued"]["chapter_machine"]
        assert (
            NOTE.match(note)
            and ", 2 threads, then 1 from link 4, " in note
            and note.endswith("; no training)")
        ), note
    finally:
        torch.set_num_threads(threads)
        InteractiveShell.clear_instance()


def test_the_quick_tier_runs_the_changed_chapters_and_their_readers(tmp_path):
    """`booktools execute --changed` (make test-quick): a chapter that differs from the
    commit, every chapter that reads from it, and a chapter the staleness check names;
    nothing when nothing changed."""
    root = _copy(tmp_path)
    shutil.copy(ROOT / "chapters" / "01_qkv_attention.ipynb", root / "chapters")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "chapters"], check=True)
    assert ex.changed_chapters(root) == []
    (root / RUN_WRITER).write_text((root / RUN_WRITER).read_text() + "\n")
    assert ex.changed_chapters(root) == [RUN_WRITER, *RUN_READERS]
    subprocess.run(git + ["commit", "-q", "-am", "11b"], check=True)
    assert ex.changed_chapters(root) == [] and ex.changed_chapters(root, "HEAD~1") == [
        RUN_WRITER,
        *RUN_READERS,
    ]
    (root / "chapters" / "new.ipynb").write_text(
        (root / "chapters" / "01_qkv_attention.ipynb").read_text()
    )
    assert ex.changed_chapters(root) == ["chapters/new.ipynb"]  # an untracked chapter
    (root / "chapters" / "new.ipynb").unlink()
    _edit_record(root / RUN_READERS[1], "recorded", RUN_SUMMARY)  # stale, and changed
    assert ex.changed_chapters(root) == [RUN_READERS[1]]
    with pytest.raises(ValueError, match="bad revision"):
        ex.changed_chapters(root, "no-such-commit")
