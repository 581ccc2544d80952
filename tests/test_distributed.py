"""Several processes step exactly as one (chapters 11b and 11c), checked by value on
gloo processes.

A step on N processes, or over K micro-batches in one, must be the step that one process
takes on the union of their batches: the same gradients and the same parameters after
the optimiser's step. Every process must take as many steps, with the same shape at each
step when shapes are bounded, and a setting that cannot work is an error before anything
is written. These tests run gloo processes on this CPU; none runs NCCL across GPUs.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

from conftest import ROOT
from transformer_lib.training import (
    TrainConfig,
    TrainingRun,
    bucket_batches,
    load_checkpoint,
    read_metrics,
    run_training,
    toy_translation_data,
    translate,
)

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
TOY = toy_translation_data(n_train=200)
_first, _second, _third = TOY.train_batches(0)[:3]
# micro-batches of unequal sizes: process 0 gets the first two, process 1 the last two
PIECES = [
    (_first[0][:8], _first[1][:8]),
    (_second[0][:5], _second[1][:5]),
    (_third[0][:3], _third[1][:3]),
    (_second[0][5:7], _second[1][5:7]),
]


def _why(proc: subprocess.CompletedProcess) -> str:
    """What a failed torchrun said: the ranks' own messages come first, the launcher's
    summary last."""
    err = (
        proc.stderr
        if len(proc.stderr) <= 6000
        else proc.stderr[:4000] + "\n[...]\n" + proc.stderr[-2000:]
    )
    return f"exit {proc.returncode}\nstdout (end): {proc.stdout[-1500:]}\nstderr: {err}"


def _counted(batch) -> int:
    return int((batch[1][:, 1:] != TOY.pad_id).sum())


def _union(batches):
    """One batch of all the rows, right-padded to the widest."""

    def cat(i):
        width = max(b[i].shape[1] for b in batches)
        return torch.cat(
            [F.pad(b[i], (0, width - b[i].shape[1]), value=TOY.pad_id) for b in batches]
        )

    return [(cat(0), cat(1))]


def _data(per_rank):
    """A `TrainingData` whose epoch is `per_rank[r]` on process r (and all of them in
    one process)."""

    def shard(epoch, rank=0, world=1):
        return [b for part in per_rank for b in part] if world == 1 else per_rank[rank]

    return dataclasses.replace(TOY, train_batches=shard, val_pairs=(), test_pairs=())


def _cfg(**changes) -> TrainConfig:
    return TrainConfig.from_preset(
        "tiny",
        steps=1,
        device="cpu",
        precision="fp32",
        log_every=1,
        average_last=1,
        model=dict(dropout=0.0),
    ).updated(changes)


def _after_one_step(data, **changes) -> tuple[torch.Tensor, torch.Tensor]:
    """The flattened gradients and parameters after one optimiser step of a fresh
    run."""
    run = TrainingRun(_cfg(**changes), data)
    run.step()
    params = [p for p in run.model.parameters()]
    grads = torch.cat(
        [
            (p.grad if p.grad is not None else torch.zeros_like(p)).flatten()
            for p in params
        ]
    )
    return grads, torch.cat([p.detach().flatten() for p in params])


@functools.lru_cache(maxsize=None)
def _step_on_the_union(
    pieces: tuple[int, ...], **changes
) -> tuple[torch.Tensor, torch.Tensor]:
    """`_after_one_step` of one process on the union of `PIECES[i]` for i in `pieces`:
    the reference several tests compare with, computed once for each setting."""
    return _after_one_step(_data([_union([PIECES[i] for i in pieces])]), **changes)


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest difference, relative to the largest value of `b`."""
    return float((a - b).abs().max() / b.abs().max())


def _same_update(params: torch.Tensor, want: torch.Tensor, grads: torch.Tensor) -> bool:
    """The parameters after one Adam step equal `want` to 1e-5, wherever the gradient is
    more than rounding noise. Adam's first update is `lr * g / (|g| + eps)`, about `lr`
    in size whatever `|g|`: where the true gradient is 0 and float32 leaves ~1e-9, the
    sign of the noise decides it."""
    signal = grads.abs() > 1e-6 * grads.abs().max()
    assert signal.float().mean() > 0.5  # most of the model
    return _relative(params[signal], want[signal]) < 1e-5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _CountingDDP(nn.parallel.DistributedDataParallel):
    """DistributedDataParallel with a communication hook that counts its gradient
    all-reduces."""

    allreduces = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)

        def hook(state, bucket):
            _CountingDDP.allreduces += 1
            return default_hooks.allreduce_hook(state, bucket)

        self.register_comm_hook(None, hook)


