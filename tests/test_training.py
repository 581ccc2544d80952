"""Training (chapter 11b) and its command line (chapter 11c): schedule, label smoothing,
exact resume, DistributedDataParallel on gloo with two processes, the CLI and the GPU
script (smoke).

Everything here runs on the synthetic task `toy_translation_data` (no download, torch
only)."""

import json
import math
import os
import socket
import subprocess
import sys

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

from conftest import ROOT
from transformer_lib.training import (
    TrainConfig,
    average_state_dicts,
    corpus_bleu,
    label_smoothed_cross_entropy,
    load_checkpoint,
    make_optimizer,
    make_scheduler,
    noam_lr,
    read_metrics,
    run_training,
    toy_translation_data,
    train_flops,
    translate,
    translation_scores,
)

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


# ----- the recipe ---------------------------------------------------------------------
def test_noam_lr_values():
    d, w = 512, 4000
    assert noam_lr(1, d, w) == pytest.approx(d**-0.5 * w**-1.5)
    assert noam_lr(w, d, w) == pytest.approx((d * w) ** -0.5)  # the peak
    assert noam_lr(4 * w, d, w) == pytest.approx(noam_lr(w, d, w) / 2)  # 1/sqrt decay
    lrs = [noam_lr(s, d, w) for s in range(1, 3 * w)]
    peak = max(range(len(lrs)), key=lrs.__getitem__) + 1
    assert peak == w
    assert all(a < b for a, b in zip(lrs[: w - 1], lrs[1:w]))  # warm-up rises
    assert all(a > b for a, b in zip(lrs[w:-1], lrs[w + 1 :]))  # then decays
    assert noam_lr(100, d, w, scale=2.0) == pytest.approx(2 * noam_lr(100, d, w))


@pytest.mark.parametrize(
    "bad",
    [
        dict(step=0),
        dict(d_model=0),
        dict(warmup_steps=-1),
        dict(scale=0.0),
        dict(step=1.5),
    ],
)
def test_noam_lr_rejects_bad_arguments(bad):
    args = dict(step=10, d_model=64, warmup_steps=100, scale=1.0) | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        noam_lr(**args)


def test_scheduler_follows_noam_lr():
    model = nn.Linear(4, 4)
    opt = make_optimizer(model)
    assert opt.defaults["betas"] == (0.9, 0.98) and opt.defaults["eps"] == 1e-9
    sched = make_scheduler(opt, d_model=64, warmup_steps=10, scale=0.5)
    for step in range(1, 40):
        assert opt.param_groups[0]["lr"] == pytest.approx(noam_lr(step, 64, 10, 0.5))
        opt.step()
        sched.step()
    with pytest.raises(ValueError, match="base learning rate"):
        make_scheduler(torch.optim.Adam(model.parameters(), lr=1e-3), 64)


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("ignore_index", [None, 0])
def test_label_smoothing_matches_torch(smoothing, ignore_index):
    logits, target = torch.randn(64, 13) * 3, torch.randint(0, 13, (64,))
    ours = label_smoothed_cross_entropy(logits, target, smoothing, ignore_index)
    ref = nn.CrossEntropyLoss(
        label_smoothing=smoothing,
        ignore_index=-100 if ignore_index is None else ignore_index,
    )(logits, target)
    assert torch.allclose(ours, ref, atol=1e-6)


def test_label_smoothing_errors():
    with pytest.raises(ValueError, match="smoothing"):
        label_smoothed_cross_entropy(
            torch.randn(3, 5), torch.zeros(3, dtype=torch.long), 1.0
        )
    with pytest.raises(ValueError, match="target"):
        label_smoothed_cross_entropy(
            torch.randn(3, 5), torch.zeros(4, dtype=torch.long)
        )


def test_presets():
    cpu, base = TrainConfig.from_preset("cpu"), TrainConfig.from_preset("base")
    m = base.model
    assert (m.d_model, m.n_heads, m.n_encoder_layers, m.d_ff, m.dropout) == (
        512,
        8,
        6,
        2048,
        0.1,
    )
    # the paper's base model: the last 5 checkpoints
    assert base.average_last == 5
    # all pairs (outliers only)
    assert cpu.max_sentence_tokens is None or cpu.max_sentence_tokens >= 64
    full = TrainConfig.from_preset("cpu-full")
    assert full.steps > cpu.steps and full.num_threads == cpu.num_threads
    assert TrainConfig.from_preset("cpu", steps=7).steps == 7
    with pytest.raises(ValueError, match="unknown preset"):
        TrainConfig.from_preset("huge")
    with pytest.raises(TypeError, match="learning_rate"):
        TrainConfig.from_preset("cpu", learning_rate=1e-3)


