"""MultiHeadAttention (fast path) vs torch.nn.MultiheadAttention: forward + backward
speed.

    .venv/bin/python benchmarks/multihead_vs_torch.py [--pairs 15]

Self-attention at d_model=512, h=8, B=16, L=128 (the paper's base sizes), float32, one
CPU thread. Both modules hold the same weights (`load_torch_mha_weights`). The two are
timed in alternating runs in one process (the order flips every pair, so neither always
runs first), and the result is the median over the pairs of time(torch) / time(ours): >
1 means ours is faster. PyTorch is called with `need_weights=False`, its own fast
setting (our fast path does not return weights either); its default `need_weights=True`
is timed too, for reference. Writes benchmarks/results/multihead_vs_torch.json.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn

from transformer_lib import MultiHeadAttention, load_torch_mha_weights

from _common import machine, write_result

D_MODEL, N_HEADS, BATCH, LENGTH = 512, 8, 16, 128


def _timed(step) -> float:
    t0 = time.perf_counter()
    step()
    return time.perf_counter() - t0


def main(pairs: int = 15) -> dict:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(D_MODEL, N_HEADS, batch_first=True)
    ours = load_torch_mha_weights(MultiHeadAttention(D_MODEL, N_HEADS), ref)
    x = torch.randn(BATCH, LENGTH, D_MODEL, requires_grad=True)
    with torch.no_grad():
        torch.testing.assert_close(
            ours(x, x, x), ref(x, x, x, need_weights=False)[0], atol=1e-5, rtol=1e-5
        )

    def step_ours():
        ours(x, x, x).sum().backward()

    def step_torch():
        ref(x, x, x, need_weights=False)[0].sum().backward()

    def step_torch_weights():
        # nn.MultiheadAttention's default: need_weights=True
        ref(x, x, x)[0].sum().backward()

    for step in (step_ours, step_torch, step_torch_weights):  # warm-up
        step()
        step()
    t_ours: list[float] = []  # seconds per forward+backward, one per pair
    t_torch: list[float] = []
    t_torch_w: list[float] = []
    for i in range(pairs):
        order = [
            (step_ours, t_ours),
            (step_torch, t_torch),
            (step_torch_weights, t_torch_w),
        ]
        if i % 2:
            order.reverse()
        for step, times in order:
            times.append(_timed(step))
    ratios = [b / a for a, b in zip(t_ours, t_torch)]
    ratios_w = [b / a for a, b in zip(t_ours, t_torch_w)]
    result = {
        "benchmark": (
            "MultiHeadAttention (fast path) vs nn.MultiheadAttention(batch_first=True),"
            " forward+backward"
        ),
        "sizes": {
            "d_model": D_MODEL,
            "n_heads": N_HEADS,
            "batch": BATCH,
            "length": LENGTH,
            "dtype": "float32",
        },
        "threads": torch.get_num_threads(),
        "pairs": pairs,
        "median_ms_ours": 1e3 * statistics.median(t_ours),
        "median_ms_torch_need_weights_false": 1e3 * statistics.median(t_torch),
        "median_ms_torch_need_weights_true": 1e3 * statistics.median(t_torch_w),
        "median_speed_ratio_vs_torch": statistics.median(ratios),
        "median_speed_ratio_vs_torch_need_weights_true": statistics.median(ratios_w),
        "ratio_definition": (
            "time(torch) / time(ours) per alternating pair; > 1 means ours is faster"
        ),
        "torch": torch.__version__,
        "machine": machine(),
    }
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--pairs", type=int, default=15, help="alternating pairs to time (>= 8)"
    )
    args = parser.parse_args()
    res = main(max(8, args.pairs))
    print(
        f"forward+backward, d_model={D_MODEL}, h={N_HEADS}, B={BATCH}, L={LENGTH}, 1"
        f" thread, {res['pairs']} alternating pairs"
    )
    print(f"  ours (fast path)                       {res['median_ms_ours']:8.1f} ms")
    print(
        "  nn.MultiheadAttention need_weights=False"
        f" {res['median_ms_torch_need_weights_false']:6.1f} ms"
    )
    print(
        "  nn.MultiheadAttention need_weights=True "
        f" {res['median_ms_torch_need_weights_true']:6.1f} ms"
    )
    print(
        f"median speed ratio torch/ours: {res['median_speed_ratio_vs_torch']:.3f}x (vs"
        " need_weights=True:"
        f" {res['median_speed_ratio_vs_torch_need_weights_true']:.3f}x)"
    )
    write_result("multihead_vs_torch", res, precision="float32")