# every two-process case of the tests below: name -> (each process's batches, the
# settings). One pair of processes runs them all, each a fresh run (starting two
# processes costs seconds; a case, less)
UNEQUAL = [PIECES[:1], PIECES[2:3]]  # 8 rows and 3: unequal counts
STEP_PATHS = {
    "cpu-step": dict(step_path="cpu"),
    "gpu-step": dict(step_path="gpu", bucket_shapes=False),
    "gpu-step-compiled": dict(
        step_path="gpu", bucket_shapes=False, compile="aot_eager"
    ),
}
TWO_PROCESS_CASES = {
    **{name: (UNEQUAL, changes) for name, changes in STEP_PATHS.items()},
    "accumulate": ([PIECES[:2], PIECES[2:]], dict(accumulate=2)),
    "accumulate-4-steps": ([PIECES * 2, PIECES[::-1] * 2], dict(accumulate=2, steps=4)),
}


def _worker(rank: int, world: int, port: int, out: str, cases: dict) -> None:
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    # what the loop wraps the model in
    nn.parallel.DistributedDataParallel = _CountingDDP
    try:
        results = {}
        for name, (per_rank, changes) in cases.items():
            _CountingDDP.allreduces = 0
            run = TrainingRun(_cfg(**changes), _data(per_rank))
            for _ in range(changes.get("steps", 1)):
                run.step()
            grads = torch.cat(
                [
                    (p.grad if p.grad is not None else torch.zeros_like(p)).flatten()
                    for p in run.model.parameters()
                ]
            )
            params = torch.cat([p.detach().flatten() for p in run.model.parameters()])
            results[name] = {
                "grads": grads,
                "params": params,
                "allreduces": _CountingDDP.allreduces,
                "steps": run.st["step"],
            }
        if rank == 0:
            torch.save(results, out)
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory) -> dict:
    """Rank 0's gradients, parameters, gradient all-reduces and steps, for each of
    TWO_PROCESS_CASES."""
    out = str(tmp_path_factory.mktemp("two_processes") / "rank0.pt")
    mp.spawn(
        _worker, args=(2, _free_port(), out, TWO_PROCESS_CASES), nprocs=2, join=True
    )
    return torch.load(out, weights_only=False)


# (one process would re-batch the union into bounded shapes: the GPU's step here keeps
# the batches)
@pytest.mark.parametrize("path", list(STEP_PATHS))
def test_two_processes_take_the_step_of_one_on_the_union(two_processes, path):
    assert _counted(PIECES[0]) > 1.5 * _counted(PIECES[2])
    two = two_processes[path]
    grads, params = _step_on_the_union((0, 2), **STEP_PATHS[path])
    assert _relative(two["grads"], grads) < 1e-5
    assert _same_update(two["params"], params, grads)
    # the tiny model's gradients: one bucket
    assert two["allreduces"] == 1


def test_each_process_dividing_by_its_own_count_fails_that_test():
    """The normalisation before this one: each process's mean, then DDP's average of the
    two."""
    union, _ = _step_on_the_union((0, 2))
    own = (
        _after_one_step(_data([PIECES[:1]]))[0]
        + _after_one_step(_data([PIECES[2:3]]))[0]
    ) / 2
    assert _relative(own, union) > 0.05  # 37 % was measured on Multi30k-like batches


def test_accumulation_in_one_process_is_the_step_on_the_union():
    grads, params = _after_one_step(_data([PIECES]), accumulate=4)
    want_grads, want_params = _step_on_the_union((0, 1, 2, 3))
    assert _relative(grads, want_grads) < 1e-5 and _same_update(
        params, want_params, want_grads
    )


def test_accumulation_on_two_processes_syncs_once_per_step(two_processes):
    two = two_processes["accumulate"]  # PIECES[:2] on process 0, PIECES[2:] on 1
    grads, params = _step_on_the_union((0, 1, 2, 3))
    assert _relative(two["grads"], grads) < 1e-5 and _same_update(
        two["params"], params, grads
    )
    assert two["allreduces"] == two["steps"] == 1  # not one per micro-batch
    # and over several steps: 8 micro-batches on each process, 4 steps of 2, 4
    # all-reduces
    again = two_processes["accumulate-4-steps"]
    assert again["allreduces"] == again["steps"] == 4