def test_train_flops_is_chapter_9s_count_summed():
    from transformer_lib.params import transformer_flops

    mcfg = TrainConfig.from_preset("cpu").model_config(8000)
    assert train_flops(mcfg, [7, 12], [9, 4]) == transformer_flops(
        mcfg, 7, 9
    ) + transformer_flops(mcfg, 12, 4)
    g = torch.Generator().manual_seed(0)
    S, T = (
        torch.randint(1, 30, (200,), generator=g),
        torch.randint(1, 30, (200,), generator=g),
    )
    loop = sum(transformer_flops(mcfg, int(s), int(t)) for s, t in zip(S, T))
    assert train_flops(mcfg, S, T) == float(loop)  # the vectorised count is exact
    d = mcfg.d_model
    # roughly 6 FLOPs per weight per token: the output layer alone is 6 * d * V per
    # target token
    assert train_flops(mcfg, [1], [1]) > 6 * d * 8000
    with pytest.raises(ValueError, match="differ"):
        train_flops(mcfg, [1, 2], [1])


def test_average_state_dicts():
    a, b = nn.Linear(4, 3), nn.Linear(4, 3)
    sa, sb = a.state_dict(), b.state_dict()
    same = average_state_dicts([sa, sa, sa, sa, sa])
    # identical weights: exactly themselves
    assert all(torch.equal(same[k], sa[k]) for k in sa)
    mean = average_state_dicts([sa, sb])
    assert all(torch.allclose(mean[k], (sa[k] + sb[k]) / 2, atol=1e-7) for k in sa)
    assert mean["weight"].dtype == torch.float32
    counted = {"w": torch.ones(2), "n": torch.tensor(3)}
    # integer buffers kept
    assert torch.equal(average_state_dicts([counted, counted])["n"], torch.tensor(3))
    with pytest.raises(ValueError, match="differs"):
        average_state_dicts([counted, {"w": torch.ones(2), "n": torch.tensor(4)}])
    with pytest.raises(ValueError, match="keys"):
        average_state_dicts([sa, {"weight": sa["weight"]}])
    with pytest.raises(ValueError, match="at least one"):
        average_state_dicts([])


def test_translation_scores():
    refs = ["A man is riding a bike.", "Two dogs play in the snow."]
    perfect = translation_scores(refs, refs)
    assert perfect["bleu"] == pytest.approx(100.0) and perfect["chrf"] == pytest.approx(
        100.0
    )
    shouted = translation_scores([r.upper() for r in refs], refs)
    # case matters only to `bleu`
    assert shouted["bleu"] < 5 and shouted["bleu_lc"] == pytest.approx(100.0)
    assert (
        "case:lc" in shouted["signatures"]["bleu_lc"]
        and "nc:6" in shouted["signatures"]["chrf"]
    )
    with pytest.raises(ValueError, match="hypotheses"):
        translation_scores(["a"], refs)


def test_corpus_bleu():
    refs = ["a man is riding a bike .", "two dogs play in the snow ."]
    score, sig = corpus_bleu(refs, refs)
    assert score == pytest.approx(100.0) and "nrefs:1" in sig and "version:" in sig
    assert corpus_bleu(["x y z", "q"], refs)[0] < 5
    with pytest.raises(ValueError, match="hypotheses"):
        corpus_bleu(["a"], refs)


# ----- the loop -----------------------------------------------------------------------
def test_tiny_run_learns_and_writes_files(tmp_path):
    data = toy_translation_data()
    cfg = TrainConfig.from_preset(
        "tiny", steps=300, log_every=50, eval_every=150, checkpoint_every=150
    )
    model, summary = run_training(
        cfg, data, tmp_path, progress=False, final_eval=("greedy",)
    )
    assert {"metrics.jsonl", "summary.json", "checkpoint.pt"} <= {
        p.name for p in tmp_path.iterdir()
    }
    records = read_metrics(tmp_path)
    losses = [r["loss"] for r in records if r["kind"] == "train"]
    assert losses[-1] < 0.6 * losses[0]
    assert summary["bleu"]["greedy"] > 20  # a model that learnt nothing scores ~0
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["steps"] == 300 and saved["hardware"]["device"] == "cpu"
    assert not model.training


