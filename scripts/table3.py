"""The paper's Table 3 (§6.2), rerun at Multi30k scale on a CPU: which parts of the
recipe matter?

Every row changes one thing of one base model and trains for the same number of steps
(not the same time: another process on the machine then changes how long a row takes,
never its result), on all 29,000 Multi30k pairs, with the `cpu` preset's recipe
(warm-up, peak learning rate rule, batch size, checkpoint averaging, model selection on
validation BLEU). The base row is trained with three seeds, so the table shows how far
two runs of one recipe differ. Each row is then scored on the validation set only, as
the paper's Table 3 is (newstest2013 there): perplexity (per BPE token, exp of the
unsmoothed loss) and sacreBLEU with greedy decoding and with beam search. The test set
is not touched.

The rows follow the paper's groups at this scale (base: d_model 128, 4 heads, 2+2
layers, d_ff 512, dropout 0.1, label smoothing 0.1, sinusoidal positions):
(A) heads 1, 2, 8, 16 at constant d_model (d_k = d_v = d_model / h);
(B) a key size d_k of 16 and 8 at 4 heads, the values' width d_v = 32 unchanged;
(C) depth 1+1 and 3+3, d_model 64 and 256 (4 heads), d_ff 256 and 1024;
(D) dropout 0 and 0.3, label smoothing 0 and 0.2;
(E) learned positions instead of the sinusoids.
The peak learning rate follows the paper's rule, lr = lr_scale * d_model^-0.5 *
min(...): the d_model rows change it as they did in the paper.

Each row is one command, and a row already in the results file is not run again:

    python scripts/table3.py --row A-h1  # one row (1 thread)
    python scripts/table3.py --jobs 2    # every missing row, two processes of 1 thread
    python scripts/table3.py --list      # the rows and what each changes

Writes `results/table3.json` (every row with its settings, scores, machine, threads,
precision, date and times); the runs' folders go to `runs/table3/<row>`.
"""

import argparse
import datetime
import fcntl
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "table3.json"
RUNS = ROOT / "runs" / "table3"
# every row's optimiser steps: the `cpu` preset's budget (2.5 epochs of Multi30k)
STEPS = 615
BEAM_SIZE, LENGTH_PENALTY = 4, 0.6  # the paper's beam search (§6.1)

# name -> (group, what changes, model fields, recipe fields, seed)
ROWS: dict[str, tuple[str, str, dict, dict, int]] = {
    "base": ("base", "base", {}, {}, 0),
    "base-seed1": ("base", "base, seed 1", {}, {}, 1),
    "base-seed2": ("base", "base, seed 2", {}, {}, 2),
    "A-h1": ("A", "h = 1 (d_k = 128)", {"n_heads": 1}, {}, 0),
    "A-h2": ("A", "h = 2 (d_k = 64)", {"n_heads": 2}, {}, 0),
    "A-h8": ("A", "h = 8 (d_k = 16)", {"n_heads": 8}, {}, 0),
    "A-h16": ("A", "h = 16 (d_k = 8)", {"n_heads": 16}, {}, 0),
    "B-dk16": ("B", "d_k = 16 (d_v = 32)", {"d_k": 16}, {}, 0),
    "B-dk8": ("B", "d_k = 8 (d_v = 32)", {"d_k": 8}, {}, 0),
    "C-N1": ("C", "N = 1", {"n_encoder_layers": 1, "n_decoder_layers": 1}, {}, 0),
    "C-N3": ("C", "N = 3", {"n_encoder_layers": 3, "n_decoder_layers": 3}, {}, 0),
    "C-d64": ("C", "d_model = 64 (d_k = 16)", {"d_model": 64}, {}, 0),
    "C-d256": ("C", "d_model = 256 (d_k = 64)", {"d_model": 256}, {}, 0),
    "C-ff256": ("C", "d_ff = 256", {"d_ff": 256}, {}, 0),
    "C-ff1024": ("C", "d_ff = 1024", {"d_ff": 1024}, {}, 0),
    "D-drop0": ("D", "P_drop = 0.0", {"dropout": 0.0}, {}, 0),
    "D-drop0.3": ("D", "P_drop = 0.3", {"dropout": 0.3}, {}, 0),
    "D-ls0": ("D", "ε_ls = 0.0", {}, {"label_smoothing": 0.0}, 0),
    "D-ls0.2": ("D", "ε_ls = 0.2", {}, {"label_smoothing": 0.2}, 0),
    "E-learned": ("E", "learned positional embedding", {"positions": "learned"}, {}, 0),
}


def row_config(name: str, steps: int = STEPS):
    """The `TrainConfig` of one row: the `cpu` preset, its fields changed, one
    thread."""
    from transformer_lib.training import TrainConfig

    _, _, model, recipe, seed = ROWS[name]
    return TrainConfig.from_preset("cpu").updated(
        {
            "model": model,
            "steps": steps,
            "seed": seed,
            "num_threads": 1,
            "eval_every": 10**7,
            "log_every": 25,
            "final_checkpoint": False,
            **recipe,
        }
    )


