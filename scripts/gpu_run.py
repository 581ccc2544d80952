"""The GPU run of chapter 11b: train the `base` preset within a time budget, evaluate, report.

    python scripts/gpu_run.py --out OUT [--budget 420] [--smoke] [--data multi30k|toy]

Trains the paper's base model on Multi30k de->en (bf16 autocast on CUDA) until `--budget`
seconds of training have passed, then scores test_2016_flickr with sacreBLEU (greedy and beam
search, beam 4, alpha 0.6) and writes into OUT, small files only (the checkpoint stays in
--run-dir):

    summary.json    BLEU, sacreBLEU signature, time, hardware, tokens/s, model FLOPs/s and MFU
    metrics.jsonl   the training and validation curves, one record per line
    curves.png      loss, validation BLEU and learning rate against the step
    samples.md      20 test sentences: source, reference, greedy and beam translations

`--smoke` is the same code path on a CPU with a tiny model and a 30-second budget, to test the
script before spending GPU time on it. Run it through scripts/gpu_run.sh.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from transformer_lib.training import (TrainConfig, multi30k_data, read_metrics,  # noqa: E402
                                      run_training, toy_translation_data)

H200_BF16_DENSE_PEAK = 989e12   # FLOP/s, NVIDIA's H200 SXM datasheet (dense, no sparsity)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder for the small result files")
    p.add_argument("--run-dir", default=str(ROOT / "runs" / "gpu"), help="run folder (checkpoint)")
    p.add_argument("--budget", type=float, default=420.0, help="training seconds (default 420)")
    p.add_argument("--smoke", action="store_true", help="tiny model on CPU, to test the script")
    p.add_argument("--data", default="multi30k", choices=["multi30k", "toy"])
    p.add_argument("--data-dir", default=None, help="Multi30k folder (default: $TRANSFORMER_DATA_DIR)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a TrainConfig field (as in python -m transformer_lib.train)")
    return p.parse_args(argv)


def config(args: argparse.Namespace) -> TrainConfig:
    from transformer_lib.train import _parse_field
    overrides = {}
    for item in args.set:
        name, text = item.split("=", 1)
        overrides[name] = _parse_field(name, text)
    if args.smoke:   # the same path on a CPU, with a model small enough for seconds
        base = dict(d_model=64, n_heads=4, n_encoder_layers=1, n_decoder_layers=1, d_ff=128,
                    max_tokens=2000, warmup_steps=100, log_every=10, eval_every=50,
                    eval_bleu_sentences=50, checkpoint_every=100, device="cpu")
    else:            # the paper's base model; Multi30k is 150x smaller than WMT: see the notes
        base = dict(max_tokens=12000, warmup_steps=2000, dropout=0.3, log_every=50,
                    eval_every=1000, eval_bleu_sentences=300, checkpoint_every=2000)
    return TrainConfig.from_preset("base", **{**base, "steps": 10**6, "time_budget_s": args.budget,
                                         **overrides})


def plot_curves(records: list[dict], path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tr = [r for r in records if r["kind"] == "train"]
    va = [r for r in records if r["kind"] == "val"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    axes[0].plot([r["step"] for r in tr], [r["loss"] for r in tr], label="training (label-smoothed)")
    axes[0].plot([r["step"] for r in va], [r["val_loss"] for r in va], "o-", label="validation (label-smoothed)")
    axes[0].set_xlabel("step")
    axes[0].set_ylabel("loss per token")
    axes[0].set_title("Does the loss go down?")
    axes[0].legend()
    axes[1].plot([r["step"] for r in va if "val_bleu" in r], [r["val_bleu"] for r in va if "val_bleu" in r], "o-")
    axes[1].set_xlabel("step")
    axes[1].set_ylabel("BLEU (validation subset, greedy)")
    axes[1].set_title("Does the translation improve?")
    axes[2].plot([r["step"] for r in tr], [r["lr"] for r in tr])
    axes[2].set_xlabel("step")
    axes[2].set_ylabel("learning rate")
    axes[2].set_title("The schedule that was followed")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    t0 = time.perf_counter()
    args = parse_args(argv)
    out, run_dir = Path(args.out), Path(args.run_dir)
    out.mkdir(parents=True, exist_ok=True)
    if run_dir.exists():
        shutil.rmtree(run_dir)
    cfg = config(args)
    device = "cuda" if torch.cuda.is_available() and cfg.device != "cpu" else "cpu"
    print(f"device: {torch.cuda.get_device_name(0) if device == 'cuda' else 'cpu'}; torch {torch.__version__}")
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    if args.data == "toy":
        data = toy_translation_data(seed=cfg.seed)
    else:
        data = multi30k_data(cfg, args.data_dir, tokenizer_path=run_dir / "tokenizer.json",
                             max_test_sentences=100 if args.smoke else None)
    print(f"data: {data.name}; config: {cfg}", flush=True)
    peak = H200_BF16_DENSE_PEAK if device == "cuda" else None
    _, summary = run_training(cfg, data, run_dir, progress=sys.stderr.isatty(), peak_flops=peak)
    summary["script_wall_s"] = time.perf_counter() - t0
    summary["smoke"] = args.smoke
    summary["peak_flops_note"] = ("H200 bf16 dense peak 989 TFLOP/s; model FLOPs = 6 per weight per "
                                  "real token + attention (transformer_lib.training.train_flops)")
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    shutil.copy(run_dir / "metrics.jsonl", out / "metrics.jsonl")
    hw = summary["hardware"].get("gpu", summary["hardware"]["cpu"])
    plot_curves(read_metrics(run_dir), out / "curves.png",
                f"{cfg.preset}{' (smoke)' if args.smoke else ''}: {summary['steps']} steps, "
                f"{summary['train_time_s']:.0f} s on {hw}")
    lines = [f"# Sample translations (test_2016_flickr, de->en), {hw}\n"]
    greedy, beam = summary["samples"]["greedy"], summary["samples"]["beam"]
    for g, b in zip(greedy, beam):
        lines += [f"- **de:** {g['src']}", f"  - reference: {g['ref']}", f"  - greedy: {g['hyp']}",
                  f"  - beam 4: {b['hyp']}", ""]
    (out / "samples.md").write_text("\n".join(lines))
    mfu = f", MFU {summary['mfu']:.1%}" if "mfu" in summary else ""
    print(f"BLEU greedy {summary['bleu']['greedy']:.2f}, beam {summary['bleu']['beam']:.2f} "
          f"({summary['bleu_signature']})")
    print(f"{summary['steps']} steps in {summary['train_time_s']:.0f} s, "
          f"{summary['tokens_per_s']:,.0f} tokens/s, {summary['model_flops_per_s'] / 1e12:.1f} TFLOP/s{mfu}; "
          f"script {summary['script_wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
