"""Operator calls of the GPU's training step, counted on a CPU (chapter 11b, "Under the
hood: the GPU run").

On a GPU every ATen operator call is (at least) one kernel launch, and a step of small
kernels is bound by the launches, not the arithmetic. A CPU cannot time a GPU, but it
can count the calls the GPU's code path makes (`step_path="gpu"`, forced on the CPU),
exactly, with a dispatch mode:

- the loss alone, forward + backward, at several batch sizes: `chunked_cross_entropy`
  (the CPU's loss, a few calls per block of 64 rows) against `F.cross_entropy` in one
  piece (the GPU's);
- a whole step of the base-size model (d_model 512, 8 heads, 6 + 6 layers, d_ff 2048,
  vocabulary 8,000) on a batch of about 12,000 padded tokens under bf16 autocast: the
  step the GPU ran before this path existed (chunked loss over the whole grid,
  `nn.Dropout`, the gradient norm by clipping at infinity, fused Adam) against the GPU
  path's step (`TrainingRun.step` with `step_path="gpu"`, fused Adam, the scheduler's
  step).

    python benchmarks/gpu_path_ops.py

Writes benchmarks/results/gpu_path_ops.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys


import torch
import torch.nn.functional as F

from _common import machine, write_result
from booktools.opcount import OpCounter
from transformer_lib import Transformer, TransformerConfig
from transformer_lib.training import (
    TrainConfig,
    TrainingRun,
    chunked_cross_entropy,
    make_optimizer,
    teacher_forced_loss,
    toy_translation_data,
)


def loss_calls(rows: int, chunked: bool, vocab: int = 8000) -> int:
    g = torch.Generator().manual_seed(rows)
    logits = torch.randn(rows, vocab, generator=g).bfloat16().requires_grad_()
    target = torch.randint(4, vocab, (rows,), generator=g)
    with OpCounter() as c:
        loss = (
            chunked_cross_entropy(logits, target, 0.1, 0)
            if chunked
            else F.cross_entropy(
                logits.float(), target, ignore_index=0, label_smoothing=0.1
            )
        )
        loss.backward()
    return sum(c.calls.values())


def base_batch(tokens: int = 12000, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch shaped like Multi30k's: sentences of 8 to 16 tokens, padded to 16, about
    `tokens` in all."""
    g = torch.Generator().manual_seed(seed)
    rows = tokens // (16 + 17)
    src = torch.randint(4, 8000, (rows, 16), generator=g)
    tgt = torch.randint(4, 8000, (rows, 17), generator=g)
    tgt[:, 0] = 1
    for t, width in ((src, 16), (tgt, 17)):
        n = torch.randint(8, width + 1, (rows,), generator=g)
        t[torch.arange(width)[None, :] >= n[:, None]] = 0
    return src, tgt


def _before_step(src: torch.Tensor, tgt: torch.Tensor) -> OpCounter:
    """The step a GPU ran before the GPU path: the chunked loss over the whole grid,
    clipping at infinity."""
    torch.manual_seed(0)
    mcfg = TransformerConfig(
        src_vocab_size=8000,
        tgt_vocab_size=8000,
        d_model=512,
        n_heads=8,
        n_encoder_layers=6,
        n_decoder_layers=6,
        d_ff=2048,
        dropout=0.1,
        max_len=256,
        share_embeddings=True,
        tie_output=True,
    )
    model = Transformer(mcfg).train()
    model.validate_args = False
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(model, fused=True)
    with OpCounter() as c:
        opt.zero_grad(set_to_none=True)
        loss = teacher_forced_loss(
            model, src, tgt, 0.1, 0, amp=True, counted_only=False, chunked=True
        )
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, float("inf"))
        opt.step()
    return c


def _gpu_path_step(src: torch.Tensor, tgt: torch.Tensor) -> OpCounter:
    """The GPU path's step, as the loop takes it: a run whose epoch is this one batch
    (bf16, no bucketing)."""
    cfg = TrainConfig.from_preset(
        "base",
        device="cpu",
        step_path="gpu",
        precision="bf16",
        bucket_shapes=False,
        model=dict(dropout=0.1),
    )

    def one_batch(
        epoch: int, rank: int = 0, world: int = 1
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [(src, tgt)]

    data = dataclasses.replace(
        toy_translation_data(n_train=8),
        vocab_size=8000,
        val_pairs=(),
        test_pairs=(),
        train_batches=one_batch,
    )
    run = TrainingRun(cfg, data)
    with OpCounter() as c:
        run.step()
    return c


def step_calls(kind: str) -> dict:
    src, tgt = base_batch()
    c = _before_step(src, tgt) if kind == "before" else _gpu_path_step(src, tgt)
    top = dict(c.calls.most_common(8))
    return {
        "calls": sum(c.calls.values()),
        "non_view_calls": c.launches,
        "top": top,
        "logit_rows": int(src.shape[0] * 16),
        "padded_tokens": int(src.numel() + tgt.numel()),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.parse_args(argv)
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    result: dict = {
        "machine": machine(),
        "what": (
            "ATen operator calls (forward + backward [+ Adam]) counted with a"
            " TorchDispatchMode on a CPU; on a GPU each is a kernel launch or more"
        ),
    }
    result["loss_calls"] = {
        str(rows): {
            "chunked": loss_calls(rows, True),
            "one_piece": loss_calls(rows, False),
        }
        for rows in (64, 1000, 6000, 12000)
    }
    print("loss calls:", result["loss_calls"], flush=True)
    result["base_step"] = {kind: step_calls(kind) for kind in ("before", "gpu_path")}
    step = result["base_step"]
    step["ratio"] = step["gpu_path"]["calls"] / step["before"]["calls"]
    step["non_view_ratio"] = (
        step["gpu_path"]["non_view_calls"] / step["before"]["non_view_calls"]
    )
    print(
        "base step calls:",
        {
            k: (v["calls"], v["non_view_calls"]) if isinstance(v, dict) else round(v, 3)
            for k, v in step.items()
        },
        "(all calls, calls that are not views)",
        flush=True,
    )
    write_result(
        "gpu_path_ops",
        result,
        precision="bf16 autocast (operator calls counted, not timed)",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