def test_resume_is_exact(tmp_path):
    """k steps + resume to 2k steps == 2k steps uninterrupted, loss for loss (crossing
    an epoch)."""
    data = toy_translation_data(n_train=600)  # 19 batches an epoch
    k = 15
    common = dict(
        steps=2 * k,
        log_every=1,
        eval_every=7,
        snapshot_every=4,
        average_last=3,
        model=dict(dropout=0.1),
    )
    kw = dict(progress=False, final_eval=())
    run_training(TrainConfig.from_preset("tiny", **common), data, tmp_path / "a", **kw)
    run_training(
        TrainConfig.from_preset("tiny", **{**common, "steps": k}),
        data,
        tmp_path / "b",
        **kw,
    )
    _, summary = run_training(
        TrainConfig.from_preset("tiny", **common),
        data,
        tmp_path / "b",
        resume=True,
        **kw,
    )
    a = [r["loss"] for r in read_metrics(tmp_path / "a") if r["kind"] == "train"]
    b = [r["loss"] for r in read_metrics(tmp_path / "b") if r["kind"] == "train"]
    assert len(a) == len(b) == 2 * k
    assert a == b  # exactly, not approximately
    assert summary["steps"] == 2 * k and summary["epochs"] > 1
    straight = json.loads((tmp_path / "a" / "summary.json").read_text())
    # the snapshots and the best survive the resume
    assert summary["selection"] == straight["selection"]
    assert summary["selection"]["averaged"]["steps"] == [24, 28, 30]


def test_selection_averaging_and_model_file(tmp_path):
    data = toy_translation_data(n_train=600)
    cfg = TrainConfig.from_preset(
        "tiny", steps=60, log_every=10, eval_every=20, snapshot_every=10, average_last=4
    )
    model, summary = run_training(
        cfg, data, tmp_path, progress=False, final_eval=("greedy",)
    )
    sel = summary["selection"]
    assert set(sel) >= {"final", "averaged"} and sel["averaged"]["steps"] == [
        30,
        40,
        50,
        60,
    ]
    assert summary["selected"] in sel
    best_bleu = max(c["val_bleu"] for c in sel.values())
    # chosen on validation BLEU
    assert sel[summary["selected"]]["val_bleu"] == best_bleu
    assert set(summary["bleu"]) == {"greedy"} and set(summary["chrf"]) == {"greedy"}
    loaded = load_checkpoint(tmp_path)  # model.pt: the selected weights
    probe = [s for s, _ in data.test_pairs[:8]]
    assert translate(loaded, probe, data) == translate(model, probe, data)
    ck = torch.load(tmp_path / "model.pt", weights_only=True)
    assert ck["selected"] == summary["selected"] and "optimizer" not in ck


def test_max_epochs_stops(tmp_path):
    data = toy_translation_data(n_train=200)  # 7 batches an epoch
    assert len(data.train_batches(0)) == 7
    cfg = TrainConfig.from_preset(
        "tiny", steps=10**6, max_epochs=2, log_every=5, average_last=1
    )
    _, summary = run_training(cfg, data, None, progress=False, final_eval=())
    assert (
        summary["stopped_by"] == "epochs"
        and summary["steps"] == 2 * 7
        and summary["epochs"] == 2.0
    )


def test_pad_to_multiple_keeps_the_loss(tmp_path):
    data = toy_translation_data(n_train=200)
    kw = dict(progress=False, final_eval=())
    common = dict(
        steps=5, log_every=1, average_last=1, bf16=False, model=dict(dropout=0.0)
    )
    _, _ = run_training(
        TrainConfig.from_preset("tiny", **common), data, tmp_path / "a", **kw
    )
    _, _ = run_training(
        TrainConfig.from_preset("tiny", pad_to_multiple=8, **common),
        data,
        tmp_path / "b",
        **kw,
    )
    a = [r["loss"] for r in read_metrics(tmp_path / "a") if r["kind"] == "train"]
    b = [r["loss"] for r in read_metrics(tmp_path / "b") if r["kind"] == "train"]
    assert a == pytest.approx(b, rel=1e-5)  # padding is masked: same training


