"""Where a CPU training step spends its time: torch.profiler on the `cpu` and `cpu-full`
shapes.

    python benchmarks/profile_step_cpu.py [--batches 20] [--presets cpu cpu-full] \\
        [--out NAME]

For each preset: its model (`TrainConfig.from_preset(name).model`, the vocabulary of
chapter 11a's Multi30k tokenizer), the preset's thread count and bf16 setting
(`bf16="auto"`: native bf16 only), and `--batches` real batches of epoch 0 of Multi30k
as `run_training` makes them, spread evenly over the epoch (short and long sentences
alike; `TRANSFORMER_DATA_DIR` or ../shared/data). The step is the one `run_training`
takes: forward under autocast, label-smoothed cross-entropy in float32, backward, Adam.
One pass over the batches compiles their kernels, then a second pass is profiled.

Two steps per preset: `before`, the step as it was (`nn.Dropout`; `F.cross_entropy` on a
float32 copy of the logits; glibc's default malloc; Adam a tensor at a time), and `now`,
the step `run_training` takes (`use_fast_dropout`, the output layer at the counted
positions only (`logits_at`), `chunked_cross_entropy`, `keep_freed_memory`, fused Adam;
profiled second, since the allocator setting cannot be undone). The learning rate is the
schedule's peak, as mid-run (at Adam's base rate of 1.0, which the schedule multiplies,
the logits blow up, to a standard deviation of about 300 after 33 steps, and the
softmax's exponentials underflow, which is slow).

Writes benchmarks/results/<out>.json (default: `profile_step_cpu` on a CPU with native
bf16, `profile_step_cpu_fp32` on one without, where the step runs in float32): per
preset and step, the milliseconds and tokens/s under the profiler, the phase shares
(forward and loss, backward, Adam update) and the operator shares of the operators' self
time, grouped: matrix products (`mm`, `bmm`, `addmm`, `baddbmm`), dropout masks
(`bernoulli_`, `random_`), dtype copies (`copy_`), the output softmax and its gradient
(`_log_softmax` and its backward; `exp`, `exp_`, `logsumexp` in the chunked loss), the
rest; and the ten largest operators. A profile, not a timing test: the figures are one
machine's."""

import argparse
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function

from _common import bf16_result_name, machine, spread_batches, write_result
from transformer_lib import Transformer, use_fast_dropout
from transformer_lib.training import (
    TrainConfig,
    keep_freed_memory,
    make_optimizer,
    make_scheduler,
    resolve_bf16,
    teacher_forced_loss,
)

GROUPS = {
    "matrix products": ("aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm"),
    "dropout masks": ("aten::bernoulli_", "aten::random_"),
    "dtype copies (copy_)": ("aten::copy_",),
    "output softmax and its gradient": (
        "aten::_log_softmax",
        "aten::_log_softmax_backward_data",
        "aten::exp",
        "aten::exp_",
        "aten::logsumexp",
    ),
}


def profile_preset(name: str, n_batches: int, now: bool) -> dict:
    cfg = TrainConfig.from_preset(name)
    torch.set_num_threads(cfg.num_threads or torch.get_num_threads())
    data, batches = spread_batches(cfg, n_batches)  # spread over epoch 0
    torch.manual_seed(0)
    model = Transformer(cfg.model_config(data.vocab_size, data.pad_id)).train()
    model.validate_args = False
    if now:
        use_fast_dropout(model)
        keep_freed_memory()
    opt = make_optimizer(model, fused=now)
    sched = make_scheduler(opt, cfg.model.d_model, cfg.warmup_steps, cfg.lr_scale)
    sched.last_epoch = cfg.warmup_steps  # the peak rate
    amp = resolve_bf16(cfg.bf16, "cpu")
    pad = data.pad_id

    def step(src: torch.Tensor, tgt: torch.Tensor) -> None:
        with record_function("forward and loss"):
            # run_training's loss
            if now:
                loss = teacher_forced_loss(
                    model, src, tgt, cfg.label_smoothing, pad, amp=amp
                )
            else:
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                    logits = model(src, tgt[:, :-1])  # (B, T, V)
                loss = F.cross_entropy(
                    logits.float().flatten(0, 1),
                    tgt[:, 1:].flatten(),
                    ignore_index=pad,
                    label_smoothing=cfg.label_smoothing,
                )
        with record_function("backward"):
            loss.backward()
        with record_function("Adam update"):
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)

    for src, tgt in batches:  # compiles the kernels
        step(src, tgt)
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for src, tgt in batches:
            step(src, tgt)
    steps = len(batches)
    seconds = (time.perf_counter() - t0) / steps
    tokens = sum(int((s != pad).sum() + (t[:, 1:] != pad).sum()) for s, t in batches)
    events = prof.key_averages()
    phases = {
        e.key: e.cpu_time_total
        for e in events
        if e.key in ("forward and loss", "backward", "Adam update")
    }
    ops = [e for e in events if e.key.startswith("aten::")]
    total = sum(e.self_cpu_time_total for e in ops)
    shares = {
        k: sum(e.self_cpu_time_total for e in ops if e.key in names) / total
        for k, names in GROUPS.items()
    }
    shares["everything else"] = 1 - sum(shares.values())
    top = sorted(ops, key=lambda e: -e.self_cpu_time_total)[:10]
    return {
        "model": {
            "d_model": cfg.model.d_model,
            "layers": f"{cfg.model.n_encoder_layers}+{cfg.model.n_decoder_layers}",
            "d_ff": cfg.model.d_ff,
            "vocab": data.vocab_size,
        },
        "batches": steps,
        "real_tokens_per_batch": tokens / steps,
        "bf16_autocast": amp,
        "threads": torch.get_num_threads(),
        "ms_per_step_profiled": seconds * 1e3,
        "tokens_per_s_profiled": tokens / steps / seconds,
        "phase_shares": {k: v / sum(phases.values()) for k, v in phases.items()},
        "operator_shares": shares,
        "top_operators": [
            {
                "name": e.key,
                "share": e.self_cpu_time_total / total,
                "calls": e.count // steps,
            }
            for e in top
        ],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--presets", nargs="+", default=["cpu", "cpu-full"])
    ap.add_argument(
        "--out",
        help=(
            "result name under benchmarks/results/ (default: profile_step_cpu, "
            "or profile_step_cpu_fp32 without native bf16)"
        ),
    )
    args = ap.parse_args()
    result: dict = {
        "machine": machine(),
        "batches_profiled": args.batches,
        "presets": {},
    }
    for step in ("before", "now"):  # `now` second: keep_freed_memory cannot be undone
        for name in args.presets:
            r = result["presets"].setdefault(name, {})[step] = profile_preset(
                name, args.batches, step == "now"
            )
            print(
                f"{name}, {step}: {r['ms_per_step_profiled']:.0f} ms/step under the"
                f" profiler, bf16 {r['bf16_autocast']}, {r['threads']} threads,"
                f" {r['batches']} batches of {r['real_tokens_per_batch']:.0f} real"
                " tokens"
            )
            for k, v in r["phase_shares"].items():
                print(f"  {k:>38}: {v:5.1%} of the step")
            for k, v in r["operator_shares"].items():
                print(f"  {k:>38}: {v:5.1%} of the operators' time")
    amp = resolve_bf16("auto", "cpu")
    threads = {r["threads"] for p in result["presets"].values() for r in p.values()}
    write_result(
        args.out or bf16_result_name("profile_step_cpu", amp),
        {**result, "threads": max(threads)},
        precision="bf16 autocast" if amp else "float32",
    )


if __name__ == "__main__":
    main()
