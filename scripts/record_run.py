"""Record a CPU run for the book: train a preset, then commit-sized copies of its
results.

    python scripts/record_run.py --preset cpu-full
    python scripts/record_run.py --preset cpu-30min --against cpu-full

Runs exactly what `make train PRESET=cpu-full` runs
(`python -m transformer_lib.train --preset cpu-full --out runs/cpu-full`), then writes
`results/<preset>/summary.json` (the run's summary plus a `recorded` block: date,
command, commit) and `results/<preset>/metrics.jsonl`. With `--against NAME` the run is
chosen on validation only: it trains (or finishes `runs/<preset>`) scoring the
validation set, and scores the test set once, at the end, only if the validation BLEU
of its selected weights beats that of the recorded run NAME's (otherwise the run is
recorded all the same, its test set unread). The checkpoints stay in `runs/`
(git-ignored). Chapter 12 shows the files; `tests/test_results.py` checks that
the book prints what they hold."""

import argparse
import datetime
import json
import shutil
import subprocess
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]

from transformer_lib.train import main as train_main
from transformer_lib.training import native_bf16


def selected_val_bleu(summary: dict) -> float:
    """Validation BLEU (greedy) of the weights the run selected, the ones the test set
    scores: the final weights, their average or the best seen."""
    return summary["selection"][summary["selected"]]["val_bleu"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="cpu-full")
    ap.add_argument(
        "--against",
        default=None,
        metavar="NAME",
        help="a recorded run (results/NAME): train (or finish runs/PRESET) scoring the "
        "validation set only, and score the test set, once, only if this run's "
        "validation BLEU beats that run's",
    )
    args = ap.parse_args()
    run = ROOT / "runs" / args.preset
    command = ["--preset", args.preset, "--out", str(run), "--no-progress"]
    if args.against:
        chosen = train_main([*command, "--resume", "auto", "--eval"])
        theirs = json.loads(
            (ROOT / "results" / args.against / "summary.json").read_text()
        )
        ours, best = selected_val_bleu(chosen), selected_val_bleu(theirs)
        if ours <= best:
            # recorded all the same, validation only: every run of the book is recorded
            unread = (
                f"{args.preset}: validation BLEU {ours:.2f}, not above "
                f"{args.against}'s {best:.2f}; the test set stays unread"
            )
            _record(args, run, chosen, test_set=unread)
            raise SystemExit(unread)
        print(
            f"{args.preset}: validation BLEU {ours:.2f} against "
            f"{args.against}'s {best:.2f}: the test set, scored once"
        )
        command.append("--resume")
    summary = train_main(command)
    out = _record(args, run, summary, test_set="scored once, at the end")
    print(
        f"recorded {args.preset}: BLEU greedy {summary['bleu']['greedy']:.2f}, beam"
        f" {summary['bleu']['beam']:.2f}, {summary['train_time_s'] / 60:.1f} min of"
        f" training -> {out}"
    )


def _record(
    args: argparse.Namespace, run: Path, summary: dict, *, test_set: str
) -> Path:
    """Write results/PRESET: the run's summary, with how it was recorded, and its
    metrics.jsonl."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    summary["recorded"] = {
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "command": f"make train PRESET={args.preset}",
        "script": f"python scripts/record_run.py --preset {args.preset}"
        + (f" --against {args.against}" if args.against else ""),
        "test_set": test_set,
        # so that a reader can scale: bf16 autocast where the CPU multiplies bf16 itself
        "native_bf16": native_bf16("cpu"),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }
    out = ROOT / "results" / args.preset
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    shutil.copy(run / "metrics.jsonl", out / "metrics.jsonl")
    return out


if __name__ == "__main__":
    main()
