"""Twice the training speed on a CPU: the step of a preset as it was, and with each
change added.

    python benchmarks/training_speed_cpu.py [--preset cpu-full] [--batches 80] \\
        [--rounds 2] [--variants NAME ...] [--out NAME]

The step is the one `run_training` takes: bf16 autocast where native, label-smoothed
cross-entropy, backward, Adam and the warm-up schedule (already past its warm-up, at the
peak learning rate), on `--batches` batches spread evenly over epoch 0 of Multi30k as
`run_training` makes them (every k-th batch: real lengths, real padding, short and long
sentences alike; `TRANSFORMER_DATA_DIR` or ../shared/data), with the preset's threads.
Seven variants, each adding one change to the one before:

    before         nn.Dropout; F.cross_entropy on a float32 copy of the logits;
                   oneDNN's default kernel cache (1,024 kernels); glibc's default malloc
    kernel cache   ONEDNN_PRIMITIVE_CACHE_CAPACITY=8192
                   (what transformer_lib sets on import)
    chunked loss   chunked_cross_entropy (chapter 11b)
    fast dropout   use_fast_dropout: masks from 16-bit draws (chapter 8)
    freed memory   keep_freed_memory(): glibc keeps freed memory
    fused Adam     make_optimizer(fused=True): one kernel for the whole update
    counted rows   the output layer and the loss only at the positions whose label
                   counts, not at padding
                   (`Transformer.forward(..., logits_at=labels != pad)`, chapter 7;
                   = run_training's step on a CPU today)

oneDNN reads its cache size once per process, so each variant runs in a fresh process:
one pass over the batches to warm up (each new batch shape compiles its kernels), then a
timed pass. The variants alternate, their order reversed every round; a ratio is the
median over rounds of the per-round ratio of real (non-pad) tokens per second.
`--variants` runs some of them (consecutive ones, to measure one change on another
machine); `--out` names the result, benchmarks/results/<out>.json. By default it is
`training_speed_cpu` on a CPU with native bf16, where the step runs under bf16 autocast,
and `training_speed_cpu_fp32` on one without, where it runs in float32
(`resolve_bf16("auto", "cpu")`): the two are different steps, so `make bench` on one
kind of machine does not overwrite the other kind's figures, and chapter 11b shows both.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = [
    "before",
    "kernel cache",
    "chunked loss",
    "fast dropout",
    "freed memory",
    "fused Adam",
    "counted rows",
]


def child(preset: str, n_batches: int, variant: str) -> dict:
    """In a fresh process: the variant's tokens per second over the timed pass."""
    level = VARIANTS.index(variant)
    os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = "1024" if level < 1 else "8192"
    import torch
    import torch.nn.functional as F

    from transformer_lib import Transformer, use_fast_dropout
    from transformer_lib.training import (
        TrainConfig,
        keep_freed_memory,
        make_optimizer,
        make_scheduler,
        resolve_bf16,
        teacher_forced_loss,
    )

    cfg = TrainConfig.from_preset(preset)
    torch.set_num_threads(cfg.num_threads or torch.get_num_threads())
    from _common import spread_batches

    data, batches = spread_batches(cfg, n_batches)
    torch.manual_seed(0)
    model = Transformer(cfg.model_config(data.vocab_size, data.pad_id)).train()
    model.validate_args = False
    if level >= 3:
        use_fast_dropout(model)
    if level >= 4:
        keep_freed_memory()
    opt = make_optimizer(model, fused=level >= 5)
    sched = make_scheduler(opt, cfg.model.d_model, cfg.warmup_steps, cfg.lr_scale)
    sched.last_epoch = cfg.warmup_steps  # at the peak rate, as mid-run
    amp = resolve_bf16(cfg.bf16, "cpu")

    def step(src: torch.Tensor, tgt: torch.Tensor) -> None:
        # the step's loss (chapter 11b)
        if level >= 2:
            loss = teacher_forced_loss(
                model,
                src,
                tgt,
                cfg.label_smoothing,
                data.pad_id,
                amp=amp,
                counted_only=level >= 6,
            )
        else:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                logits = model(src, tgt[:, :-1])  # (B, T, V)
            loss = F.cross_entropy(
                logits.float().flatten(0, 1),
                tgt[:, 1:].flatten(),
                ignore_index=data.pad_id,
                label_smoothing=cfg.label_smoothing,
            )
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)

    for src, tgt in batches:  # warm-up pass: kernels for every shape
        step(src, tgt)
    tokens = sum(
        int((s != data.pad_id).sum() + (t[:, 1:] != data.pad_id).sum())
        for s, t in batches
    )
    t0 = time.perf_counter()
    for src, tgt in batches:
        step(src, tgt)
    seconds = time.perf_counter() - t0
    return {
        "tokens_per_s": tokens / seconds,
        "ms_per_step": seconds / len(batches) * 1e3,
        "bf16_autocast": amp,
        "threads": torch.get_num_threads(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="cpu-full")
    ap.add_argument("--batches", type=int, default=80)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument(
        "--variants",
        nargs="+",
        default=VARIANTS,
        choices=VARIANTS,
        metavar="NAME",
        help="consecutive variants to run (default: all)",
    )
    ap.add_argument(
        "--out",
        help=(
            "result name under benchmarks/results/ (default: training_speed_cpu, "
            "or training_speed_cpu_fp32 without native bf16)"
        ),
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.preset, args.batches, args.child)))
        return
    from _common import bf16_result_name, machine, write_result

    chosen = [v for v in VARIANTS if v in args.variants]
    if (
        len(chosen) < 2
        or VARIANTS.index(chosen[-1]) - VARIANTS.index(chosen[0]) != len(chosen) - 1
    ):
        raise SystemExit(
            f"--variants must be two or more consecutive variants of {VARIANTS}, got"
            f" {args.variants}"
        )
    runs: dict[str, list[dict]] = {v: [] for v in chosen}
    for r in range(args.rounds):
        for variant in chosen if r % 2 == 0 else chosen[::-1]:
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--preset",
                    args.preset,
                    "--batches",
                    str(args.batches),
                    "--child",
                    variant,
                ],
                check=True,
                capture_output=True,
                text=True,
                cwd=ROOT,
            ).stdout
            runs[variant].append(json.loads(out.strip().splitlines()[-1]))
            print(
                f"round {r}: {variant:>13}: {runs[variant][-1]['tokens_per_s']:7.0f}"
                f" tokens/s, {runs[variant][-1]['ms_per_step']:.0f} ms/step",
                flush=True,
            )

    def ratio(a: str, b: str) -> float:
        return statistics.median(
            x["tokens_per_s"] / y["tokens_per_s"] for x, y in zip(runs[a], runs[b])
        )

    result = {
        "machine": machine(),
        "preset": args.preset,
        "batches": args.batches,
        "rounds": args.rounds,
        # "speedup_vs_before" is against the first of them
        "variants": chosen,
        "threads": runs[chosen[0]][0]["threads"],
        "bf16_autocast": runs[chosen[0]][0]["bf16_autocast"],
        "tokens_per_s": {
            v: statistics.median(x["tokens_per_s"] for x in runs[v]) for v in chosen
        },
        "ms_per_step": {
            v: statistics.median(x["ms_per_step"] for x in runs[v]) for v in chosen
        },
        "speedup_vs_previous": {
            v: ratio(v, chosen[i - 1]) for i, v in enumerate(chosen) if i
        },
        "speedup_vs_before": {v: ratio(v, chosen[0]) for v in chosen[1:]},
        "runs": runs,
    }
    for v in chosen[1:]:
        print(
            f"{v:>13}: x{result['speedup_vs_previous'][v]:.2f} on the previous, "
            f"x{result['speedup_vs_before'][v]:.2f} on {chosen[0]}"
        )
    write_result(
        args.out or bf16_result_name("training_speed_cpu", result["bf16_autocast"]),
        result,
        precision="bf16 autocast" if result["bf16_autocast"] else "float32",
    )


if __name__ == "__main__":
    main()
