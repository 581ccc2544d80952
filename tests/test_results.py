"""The recorded runs in results/: small, complete, and exactly what the book prints.

Chapter 11b prints the model-size sweep from `results/size_sweep.json`; chapter 12
prints the recorded CPU run from `results/cpu-full/summary.json`. These tests read the
stored outputs of those chapters and check every printed number against the files, so a
stale table (or a number typed in by hand) fails."""

import json
import math

import pytest

from conftest import ROOT, load_script

RESULTS = ROOT / "results"


def _outputs(chapter: str) -> list[str]:
    nb = json.loads((ROOT / "chapters" / chapter).read_text())
    lines = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                lines += "".join(out["text"]).splitlines()
    return lines


def _line(lines: list[str], start: str) -> str:
    found = [ln for ln in lines if ln.strip().startswith(start)]
    assert len(found) >= 1, f"no output line starts with {start!r}"
    return found[0].strip()


def test_results_are_small_files_only():
    files = [p for p in RESULTS.rglob("*") if p.is_file()]
    assert files, "results/ is empty"
    for p in files:
        assert p.suffix in {
            ".json",
            ".jsonl",
            ".png",
            ".md",
        }, f"{p} is not a small result file"
        assert p.stat().st_size < 2_000_000, f"{p} is too large to commit"


RECORDED = ("cpu-full", "cpu-30min")  # the recorded CPU runs chapter 12 prints


@pytest.mark.parametrize("name", RECORDED)
def test_recorded_cpu_run_is_complete(name):
    s = json.loads((RESULTS / name / "summary.json").read_text())
    for key in (
        "bleu",
        "bleu_lc",
        "chrf",
        "signatures",
        "selection",
        "selected",
        "train_time_s",
        "tokens_per_s",
        "model_flops_per_s",
        "hardware",
        "config",
        "recorded",
        "steps",
        "epochs",
    ):
        assert key in s, f"results/{name}/summary.json lacks {key!r}"
    assert s["preset"] == name and s["hardware"]["device"] == "cpu"
    assert {"date", "command", "commit"} <= set(s["recorded"])
    assert s["selected"] in s["selection"] and set(s["bleu"]) == {"greedy", "beam"}
    assert all(math.isfinite(v) for v in s["bleu"].values())
    records = [
        json.loads(ln)
        for ln in (RESULTS / name / "metrics.jsonl").read_text().splitlines()
        if ln
    ]
    assert records[0]["kind"] == "start" and records[-1]["kind"] == "end"
    assert records[-1]["bleu"] == s["bleu"]  # the two files are of the same run


# the half-hour candidates, in the order they ran, each against the best recorded run
# before it (scripts/record_run.py --preset NAME --against AGAINST)
CANDIDATES = {"cpu-30min": "cpu-full", "cpu-30min-drop0.2": "cpu-30min"}


def _selected_val_bleu(s: dict) -> float:
    return s["selection"][s["selected"]]["val_bleu"]


@pytest.mark.parametrize("name", CANDIDATES)
def test_a_half_hour_candidate_was_chosen_on_validation_its_test_set_read_once(name):
    """results/NAME: at most 30 minutes of training, on a named CPU; its test set scored
    once, at the end, if and only if the validation BLEU of its selected weights beat
    the run it was measured against; otherwise recorded with the test set unread."""
    against = CANDIDATES[name]
    s = json.loads((RESULTS / name / "summary.json").read_text())
    theirs = json.loads((RESULTS / against / "summary.json").read_text())
    records = [
        json.loads(ln)
        for ln in (RESULTS / name / "metrics.jsonl").read_text().splitlines()
        if ln
    ]
    scored = [r for r in records if r["kind"] == "end" and "bleu" in r]
    assert s["recorded"]["script"].endswith(f"--against {against}")
    if _selected_val_bleu(s) > _selected_val_bleu(theirs):
        assert len(scored) == 1 and scored[0] is records[-1], "the test set, once"
    else:
        assert not scored and "bleu" not in s, "a losing candidate's test set, read"
        assert s["recorded"]["test_set"].endswith("the test set stays unread")
    assert s["train_time_s"] <= 30 * 60 and s["world_size"] == 1
    assert s["hardware"]["cpu"] and s["hardware"]["torch_threads"] == 2


@pytest.mark.parametrize("name", RECORDED)
def test_chapter_12_prints_the_recorded_run(name):
    s = json.loads((RESULTS / name / "summary.json").read_text())
    lines = _outputs("12_results_and_attention.ipynb")
    row = _line(lines, f"recorded CPU run ({name})").split()
    numbers = [float(x) for x in row[4:9]]
    expected = [
        s["bleu"]["greedy"],
        s["bleu"]["beam"],
        s["chrf"]["beam"],
        s["bleu_lc"]["beam"],
        s["steps"],
    ]
    assert numbers == [round(x, 2) for x in expected], (row, expected)
    precision = "bf16 autocast" if s["bf16_autocast"] else "float32"
    assert float(row[9]) == round(s["epochs"], 1) and row[10] == s["selected"] + ","
    assert " ".join(row[11:]) == precision  # the precision it trained in, beside it
    detail = next(
        ln
        for ln in lines
        if ln.startswith(f"recorded CPU run ({name}):") and "min of training" in ln
    )
    assert f"{s['train_time_s'] / 60:.1f} min of training" in detail
    assert (
        f"{s['tokens_per_s']:,.0f} tokens/s" in detail
        and s["recorded"]["date"] in detail
    )
    # with its machine and precision
    assert s["hardware"]["cpu"] in detail and precision in detail
    for weights, c in s["selection"].items():
        assert f"{weights:>8}: validation BLEU {c['val_bleu']:.2f}" in "\n".join(lines)


