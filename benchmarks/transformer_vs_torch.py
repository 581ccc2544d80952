"""Training step and eval forward: our `transformer_lib.Transformer` vs
`torch.nn.Transformer`.

Both models have the same embeddings (one shared matrix, x sqrt(d_model)), the same
positional encoding, the same tied output layer and the same sizes (d_model=256, h=4,
3+3 layers, d_ff=1024, vocabulary 8000, dropout 0.1); only the encoder/decoder stacks
differ: ours, or `torch.nn.Transformer(batch_first=True)`, both Xavier-initialised
(chapter 7 proves the two equal given the same weights). A batch of 32 source and target
sequences padded to length 40 (each row with its own length, so the padding masks
matter).

    python benchmarks/transformer_vs_torch.py [--pairs 12] [--threads 1]

The training step is each library's own: for ours the pieces `run_training` uses on a
CPU (`use_fast_dropout`: masks from 16-bit draws, chapter 8; the output layer only at
the positions whose label counts, `logits_at`, chapter 7; `chunked_cross_entropy` and
Adam as one fused kernel, chapter 11b); for torch `nn.Transformer`'s `nn.Dropout`,
`F.cross_entropy` and `torch.optim.Adam`'s default. Both in float32, no label
smoothing (as before these pieces existed; `--plain` times ours with `nn.Dropout` and
`F.cross_entropy` too, the stacks alone).

One CPU thread; the two models run alternately in one process (pair after pair, the
order flipped each time, so drifts in the machine's speed hit both alike); the speed
ratio is the median over the pairs of torch's time divided by ours (> 1: ours is
faster), for CPU time (the main figure on a shared machine) and wall time. Peak memory:
the resident memory a first step adds beyond the model and optimizer (Adam's state
included for the training step), measured in a fresh process per model. Writes
benchmarks/results/transformer_vs_torch.json."""

import argparse
import json
import math
import platform
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from _common import machine, write_result
from transformer_lib import (
    PositionalEncoding,
    Transformer,
    TransformerConfig,
    use_fast_dropout,
)
from transformer_lib.training import chunked_cross_entropy

# nn.Transformer's eval fast path warns that nested tensors are a prototype; that is not
# a result.
warnings.filterwarnings(
    "ignore",
    category=UserWarning,
    module=r"torch\.nn\.modules\.(transformer|activation)",
)

D_MODEL, HEADS, LAYERS, D_FF, VOCAB, BATCH, LENGTH, PAD = (
    256,
    4,
    3,
    1024,
    8000,
    32,
    40,
    0,
)


class TorchTransformerLM(nn.Module):
    """`torch.nn.Transformer` wrapped with the same embedding, positional encoding and
    tied output as ours."""

    def __init__(self, dropout: float) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.positional = PositionalEncoding(D_MODEL, max_len=512, dropout=dropout)
        self.transformer = nn.Transformer(
            D_MODEL,
            HEADS,
            LAYERS,
            LAYERS,
            D_FF,
            dropout=dropout,
            batch_first=True,
            norm_first=False,
            activation="relu",
        )
        self.output = nn.Linear(D_MODEL, VOCAB, bias=False)
        self.output.weight = self.embed.weight
        self.scale = math.sqrt(D_MODEL)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        # True = padding (PyTorch's sense)
        src_pad, tgt_pad = src == PAD, tgt == PAD
        T = tgt.shape[1]
        # True = masked (future keys)
        causal = torch.ones(T, T, dtype=torch.bool).triu(1)
        x = self.positional(self.embed(src) * self.scale)
        y = self.positional(self.embed(tgt) * self.scale)
        h = self.transformer(
            x,
            y,
            tgt_mask=causal,
            src_key_padding_mask=src_pad,
            tgt_key_padding_mask=tgt_pad,
            memory_key_padding_mask=src_pad,
            tgt_is_causal=True,
        )
        return self.output(h)


PLAIN = "--plain" in sys.argv  # ours without its training pieces: the stacks alone


