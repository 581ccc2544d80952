"""A training step on a CPU: float32 eager (the reference) against bf16 autocast and
torch.compile.

    python benchmarks/training_step_cpu.py [--pairs 8]

One process, one thread. The model of `transformer_vs_torch.py` (d_model 256, 4 heads,
3+3 layers, d_ff 1024, 8,000-token vocabulary, dropout 0.1) and its batch (B = 32, L =
40). Four variants of the same step (forward, label-smoothed loss, backward, Adam), each
with its own copy of the same weights:

- `fp32`: eager float32, the reference;
- `bf16`: eager under `torch.autocast("cpu", dtype=torch.bfloat16)` — pays only on CPUs
  with native bf16 (AVX512-BF16 / AMX; `transformer_lib.native_bf16` says whether this
  one has it);
- `compiled_fp32`: `torch.compile(model, fullgraph=True)` (inductor), float32;
- `compiled_bf16`: both.

The variants run in rotating order, `--pairs` rounds; each ratio is the median over
rounds of time(fp32) / time(variant) (> 1: faster than eager float32). Compilation time
is reported apart. Writes benchmarks/results/training_step_cpu.json on a CPU with native
bf16, training_step_cpu_fp32.json on one without (where `bf16` is emulated: a different
result)."""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from _common import bf16_result_name, machine, write_result
from transformer_lib import Transformer, TransformerConfig
from transformer_lib.training import make_optimizer, native_bf16

V, B, L = 8000, 32, 40


def make_step(model, bf16: bool):
    opt = make_optimizer(model)

    def step(src, tgt) -> float:
        t = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(src, tgt[:, :-1])  # (B, L, V)
        loss = F.cross_entropy(
            logits.float().flatten(0, 1),
            tgt[:, 1:].flatten(),
            ignore_index=0,
            label_smoothing=0.1,
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return time.perf_counter() - t

    return step


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=8)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = TransformerConfig(
        V,
        V,
        d_model=256,
        n_heads=4,
        n_encoder_layers=3,
        n_decoder_layers=3,
        d_ff=1024,
        dropout=0.1,
        share_embeddings=True,
    )
    reference = Transformer(config)
    src = torch.randint(4, V, (B, L))
    tgt = torch.randint(4, V, (B, L + 1))
    tgt[:, 0] = 1
    steps, compile_s = {}, {}
    for name, bf16, compiled in (
        ("fp32", False, False),
        ("bf16", True, False),
        ("compiled_fp32", False, True),
        ("compiled_bf16", True, True),
    ):
        model = Transformer(config)
        model.load_state_dict(reference.state_dict())
        model.train()
        runner = torch.compile(model, fullgraph=True) if compiled else model
        steps[name] = make_step(runner, bf16)
        t0 = time.perf_counter()
        for _ in range(2):  # warm-up (and compilation)
            steps[name](src, tgt)
        compile_s[name] = time.perf_counter() - t0
        print(f"{name}: first two steps {compile_s[name]:.1f} s", flush=True)
    names = list(steps)
    times: dict[str, list[float]] = {n: [] for n in names}  # seconds per step
    for r in range(args.pairs):
        # rotate who goes first
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            times[n].append(steps[n](src, tgt))
    ratios = {
        n: statistics.median(a / b for a, b in zip(times["fp32"], times[n]))
        for n in names
    }
    median_ms = {n: round(statistics.median(times[n]) * 1e3, 1) for n in names}
    bf16 = native_bf16("cpu")
    result = {
        "config": {
            "d_model": 256,
            "n_heads": 4,
            "layers": "3+3",
            "d_ff": 1024,
            "vocab": V,
            "batch": B,
            "length": L,
            "threads": 1,
            "rounds": args.pairs,
            "dropout": 0.1,
        },
        "machine": machine(),
        "native_bf16": bf16,
        "median_ms": median_ms,
        "speed_vs_fp32_eager": {n: round(ratios[n], 3) for n in names},
        "first_two_steps_s": {n: round(compile_s[n], 1) for n in names},
    }
    for n in names:
        print(f"{n:>14}: {median_ms[n]:7.1f} ms/step, x{ratios[n]:.2f} vs fp32 eager")
    write_result(
        bf16_result_name("training_step_cpu", bf16),
        {"threads": 1, **result},
        precision="float32 and bf16 autocast (one row each)",
    )


if __name__ == "__main__":
    main()
