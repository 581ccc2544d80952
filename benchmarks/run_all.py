"""Run every benchmark in this folder, one after the other (`make bench`).

Benchmarks are comparisons, not tests: each script times our implementation against a
reference (usually `torch.nn`) in the same process, alternating runs on one CPU thread,
and prints the median ratio. Each writes its figures to
`benchmarks/results/<name>.json`."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    scripts = sorted(
        p for p in HERE.glob("*.py") if p.name not in {"run_all.py", "_common.py"}
    )
    failed = []
    for script in scripts:
        print(f"== {script.name}", flush=True)
        if (
            subprocess.run([sys.executable, str(script)], cwd=HERE.parent).returncode
            != 0
        ):
            failed.append(script.name)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")
