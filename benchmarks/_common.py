"""Shared by the benchmark scripts: where results go and how they are written."""

import json
import os
import platform
import subprocess
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]


def cpu_model() -> str:
    """The CPU's model name: /proc/cpuinfo's "model name", else lscpu's "Model name"
    (ARM's cpuinfo has none), else the platform's processor string; "" where none of
    them names it."""
    try:
        with open("/proc/cpuinfo") as f:
            name = next(
                (
                    line.split(":", 1)[1].strip()
                    for line in f
                    if line.startswith("model name")
                ),
                "",
            )
        if name:
            return name
    except OSError:
        pass
    try:
        out = subprocess.run(
            ["lscpu"], capture_output=True, text=True, check=False
        ).stdout
        name = next(
            (
                line.split(":", 1)[1].strip()
                for line in out.splitlines()
                if line.startswith("Model name")
            ),
            "",
        )
        if name:
            return name
    except OSError:
        pass
    return platform.processor()


def machine() -> str:
    """A short description of the CPU the benchmark ran on: architecture and model
    name."""
    return f"{platform.machine()} {cpu_model() or '(CPU model not found)'}".strip()


def bf16_result_name(name: str, bf16: bool) -> str:
    """The result name of a benchmark whose figures depend on bf16: `name` where the CPU
    multiplies bf16 natively (or the step ran under bf16 autocast), `name_fp32` where it
    does not. Chapter 11b shows both kinds, so `make bench` on one kind of machine must
    not overwrite the other's."""
    return name if bf16 else f"{name}_fp32"


def write_result(
    name: str, result: dict, precision: str | None = None, path: Path | None = None
) -> Path:
    """Write `result` to `benchmarks/results/<name>.json` (or `path`) with what produced
    it: the CPU (`machine`: architecture and model name, and `cpu_model` alone), the
    threads (`threads`, unless the result gives them: the count at the end otherwise),
    the precision of the figures (`precision`: the argument, else the result's own; a
    result that states neither is refused) and the torch version. Chapters print these
    beside every figure they read from the file."""
    precision = precision or result.get("precision")
    if not isinstance(precision, str) or not precision:
        raise ValueError(
            f"write_result({name!r}): precision={precision!r}; expected the precision"
            " of the figures, e.g. 'float32' or 'bf16 autocast' (as an argument or the"
            " result's 'precision')"
        )
    out = path or RESULTS / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        k: v
        for k, v in result.items()
        if k not in ("machine", "cpu_model", "precision")
    }
    record = {
        "machine": machine(),
        "cpu_model": cpu_model(),
        "threads": torch.get_num_threads(),
        **result,
        "precision": precision,
        "torch": torch.__version__,
    }
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out}")
    return out


def spread_batches(cfg, n_batches: int) -> tuple:
    """The Multi30k data of `cfg` (`TRANSFORMER_DATA_DIR` or ../shared/data) and
    `n_batches` training batches of its epoch 0 as `run_training` makes them, spread
    evenly over the epoch (every k-th)."""
    from transformer_lib.training import multi30k_data

    data = multi30k_data(
        cfg,
        os.environ.get("TRANSFORMER_DATA_DIR", str(ROOT.parent / "shared" / "data")),
    )
    epoch = list(data.train_batches(0, 0, 1))  # epoch 0, as one process of one
    return data, epoch[:: max(1, len(epoch) // n_batches)][:n_batches]