def test_non_finite_loss_stops_with_the_last_good_state(tmp_path):
    """A learning rate so high that the weights overflow float32: the loss stops being a
    number."""
    cfg = TrainConfig.from_preset(
        "tiny", steps=40, log_every=1, average_last=1, lr_scale=1e38
    )
    with pytest.raises(
        FloatingPointError,
        match=r"step (\d+) the loss is (nan|inf).*last good state is in",
    ) as err:
        run_training(
            cfg,
            toy_translation_data(n_train=200),
            tmp_path,
            progress=False,
            final_eval=(),
        )
    bad = int(err.value.args[0].split("at step ")[1].split()[0])
    ck = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert ck["state"]["step"] == bad - 1  # saved before the bad update
    assert all(
        torch.isfinite(v).all() for v in ck["model"].values() if v.is_floating_point()
    )


def test_resume_needs_a_checkpoint(tmp_path):
    with pytest.raises(FileNotFoundError, match="checkpoint"):
        run_training(
            TrainConfig.from_preset("tiny"),
            toy_translation_data(n_train=64),
            tmp_path,
            resume=True,
            progress=False,
        )


def _tiny(**changes) -> TrainConfig:
    return TrainConfig.from_preset(
        "tiny", steps=4, log_every=1, checkpoint_every=2, average_last=1, device="cpu"
    ).updated(changes)


def test_a_resumed_run_counts_the_training_time_it_had_spent(tmp_path):
    """The time budget is the run's, not the process's: resumed after its budget is
    spent, a run trains no further step. (The cpu-30min preset stopped at its budget
    and, resumed to score its test set, went on training for another budget before this
    was fixed.)"""
    data = toy_translation_data(n_train=200)
    _, first = run_training(_tiny(), data, tmp_path, progress=False, final_eval=())
    spent = first["train_time_s"]
    assert first["steps"] == 4 and spent > 0
    _, resumed = run_training(
        _tiny(steps=40, time_budget_s=spent / 2),
        data,
        tmp_path,
        resume=True,
        progress=False,
        final_eval=(),
    )
    assert resumed["steps"] == 4 and resumed["stopped_by"] == "time_budget"
    assert resumed["train_time_s"] == spent


def test_a_resume_that_changes_the_global_plan_is_refused_before_anything_runs(
    tmp_path,
):
    """A checkpoint taken with accumulate=1, resumed with accumulate=2: the step would
    read other micro-batches and divide by another step's count. Refused, naming the
    change and what works."""
    data = toy_translation_data(n_train=200)
    run_training(_tiny(), data, tmp_path, progress=False, final_eval=())
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    for changes, named in (
        (dict(accumulate=2), "accumulate 1 -> 2"),
        (dict(seed=1), "seed 0 -> 1"),
        (dict(max_tokens=300), "max_tokens 400 -> 300"),
    ):
        with pytest.raises(ValueError, match="global plan") as err:
            run_training(
                _tiny(steps=8, **changes),
                data,
                tmp_path,
                resume="auto",
                progress=False,
                final_eval=(),
            )
        # what changed, what works
        assert named in str(err.value) and "--accumulate 1" in str(err.value)
        # nothing written
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    _, summary = run_training(
        _tiny(steps=8), data, tmp_path, resume="auto", progress=False, final_eval=()
    )
    assert summary["steps"] == 8  # the same plan continues
    ck = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert (
        ck["global_plan"]["processes"] == 1 and ck["global_plan"]["global_batch"] == 400
    )


