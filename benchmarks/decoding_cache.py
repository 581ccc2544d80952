"""Greedy decoding with and without the key/value cache: time vs number of generated
tokens.

    .venv/bin/python benchmarks/decoding_cache.py [--pairs 3] [--uncached-pairs 1]

An untrained Transformer with d_model=256, 8 heads, 3 encoder + 3 decoder layers,
d_ff=1024, vocabulary 1000, batch 8, source length 32, float32, one CPU thread.
`greedy_decode` with `eos_id=None` generates exactly n tokens (max_len = n + 1, <bos>
included), n = 64 and 256, with the cache (`use_cache=True`, the default) and without it
(`use_cache=False`: every step reruns the decoder on the whole prefix). Runs alternate
inside one process (the order flips every pair); each reported time is the median over
the pairs. Checks that the cached and uncached outputs are identical. Reported:

- growth with the cache: time(256) / time(64); linear growth gives about 4, quadratic 16
  (target: < 6);
- growth without it, the same ratio;
- speed-up at 256 tokens: time(uncached, 256) / time(cached, 256) (target: >= 3).

Writes benchmarks/results/decoding_cache.json. The uncached 256-token run is the slow
one (about a minute on a laptop core), hence the separate, smaller `--uncached-pairs`.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import TypedDict

import torch

from transformer_lib import Transformer, TransformerConfig, greedy_decode

from _common import machine, write_result


class Sizes(TypedDict):
    """The model's sizes: TransformerConfig's keyword arguments, and the result file's
    "sizes"."""

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int
    n_heads: int
    n_encoder_layers: int
    n_decoder_layers: int
    d_ff: int
    max_len: int


SIZES = Sizes(
    src_vocab_size=1000,
    tgt_vocab_size=1000,
    d_model=256,
    n_heads=8,
    n_encoder_layers=3,
    n_decoder_layers=3,
    d_ff=1024,
    max_len=300,
)
BATCH, SRC_LEN, BOS = 8, 32, 1
SHORT, LONG = 64, 256


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(pairs: int = 3, uncached_pairs: int = 1) -> dict:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(**SIZES)).eval()
    src = torch.randint(3, SIZES["src_vocab_size"], (BATCH, SRC_LEN))

    def run(n: int, use_cache: bool) -> torch.Tensor:
        return greedy_decode(model, src, n + 1, BOS, None, use_cache=use_cache)

    out_cached = run(LONG, True)  # warm-up, and the equality check
    assert out_cached.shape == (BATCH, LONG + 1)
    runs: dict[tuple[int, bool], list[float]] = {
        (n, c): [] for n in (SHORT, LONG) for c in (True, False)
    }
    for i in range(max(pairs, uncached_pairs)):
        order = [(SHORT, True), (LONG, True)]
        if i < uncached_pairs:
            order += [(SHORT, False), (LONG, False)]
        if i % 2:
            order.reverse()
        for n, use_cache in order:
            if i < pairs or not use_cache:
                runs[(n, use_cache)].append(_timed(lambda: run(n, use_cache)))
    out_uncached = run(SHORT, False)
    assert torch.equal(out_uncached, out_cached[:, : SHORT + 1]), (
        "cached and uncached outputs differ"
    )
    med = {k: statistics.median(v) for k, v in runs.items()}
    result = {
        "benchmark": "greedy_decode with vs without the key/value cache, eos_id=None",
        "sizes": {**SIZES, "batch": BATCH, "src_len": SRC_LEN, "dtype": "float32"},
        "threads": torch.get_num_threads(),
        "pairs_cached": pairs,
        "pairs_uncached": uncached_pairs,
        "seconds_cached": {
            str(SHORT): med[(SHORT, True)],
            str(LONG): med[(LONG, True)],
        },
        "seconds_uncached": {
            str(SHORT): med[(SHORT, False)],
            str(LONG): med[(LONG, False)],
        },
        "ms_per_token_cached_256": 1e3 * med[(LONG, True)] / LONG,
        "ms_per_token_uncached_256": 1e3 * med[(LONG, False)] / LONG,
        "growth_256_over_64_cached": med[(LONG, True)] / med[(SHORT, True)],
        "growth_256_over_64_uncached": med[(LONG, False)] / med[(SHORT, False)],
        "speedup_at_256": med[(LONG, False)] / med[(LONG, True)],
        "targets": {
            "growth_256_over_64_cached": "< 6 (linear: ~4)",
            "speedup_at_256": ">= 3",
        },
        "outputs_identical": True,
        "torch": torch.__version__,
        "machine": machine(),
    }
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--pairs",
        type=int,
        default=3,
        help="alternating runs of the cached decoder (>= 1)",
    )
    parser.add_argument(
        "--uncached-pairs",
        type=int,
        default=1,
        help="runs of the uncached decoder (>= 1)",
    )
    args = parser.parse_args()
    res = main(max(1, args.pairs), max(1, args.uncached_pairs))
    s = res["sizes"]
    print(
        f"greedy decoding, d_model={s['d_model']},"
        f" {s['n_encoder_layers']}+{s['n_decoder_layers']} layers, batch {s['batch']},"
        f" 1 thread; medians of {res['pairs_cached']} (cached) /"
        f" {res['pairs_uncached']} (uncached) alternating runs"
    )
    for n in (SHORT, LONG):
        print(
            f"  {n:3d} tokens: cached {res['seconds_cached'][str(n)]:7.2f} s   "
            f"uncached {res['seconds_uncached'][str(n)]:7.2f} s"
        )
    print(
        f"growth 256/64 tokens: cached {res['growth_256_over_64_cached']:.2f}x (target"
        f" < 6), uncached {res['growth_256_over_64_uncached']:.2f}x"
    )
    print(
        f"speed-up of the cache at 256 tokens: {res['speedup_at_256']:.1f}x (target"
        " >= 3)"
    )
    write_result("decoding_cache", res, precision="float32")