def run_row(name: str, steps: int, runs: Path = RUNS) -> dict:
    """Train one row and score it on the validation set; return its record."""
    from transformer_lib import Transformer
    from transformer_lib.training import (
        corpus_bleu,
        hardware_info,
        multi30k_data,
        native_bf16,
        run_training,
        translate,
    )

    cfg = row_config(name, steps)
    data = multi30k_data(cfg, tokenizer_path=ROOT / "runs" / "multi30k_bpe8k.json")
    t0 = time.perf_counter()
    trained, s = run_training(cfg, data, runs / name, progress=False, final_eval=())
    model = cast(Transformer, trained)  # the selected weights, in eval mode
    train_wall = time.perf_counter() - t0
    sources, refs = [x for x, _ in data.val_pairs], [y for _, y in data.val_pairs]
    t1 = time.perf_counter()
    greedy, _ = corpus_bleu(translate(model, sources, data, method="greedy"), refs)
    beam, signature = corpus_bleu(
        translate(
            model,
            sources,
            data,
            method="beam",
            beam_size=BEAM_SIZE,
            length_penalty=LENGTH_PENALTY,
        ),
        refs,
    )
    group, label, model_fields, recipe, seed = ROWS[name]
    return {
        "row": name,
        "group": group,
        "change": label,
        "model_fields": model_fields,
        "recipe_fields": recipe,
        "seed": seed,
        "steps": s["steps"],
        "epochs": s["epochs"],
        "parameters": s["parameters"],
        "selected": s["selected"],
        "val_ppl": math.exp(s["val_nll"]),
        "val_nll": s["val_nll"],
        "val_bleu_greedy": greedy,
        "val_bleu_beam": beam,
        "bleu_signature": signature,
        "train_time_s": s["train_time_s"],
        "run_wall_s": train_wall,
        "decode_wall_s": time.perf_counter() - t1,
        "tokens_per_s": s["tokens_per_s"],
        "precision": s.get("precision", "bf16" if s.get("bf16_autocast") else "fp32"),
        "threads": 1,
        "hardware": {**hardware_info("cpu"), "native_bf16": native_bf16("cpu")},
        "date": (
            datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        ),
        "command": f"python scripts/table3.py --row {name} --steps {steps}",
    }


def _read(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {"rows": {}}


def _lock(runs: Path):
    """The lock two row processes take in turn to rewrite the results file (kept with
    the runs)."""
    runs.mkdir(parents=True, exist_ok=True)
    return open(runs / "results.lock", "w")


def _write_row(path: Path, record: dict, steps: int, runs: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with _lock(runs) as lock:
        # two rows finishing at once: one after the other
        fcntl.flock(lock, fcntl.LOCK_EX)
        _merge_row(path, record, steps)


def _merge_row(path: Path, record: dict, steps: int) -> None:
    table = _read(path)  # rows written by other processes are kept
    table["rows"][record["row"]] = record
    table.pop("not_run", None)  # written before row (B) could be built
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    table.update(
        {
            "question": (
                "Table 3 of the paper at Multi30k scale: validation perplexity and BLEU"
                " of one-change variants of one base model, after the same number of"
                " steps"
            ),
            "steps": steps,
            "beam": {"beam_size": BEAM_SIZE, "length_penalty": LENGTH_PENALTY},
            "data": "Multi30k de-en, 29,000 training pairs; validation: 1,014 pairs",
            "commit": commit,
        }
    )
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(table, indent=2, ensure_ascii=False) + "\n")
    tmp.replace(path)  # a reader never sees half a file


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--row", choices=sorted(ROWS), help="run this row only")
    ap.add_argument(
        "--jobs", type=int, default=2, help="rows trained at once, one thread each"
    )
    ap.add_argument(
        "--steps", type=int, default=STEPS, help="optimiser steps of every row"
    )
    ap.add_argument("--list", action="store_true", help="print the rows and exit")
    ap.add_argument("--out", type=Path, default=RESULTS, help="the results file")
    ap.add_argument("--runs", type=Path, default=RUNS, help="the runs' folders")
    args = ap.parse_args()
    if args.list:
        for name, (group, label, *_rest) in ROWS.items():
            print(f"{name:12s} ({group}) {label}")
        return
    if args.row:
        record = run_row(args.row, args.steps, args.runs)
        _write_row(args.out, record, args.steps, args.runs)
        print(
            json.dumps(
                {
                    k: record[k]
                    for k in (
                        "row",
                        "val_ppl",
                        "val_bleu_greedy",
                        "val_bleu_beam",
                        "train_time_s",
                    )
                }
            ),
            flush=True,
        )
        return
    started = time.time()
    todo = [n for n in ROWS if n not in _read(args.out)["rows"]]
    running: dict[subprocess.Popen, str] = {}  # a row's process -> the row
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    while todo or running:
        while todo and len(running) < args.jobs:
            name = todo.pop(0)
            print(f"start {name}", flush=True)
            running[
                subprocess.Popen(
                    [
                        sys.executable,
                        __file__,
                        "--row",
                        name,
                        "--steps",
                        str(args.steps),
                        "--out",
                        str(args.out),
                        "--runs",
                        str(args.runs),
                    ],
                    env=env,
                )
            ] = name
        time.sleep(2)
        for p in [p for p in running if p.poll() is not None]:
            name = running.pop(p)
            if p.returncode != 0:
                print(
                    f"a row failed (exit {p.returncode}): {name}",
                    file=sys.stderr,
                    flush=True,
                )
    with _lock(args.runs) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        table = _read(args.out)
        table.setdefault("sessions", []).append(
            {
                "jobs": args.jobs,
                "wall_s": time.time() - started,
                "rows_done": len(table["rows"]),
            }
        )
        args.out.write_text(json.dumps(table, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
