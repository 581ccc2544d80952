"""This CPU's measured matrix-product peak: the denominator of a training run's model
FLOPs utilisation.

`benchmarks/matmul_peak_cpu.py` records it for the book; chapter 11b measures it again
beside its run."""

from __future__ import annotations

import time

import torch


def best_gflops(
    n: int, dtype: torch.dtype, rounds: int = 7, products: int = 4
) -> float:
    """The best rate of `products` square products of size `n` in `dtype`, over `rounds`
    rounds: 2 n^3 FLOPs per product, in GFLOP/s (on the threads torch uses now)."""
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    a @ b  # warm-up: kernel selection, caches
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(products):
            a @ b
        best = min(best, (time.perf_counter() - t) / products)
    return 2 * n**3 / best / 1e9
