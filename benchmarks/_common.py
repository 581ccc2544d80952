"""Shared by the benchmark scripts: where results go and how they are written."""
import json
import os
import platform
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]


def machine() -> str:
    """A short description of the CPU the benchmark ran on: architecture and model name."""
    name = ""
    try:
        with open("/proc/cpuinfo") as f:
            name = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return f"{platform.machine()} {name or platform.processor() or ''}".strip()


def bf16_result_name(name: str, bf16: bool) -> str:
    """The result name of a benchmark whose figures depend on bf16: `name` where the CPU multiplies
    bf16 natively (or the step ran under bf16 autocast), `name_fp32` where it does not. Chapter 11b
    shows both kinds, so `make bench` on one kind of machine must not overwrite the other's."""
    return name if bf16 else f"{name}_fp32"


def write_result(name: str, result: dict, precision: str | None = None) -> Path:
    """Write `result` to `benchmarks/results/<name>.json` with what produced it: the CPU model
    (`machine`, unless the result names it), the threads (`threads`, unless the result gives them:
    the count at the end otherwise), the precision of the figures (`precision`: the argument, else
    the result's own; "not recorded" where neither says) and the torch version. Chapters print
    these beside every figure they read from the file."""
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{name}.json"
    record = {"machine": machine(), "threads": torch.get_num_threads(), **result,
              "precision": precision or result.get("precision", "not recorded"), "torch": torch.__version__}
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out}")
    return out


def spread_batches(cfg, n_batches: int) -> tuple:
    """The Multi30k data of `cfg` (`TRANSFORMER_DATA_DIR` or ../shared/data) and `n_batches` training
    batches of its epoch 0 as `run_training` makes them, spread evenly over the epoch (every k-th)."""
    from transformer_lib.training import multi30k_data
    data = multi30k_data(cfg, os.environ.get("TRANSFORMER_DATA_DIR", str(ROOT.parent / "shared" / "data")))
    epoch = list(data.train_batches(0, 0, 1))                  # epoch 0, as one process of one
    return data, epoch[::max(1, len(epoch) // n_batches)][:n_batches]