def make_model(name: str, dropout: float = 0.1) -> nn.Module:
    """`"ours"`: transformer_lib's Transformer; `"torch"`: nn.Transformer wrapped
    alike."""
    torch.manual_seed(0)
    if name == "ours":
        config = TransformerConfig.base(
            VOCAB,
            d_model=D_MODEL,
            n_heads=HEADS,
            n_encoder_layers=LAYERS,
            n_decoder_layers=LAYERS,
            d_ff=D_FF,
            dropout=dropout,
            max_len=512,
        )
        ours = Transformer(config)
        if not PLAIN:
            use_fast_dropout(ours)
        return ours
    theirs = TorchTransformerLM(dropout)
    # the same initialisation as ours
    nn.init.normal_(theirs.embed.weight, std=D_MODEL**-0.5)
    return theirs


def make_models(dropout: float = 0.1) -> tuple[nn.Module, nn.Module]:
    # Each model as its library builds it (nn.Transformer has one extra final LayerNorm
    # per stack, a negligible cost).
    return make_model("ours", dropout), make_model("torch", dropout)


def make_batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)

    def padded() -> torch.Tensor:
        tokens = torch.randint(1, VOCAB, (BATCH, LENGTH), generator=g)
        lengths = torch.randint(LENGTH // 2, LENGTH + 1, (BATCH,), generator=g)
        tokens[torch.arange(LENGTH)[None, :] >= lengths[:, None]] = PAD
        return tokens

    src, tgt = padded(), padded()
    return src, tgt[:, :-1], tgt[:, 1:]


def train_step(
    model: nn.Module, opt: torch.optim.Optimizer, src, tgt_in, labels
) -> None:
    opt.zero_grad(set_to_none=True)
    if isinstance(model, Transformer) and not PLAIN:  # as run_training on a CPU:
        at = labels != PAD  # the output layer only where
        logits = model(src, tgt_in, logits_at=at)  # a label counts: (N, V)
        loss = chunked_cross_entropy(logits, labels[at], ignore_index=PAD)
    else:
        logits = model(src, tgt_in)  # (B, T, V)
        loss = F.cross_entropy(
            logits.reshape(-1, VOCAB), labels.reshape(-1), ignore_index=PAD
        )
    loss.backward()
    opt.step()


def timed(fn) -> tuple[float, float]:
    """Wall-clock and CPU seconds of `fn()`. With one thread, CPU time is the time the
    work took on the processor, less disturbed than wall time by other processes on a
    busy machine."""
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def alternate(fns: dict, pairs: int, warmup: int = 2) -> dict:
    """Run the functions in turn, `pairs` times, alternating which goes first; return
    the times."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, dict[str, list[float]]] = {
        name: {"wall": [], "cpu": []} for name in fns
    }
    for i in range(pairs):
        order = list(fns) if i % 2 == 0 else list(fns)[::-1]
        for name in order:
            wall, cpu = timed(fns[name])
            times[name]["wall"].append(wall)
            times[name]["cpu"].append(cpu)
    return times


def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # reported in kB
    raise RuntimeError(f"{field} not in /proc/self/status")


def peak_memory_child(name: str, mode: str, threads: int) -> None:
    """Run in a fresh process: the peak resident memory one step adds beyond model +
    optimizer.

    Linux only: writing 5 to /proc/self/clear_refs resets the high-water mark VmHWM to
    the current resident size, so VmHWM after the step is the step's peak. (getrusage's
    ru_maxrss cannot be used: it keeps the parent's high-water mark across fork and
    exec.)"""
    torch.set_num_threads(threads)
    model = make_model(name)
    src, tgt_in, labels = make_batch()
    opt = torch.optim.Adam(
        model.parameters(), lr=1e-4, fused=name == "ours" and not PLAIN
    )
    model.train(mode == "train")
    before = _status_bytes("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    if mode == "train":
        # Adam allocates its state on the first step: measure the first step, state
        # included.
        train_step(model, opt, src, tgt_in, labels)
    else:
        with torch.no_grad():
            model(src, tgt_in)
    peak = _status_bytes("VmHWM")
    print(json.dumps({"peak_minus_start_bytes": peak - before}))


def peak_memory_bytes(name: str, mode: str, threads: int) -> int:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--peak-child",
            name,
            mode,
            "--threads",
            str(threads),
        ]
        + (["--plain"] if PLAIN else []),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])["peak_minus_start_bytes"]


def main() -> None:
    args = parse_args()
    if args.peak_child:
        name, mode = args.peak_child
        peak_memory_child(name, mode, threads=args.threads)
        return
    torch.set_num_threads(args.threads)

    ours, theirs = make_models()
    models = {"ours": ours, "torch": theirs}
    train, evals = time_both(models, args.pairs)
    train_peak = {n: peak_memory_bytes(n, "train", args.threads) for n in models}
    eval_peak = {n: peak_memory_bytes(n, "eval", args.threads) for n in models}

    result = {
        "config": dict(
            d_model=D_MODEL,
            n_heads=HEADS,
            layers=f"{LAYERS}+{LAYERS}",
            d_ff=D_FF,
            vocab=VOCAB,
            batch=BATCH,
            length=LENGTH,
            threads=args.threads,
            pairs=args.pairs,
            dropout=0.1,
            ours_step=(
                "nn.Dropout, F.cross_entropy, Adam"
                if PLAIN
                else (
                    "FastDropout, logits_at counted positions, chunked_cross_entropy,"
                    " fused Adam"
                )
            ),
        ),
        "machine": machine(),
        "threads": args.threads,
        "precision": "float32",
        "versions": {"torch": torch.__version__, "python": platform.python_version()},
        "train_step": {
            **summary(train),
            "peak_extra_rss_mib": {
                n: round(v / 2**20, 1) for n, v in train_peak.items()
            },
        },
        "eval_forward": {
            **summary(evals),
            "peak_extra_rss_mib": {
                n: round(v / 2**20, 1) for n, v in eval_peak.items()
            },
        },
        "parameters": {
            n: sum(p.numel() for p in m.parameters()) for n, m in models.items()
        },
    }
    print_result(result, args.pairs)
    write_result("transformer_vs_torch", result, path=Path(args.out))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--out",
        default=str(Path(__file__).parent / "results" / "transformer_vs_torch.json"),
    )
    parser.add_argument(
        "--peak-child", nargs=2, metavar=("MODEL", "MODE"), help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="ours without its training pieces (read at import)",
    )
    return parser.parse_args()


def time_both(models: dict[str, nn.Module], pairs: int) -> tuple[dict, dict]:
    """The times of the training step, then of the eval forward, of both models
    alternately (`alternate`) on one batch; each model with its own Adam."""
    src, tgt_in, labels = make_batch()
    opts = {
        "ours": torch.optim.Adam(models["ours"].parameters(), lr=1e-4, fused=not PLAIN),
        "torch": torch.optim.Adam(models["torch"].parameters(), lr=1e-4),
    }

    for m in models.values():
        m.train()
    train = alternate(
        {
            n: lambda n=n: train_step(models[n], opts[n], src, tgt_in, labels)
            for n in models
        },
        pairs,
    )

    for m in models.values():
        m.eval()

    def forward(n):
        with torch.no_grad():
            models[n](src, tgt_in)

    evals = alternate({n: lambda n=n: forward(n) for n in models}, pairs)
    return train, evals


def summary(times: dict) -> dict:
    """Median times of each model, CPU and wall, and the median over the pairs of
    torch's time / ours."""
    out = {}
    for clock in ("cpu", "wall"):
        ours_t, torch_t = times["ours"][clock], times["torch"][clock]
        out[clock] = {
            "median_ms": {
                "ours": round(1e3 * statistics.median(ours_t), 1),
                "torch": round(1e3 * statistics.median(torch_t), 1),
            },
            # > 1: ours is faster. The median over the pairs of torch's time / ours.
            "speed_ratio_ours_vs_torch": round(
                statistics.median(t / o for o, t in zip(ours_t, torch_t)), 3
            ),
        }
    return out


def print_result(result: dict, pairs: int) -> None:
    for name in ("train_step", "eval_forward"):
        r = result[name]
        for clock in ("cpu", "wall"):
            m = r[clock]["median_ms"]
            print(
                f"{name:>12} ({clock:>4} time): ours {m['ours']:8.1f} ms, torch"
                f" {m['torch']:8.1f} ms -> ours is"
                f" {r[clock]['speed_ratio_ours_vs_torch']:.2f}x torch's speed (median"
                f" of {pairs} pairs)"
            )
        print(
            f"{'':>12} peak memory added by the step: ours"
            f" {r['peak_extra_rss_mib']['ours']:.0f} MiB, torch"
            f" {r['peak_extra_rss_mib']['torch']:.0f} MiB"
        )


if __name__ == "__main__":
    main()
