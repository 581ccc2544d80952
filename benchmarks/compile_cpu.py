"""Does `torch.compile` speed up a training step of the `cpu` preset on a CPU?

    python benchmarks/compile_cpu.py [--steps 12] [--repeats 5]

One process, one thread. Builds the cpu preset's model twice (same weights), compiles
one (`torch.compile(model, dynamic=True)`, as `TrainConfig(compile=True)` does),
measures the compilation (the first steps), then times full training steps (forward,
label-smoothed loss, backward, Adam) of the two models on the same real-sized batches,
alternating eager and compiled, and prints the median ratio. Writes
benchmarks/results/compile_cpu.json. Multi30k-shaped random batches: token ids uniform
in an 8,000 vocabulary, lengths 8-14."""

import argparse
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
from _common import write_result
from transformer_lib.training import TrainConfig, make_optimizer
from transformer_lib.model import Transformer


def batches(
    n: int, vocab: int, max_tokens: int, seed: int = 0
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        S, T = (int(x) for x in torch.randint(8, 15, (2,), generator=g))
        B = max_tokens // (S + T + 1)
        src = torch.randint(4, vocab, (B, S), generator=g)
        tgt = torch.randint(4, vocab, (B, T + 1), generator=g)
        tgt[:, 0] = 1
        out.append((src, tgt))
    return out


def step(model, opt, src, tgt) -> None:
    logits = model(src, tgt[:, :-1])  # (B, T, V)
    loss = F.cross_entropy(
        logits.flatten(0, 1), tgt[:, 1:].flatten(), ignore_index=0, label_smoothing=0.1
    )
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    torch.set_num_threads(1)
    # the model of the first cpu preset (d_model 128, 2 + 2 layers), on its 2,500-token
    # batches
    cfg = TrainConfig.from_preset(
        "cpu",
        model=dict(
            d_model=128, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=512
        ),
        max_tokens=2500,
    )
    vocab = 8000
    torch.manual_seed(0)
    eager = Transformer(cfg.model_config(vocab))
    twin = Transformer(cfg.model_config(vocab))
    twin.load_state_dict(eager.state_dict())
    compiled = torch.compile(twin, dynamic=True)
    opt_e, opt_c = make_optimizer(eager), make_optimizer(twin)
    data = batches(args.steps, vocab, cfg.max_tokens)

    t0 = time.perf_counter()
    for src, tgt in data[:3]:  # compilation happens here (and on new shapes)
        step(compiled, opt_c, src, tgt)
    compile_s = time.perf_counter() - t0
    for src, tgt in data[:3]:
        step(eager, opt_e, src, tgt)
    for src, tgt in data:  # warm every shape once
        step(compiled, opt_c, src, tgt)

    t_eager: list[float] = []  # seconds per step, one per repeat
    t_comp: list[float] = []
    for _ in range(args.repeats):  # alternate: eager pass, compiled pass
        for model, opt, times in ((eager, opt_e, t_eager), (compiled, opt_c, t_comp)):
            t = time.perf_counter()
            for src, tgt in data:
                step(model, opt, src, tgt)
            times.append((time.perf_counter() - t) / len(data))
    e, c = statistics.median(t_eager), statistics.median(t_comp)
    result = {
        "eager_step_s": e,
        "compiled_step_s": c,
        "speedup": e / c,
        "compile_and_first_steps_s": compile_s,
        "steps": args.steps,
        "repeats": args.repeats,
        "threads": 1,
        "max_tokens": cfg.max_tokens,
        "d_model": cfg.model.d_model,
        "vocab": vocab,
    }
    print(
        f"eager {e * 1e3:.0f} ms/step, compiled {c * 1e3:.0f} ms/step: speed-up"
        f" x{e / c:.2f}; compilation + first 3 steps {compile_s:.0f} s"
    )
    write_result("compile_cpu", result, precision="float32")


if __name__ == "__main__":
    main()