def test_resume_auto_starts_fresh_continues_and_refuses_another_runs_folder(tmp_path):
    data = toy_translation_data(n_train=200)
    kw = dict(progress=False, final_eval=())
    # nothing there: fresh
    _, fresh = run_training(_tiny(), data, tmp_path / "a", resume="auto", **kw)
    assert fresh["steps"] == 4
    # a checkpoint: continue
    _, more = run_training(_tiny(steps=6), data, tmp_path / "a", resume="auto", **kw)
    assert more["steps"] == 6
    assert [
        r["step"] for r in read_metrics(tmp_path / "a") if r["kind"] == "train"
    ] == [1, 2, 3, 4, 5, 6]
    # a finished run's files, no checkpoint
    (tmp_path / "a" / "checkpoint.pt").unlink()
    with pytest.raises(ValueError, match="another run's files"):
        run_training(_tiny(), data, tmp_path / "a", resume="auto", **kw)
    run_training(
        _tiny(seed=3, final_checkpoint=False, checkpoint_every=None),
        data,
        tmp_path / "b",
        **kw,
    )
    for name in ("model.pt", "summary.json"):
        # only another run's metrics.jsonl
        (tmp_path / "b" / name).unlink()
    with pytest.raises(ValueError, match="another run's metrics.jsonl.*seed 3 -> 0"):
        run_training(_tiny(), data, tmp_path / "b", resume="auto", **kw)
    with pytest.raises(
        ValueError, match="`resume` must be True, False or \"auto\", got 'yes'"
    ):
        run_training(_tiny(), data, tmp_path / "c", resume="yes", **kw)


def test_a_kill_during_a_checkpoint_write_leaves_the_previous_one(
    tmp_path, monkeypatch
):
    from transformer_lib.training import checkpoints

    path = tmp_path / "checkpoint.pt"
    checkpoints._save_checkpoint(path, {"step": 1, "w": torch.ones(3)})

    def killed_half_way(payload, f):
        with open(f, "wb") as fh:
            fh.write(b"PK\x03\x04 half a file")
        raise KeyboardInterrupt  # the process dies here

    monkeypatch.setattr(checkpoints.torch, "save", killed_half_way)
    with pytest.raises(KeyboardInterrupt):
        checkpoints._save_checkpoint(path, {"step": 2, "w": torch.zeros(3)})
    monkeypatch.undo()
    assert torch.load(path, weights_only=True)["step"] == 1  # the previous one, whole


def test_time_budget_stops_cleanly(tmp_path):
    cfg = TrainConfig.from_preset("tiny", steps=10**6, time_budget_s=1.0, log_every=10)
    _, summary = run_training(
        cfg, toy_translation_data(), tmp_path, progress=False, final_eval=("greedy",)
    )
    assert summary["stopped_by"] == "time_budget" and 0 < summary["steps"] < 10**6
    assert "greedy" in summary["bleu"]


def test_the_training_package_is_in_rooms_of_one_job():
    """loop.py holds the run only (at most 400 lines); batch shaping, the epoch, the
    step, what is decided between steps, model selection and starting a run each have
    their module; no module of the package is over 600 lines (issue 52)."""
    package = ROOT / "transformer_lib" / "training"
    lines = {
        p.stem: len(p.read_text(encoding="utf-8").splitlines())
        for p in package.glob("*.py")
    }
    assert {
        "batches",
        "epoch",
        "step",
        "window",
        "selection",
        "start",
        "state",
        "loop",
    } <= set(lines), sorted(lines)
    assert lines["loop"] <= 400, lines
    assert max(lines.values()) <= 600, lines


# ----- DistributedDataParallel on gloo, two processes ---------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ddp_worker(rank: int, world: int, port: int, out: str) -> None:
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        data = toy_translation_data(n_train=600)
        cfg = TrainConfig.from_preset(
            "tiny", steps=12, eval_every=1000, checkpoint_every=6, average_last=1
        )
        model, summary = run_training(cfg, data, out, progress=False, final_eval=())
        flat = torch.cat([p.detach().flatten() for p in model.parameters()])
        gathered = [torch.zeros_like(flat) for _ in range(world)]
        dist.all_gather(gathered, flat)
        # run_training()'s initialisation, redone
        torch.manual_seed(cfg.seed)
        start = torch.cat(
            [p.detach().flatten() for p in type(model)(model.config).parameters()]
        )
        if rank == 0:
            torch.save(
                {
                    "params": gathered,
                    "summary": summary,
                    "moved": not torch.equal(gathered[0], start),
                },
                os.path.join(out, "ddp.pt"),
            )
    finally:
        dist.destroy_process_group()


