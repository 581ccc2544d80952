"""The host's work between two epochs of the GPU's path: Multi30k's training batches at
the base preset.

    .venv/bin/python benchmarks/batch_building.py [--epochs 8]

`TrainingRun.prepare_epoch` at the `base` preset (50,000 padded tokens a batch, widths
padded to multiples of 8, bounded shapes, the GPU's step path forced on this CPU): every
training pair in the epoch's order, cut into the bucket shapes with tensor operations
(`TrainingData.train_rows`, `bucket_rows`), checked, counted (tokens, model FLOPs) and
put on the device (here the CPU). At 700k tokens/s a GPU takes about 1.3 s for the whole
epoch: the host must build it in a small fraction of that (target: <= 50 ms on one CPU
thread).

Reference, in the same process: the same epoch built the way a loop over sentences
builds it, each pair cut from its padded batch and copied into its bucket's batch row by
row (Python loops, as the training loop did before it built batches with tensor
operations). Runs alternate; each figure is the median over the epochs. Writes
benchmarks/results/batch_building.json, with the CPU."""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from transformer_lib.training import (
    TrainConfig,
    TrainingRun,
    bucket_widths,
    multi30k_data,
)

from _common import ROOT, machine, write_result


def _per_row_epoch(
    run: TrainingRun, epoch: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The reference: the same bucket classes, built one sentence at a time."""
    data, cfg = run.data, run.cfg
    srcs, tgts = [], []
    for src, tgt in data.train_batches(epoch, 0, 1):
        for s, t in zip(src, tgt):
            srcs.append(s[s != data.pad_id])
            tgts.append(t[t != data.pad_id])
    ladder = bucket_widths(
        cfg.pad_to_multiple, max(max(len(s) for s in srcs), max(len(t) for t in tgts))
    )
    width = lambda n: next(w for w in ladder if w >= n)
    classes: dict = {}
    for i, (s, t) in enumerate(zip(srcs, tgts)):
        classes.setdefault((width(len(s)), width(len(t) - 1)), []).append(i)
    out = []
    for (sw, tw), rows in sorted(classes.items()):
        room = max(1, cfg.max_tokens // (sw + tw + 1))
        for k in range(0, len(rows), room):
            part = rows[k : k + room]
            src = torch.full((len(part), sw), data.pad_id, dtype=torch.long)  # (B, S)
            # (B, T + 1)
            tgt = torch.full((len(part), tw + 1), data.pad_id, dtype=torch.long)
            for r, i in enumerate(part):
                src[r, : len(srcs[i])] = srcs[i]
                tgt[r, : len(tgts[i])] = tgts[i]
            out.append((src, tgt))
    return out


def main(epochs: int = 8) -> dict:
    torch.set_num_threads(1)
    import os

    cfg = TrainConfig.from_preset(
        "base", device="cpu", step_path="gpu", precision="fp32"
    )
    data = multi30k_data(
        cfg,
        os.environ.get("TRANSFORMER_DATA_DIR", str(ROOT.parent / "shared" / "data")),
    )
    run = TrainingRun(cfg, data)  # builds epoch 0 (and the padded table)
    times: dict[str, list[float]] = {"tensor": [], "per_row": []}
    batches, tokens = len(run.epoch.batches), sum(run.epoch.tokens)
    for e in range(1, epochs + 1):
        order = ["tensor", "per_row"] if e % 2 else ["per_row", "tensor"]
        for kind in order:
            t0 = time.perf_counter()
            built = (
                run.prepare_epoch(e).batches
                if kind == "tensor"
                else _per_row_epoch(run, e)
            )
            times[kind].append(time.perf_counter() - t0)
            assert len(built) > 0
    med = {k: statistics.median(v) for k, v in times.items()}
    result = {
        "benchmark": (
            "one epoch of Multi30k training batches at the base preset, bounded shapes"
        ),
        "machine": machine(),
        "threads": torch.get_num_threads(),
        "precision": "n/a (integer ids)",
        "epochs": epochs,
        "batches_per_epoch": batches,
        "tokens_per_epoch": tokens,
        "ms_per_epoch": 1e3 * med["tensor"],
        "ms_per_epoch_per_row_reference": 1e3 * med["per_row"],
        "speedup_over_per_row": med["per_row"] / med["tensor"],
        "target_ms": 50.0,
        "meets_target": 1e3 * med["tensor"] <= 50.0,
    }
    print(
        f"{machine()}, 1 thread: an epoch ({batches} batches, {tokens:,} tokens) in"
        f" {result['ms_per_epoch']:.1f} ms (target <= 50 ms); row by row"
        f" {result['ms_per_epoch_per_row_reference']:.0f} ms"
        f" ({result['speedup_over_per_row']:.0f}x)"
    )
    write_result("batch_building", result)
    return result


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=8)
    main(p.parse_args().epochs)
