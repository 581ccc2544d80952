"""Every benchmark record names the CPU model, the threads and the precision of its
figures.

The chapters print these beside every figure they read from `benchmarks/results/`; a
record that lacks one leaves a reader unable to tell which machine a speed claim
describes. Every benchmark writes through `benchmarks/_common.write_result`, which adds
them (and refuses a record whose precision nobody states); these tests write a record
with it and check each script uses it."""

from __future__ import annotations

import ast
import importlib.util
import json
import platform
from pathlib import Path

import pytest
import torch

from conftest import ROOT

BENCH = ROOT / "benchmarks"


def _common():
    spec = importlib.util.spec_from_file_location("bench_common", BENCH / "_common.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _model_name() -> str:
    """The CPU's model name as /proc/cpuinfo states it (this test runs on Linux)."""
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    return next(
        (ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), ""
    )


def test_a_written_record_names_the_cpu_model_threads_and_precision(tmp_path):
    common = _common()
    out = common.write_result(
        "x",
        {"ratio": 1.5, "machine": "typed by hand"},
        precision="float32",
        path=tmp_path / "x.json",
    )
    record = json.loads(out.read_text())
    model = _model_name()
    if not model:
        pytest.skip(
            "/proc/cpuinfo names no model on this machine (lscpu is the writer's"
            " fallback)"
        )
    assert record["cpu_model"] == model
    # the machine measured, never a typed one
    assert record["machine"] == f"{platform.machine()} {model}"
    assert record["threads"] == torch.get_num_threads() and record["threads"] >= 1
    assert record["precision"] == "float32" and record["torch"] == torch.__version__
    assert record["ratio"] == 1.5
    kept = json.loads(
        common.write_result(
            "y", {"threads": 1, "precision": "bf16 autocast"}, path=tmp_path / "y.json"
        ).read_text()
    )
    # the result's own, where it states them
    assert kept["threads"] == 1 and kept["precision"] == "bf16 autocast"


def test_a_record_without_a_precision_is_refused(tmp_path):
    with pytest.raises(ValueError, match="precision=None; expected"):
        _common().write_result("x", {"ratio": 1.5}, path=tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def _calls(tree: ast.AST) -> set[str]:
    return {
        (
            node.func.attr
            if isinstance(node.func, ast.Attribute)
            else getattr(node.func, "id", "")
        )
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }


@pytest.mark.parametrize(
    "script",
    sorted(
        p.name for p in BENCH.glob("*.py") if p.name not in {"_common.py", "run_all.py"}
    ),
)
def test_every_benchmark_writes_its_record_through_the_shared_writer(script):
    calls = _calls(ast.parse((BENCH / script).read_text()))
    assert "write_result" in calls, (
        f"{script} writes no record through _common.write_result"
    )
    assert not calls & {
        "write_text",
        "dump",
    }, f"{script} writes a file itself, without the CPU model, threads and precision"