def test_ddp_two_processes_on_gloo(tmp_path):
    mp.spawn(_ddp_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    result = torch.load(tmp_path / "ddp.pt", weights_only=False)
    p0, p1 = result["params"]
    assert torch.equal(p0, p1), "the two processes' parameters differ after training"
    assert result["moved"]
    assert result["summary"]["world_size"] == 2 and result["summary"]["steps"] == 12
    ck = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    # every process's RNG state is saved
    assert len(ck["rng"]) == 2 and ck["world_size"] == 2


# ----- the command line and the GPU script --------------------------------------------
def test_cli_runs_and_resumes(tmp_path):
    base = [
        sys.executable,
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
    ]
    first = subprocess.run(
        base + ["--steps", "10"], capture_output=True, text=True, env=ENV, timeout=300
    )
    assert first.returncode == 0, first.stderr[-3000:]
    assert (
        "test BLEU (greedy)" in first.stdout and "sacreBLEU signature" in first.stdout
    )
    second = subprocess.run(
        base + ["--steps", "20", "--resume"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert second.returncode == 0, second.stderr[-3000:]
    steps = [r["step"] for r in read_metrics(tmp_path) if r["kind"] == "train"]
    assert steps == list(range(1, 21))


def test_cli_under_torchrun_gloo(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "transformer_lib.train",
        "--preset",
        "tiny",
        "--data",
        "toy",
        "--out",
        str(tmp_path),
        "--steps",
        "8",
        "--no-progress",
        "--eval",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["world_size"] == 2 and summary["steps"] == 8


def test_cli_rejects_unknown_field():
    proc = subprocess.run(
        [sys.executable, "-m", "transformer_lib.train", "--set", "lr=1"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert proc.returncode != 0 and "unknown TrainConfig field 'lr'" in proc.stderr


def test_gpu_script_smoke_on_cpu(tmp_path):
    """scripts/gpu_run.py end to end on CPU: tiny model, synthetic data, preflight,
    stopped by epochs."""
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "gpu_run.py"),
            "--smoke",
            "--data",
            "toy",
            "--epochs",
            "3",
            "--out",
            str(out),
            "--run-dir",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = {p.name for p in out.iterdir()}
    assert {
        "summary.json",
        "metrics.jsonl",
        "curves.png",
        "samples.md",
        "preflight.json",
    } <= names
    assert len(names) <= 8 and not any(n.endswith(".pt") for n in names)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped_by"] == "epochs" and summary["epochs"] == 3.0
    assert summary["preflight"]["dry_run_s_per_step"] > 0
    assert set(summary["bleu"]) == {"greedy", "beam"} and all(
        math.isfinite(v) for v in summary["bleu"].values()
    )


@pytest.mark.skipif(
    not os.environ.get("TRANSFORMER_DATA_DIR"), reason="needs the Multi30k files"
)
def test_gpu_run_sh_smoke_on_multi30k(tmp_path):
    """`bash scripts/gpu_run.sh --smoke`: the prepared GPU command, on this CPU, on the
    real data. Every phase runs (preflight, dry run, training, selection, the test set,
    the files); the training stops after 10 s of training instead of the smoke's 60:
    what is checked here is the path, not what a minute of training reaches."""
    proc = subprocess.run(
        [
            "bash",
            str(ROOT / "scripts" / "gpu_run.sh"),
            "--smoke",
            "--budget",
            "10",
            "--run-dir",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**ENV, "OUT": str(tmp_path / "out")},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "preflight ok" in proc.stdout and "gpu_run.sh: done" in proc.stdout
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (
        summary["stopped_by"] in ("epochs", "time_budget")
        and summary["preflight"]["preflight"]["pairs"]["train"] == 29000
    )


def test_gpu_preflight_fails_fast_without_data(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "gpu_run.py"),
            "--smoke",
            "--out",
            str(tmp_path / "o"),
            "--data-dir",
            str(tmp_path / "nowhere"),
            "--run-dir",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        env={
            **ENV,
            "TRANSFORMER_DATA_DIR": str(tmp_path),
            "XDG_CACHE_HOME": str(tmp_path),
        },
        timeout=120,
    )
    assert proc.returncode != 0 and "preflight: Multi30k not found" in proc.stderr
