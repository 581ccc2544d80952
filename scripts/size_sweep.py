"""Model size at equal training time: which width and depth give the best validation
BLEU?

For each candidate of chapter 11b's CPU recipe (all 29,000 Multi30k pairs, bf16 autocast
where native, 2 threads, the same peak learning rate and warm-up), a 50-step probe
measures the seconds per step on this machine (the median of its 10-step windows after
the first, so a moment of disturbance does not count); all probes run first, back to
back. Each candidate then trains for as many steps as fit in the budget (so the training
itself is deterministic: another process disturbing the machine changes the time, not
the result) and translates the whole validation set (1,014 sentences, greedy). The test
set is not touched: the chapter's model is chosen on validation BLEU. Writes
`results/size_sweep.json`, which chapter 11b shows.

    python scripts/size_sweep.py [--budget 300] [--out results/size_sweep.json]
"""

import argparse
import datetime
import json
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from transformer_lib.training import (
    TrainConfig,
    hardware_info,
    multi30k_data,
    read_metrics,
    run_training,
)

WARMUP = 200  # steps of linear warm-up
# the same peak learning rate for every width (lr_scale undoes d_model**-0.5)
PEAK_LR = 3e-3
CANDIDATES = [  # (d_model, heads, encoder layers, decoder layers, d_ff)
    (128, 4, 2, 2, 512),
    (128, 4, 3, 3, 512),
    (192, 4, 2, 2, 768),
    (256, 4, 2, 2, 1024),
]


def candidate_config(
    d: int, h: int, ne: int, nd: int, ff: int, **overrides
) -> TrainConfig:
    settings = dict(
        warmup_steps=WARMUP,
        lr_scale=PEAK_LR * (d * WARMUP) ** 0.5,
        eval_every=10**7,
        average_last=1,
        log_every=20,
    )
    return TrainConfig.from_preset(
        "cpu",
        model=dict(
            d_model=d, n_heads=h, n_encoder_layers=ne, n_decoder_layers=nd, d_ff=ff
        ),
        **{**settings, **overrides},
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--budget", type=float, default=300.0, help="training seconds per candidate"
    )
    ap.add_argument("--out", default=str(ROOT / "results" / "size_sweep.json"))
    ap.add_argument("--runs", default=str(ROOT / "runs" / "size_sweep"))
    args = ap.parse_args()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    tokenizer = ROOT / "runs" / "multi30k_bpe8k.json"
    data = multi30k_data(
        candidate_config(*CANDIDATES[0], steps=1), tokenizer_path=tokenizer
    )
    probes = {}
    for cand in CANDIDATES:  # all probes first, back to back
        probe_dir = Path(args.runs) / "probes" / "_".join(map(str, cand))
        run_training(
            candidate_config(*cand, steps=50, log_every=10, eval_bleu_sentences=1),
            data,
            probe_dir,
            progress=False,
            final_eval=(),
        )
        # steps 10, 20, ...
        ends = [r["elapsed_s"] for r in read_metrics(probe_dir) if r["kind"] == "train"]
        # windows 11-20, ...
        probes[cand] = statistics.median((b - a) / 10 for a, b in zip(ends, ends[1:]))
        print(f"probe {cand}: {probes[cand]:.3f} s/step", flush=True)
    rows = []
    for cand in CANDIDATES:
        d, h, ne, nd, ff = cand
        name = f"d{d}_L{ne}+{nd}"
        steps = int(args.budget / probes[cand])
        cfg = candidate_config(*cand, steps=steps)
        _, s = run_training(
            cfg, data, Path(args.runs) / name, progress=False, final_eval=()
        )
        rows.append(
            {
                "name": name,
                "d_model": d,
                "n_heads": h,
                "layers": f"{ne}+{nd}",
                "d_ff": ff,
                "parameters": s["parameters"],
                "probe_s_per_step": probes[cand],
                "steps": s["steps"],
                "epochs": s["epochs"],
                "train_time_s": s["train_time_s"],
                "tokens_per_s": s["tokens_per_s"],
                "val_loss": s["val_loss"],
                "val_bleu": s["val_bleu"],
            }
        )
        print(json.dumps(rows[-1]), flush=True)
        Path(args.out).write_text(
            json.dumps(
                {
                    "question": (
                        "validation BLEU (greedy, all 1,014 sentences) after the same"
                        " training time"
                    ),
                    "budget_s": args.budget,
                    "warmup_steps": WARMUP,
                    "peak_lr": PEAK_LR,
                    "date": datetime.date.today().isoformat(),
                    "commit": commit,
                    "command": "python scripts/size_sweep.py --budget %g" % args.budget,
                    "hardware": hardware_info("cpu"),
                    "rows": rows,
                },
                indent=2,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
