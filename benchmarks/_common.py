"""Shared by the benchmark scripts: where results go and how they are written."""
import json
import platform
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> str:
    """A short description of the CPU the benchmark ran on."""
    return f"{platform.machine()} {platform.processor() or ''}".strip()


def write_result(name: str, result: dict) -> Path:
    """Write `result` (with the torch version added) to `benchmarks/results/<name>.json`."""
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{name}.json"
    out.write_text(json.dumps({**result, "torch": torch.__version__}, indent=2) + "\n")
    print(f"wrote {out}")
    return out
