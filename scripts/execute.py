"""Execute chapters top to bottom in a fresh kernel and store their outputs.

    python scripts/execute.py chapters/01_qkv_attention.ipynb [more.ipynb ...]

Each notebook runs with its own folder as the working directory, stores widget state
(so the HTML book can show the widgets) and fails loudly on the first error, except in
cells tagged ``raises-exception`` that demonstrate an error on purpose.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path, timeout: int = 1200) -> float:
    nb = nbformat.read(path, as_version=4)
    # Reproducible, quiet runs: one thread of BLAS, no tqdm in monitor threads.
    os.environ.setdefault("PYTHONHASHSEED", "0")
    # Figures are displayed inline whatever the caller exported (MPLBACKEND=Agg shows nothing,
    # and the stored outputs would lose their figures); the kernel inherits this environment.
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
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
    nbformat.write(nb, path)
    return elapsed


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        secs = execute(Path(arg))
        print(f"{arg}: executed in {secs:.1f} s")
