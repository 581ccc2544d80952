"""The GPU's training path, checked on a CPU (chapter 11b, "Under the hood: the GPU
run").

What a CPU can check of it: the operator calls of its loss (a kernel launch each on a
GPU) do not grow with the batch; an epoch's batches come in a small fixed set of shapes
that repeat every epoch; its step asks the device for no value (no host sync); the
precision a card gets."""

from __future__ import annotations

import collections
import math

import pytest
import torch
import torch.nn.functional as F

from booktools.opcount import OpCounter
import transformer_lib.training.hardware as hardware
import transformer_lib.training.step as step
from transformer_lib.training import (
    TrainConfig,
    TrainingRun,
    bucket_batches,
    bucket_widths,
    chunked_cross_entropy,
    native_bf16,
    plan_step,
    resolve_precision,
    resolve_step_path,
    toy_translation_data,
)

# .item(), float(), bool(), int() of a tensor
SYNC_OPS = ("_local_scalar_dense", "is_nonzero", "item")


def loss_calls(rows: int, chunked: bool, vocab: int = 512) -> int:
    g = torch.Generator().manual_seed(rows)
    logits = torch.randn(rows, vocab, generator=g).bfloat16().requires_grad_()
    target = torch.randint(1, vocab, (rows,), generator=g)
    target[::7] = 0  # some padding
    with OpCounter() as c:
        if chunked:
            loss = chunked_cross_entropy(logits, target, 0.1, 0)
        else:
            loss = F.cross_entropy(
                logits.float(), target, ignore_index=0, label_smoothing=0.1
            )
        loss.backward()
    return c.total


def test_the_gpu_loss_costs_the_same_few_calls_at_any_batch_size():
    counts = {rows: loss_calls(rows, chunked=False) for rows in (64, 1000, 12000)}
    assert len(set(counts.values())) == 1, counts  # independent of the batch
    assert counts[12000] <= 100
    chunked = loss_calls(12000, chunked=True)
    # the CPU's loss, a few calls per block of 64 rows
    assert chunked > 50 * counts[12000]


def test_teacher_forced_loss_in_one_piece_equals_the_chunked_loss():
    torch.manual_seed(0)
    from transformer_lib import Transformer, TransformerConfig

    model = Transformer(
        TransformerConfig(
            src_vocab_size=40,
            tgt_vocab_size=40,
            d_model=32,
            n_heads=2,
            n_encoder_layers=1,
            n_decoder_layers=1,
            d_ff=64,
            dropout=0.0,
        )
    )
    src = torch.randint(3, 40, (4, 7))
    tgt = torch.randint(3, 40, (4, 6))
    tgt[1, 4:] = 0
    one = step.teacher_forced_loss(
        model, src, tgt, 0.1, 0, counted_only=False, chunked=False
    )
    blocks = step.teacher_forced_loss(
        model, src, tgt, 0.1, 0, counted_only=True, chunked=True
    )
    assert torch.allclose(one, blocks, rtol=1e-5, atol=1e-6)


def _shapes(batches):
    return sorted((tuple(s.shape), tuple(t.shape)) for s, t in batches)


