"""One phase of the prepared GPU check (run them all with scripts/gpu_check.sh, which time-boxes each).

    python scripts/gpu_check.py --phase NAME --work DIR --out OUT --budget SECONDS [--smoke]

Phases (each writes DIR/phases/NAME.json; `summary` merges them into OUT/summary.json):

- preflight  packages, data, CUDA, versions, the card and the precision it gets (`resolve_precision`)
- equality   CUDA against CPU in float32: forward, backward, greedy, beam, cache on/off, a GPU-path step
- profile    the base model's GPU-path step under torch.profiler (OUT/profile.txt: top operators by
             GPU and CPU time, kernels per step), operator calls per step, and the step time of the
             GPU path against the step the GPU ran before it (chunked loss, clipping at infinity)
- train      the base-size model (recipe `pre-ln` unless --recipe) on Multi30k, bounded shapes, to
             its test BLEU (greedy and beam); tokens/s in the first epoch and at steady state;
             OUT/metrics.jsonl and OUT/samples.md
- speed      options compared on the same bucketed batches: eager, torch.compile, torch.compile
             with CUDA graphs ("reduce-overhead"), and eager on the unbucketed batches; warm-up
             (first pass over every shape) and steady time per token
- recipes    short runs of the same length, validation BLEU: post-LN against pre-LN, peak rate,
             warm-up, batch size, as many as the budget allows
- summary    OUT/summary.json: every phase's record and status

`--smoke`: the same code on a CPU with a tiny model and the toy task, budgets of seconds (CI).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from transformer_lib.training import (TrainConfig, bucket_batches, multi30k_data, read_metrics,  # noqa: E402
                                      resolve_precision, run_training, toy_translation_data)
from transformer_lib.training import loop  # noqa: E402
from benchmarks._common import OpCounter  # noqa: E402

PHASES = ("preflight", "equality", "profile", "train", "speed", "recipes")
PEAK_BF16 = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "L4": 121e12, "A10": 125e12}

# The candidates. Multi30k is small: more, smaller updates than the paper's 25k-token batches, a
# higher peak rate and dropout 0.3. noam peak = lr_scale * (512 * warmup) ** -0.5.
RECIPES = {
    "pre-ln": dict(norm_first=True, max_tokens=6000, warmup_steps=1000, lr_scale=1.0),      # peak 1.4e-3
    "post-ln": dict(norm_first=False, max_tokens=6000, warmup_steps=1000, lr_scale=0.7),    # peak 9.8e-4
    "pre-ln-lr2x": dict(norm_first=True, max_tokens=6000, warmup_steps=1000, lr_scale=2.0),
    "post-ln-warm2k": dict(norm_first=False, max_tokens=6000, warmup_steps=2000, lr_scale=1.0),
    "pre-ln-12k": dict(norm_first=True, max_tokens=12000, warmup_steps=500, lr_scale=1.0),
    "pre-ln-3k": dict(norm_first=True, max_tokens=3000, warmup_steps=2000, lr_scale=0.7),
}


def device(args) -> str:
    return "cpu" if args.smoke else "cuda"


def sync(dev: str) -> None:
    if dev == "cuda":
        torch.cuda.synchronize()


def recipe_cfg(args, name: str, **over) -> TrainConfig:
    r = dict(RECIPES[name])
    norm_first = r.pop("norm_first")
    if args.smoke:
        model = dict(d_model=32, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=64, max_len=64,
                     norm_first=norm_first)
        r.update(max_tokens=400, warmup_steps=100, lr_scale=1.0)
    else:
        model = dict(dropout=0.3, norm_first=norm_first)
    base = dict(model=model, pad_to_multiple=8, log_every=10 if args.smoke else 50, steps=10 ** 7,
                average_last=5, checkpoint_every=None, device=device(args), step_path="gpu",
                eval_bleu_sentences=16 if args.smoke else 500, **r)
    base.update(over)
    return TrainConfig.from_preset("base", **base)


def load_data(args, cfg: TrainConfig):
    if args.smoke:
        return toy_translation_data(n_train=600, seed=cfg.seed)
    return multi30k_data(cfg, tokenizer_path=Path(args.work) / "tokenizer.json")


def small_model(dev: str):
    from transformer_lib import Transformer, TransformerConfig
    torch.manual_seed(0)
    cfg = TransformerConfig(src_vocab_size=300, tgt_vocab_size=300, d_model=64, n_heads=4, n_encoder_layers=2,
                            n_decoder_layers=2, d_ff=128, dropout=0.0, max_len=64)
    return Transformer(cfg).to(dev)


# --- phases -------------------------------------------------------------------------------------

def phase_preflight(args) -> dict:
    import importlib.util
    from transformer_lib.training import hardware_info
    rec: dict = {"python": sys.version.split()[0], "torch": torch.__version__}
    missing = [m for m in ("sacrebleu", "tokenizers", "tqdm") if importlib.util.find_spec(m) is None]
    if missing:
        raise RuntimeError(f"missing Python packages {missing}")
    if not args.smoke:
        from transformer_lib.data import load_multi30k
        rec["pairs"] = {s: len(load_multi30k(s, download=False)) for s in ("train", "val", "test_2016_flickr")}
        if not torch.cuda.is_available():
            raise RuntimeError("CUDA is not visible (torch.cuda.is_available() is False)")
        rec["gpu"] = torch.cuda.get_device_name(0)
        rec["capability"] = list(torch.cuda.get_device_capability(0))
        rec["cuda"] = torch.version.cuda
        rec["cudnn"] = torch.backends.cudnn.version()
    rec["precision"] = resolve_precision("auto", device(args))
    rec["hardware"] = hardware_info(device(args))
    rec["env"] = {k: os.environ.get(k) for k in ("TORCH_CUDNN_SDPA_AVOID_RECOMPILE", "TORCH_CUDNN_SDPA_DEPRIORITIZED")}
    print(f"precision: {rec['precision']} on {rec.get('gpu', 'cpu')}", flush=True)
    return rec


def phase_equality(args) -> dict:
    from transformer_lib.decoding import beam_search, greedy_decode
    dev = device(args)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ref, other = small_model("cpu"), small_model(dev)
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, 300, (8, 20), generator=g)
    tgt = torch.randint(4, 300, (8, 15), generator=g)
    src[2, 12:] = 0
    tgt[3, 9:] = 0
    tgt[:, 0] = 1
    rec: dict = {}
    with torch.no_grad():
        a, b = ref(src, tgt[:, :-1]), other(src.to(dev), tgt[:, :-1].to(dev)).cpu()
    rec["forward_max_abs"] = float((a - b).abs().max())
    la = loop.teacher_forced_loss(ref, src, tgt, 0.1, 0, counted_only=False, chunked=False)
    lb = loop.teacher_forced_loss(other, src.to(dev), tgt.to(dev), 0.1, 0, counted_only=False, chunked=False)
    la.backward()
    lb.backward()
    rec["loss_abs"] = abs(float(la) - float(lb))
    rec["grad_max_rel"] = max(float((p.grad - q.grad.cpu()).abs().max() / p.grad.abs().max().clamp(min=1e-12))
                              for p, q in zip(ref.parameters(), other.parameters()) if p.grad is not None)
    ref.eval()
    other.eval()
    s = src[:, :12]
    out = {}
    for name, fn in (("greedy", greedy_decode), ("beam", beam_search)):
        for cache in (True, False):
            x = fn(ref, s, 16, 1, 2, use_cache=cache)
            y = fn(other, s.to(dev), 16, 1, 2, use_cache=cache).cpu()
            out[f"{name}_cache_{cache}"] = (x, y)
            rec[f"{name}_cache_{'on' if cache else 'off'}_equal"] = bool(x.shape == y.shape and torch.equal(x, y))
    rec["cache_on_equals_off"] = all(torch.equal(out[f"{n}_cache_True"][1], out[f"{n}_cache_False"][1])
                                     for n in ("greedy", "beam"))
    rec["ok"] = (rec["forward_max_abs"] < 1e-4 and rec["grad_max_rel"] < 1e-3 and rec["cache_on_equals_off"]
                 and rec["greedy_cache_on_equal"] and rec["beam_cache_on_equal"])
    if not rec["ok"]:
        raise AssertionError(f"CUDA differs from the CPU: {rec}")
    return rec


def _base_model_and_batches(args, n: int = 4):
    cfg = recipe_cfg(args, "pre-ln")
    data = load_data(args, cfg)
    run = loop._start(cfg, data, None, False)
    epoch = loop._prepare_epoch(data, 0, run, cfg.pad_to_multiple, True)
    sizes = sorted(range(len(epoch.batches)), key=lambda i: -epoch.batches[i][0].numel())
    return cfg, data, run, epoch, sizes[:n]


def phase_profile(args) -> dict:
    from torch.profiler import ProfilerActivity, profile
    dev = device(args)
    cfg, data, run, epoch, picks = _base_model_and_batches(args)
    window = loop._Window(run.device)

    def steps(which, times=1):
        for _ in range(times):
            for i in picks:
                run.st["batch_index"] = i
                loop._step(run, run.model, epoch, data, window, None)
    steps("warm", 2)
    sync(dev)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
    with profile(activities=acts) as prof:
        steps("prof")
        sync(dev)
    n = len(picks)
    key = "self_cuda_time_total" if dev == "cuda" else "self_cpu_time_total"
    table = prof.key_averages().table(sort_by=key, row_limit=25)
    table_cpu = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15)
    kernels = sum(e.count for e in prof.key_averages() if getattr(e, "device_type", None) is not None
                  and str(e.device_type).endswith("CUDA"))
    (Path(args.out) / "profile.txt").write_text(
        f"GPU-path step of the base-size model, {n} bucketed batches (largest), precision {run.precision}\n\n"
        f"By {key}:\n{table}\n\nBy self CPU time:\n{table_cpu}\n")
    with OpCounter() as c:                                          # operator calls of one step
        steps("count")
    rec = {"steps_profiled": n, "kernels_per_step": kernels / n if dev == "cuda" else None,
           "aten_calls_per_step": sum(c.calls.values()) / n, "precision": run.precision,
           "batch_shapes": [list(epoch.batches[i][0].shape) + [epoch.batches[i][1].shape[1]] for i in picks]}
    # the GPU path's step against the step the GPU ran before it, same batches, alternating
    params = run.params

    def before():
        for i in picks:
            src, tgt = epoch.batches[i]
            run.optimizer.zero_grad(set_to_none=True)
            loss = loop.teacher_forced_loss(run.model, src, tgt, cfg.label_smoothing, data.pad_id,
                                            amp=loop._AMP_DTYPES.get(run.precision, False),
                                            counted_only=False, chunked=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, float("inf"))
            run.optimizer.step()

    times = {"before": [], "gpu_path": []}
    for r in range(4):
        for name, fn in (("before", before), ("gpu_path", lambda: steps("t"))):
            sync(dev)
            t0 = time.perf_counter()
            fn()
            sync(dev)
            if r:
                times[name].append((time.perf_counter() - t0) / n)
    rec["step_s"] = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    rec["step_speedup"] = rec["step_s"]["before"] / rec["step_s"]["gpu_path"]
    return rec


def _epoch_speeds(metrics: list, steps_per_epoch: int) -> dict:
    tr = [r for r in metrics if r["kind"] == "train"]
    first = [r for r in tr if r["step"] <= steps_per_epoch]
    later = [r for r in tr if r["step"] > 2 * steps_per_epoch]
    f = sum(r["tokens_per_s"] for r in first) / max(len(first), 1)
    s = sum(r["tokens_per_s"] for r in later) / max(len(later), 1)
    return {"first_epoch_tokens_per_s": f, "steady_tokens_per_s": s,
            "first_over_steady": f / s if s else None}


def _train(args, name: str, budget_s: float, methods, out_dir: Path, **over) -> dict:
    cfg = recipe_cfg(args, name)
    data = load_data(args, cfg)
    n = len(loop.bucket_batches(data.train_batches(0, 0, 1), cfg.max_tokens, data.pad_id, 8,
                                max_len=cfg.model.max_len))
    cfg = cfg.updated({"time_budget_s": budget_s, "max_epochs": over.pop("max_epochs", 60),
                       "eval_every": n * (1 if args.smoke else 5), "snapshot_every": n, **over})
    name_ = torch.cuda.get_device_name(0) if device(args) == "cuda" else ""
    peak = next((v for k, v in PEAK_BF16.items() if k in name_), None)
    _, s = run_training(cfg, data, out_dir, progress=False, final_eval=methods, peak_flops=peak)
    s["steps_per_epoch"] = n
    s.update(_epoch_speeds(read_metrics(out_dir), n))
    return s


def phase_train(args) -> dict:
    out_dir = Path(args.work) / "train"
    # room for loading, selection, scoring; --smoke trains seconds: it checks the path, not the recipe
    budget = 8.0 if args.smoke else max(10.0, args.budget - 75)
    s = _train(args, args.recipe, budget, ("greedy", "beam"), out_dir)
    (Path(args.out) / "metrics.jsonl").write_text((out_dir / "metrics.jsonl").read_text())
    lines = [f"# test_2016_flickr samples, recipe {args.recipe}\n"]
    for g, b in zip(s["samples"]["greedy"], s["samples"]["beam"]):
        lines += [f"- **de:** {g['src']}", f"  - reference: {g['ref']}", f"  - greedy: {g['hyp']}",
                  f"  - beam 4: {b['hyp']}", ""]
    (Path(args.out) / "samples.md").write_text("\n".join(lines))
    keep = ("steps", "epochs", "stopped_by", "train_time_s", "tokens_per_s", "model_flops_per_s", "mfu",
            "precision", "step_path", "bucket_shapes", "bleu", "bleu_lc", "chrf", "bleu_signature",
            "selected", "selection", "val_bleu", "steps_per_epoch", "first_epoch_tokens_per_s",
            "steady_tokens_per_s", "first_over_steady", "hardware", "config", "eval_time_s")
    rec = {k: s[k] for k in keep if k in s}
    rec["recipe"] = args.recipe
    b = s.get("bleu", {})
    print(f"train: {args.recipe}: BLEU greedy {b.get('greedy', float('nan')):.2f} beam "
          f"{b.get('beam', float('nan')):.2f}; {s['steps']} steps in {s['train_time_s']:.0f} s; "
          f"{s['tokens_per_s']:,.0f} tokens/s (first epoch {rec['first_epoch_tokens_per_s']:,.0f}, "
          f"steady {rec['steady_tokens_per_s']:,.0f}); precision {s['precision']}", flush=True)
    return rec


def phase_speed(args) -> dict:
    dev = device(args)
    cfg, data, run, _, _ = _base_model_and_batches(args, 0)
    deadline = time.perf_counter() + args.budget - 10
    raw = data.train_batches(0, 0, 1)
    epochs = {"bucketed": loop._prepare_epoch(data, 0, run, 8, True),
              "unbucketed": loop._prepare_epoch(data, 0, run, 8, False)}
    window = loop._Window(run.device)
    rec: dict = {"raw_shapes": len({tuple(s.shape) + tuple(t.shape) for s, t in raw})}
    options = [("eager", "bucketed", None), ("eager", "unbucketed", None), ("compile", "bucketed", "default"),
               ("compile-cudagraphs", "bucketed", "reduce-overhead")]
    if args.smoke:        # compiling takes minutes on a CPU: --smoke checks the eager options' code only
        rec.update({f"{n}/{b}": "not run under --smoke" for n, b, m in options if m is not None})
        options = [o for o in options if o[2] is None]
    for name, batching, mode in options:
        if time.perf_counter() > deadline - 20:
            rec[f"{name}/{batching}"] = "skipped: out of time"
            continue
        epoch = epochs[batching]
        shapes = {}
        for i, (s, t) in enumerate(epoch.batches):
            shapes.setdefault((tuple(s.shape), tuple(t.shape)), i)
        model = run.model if mode is None else torch.compile(run.model, mode=mode, dynamic=False)
        idx = list(shapes.values())                                 # one batch of every shape
        try:
            sync(dev)
            t0 = time.perf_counter()
            for i in idx:                                           # first sight of every shape
                if time.perf_counter() > deadline:
                    raise TimeoutError("warm-up did not finish in the budget")
                run.st["batch_index"] = i
                loop._step(run, model, epoch, data, window, None)
            sync(dev)
            warm = time.perf_counter() - t0
            t0 = time.perf_counter()
            tokens = 0
            for i in idx:                                           # the same shapes again
                run.st["batch_index"] = i
                loop._step(run, model, epoch, data, window, None)
                tokens += epoch.tokens[i]
            sync(dev)
            steady = time.perf_counter() - t0
            rec[f"{name}/{batching}"] = {"shapes": len(idx), "first_pass_s": warm, "second_pass_s": steady,
                                         "steady_tokens_per_s": tokens / steady}
        except Exception as e:  # noqa: BLE001 - an option that fails is a result, not the end of the check
            rec[f"{name}/{batching}"] = f"failed: {type(e).__name__}: {str(e)[:300]}"
        print(f"speed {name}/{batching}: {rec[f'{name}/{batching}']}", flush=True)
    return rec


def phase_recipes(args) -> dict:
    names = [n for n in RECIPES if n != args.recipe]
    if args.smoke:        # --smoke checks that a comparison runs, on the first candidate only
        names = names[:1]
    each = 4.0 if args.smoke else 45.0
    room = args.budget - 5
    rec: dict = {"train_s_each": each, "runs": {}}
    for n in names:
        if room < each + (10 if args.smoke else 25):
            rec["runs"][n] = "skipped: out of time"
            continue
        t0 = time.perf_counter()
        try:
            s = _train(args, n, each, (), Path(args.work) / f"recipe-{n}")
            rec["runs"][n] = {k: s.get(k) for k in ("steps", "epochs", "val_bleu", "val_loss", "selected",
                                                    "tokens_per_s")}
        except Exception as e:  # noqa: BLE001
            rec["runs"][n] = f"failed: {type(e).__name__}: {str(e)[:300]}"
        room -= time.perf_counter() - t0
        print(f"recipe {n}: {rec['runs'][n]}", flush=True)
    return rec


def phase_summary(args) -> dict:
    phases = Path(args.work) / "phases"
    out = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "smoke": args.smoke, "phases": {}}
    try:
        import subprocess
        out["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                       text=True).stdout.strip() or None
    except OSError:
        out["commit"] = None
    for name in PHASES:
        f = phases / f"{name}.json"
        out["phases"][name] = json.loads(f.read_text()) if f.exists() else {"status": "not run"}
    status = os.environ.get("GPU_CHECK_STATUS", "")
    out["status"] = dict(item.split("=", 1) for item in status.split(",") if "=" in item)
    out["failed"] = [n for n, s in out["status"].items() if s != "ok"]
    (Path(args.out) / "summary.json").write_text(json.dumps(out, indent=1, default=str) + "\n")
    return {}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--phase", required=True, choices=PHASES + ("summary",))
    p.add_argument("--work", default=str(ROOT / "runs" / "gpu_check"))
    p.add_argument("--out", required=True)
    p.add_argument("--budget", type=float, default=60.0, help="this phase's seconds")
    p.add_argument("--recipe", default="pre-ln", choices=sorted(RECIPES))
    p.add_argument("--smoke", action="store_true")
    args = p.parse_args(argv)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.work) / "phases").mkdir(parents=True, exist_ok=True)
    if not args.smoke and torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    t0 = time.perf_counter()
    fn = globals()[f"phase_{args.phase}"]
    try:
        rec = fn(args)
        code = 0
    except Exception as e:  # noqa: BLE001 - recorded, then the phase fails with its reason
        traceback.print_exc()
        rec, code = {"error": f"{type(e).__name__}: {e}"}, 1
    if args.phase != "summary":
        rec["phase_s"] = time.perf_counter() - t0
        (Path(args.work) / "phases" / f"{args.phase}.json").write_text(json.dumps(rec, indent=1, default=str))
    return code


if __name__ == "__main__":
    sys.exit(main())
