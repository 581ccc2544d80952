"""This CPU's measured matrix-multiplication peak: the denominator of the training runs'
MFU.

    python benchmarks/matmul_peak_cpu.py [--threads 2] [--size 2048]

Times square matrix products (n = --size) in float32 and in bfloat16 on the threads the
CPU training presets use, and reports the best of several rounds in GFLOP/s (2 n^3 FLOPs
per product). A training step cannot beat this rate; the model FLOP/s of a run divided
by it is the run's model FLOPs utilisation on this machine. Writes
benchmarks/results/matmul_peak_cpu.json on a CPU with native bf16,
matmul_peak_cpu_fp32.json on one without."""

import argparse

import torch

from _common import bf16_result_name, machine, write_result
from booktools.machine import best_gflops
from transformer_lib.training import native_bf16


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--size", type=int, default=2048)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    result = {
        "threads": args.threads,
        "size": args.size,
        "machine": machine(),
        "native_bf16": native_bf16("cpu"),
        "gflops": {
            "float32": best_gflops(args.size, torch.float32),
            "bfloat16": best_gflops(args.size, torch.bfloat16),
        },
    }
    print(
        f"{args.threads} threads, n = {args.size}: "
        + ", ".join(f"{k} {v:,.0f} GFLOP/s" for k, v in result["gflops"].items())
    )
    write_result(
        bf16_result_name("matmul_peak_cpu", result["native_bf16"]),
        result,
        precision="float32 and bfloat16 (one figure each)",
    )


if __name__ == "__main__":
    main()
