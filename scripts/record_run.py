"""Record a CPU run for the book: train a preset, then commit-sized copies of its results.

    python scripts/record_run.py --preset cpu-full [--threads 2]

Runs exactly what `make train PRESET=cpu-full` runs (`python -m transformer_lib.train --preset
cpu-full --out runs/cpu-full`), then writes `results/<preset>/summary.json` (the run's summary
plus a `recorded` block: date, command, commit) and `results/<preset>/metrics.jsonl`. The
checkpoints stay in `runs/` (git-ignored). Chapter 12 shows the files; `tests/test_results.py`
checks that the book prints what they hold.
"""
import argparse
import datetime
import json
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from transformer_lib.train import main as train_main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="cpu-full")
    args = ap.parse_args()
    run = ROOT / "runs" / args.preset
    summary = train_main(["--preset", args.preset, "--out", str(run), "--no-progress"])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    summary["recorded"] = {"date": datetime.date.today().isoformat(), "commit": commit,
                           "command": f"make train PRESET={args.preset}",
                           "script": f"python scripts/record_run.py --preset {args.preset}"}
    out = ROOT / "results" / args.preset
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    shutil.copy(run / "metrics.jsonl", out / "metrics.jsonl")
    print(f"recorded {args.preset}: BLEU greedy {summary['bleu']['greedy']:.2f}, beam {summary['bleu']['beam']:.2f}, "
          f"{summary['train_time_s'] / 60:.1f} min of training -> {out}")


if __name__ == "__main__":
    main()