def test_bucketed_epochs_repeat_a_small_fixed_set_of_shapes():
    data = toy_translation_data(n_train=1000, max_words=12, batch_size=24)
    epochs = [
        bucket_batches(data.train_batches(e), 600, data.pad_id, 8, epoch=e)
        for e in range(3)
    ]
    shapes = [_shapes(b) for b in epochs]
    assert shapes[0] == shapes[1] == shapes[2]  # the same shapes, as often, every epoch
    widths = {(s[1], t[1]) for s, t in shapes[0]}
    assert len(set(shapes[0])) <= 2 * len(widths)  # at most two row counts per class
    raw = {
        (tuple(s.shape), tuple(t.shape))
        for e in range(3)
        for s, t in data.train_batches(e)
    }
    assert len(set(shapes[0])) < len(raw)  # unbucketed, new shapes keep coming
    ladder = bucket_widths(8, 64)
    for (b, sw), (_, tw) in shapes[0]:
        assert sw in ladder and tw - 1 in ladder
        assert b == 1 or b * (sw + tw) <= 600  # within the token budget
    for e, batches in enumerate(epochs):  # every pair exactly once
        got = sorted(
            (tuple(s[s != 0].tolist()), tuple(t[t != 0].tolist()))
            for src, tgt in batches
            for s, t in zip(src, tgt)
        )
        want = sorted(
            (tuple(s[s != 0].tolist()), tuple(t[t != 0].tolist()))
            for src, tgt in data.train_batches(e)
            for s, t in zip(src, tgt)
        )
        assert got == want
    # reshuffled
    assert [tuple(b[0].shape) for b in epochs[0]] != [
        tuple(b[0].shape) for b in epochs[1]
    ]


def test_bucket_widths_and_bad_input():
    assert bucket_widths(8, 200) == [8, 16, 24, 32, 48, 64, 96, 128, 192, 256]
    with pytest.raises(ValueError, match="multiple"):
        bucket_widths(0, 10)
    with pytest.raises(ValueError, match="max_tokens"):
        bucket_batches([], 0, 0)
    with pytest.raises(ValueError, match="no sentence pair"):
        bucket_batches([], 100, 0)


def _run_steps(path: str, n: int = 3) -> tuple[collections.Counter, int]:
    cfg = TrainConfig.from_preset("tiny", device="cpu", step_path=path, bf16=False)
    data = toy_translation_data(n_train=200)
    run = TrainingRun(cfg, data)
    syncs = []
    real_sync = torch.cuda.synchronize
    # counted, never called on a CPU
    torch.cuda.synchronize = lambda *a, **k: syncs.append(1)
    try:
        with OpCounter() as c:
            for _ in range(n):
                run.step()
    finally:
        torch.cuda.synchronize = real_sync
    return c.calls, len(syncs)


def test_the_gpu_step_asks_the_device_for_nothing():
    calls, syncs = _run_steps("gpu")
    assert syncs == 0 and not any(calls[op] for op in SYNC_OPS), {
        op: calls[op] for op in SYNC_OPS
    }
    # the CPU's step reads host values: the counter sees them
    cpu_calls, _ = _run_steps("cpu")
    assert sum(cpu_calls[op] for op in SYNC_OPS) > 0


def test_the_gpu_path_trains_with_bounded_shapes_and_records_it(tmp_path):
    from transformer_lib.training import read_metrics, run_training

    cfg = TrainConfig.from_preset(
        "tiny", device="cpu", step_path="gpu", steps=30, log_every=5
    )
    _, s = run_training(
        cfg, toy_translation_data(n_train=300), tmp_path, progress=False, final_eval=()
    )
    assert (
        s["step_path"] == "gpu"
        and s["bucket_shapes"] is True
        and s["precision"] in ("bf16", "fp32")
    )
    start = read_metrics(tmp_path)[0]
    assert start["precision"] == s["precision"] and start["step_path"] == "gpu"
    losses = [r["loss"] for r in read_metrics(tmp_path) if r["kind"] == "train"]
    assert losses[-1] < losses[0]


def test_step_path_setting():
    assert (
        resolve_step_path("auto", "cpu") == "cpu"
        and resolve_step_path("auto", "cuda") == "gpu"
    )
    assert (
        resolve_step_path("gpu", "cpu") == "gpu"
        and resolve_step_path("cpu", "cuda") == "cpu"
    )
    with pytest.raises(ValueError, match="step_path"):
        TrainConfig(step_path="tpu")
    with pytest.raises(TypeError, match="bucket_shapes"):
        TrainConfig(bucket_shapes="yes")


