"""The GPU run of chapter 11b: the paper's base model on Multi30k, made to succeed the
first time.

    python scripts/gpu_run.py --out OUT [--epochs 50] [--budget 420] [--smoke] \\
        [--data multi30k|toy]

1. **Preflight** (seconds): the packages the run needs import (sacrebleu, tokenizers,
   tqdm, matplotlib), the Multi30k files are present, CUDA is visible (unless --smoke),
   and a 20-step dry run of the real configuration trains: it also measures the seconds
   per step.
2. **Compile probe** (CUDA, optional): 20 steps under `torch.compile`; used only if they
   are faster than eager ones and the compilation fits in a tenth of the budget.
3. **Training stops by epochs** (`--epochs`, default 50: Multi30k is small and more
   epochs only over-fit), with `--budget` seconds as a safety net; validation BLEU (all
   1,014 sentences) every 5 epochs, a snapshot every epoch, and at the end the final,
   best and averaged (last 5 snapshots) weights compete on validation BLEU. The test set
   is scored once.
4. Results, small files only, into OUT (the checkpoints stay in --run-dir):

    summary.json    BLEU / chrF / lowercased BLEU, signatures, time, hardware, tokens/s,
                    FLOP/s, MFU
    metrics.jsonl   the training and validation curves, one record per line
    preflight.json  what the preflight found, the dry run's s/step, the compile probe
    curves.png      loss, validation BLEU and learning rate against the step
    samples.md      20 test sentences: source, reference, greedy and beam translations

The GPU machine cannot download: the data travels with the working tree. Before sending
it, copy the Multi30k files into the git-ignored folder `data/multi30k/` and name that
folder in the transfer (for this project's device tool: `carry: ["data/multi30k"]`):

    mkdir -p data/multi30k && cp ../shared/data/multi30k/*.gz data/multi30k/

`--smoke` is the same code path on a CPU with a tiny model, a few epochs and a 60-second
budget (`bash scripts/gpu_run.sh --smoke`, a test in CI). Run it through
scripts/gpu_run.sh."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import torch

from transformer_lib.training import (
    TrainConfig,
    TrainingData,
    multi30k_data,
    read_metrics,
    run_training,
    toy_translation_data,
)

# Dense bf16 tensor-core peaks (no sparsity), FLOP/s, from NVIDIA's datasheets (SXM
# parts).
PEAK_BF16 = {
    "H200": 989e12,
    "H100": 989e12,
    "A100": 312e12,
    "L40S": 362e12,
    "L4": 121e12,
    "A10": 125e12,
    "V100": 125e12,
}
NEEDS = ("sacrebleu", "tokenizers", "tqdm", "matplotlib")
MULTI30K = (
    "train.de.gz",
    "train.en.gz",
    "val.de.gz",
    "val.en.gz",
    "test_2016_flickr.de.gz",
    "test_2016_flickr.en.gz",
)


def peak_flops(device_name: str) -> tuple[float | None, str]:
    """The dense bf16 peak of the card named `device_name`, and which figure it is."""
    for key, value in PEAK_BF16.items():
        if key in device_name:
            return (
                value,
                f"{key} dense bf16 peak, {value / 1e12:.0f} TFLOP/s (NVIDIA datasheet)",
            )
    return None, f"no peak known for {device_name!r}: MFU not reported"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder for the small result files")
    p.add_argument(
        "--run-dir", default=str(ROOT / "runs" / "gpu"), help="run folder (checkpoints)"
    )
    p.add_argument(
        "--epochs", type=int, default=None, help="training epochs (default 50; smoke 1)"
    )
    p.add_argument(
        "--budget",
        type=float,
        default=420.0,
        help="safety net: at most this many seconds",
    )
    p.add_argument(
        "--smoke", action="store_true", help="tiny model on CPU, to test the script"
    )
    p.add_argument(
        "--no-compile-probe", action="store_true", help="never try torch.compile"
    )
    p.add_argument("--data", default="multi30k", choices=["multi30k", "toy"])
    p.add_argument(
        "--data-dir",
        default=None,
        help="Multi30k folder (default: $TRANSFORMER_DATA_DIR)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help=(
            "override a TrainConfig field, e.g. model.dropout=0.1 (as in"
            " transformer_lib.train)"
        ),
    )
    return p.parse_args(argv)


def config(args: argparse.Namespace, steps_per_epoch: int | None = None) -> TrainConfig:
    """The run's configuration; `steps_per_epoch` sets the evaluation and snapshot
    intervals."""
    from transformer_lib.train import _parse_field

    overrides = {}
    for item in args.set:
        name, text = item.split("=", 1)
        overrides[name] = _parse_field(name, text)
    epochs = args.epochs or (1 if args.smoke else 50)
    per_epoch = steps_per_epoch or 100
    if args.smoke:  # the same path on a CPU, with a model small enough for seconds
        base = dict(
            model=dict(
                d_model=64, n_heads=4, n_encoder_layers=1, n_decoder_layers=1, d_ff=128
            ),
            max_tokens=2000,
            warmup_steps=100,
            log_every=10,
            eval_bleu_sentences=100,
            device="cpu",
            pad_to_multiple=8,
        )
    # the paper's base model; Multi30k is 150x smaller than WMT: see chapter 11b
    else:
        base = dict(
            model=dict(dropout=0.3),
            max_tokens=12000,
            warmup_steps=1000,
            lr_scale=0.7,
            log_every=20,
            pad_to_multiple=8,
        )
    every = max(1, per_epoch * (1 if args.smoke else 5))
    return TrainConfig.from_preset("base", **base).updated(
        {
            "steps": 10**7,
            "max_epochs": epochs,
            "time_budget_s": args.budget,
            "eval_every": every,
            "snapshot_every": max(1, per_epoch),
            "average_last": 5,
            "checkpoint_every": None,
            **overrides,
        }
    )


def preflight(args: argparse.Namespace) -> dict[str, object]:
    """Fail in seconds, before any training: packages, data, CUDA. Returns what it
    found."""
    import importlib.util

    found: dict[str, object] = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
    }
    missing = [m for m in NEEDS if importlib.util.find_spec(m) is None]
    if missing:
        raise SystemExit(
            f"preflight: missing Python packages {missing} (pip install"
            f" {' '.join(missing)})"
        )
    if args.data == "multi30k":
        from transformer_lib.data import load_multi30k

        try:
            found["pairs"] = {
                split: len(load_multi30k(split, data_dir=args.data_dir, download=False))
                for split in ("train", "val", "test_2016_flickr")
            }
        except Exception as e:  # noqa: BLE001 - any failure here must stop the run, with its reason
            raise SystemExit(
                f"preflight: Multi30k not found ({type(e).__name__}: {e}). Copy "
                f"{', '.join(MULTI30K)} into data/multi30k/ and send that folder along."
            )
    if not args.smoke:
        if not torch.cuda.is_available():
            raise SystemExit(
                "preflight: CUDA is not visible (torch.cuda.is_available() is False)"
            )
        found["gpu"] = torch.cuda.get_device_name(0)
    return found


def dry_run(cfg: TrainConfig, data: TrainingData, steps: int = 20) -> float:
    """Train `steps` steps of the real configuration (nothing saved); seconds per
    step."""
    probe = cfg.updated(
        {
            "steps": steps,
            "max_epochs": None,
            "time_budget_s": None,
            "log_every": steps,
            "eval_every": 10**7,
            "average_last": 1,
        }
    )
    _, s = run_training(probe, data, None, progress=False, final_eval=())
    return s["train_time_s"] / s["steps"]


def compile_probe(
    cfg: TrainConfig, data: TrainingData, eager_s: float, budget: float
) -> dict[str, float | bool]:
    """Does `torch.compile` pay on this machine? 20 compiled steps against the eager dry
    run."""
    t0 = time.perf_counter()
    compiled_s = dry_run(cfg.updated({"compile": True}), data)
    spent = time.perf_counter() - t0
    use = compiled_s < 0.9 * eager_s and spent < 0.1 * budget
    return {
        "eager_s_per_step": eager_s,
        "compiled_s_per_step": compiled_s,
        "probe_s": spent,
        "use": use,
    }


def plot_curves(records: list[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tr = [r for r in records if r["kind"] == "train"]
    va = [r for r in records if r["kind"] == "val"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    axes[0].plot(
        [r["step"] for r in tr],
        [r["loss"] for r in tr],
        label="training (label-smoothed)",
    )
    axes[0].plot(
        [r["step"] for r in va],
        [r["val_loss"] for r in va],
        "o-",
        label="validation (label-smoothed)",
    )
    axes[0].set_xlabel("step")
    axes[0].set_ylabel("loss per token")
    axes[0].set_title("Does the loss go down?")
    axes[0].legend()
    axes[1].plot(
        [r["step"] for r in va if "val_bleu" in r],
        [r["val_bleu"] for r in va if "val_bleu" in r],
        "o-",
    )
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


def main(argv: list[str] | None = None) -> int:
    t0 = time.perf_counter()
    args = parse_args(argv)
    out, run_dir = Path(args.out), Path(args.run_dir)
    out.mkdir(parents=True, exist_ok=True)
    if run_dir.exists():
        shutil.rmtree(run_dir)
    report: dict[str, object] = {"preflight": preflight(args)}  # preflight.json
    cfg = config(args)
    device = "cuda" if torch.cuda.is_available() and cfg.device != "cpu" else "cpu"
    print(
        f"device: {torch.cuda.get_device_name(0) if device == 'cuda' else 'cpu'}; torch"
        f" {torch.__version__}"
    )
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    if args.data == "toy":
        data = toy_translation_data(seed=cfg.seed)
    else:
        data = multi30k_data(
            cfg,
            args.data_dir,
            tokenizer_path=run_dir / "tokenizer.json",
            max_test_sentences=100 if args.smoke else None,
        )
    steps_per_epoch = len(data.train_batches(0, 0, 1))
    cfg = config(args, steps_per_epoch)
    report["dry_run_s_per_step"] = s_per_step = dry_run(cfg, data)
    report["steps_per_epoch"] = steps_per_epoch
    # config() always sets it: training stops by epochs
    assert cfg.max_epochs is not None
    est = s_per_step * steps_per_epoch * cfg.max_epochs
    print(
        f"preflight ok: {report['preflight']}; dry run {s_per_step * 1e3:.0f} ms/step,"
        f" {steps_per_epoch} steps/epoch, {cfg.max_epochs} epochs ~ {est:.0f} s of"
        " training",
        flush=True,
    )
    if device == "cuda" and not args.no_compile_probe:
        report["compile_probe"] = probe = compile_probe(
            cfg, data, s_per_step, args.budget
        )
        cfg = cfg.updated({"compile": probe["use"]})
        print(f"compile probe: {probe}", flush=True)
    (out / "preflight.json").write_text(json.dumps(report, indent=2) + "\n")
    name = torch.cuda.get_device_name(0) if device == "cuda" else ""
    peak, peak_note = (
        peak_flops(name) if device == "cuda" else (None, "CPU: MFU not reported")
    )
    print(f"data: {data.name}; config: {cfg}", flush=True)
    _, summary = run_training(
        cfg, data, run_dir, progress=sys.stderr.isatty(), peak_flops=peak
    )
    summary.update(
        script_wall_s=time.perf_counter() - t0,
        smoke=args.smoke,
        peak_flops_note=peak_note,
        preflight=report,
    )
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    shutil.copy(run_dir / "metrics.jsonl", out / "metrics.jsonl")
    hw = summary["hardware"].get("gpu", summary["hardware"]["cpu"])
    plot_curves(
        read_metrics(run_dir),
        out / "curves.png",
        f"{cfg.preset}{' (smoke)' if args.smoke else ''}: {summary['steps']} steps, "
        f"{summary['train_time_s']:.0f} s on {hw}",
    )
    lines = [f"# Sample translations (test_2016_flickr, de->en), {hw}\n"]
    greedy, beam = summary["samples"]["greedy"], summary["samples"]["beam"]
    for g, b in zip(greedy, beam):
        lines += [
            f"- **de:** {g['src']}",
            f"  - reference: {g['ref']}",
            f"  - greedy: {g['hyp']}",
            f"  - beam 4: {b['hyp']}",
            "",
        ]
    (out / "samples.md").write_text("\n".join(lines))
    mfu = f", MFU {summary['mfu']:.1%}" if "mfu" in summary else ""
    print(
        f"selected: {summary['selected']}; BLEU greedy {summary['bleu']['greedy']:.2f},"
        f" beam {summary['bleu']['beam']:.2f}, chrF {summary['chrf']['beam']:.1f}"
        f" ({summary['bleu_signature']})"
    )
    print(
        f"{summary['steps']} steps ({summary['epochs']:.1f} epochs, stopped by"
        f" {summary['stopped_by']}) in {summary['train_time_s']:.0f} s,"
        f" {summary['tokens_per_s']:,.0f} tokens/s,"
        f" {summary['model_flops_per_s'] / 1e12:.2f} TFLOP/s{mfu}; script"
        f" {summary['script_wall_s']:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