def test_bounded_shapes_give_every_process_as_many_steps_of_one_shape():
    data = toy_translation_data(n_train=500, max_words=12, batch_size=24)
    raw = data.train_batches(0)
    for world in (2, 3):
        out = bucket_batches(raw, 600, data.pad_id, 8, world=world)
        assert len(out) % world == 0
        for i in range(0, len(out), world):  # one step: the same shape everywhere
            assert (
                len({(tuple(s.shape), tuple(t.shape)) for s, t in out[i : i + world]})
                == 1
            )
        rows = sorted(
            (tuple(s[s != 0].tolist()), tuple(t[t != 0].tolist()))
            for src, tgt in out
            for s, t in zip(src, tgt)
            if (t != 0).any()
        )
        want = sorted(
            (tuple(s[s != 0].tolist()), tuple(t[t != 0].tolist()))
            for src, tgt in raw
            for s, t in zip(src, tgt)
        )
        assert rows == want  # every pair once; the rest is padding
    one, default = (
        bucket_batches(raw, 600, data.pad_id, 8, world=1),
        bucket_batches(raw, 600, data.pad_id, 8),
    )
    assert len(one) == len(default) and all(
        torch.equal(a, b) for p, q in zip(one, default) for a, b in zip(p, q)
    )


def test_three_processes_with_bounded_shapes_train_resume_and_end(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "3",
        "-m",
        "transformer_lib.train",
        "--preset",
        "tiny",
        "--data",
        "toy",
        "--out",
        str(tmp_path),
        "--no-progress",
        "--eval",
        "greedy",
        "--set",
        "bucket_shapes=true",
        "--set",
        "log_every=1",
        "--dist-timeout",
        "120",
    ]
    first = subprocess.run(
        cmd + ["--steps", "12"], capture_output=True, text=True, env=ENV, timeout=600
    )
    assert first.returncode == 0, _why(first)
    second = subprocess.run(
        cmd + ["--steps", "24", "--resume"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=600,
    )
    assert second.returncode == 0, _why(second)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (
        summary["world_size"] == 3
        and summary["bucket_shapes"] is True
        and summary["steps"] == 24
    )
    assert [r["step"] for r in read_metrics(tmp_path) if r["kind"] == "train"] == list(
        range(1, 25)
    )
    # the test set, decoded by the three processes (every third sentence each), equals
    # one process's decoding
    model = load_checkpoint(tmp_path)
    samples = summary["samples"]["greedy"]
    assert [x["hyp"] for x in samples] == translate(
        model, [x["src"] for x in samples], TOY
    )


def test_the_compiled_step_over_bounded_shapes_never_falls_back_to_eager(
    tmp_path, monkeypatch
):
    """More bucket shapes than dynamo's default recompile limit (8): one graph for each,
    none refused."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    data = toy_translation_data(n_train=600, max_words=30, batch_size=16)
    cfg = TrainConfig.from_preset(
        "tiny",
        device="cpu",
        step_path="gpu",
        compile="eager",
        bucket_shapes=True,
        pad_to_multiple=2,
        max_tokens=300,
        max_epochs=2,
        steps=10**6,
        log_every=50,
        model=dict(max_len=64),
    )
    run = TrainingRun(cfg, data)
    shapes = {(tuple(s.shape), tuple(t.shape)) for s, t in run.epoch.batches}
    assert len(shapes) > 8  # past the default limit
    monkeypatch.setattr(torch._dynamo.config, "fail_on_recompile_limit_hit", True)
    torch._dynamo.reset()
    counters.clear()
    # two epochs: raises at the limit
    _, summary = run_training(cfg, data, tmp_path, progress=False, final_eval=())
    assert summary["stopped_by"] == "epochs"
    # per shape, not per step
    assert len(shapes) <= counters["stats"]["unique_graphs"] <= 3 * len(shapes)


# ----- settings that cannot work: named errors, before anything is written ------------
@pytest.mark.parametrize(
    "field,value,match",
    [
        ("accumulate", 0, "accumulate"),
        ("dist_timeout_s", 0, "dist_timeout_s"),
        ("dist_timeout_s", -5.0, "dist_timeout_s"),
    ],
)
def test_bad_settings_are_named(field, value, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**{field: value})


@pytest.mark.parametrize("flag,value", [("--accumulate", "0"), ("--dist-timeout", "0")])
def test_the_cli_refuses_bad_settings_and_writes_nothing(tmp_path, flag, value):
    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "transformer_lib.train",
            "--preset",
            "tiny",
            "--data",
            "toy",
            "--out",
            str(out),
            flag,
            value,
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert (
        proc.returncode == 2
        and flag.lstrip("-").replace("-", "_").split("_")[0] in proc.stderr
    )
    assert not out.exists()


def _refused_worker(rank: int, world: int, port: int, out: str, buckets: bool) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        one_batch = dataclasses.replace(
            TOY, train_batches=lambda e, r=0, w=1: [PIECES[3]] if r == 0 else []
        )
        try:
            run_training(
                _cfg(bucket_shapes=buckets),
                one_batch,
                out,
                progress=False,
                final_eval=(),
            )
        except ValueError as e:
            Path(out + f".rank{rank}").write_text(str(e))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("buckets,world", [(False, 2), (True, 3)])
def test_more_processes_than_the_epoch_can_feed_is_an_error(tmp_path, buckets, world):
    out = str(tmp_path / "run")
    mp.spawn(
        _refused_worker,
        args=(world, _free_port(), out, buckets),
        nprocs=world,
        join=True,
    )
    messages = [Path(out + f".rank{r}").read_text() for r in range(world)]
    unit = "sentence pairs" if buckets else "batches"
    assert all(
        f"{world} processes, but an epoch holds only" in m and unit in m
        for m in messages
    )
    assert not Path(out).exists()  # nothing written


# ----- runs that survive: a killed rank restarts, every rank stops together -----------
DRIVER = """
import os, signal, sys
from pathlib import Path
from transformer_lib import train
from transformer_lib.training import loop
marker, kill_at = Path(sys.argv[1]), int(sys.argv[2])
step = loop.TrainingRun.step

def step_then_maybe_die(self):
    step(self)
    if self.st["step"] == kill_at and self.state.rank == 1 and not marker.exists():
        marker.write_text("killed")
        os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no message: a lost machine
loop.TrainingRun.step = step_then_maybe_die
sys.exit(train.cli(sys.argv[3:]))
"""


def _train_args(tmp_path: Path, out: Path, kill_at: int, steps: int = 12) -> list[str]:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    return [
        str(driver),
        str(out) + ".killed",
        str(kill_at),
        "--preset",
        "tiny",
        "--data",
        "toy",
        "--out",
        str(out),
        "--no-progress",
        "--steps",
        str(steps),
        "--set",
        "log_every=1",
        "--set",
        "checkpoint_every=4",
        "--resume",
        "auto",
        "--dist-timeout",
        "120",
        "--eval",
    ]


def _torchrun(
    tmp_path: Path, out: Path, kill_at: int, restarts: int
) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "--max-restarts",
        str(restarts),
        *_train_args(tmp_path, out, kill_at),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=900)


def _two_nodes(tmp_path: Path, outs: list[Path], steps: int) -> list[tuple[int, str]]:
    """The run as two "machines" of one process each: two torchrun launchers meeting at
    a c10d rendezvous on 127.0.0.1, each with its own --out (no shared disk). Returns
    (status, stderr)."""
    port, procs, logs = _free_port(), [], []
    for i, out in enumerate(outs):
        logs.append(tmp_path / f"node{i}-{steps}.log")
        with logs[-1].open("w") as log:
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "torch.distributed.run",
                        "--nnodes",
                        "2",
                        "--nproc_per_node",
                        "1",
                        "--rdzv-backend",
                        "c10d",
                        "--rdzv-endpoint",
                        f"127.0.0.1:{port}",
                        "--rdzv-id",
                        f"two-{steps}",
                        *_train_args(tmp_path, out, 0, steps),
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=ENV,
                )
            )
    return [(p.wait(timeout=900), log.read_text()) for p, log in zip(procs, logs)]


def test_a_rank_killed_mid_epoch_restarts_and_ends_as_if_never_killed(tmp_path):
    """Two gloo processes under `torchrun --max-restarts=1 ... --resume auto`; rank 1 is
    SIGKILLed after step 6 (a checkpoint at step 4, mid-epoch: 31 batches per rank). The
    launcher restarts both; they resume from step 4 and end with the uninterrupted run's
    weights and losses, bit for bit."""
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    first = _torchrun(tmp_path, straight, kill_at=0, restarts=0)
    assert first.returncode == 0, _why(first)
    second = _torchrun(tmp_path, killed, kill_at=6, restarts=1)
    assert second.returncode == 0, _why(second)
    assert Path(str(killed) + ".killed").exists()  # the kill happened
    a, b = read_metrics(straight), read_metrics(killed)
    losses = [
        [(r["step"], r["loss"]) for r in m if r["kind"] == "train"] for m in (a, b)
    ]
    assert [s for s, _ in losses[1]] == list(range(1, 13))  # each step logged once
    assert losses[0] == losses[1]  # the same losses, step for step, exactly
    wa, wb = (
        torch.load(d / "checkpoint.pt", weights_only=True)["model"]
        for d in (straight, killed)
    )
    # the same final weights, bit for bit
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    # the true totals: every rank's tokens, not rank 0's share times two
    want = sum(
        _real_tokens(b) for r in range(2) for b in TOY_FULL.train_batches(0, r, 2)[:12]
    )
    summary = json.loads((killed / "summary.json").read_text())
    assert summary["train_tokens"] == want
    rank0 = sum(_real_tokens(b) for b in TOY_FULL.train_batches(0, 0, 2)[:12])
    assert want != 2 * rank0  # the shards differ: the test can tell
    # two launchers (--nnodes=2), each with its own empty --out: the same run as
    # --nproc_per_node=2
    nodes = [tmp_path / "node_a", tmp_path / "node_b"]
    for status, log in _two_nodes(tmp_path, nodes, steps=12):
        assert status == 0, log[-3000:]
    written = [d for d in nodes if d.exists() and any(d.iterdir())]
    assert len(written) == 1  # process 0 wrote; the other folder stays empty
    assert [
        (r["step"], r["loss"]) for r in read_metrics(written[0]) if r["kind"] == "train"
    ] == losses[0]
    wn = torch.load(written[0] / "checkpoint.pt", weights_only=True)["model"]
    assert all(torch.equal(wa[k], wn[k]) for k in wa)
    # resumed with each launcher's own --out: only one of them holds the checkpoint,
    # refused by name
    for status, log in _two_nodes(tmp_path, nodes, steps=16):
        assert (
            status != 0 and "--out is not one folder that every machine shares" in log
        ), log[-3000:]
    assert max(r["step"] for r in read_metrics(written[0])) == 12  # nothing trained
    # the checkpoint of 2 processes x accumulate 1, resumed by 1 process x accumulate 2:
    # refused, named
    before = (straight / "metrics.jsonl").read_bytes()
    cfg = TrainConfig.from_preset(
        "tiny", steps=14, log_every=1, checkpoint_every=4, accumulate=2
    )
    with pytest.raises(
        ValueError,
        match=r"processes 2 -> 1; accumulate 1 -> 2.*torchrun --nproc_per_node=2",
    ):
        run_training(
            cfg, TOY_FULL, straight, resume=True, progress=False, final_eval=()
        )
    assert (straight / "metrics.jsonl").read_bytes() == before


TOY_FULL = toy_translation_data()


def _real_tokens(batch) -> int:
    src, tgt = batch
    return int((src != TOY.pad_id).sum()) + int((tgt[:, 1:] != TOY.pad_id).sum())


def _overflow_worker(rank: int, world: int, port: int, out: str) -> None:
    from datetime import timedelta
    from transformer_lib.training import step

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group(
        "gloo", rank=rank, world_size=world, timeout=timedelta(seconds=3600)
    )
    # rank 1's loss overflows at its third step, alone
    if rank == 1:
        calls, loss_of = [0], step.teacher_forced_loss

        def overflowing(*args, **kwargs):
            calls[0] += 1
            loss = loss_of(*args, **kwargs)
            # the value inf, the gradients finite
            return loss + float("inf") if calls[0] == 3 else loss

        step.teacher_forced_loss = overflowing  # where the step looks it up
    try:
        run_training(
            _cfg(steps=8, log_every=2, dist_timeout_s=3600.0),
            dataclasses.replace(TOY, test_pairs=()),
            None,
            progress=False,
            final_eval=(),
        )
        Path(out + f".rank{rank}").write_text("finished")
    except FloatingPointError as e:
        Path(out + f".rank{rank}").write_text(str(e))
    finally:
        dist.destroy_process_group()


def test_one_ranks_overflow_stops_every_rank_at_the_same_step(tmp_path):
    """The process-group timeout is an hour: a rank left waiting in a collective would
    hang, not fail. Every rank must stop with the divergence message at the same log
    record."""
    out = str(tmp_path / "run")
    ctx = mp.start_processes(
        _overflow_worker, args=(2, _free_port(), out), nprocs=2, join=False
    )
    for _ in range(600):  # a guard against a hang, not a speed test
        if ctx.join(timeout=1):
            break
    else:
        for p in ctx.processes:
            p.kill()
        pytest.fail("a rank hung in a collective: the ranks did not stop together")
    messages = [Path(out + f".rank{r}").read_text() for r in range(2)]
    assert messages[0] == messages[1]
    assert messages[0].startswith(
        "training diverged: at the log record of step 4 the loss is inf"
    )