def test_chapter_11b_prints_the_size_sweep():
    sweep = json.loads((RESULTS / "size_sweep.json").read_text())
    lines = _outputs("11b_training.ipynb")
    assert len(sweep["rows"]) >= 3
    for r in sweep["rows"]:
        row = _line(lines, r["name"] + " ").split()
        assert row[0] == r["name"]
        assert float(row[1].rstrip("M")) == round(r["parameters"] / 1e6, 1)
        assert int(row[3]) == r["steps"] and float(row[4]) == round(r["epochs"], 2)
        assert float(row[5]) == round(r["train_time_s"]) and float(row[7]) == round(
            r["val_loss"], 3
        )
        assert float(row[8]) == round(r["val_bleu"], 2)


@pytest.mark.parametrize("name", ["size_sweep.json"])
def test_sweep_is_a_fair_comparison(name):
    sweep = json.loads((RESULTS / name).read_text())
    times = [r["steps"] * r["probe_s_per_step"] for r in sweep["rows"]]
    assert all(
        abs(t - sweep["budget_s"]) <= r["probe_s_per_step"]
        for t, r in zip(times, sweep["rows"])
    )
    assert len({(r["d_model"], r["layers"]) for r in sweep["rows"]}) == len(
        sweep["rows"]
    )


def test_table3_holds_every_row_with_its_seed_and_machine():
    """The rerun of the paper's Table 3: every row the script defines, all of one budget
    and one machine, the base row over three seeds."""
    script = load_script("table3")
    table = json.loads((RESULTS / "table3.json").read_text())
    rows = table["rows"]
    assert set(rows) == set(script.ROWS), set(script.ROWS) ^ set(rows)
    assert len({r["seed"] for r in rows.values() if r["group"] == "base"}) >= 3
    for name, r in rows.items():
        group, change, model_fields, recipe, seed = script.ROWS[name]
        assert (
            r["group"],
            r["change"],
            r["model_fields"],
            r["recipe_fields"],
            r["seed"],
        ) == (group, change, model_fields, recipe, seed), name
        assert r["steps"] == table["steps"], (
            f"{name}: {r['steps']} steps, the table's budget is {table['steps']}"
        )
        assert (
            r["threads"] == 1
            and r["precision"] in ("bf16", "fp32")
            and r["hardware"]["cpu"]
        )
        assert (
            r["date"]
            and r["command"]
            == f"python scripts/table3.py --row {name} --steps {table['steps']}"
        )
        assert math.isclose(r["val_ppl"], math.exp(r["val_nll"]))
        assert 0 < r["val_bleu_greedy"] < 100 and 0 < r["val_bleu_beam"] < 100
    assert (
        len(
            {
                (r["hardware"]["cpu"], r["precision"], r["hardware"]["torch"])
                for r in rows.values()
            }
        )
        == 1
    )
    assert table["sessions"] and all(s["wall_s"] > 0 for s in table["sessions"])


def test_chapter_12_prints_table3():
    table = json.loads((RESULTS / "table3.json").read_text())
    lines = _outputs("12_results_and_attention.ipynb")
    for name, r in table["rows"].items():
        row = _line(lines, name + " ")
        for value in (r["val_ppl"], r["val_bleu_greedy"], r["val_bleu_beam"]):
            assert f"{value:.2f}" in row.split("|")[0], (name, value, row)


BENCH = ROOT / "benchmarks" / "results"
# An operator count, not a timing or a rate: the file names the machine it was counted
# on, and neither threads nor precision change a count.
BENCH_COUNTS_ONLY = {"gpu_path_ops.json"}


@pytest.mark.parametrize("path", sorted(BENCH.glob("*.json")), ids=lambda p: p.stem)
def test_every_benchmark_file_names_its_machine_threads_and_precision(path):
    """`make bench` writes them (benchmarks/_common.write_result); a chapter prints them
    beside a figure."""
    record = json.loads(path.read_text())
    machine = record.get("machine")
    assert isinstance(machine, str) and machine.strip(), f"{path.name}: no machine"
    assert machine != "x86_64", (
        f"{path.name}: the architecture only; name the CPU model or say it was not"
        " recorded"
    )
    assert " " in machine or "not recorded" in machine, (
        f"{path.name}: {machine!r} names no CPU model"
    )
    if path.name in BENCH_COUNTS_ONLY:
        return
    assert isinstance(record.get("threads"), int) and record["threads"] >= 1, (
        f"{path.name}: no thread count"
    )
    assert isinstance(record.get("precision"), str) and record["precision"], (
        f"{path.name}: no precision"
    )


def test_chapter_10_prints_the_benchmark_with_its_machine_and_precision():
    recorded = json.loads((BENCH / "decoding_cache.json").read_text())
    line = _line(_outputs("10_decoding.ipynb"), "recorded benchmark")
    assert recorded["machine"] in line and recorded["precision"] in line, line