@pytest.mark.parametrize(
    "capability,want",
    [
        ((7, 0), "fp16"),
        ((7, 5), "fp16"),
        ((8, 0), "bf16"),
        ((8, 9), "bf16"),
        ((9, 0), "bf16"),
        ((10, 0), "bf16"),
    ],
)
def test_precision_by_compute_capability(monkeypatch, capability, want):
    monkeypatch.delenv(hardware.BF16_ENV, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    # counts emulation: not asked
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: capability)
    assert native_bf16("cuda") is (want == "bf16")
    assert resolve_precision("auto", "cuda") == want
    assert resolve_precision(False, "cuda") == "fp32"  # float32 on request
    assert resolve_precision(True, "cuda") == "bf16"
    monkeypatch.setenv(hardware.BF16_ENV, "0")
    assert resolve_precision("auto", "cuda") == "fp32"


def test_precision_on_a_cpu_is_never_fp16(monkeypatch):
    monkeypatch.delenv(hardware.BF16_ENV, raising=False)
    assert resolve_precision("auto", "cpu") == (
        "bf16" if native_bf16("cpu") else "fp32"
    )
    assert resolve_precision(False, "cpu") == "fp32"


def test_the_fp16_step_scales_the_loss_and_still_learns():
    """The float16 path (a card without native bf16), run on a CPU: scaler, fused Adam,
    no host sync."""
    cfg = TrainConfig.from_preset(
        "tiny", device="cpu", step_path="gpu", precision="fp16"
    )
    run = TrainingRun(cfg, toy_translation_data(n_train=200))
    assert run.plan.precision == "fp16" and run.state.scaler.is_enabled()
    run.state.scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    with OpCounter() as c:
        for _ in range(len(run.epoch.step_targets)):
            run.step()
    assert not any(c.calls[op] for op in SYNC_OPS)
    assert run.state.scaler.get_scale() > 0 and torch.isfinite(run.window.loss)


def test_steps_the_fp16_scaler_skips_are_counted_not_taken_for_divergence(
    tmp_path, monkeypatch
):
    """A scale far too large at the start overflows the fp16 gradients: the scaler skips
    those steps (by design, as in the first steps of any fp16 run) and the run goes on
    to its end."""
    real_init = torch.amp.GradScaler.__init__
    monkeypatch.setattr(
        torch.amp.GradScaler,
        "__init__",
        lambda self, *a, **k: real_init(self, *a, **{**k, "init_scale": 2.0**40}),
    )
    from transformer_lib.training import read_metrics, run_training

    for path in ("cpu", "gpu"):
        cfg = TrainConfig.from_preset(
            "tiny",
            device="cpu",
            step_path=path,
            precision="fp16",
            steps=60,
            log_every=10,
        )
        _, s = run_training(
            cfg,
            toy_translation_data(n_train=300),
            tmp_path / path,
            progress=False,
            final_eval=(),
        )
        train = [r for r in read_metrics(tmp_path / path) if r["kind"] == "train"]
        assert (
            s["stopped_by"] == "steps" and s["steps"] == 60 and s["precision"] == "fp16"
        )
        assert s["skipped_steps"] == sum(r["skipped_steps"] for r in train) > 0
        # the scale settles
        assert train[0]["skipped_steps"] > 0 and train[-1]["skipped_steps"] == 0
        assert all(
            math.isfinite(r["grad_norm_max"]) and math.isfinite(r["loss"])
            for r in train
        )
        assert (
            train[-1]["loss_scale"] < 2.0**40 and train[-1]["loss"] < train[0]["loss"]
        )


def test_a_collapsed_fp16_scale_is_divergence(tmp_path, monkeypatch):
    """Divergence is a non-finite loss, or a gradient scale that fell below a floor."""
    from transformer_lib.training import MIN_LOSS_SCALE, run_training

    real_init = torch.amp.GradScaler.__init__
    monkeypatch.setattr(
        torch.amp.GradScaler,
        "__init__",
        lambda self, *a, **k: real_init(
            self, *a, **{**k, "init_scale": MIN_LOSS_SCALE / 4}
        ),
    )
    cfg = TrainConfig.from_preset(
        "tiny", device="cpu", step_path="gpu", precision="fp16", steps=20, log_every=5
    )
    with pytest.raises(FloatingPointError, match="fp16 gradient scale fell to"):
        run_training(
            cfg,
            toy_translation_data(n_train=300),
            tmp_path,
            progress=False,
            final_eval=(),
        )


