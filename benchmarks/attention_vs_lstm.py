"""One self-attention layer (MultiHeadAttention, fast path) vs one nn.LSTM layer:
forward time over L.

    .venv/bin/python benchmarks/attention_vs_lstm.py [--pairs 7]

The measurement behind chapter 13's "cost of attention" figure, as a script: width d =
256 (4 heads), one sequence (B = 1), float32, one CPU thread, forward pass without
autograd, for L = 32 ... 2048. At each length the two layers are timed in alternating
runs in one process (the order flips every pair), and the result is the median over the
pairs of time(LSTM) / time(attention): > 1 means attention is faster. Also reports the
slope of log(median time) against log(L) over L >= 256 (2 = quadratic, 1 = linear).
Writes benchmarks/results/attention_vs_lstm.json.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
from torch import nn

from transformer_lib import MultiHeadAttention

from _common import machine, write_result

D_MODEL, N_HEADS = 256, 4
LENGTHS = (32, 64, 128, 256, 512, 1024, 2048)


def _timed(step) -> float:
    t0 = time.perf_counter()
    step()
    return time.perf_counter() - t0


def _slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) against log(x)."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum(
        (a - mx) ** 2 for a in lx
    )


def main(pairs: int = 7) -> dict:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    attn = MultiHeadAttention(D_MODEL, N_HEADS).eval()
    lstm = nn.LSTM(D_MODEL, D_MODEL, batch_first=True).eval()
    rows = []
    with torch.no_grad():
        for L in LENGTHS:
            x = torch.randn(1, L, D_MODEL)

            def step_attn():
                attn(x, x, x)

            def step_lstm():
                lstm(x)

            step_attn(), step_lstm()  # warm-up
            t_attn: list[float] = []  # seconds per forward
            t_lstm: list[float] = []
            for i in range(pairs):
                order = [(step_attn, t_attn), (step_lstm, t_lstm)]
                if i % 2:
                    order.reverse()
                for step, times in order:
                    times.append(_timed(step))
            rows.append(
                {
                    "length": L,
                    "median_ms_attention": 1e3 * statistics.median(t_attn),
                    "median_ms_lstm": 1e3 * statistics.median(t_lstm),
                    "median_speed_ratio_lstm_over_attention": statistics.median(
                        b / a for a, b in zip(t_attn, t_lstm)
                    ),
                }
            )
    big = [r for r in rows if r["length"] >= 256]
    return {
        "benchmark": (
            "MultiHeadAttention (fast path) vs nn.LSTM, one layer, forward, no autograd"
        ),
        "sizes": {
            "d_model": D_MODEL,
            "n_heads": N_HEADS,
            "batch": 1,
            "dtype": "float32",
        },
        "threads": torch.get_num_threads(),
        "pairs": pairs,
        "rows": rows,
        "slope_attention_L_ge_256": _slope(
            [r["length"] for r in big], [r["median_ms_attention"] for r in big]
        ),
        "slope_lstm_L_ge_256": _slope(
            [r["length"] for r in big], [r["median_ms_lstm"] for r in big]
        ),
        "ratio_definition": (
            "time(LSTM) / time(attention) per alternating pair; > 1 means attention is"
            " faster"
        ),
        "torch": torch.__version__,
        "machine": machine(),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--pairs",
        type=int,
        default=7,
        help="alternating pairs to time per length (>= 3)",
    )
    args = parser.parse_args()
    res = main(max(3, args.pairs))
    print(
        f"forward, d_model={D_MODEL}, h={N_HEADS}, B=1, 1 thread, {res['pairs']}"
        " alternating pairs per length"
    )
    print(f"{'L':>5}  {'attention ms':>12}  {'LSTM ms':>8}  {'LSTM/attention':>14}")
    for r in res["rows"]:
        print(
            f"{r['length']:>5}  {r['median_ms_attention']:>12.2f} "
            f" {r['median_ms_lstm']:>8.2f} "
            f" {r['median_speed_ratio_lstm_over_attention']:>13.2f}x"
        )
    print(
        "slopes of log time vs log L over L >= 256: attention"
        f" {res['slope_attention_L_ge_256']:.2f}, LSTM {res['slope_lstm_L_ge_256']:.2f}"
    )
    write_result("attention_vs_lstm", res, precision="float32")