def test_one_plan_for_the_step():
    cpu = plan_step(TrainConfig.from_preset("tiny", device="cpu", bf16=False), "cpu")
    assert (
        cpu.path,
        cpu.precision,
        cpu.counted_only,
        cpu.chunked_loss,
        cpu.buckets,
        cpu.compile,
    ) == ("cpu", "fp32", True, True, False, None)
    assert not cpu.grad_scaler().is_enabled() and cpu.amp_dtype is None
    gpu = plan_step(
        TrainConfig.from_preset(
            "tiny", step_path="gpu", precision="fp16", compile="eager"
        ),
        "cpu",
        2,
    )
    assert (
        gpu.path,
        gpu.counted_only,
        gpu.chunked_loss,
        gpu.check_every_step,
        gpu.buckets,
        gpu.compile,
    ) == ("gpu", False, False, False, True, "eager")
    assert (
        gpu.grad_scaler().is_enabled()
        and gpu.amp_dtype == torch.float16
        and gpu.world == 2
        and gpu.summed
    )
    with pytest.raises(ValueError, match="contradicts"):
        TrainConfig(bf16=True, precision="fp32")
    with pytest.raises(ValueError, match="precision"):
        TrainConfig(precision="fp8")


def _gpu_check(tmp_path, *args):
    import json
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "OUT": str(tmp_path / "out"),
        "WORK": str(tmp_path / "work"),
    }
    t0 = time.perf_counter()
    proc = subprocess.run(
        ["bash", str(root / "scripts" / "gpu_check.sh"), "--smoke", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert proc.returncode == 0, (
        summary.get("status"),
        proc.stdout[-3000:],
        proc.stderr[-2000:],
    )
    assert summary["failed"] == [] and len(list((tmp_path / "out").iterdir())) <= 8
    return summary, time.perf_counter() - t0


def test_gpu_check_smoke_runs_the_core_bounded_by_steps(tmp_path):
    """`scripts/gpu_check.sh --smoke`: the GPU check's core on a CPU (tiny model, toy
    task), every phase bounded by steps, not seconds: a loaded machine makes it slower,
    never a failure."""
    summary, _ = _gpu_check(tmp_path)
    assert summary["status"] == {
        "preflight": "ok",
        "equality": "ok",
        "profile": "ok",
        "train": "ok",
        "speed": "not asked",
        "recipes": "not asked",
    }
    phases = summary["phases"]
    assert phases["equality"]["ok"] is True and phases["train"]["status"] == "ok"
    assert phases["train"]["stopped_by"] == "steps" and phases["train"]["steps"] == 30
    assert phases["train"]["step_path"] == "gpu" and phases["train"]["bucket_shapes"]
    assert set(phases["train"]["time_s"]) == {
        "steps",
        "batches",
        "validation",
        "checkpoints",
    }
    assert phases["profile"]["shapes"] == len(phases["profile"]["first_step_s"]) > 1


def test_gpu_check_smoke_runs_the_extras_when_asked(tmp_path):
    summary, _ = _gpu_check(tmp_path, "--extras")
    speed, recipes = summary["phases"]["speed"], summary["phases"]["recipes"]
    for option in ("eager", "eager-unbucketed"):  # every shape once, then again
        assert speed[option]["shapes"] >= 1 and speed[option]["steady_tokens_per_s"] > 0
    assert speed["compile"] == "not run under --smoke"
    # a candidate beside the baseline
    ((name, pair),) = recipes["runs"].items()
    assert set(pair) == {recipes["baseline"], name} and all(
        isinstance(r, dict) for r in pair.values()
    )
