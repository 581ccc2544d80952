"""The pieces of the faster training step: 16-bit dropout masks (chapter 8), the chunked
label-smoothed cross-entropy, the allocator setting and the oneDNN kernel cache (chapter
11b), each held to what it replaces."""

import copy
import os
import subprocess
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import ROOT
from transformer_lib import (
    FastDropout,
    Transformer,
    TransformerConfig,
    chunked_cross_entropy,
    fast_dropout,
    mask_drop_probability,
    use_fast_dropout,
)
from transformer_lib.training import TrainConfig, run_training, toy_translation_data

# --- fast_dropout ---------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.0, 0.1, 0.25, 0.5, 0.9])
def test_mask_drop_probability_is_the_16_bit_rounding(p):
    assert mask_drop_probability(p) == round(p * 65536) / 65536
    assert abs(mask_drop_probability(p) - p) <= 2**-17


@pytest.mark.parametrize("p", [0.1, 0.3, 0.7])
def test_fast_dropout_rate_scale_and_mean(p):
    torch.manual_seed(0)
    n = 2_000_000
    y = fast_dropout(torch.ones(n), p)
    p16 = mask_drop_probability(p)
    sigma = (p16 * (1 - p16) / n) ** 0.5
    assert abs((y == 0).float().mean().item() - p16) < 5 * sigma
    kept = y[y != 0]
    assert torch.all(kept == torch.tensor(1 / (1 - p16)))
    assert abs(y.mean().item() - 1) < 5 * sigma / (1 - p16)


def test_fast_dropout_lanes_draws_and_calls_are_independent():
    torch.manual_seed(3)
    p, n = 0.2, 4_000_000
    a, b = (
        (fast_dropout(torch.ones(n), p) == 0).float(),
        (fast_dropout(torch.ones(n), p) == 0).float(),
    )
    lanes = a.view(-1, 4)
    sigma = (p * p * (1 - p * p) / (n / 4)) ** 0.5
    pairs = [
        (lanes[:, i] * lanes[:, j]).mean().item()
        for i in range(4)
        for j in range(i + 1, 4)
    ]
    pairs += [(lanes[:-1, 3] * lanes[1:, 0]).mean().item(), (a * b).mean().item()]
    for value in pairs:
        assert abs(value - p * p) < 5 * sigma
    # every lane, the top one included (random_ without a range would leave its sign bit
    # 0)
    for lane in range(4):
        assert (
            abs(lanes[:, lane].mean().item() - p) < 5 * (p * (1 - p) / (n / 4)) ** 0.5
        )


def test_fast_dropout_matches_f_dropout_statistics():
    torch.manual_seed(0)
    x = torch.ones(256, 4096)
    ours, theirs = fast_dropout(x, 0.1), F.dropout(x, 0.1)
    # binomial(4096, p) counts
    per_row = [(t == 0).float().sum(1) for t in (ours, theirs)]
    assert (
        abs(per_row[0].mean() - per_row[1].mean()) < 5 * (2 * 4096 * 0.09 / 256) ** 0.5
    )
    assert 0.7 < per_row[0].var().item() / per_row[1].var().item() < 1.4


def test_fast_dropout_gradient_seed_eval_and_dtypes():
    x = torch.randn(64, 33, requires_grad=True)
    torch.manual_seed(5)
    y = fast_dropout(x, 0.4)
    y.backward(torch.ones_like(y))
    assert torch.equal(
        x.grad, (y != 0).float() * torch.tensor(1 / (1 - mask_drop_probability(0.4)))
    )
    torch.manual_seed(5)
    assert torch.equal(fast_dropout(x, 0.4), y)
    assert fast_dropout(x, 0.4, training=False) is x and fast_dropout(x, 0.0) is x
    for dtype in (torch.bfloat16, torch.float16, torch.float64):
        out = fast_dropout(torch.ones(5, 7, dtype=dtype), 0.5)
        assert out.dtype == dtype and out.shape == (5, 7)
    assert fast_dropout(torch.ones(0), 0.5).numel() == 0


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, "0.1", True, 1 - 2**-18])
def test_fast_dropout_rejects_bad_p(bad):
    with pytest.raises(ValueError, match="`p`"):
        fast_dropout(torch.ones(3), bad)


def test_fast_dropout_rejects_integer_tensors():
    with pytest.raises(TypeError, match="floating-point"):
        fast_dropout(torch.ones(3, dtype=torch.long), 0.1)


def test_use_fast_dropout_swaps_modules_and_keeps_weights():
    cfg = TransformerConfig(
        src_vocab_size=20,
        tgt_vocab_size=20,
        d_model=16,
        n_heads=2,
        n_encoder_layers=2,
        n_decoder_layers=2,
        d_ff=32,
        dropout=0.2,
    )
    model = Transformer(cfg).eval()
    fast = copy.deepcopy(model)
    n = sum(type(m) is nn.Dropout for m in model.modules())
    assert use_fast_dropout(fast) == n > 0
    assert sum(isinstance(m, FastDropout) for m in fast.modules()) == n
    assert all(m.p == 0.2 for m in fast.modules() if isinstance(m, FastDropout))
    src, tgt = torch.randint(1, 20, (3, 6)), torch.randint(1, 20, (3, 5))
    assert torch.equal(fast(src, tgt), model(src, tgt))
    fast.train()
    torch.manual_seed(0)
    a = fast(src, tgt)
    torch.manual_seed(0)
    assert torch.equal(fast(src, tgt), a) and not torch.equal(a, model(src, tgt))
    with pytest.raises(TypeError, match="nn.Module"):
        use_fast_dropout("model")


# --- chunked_cross_entropy ------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("rows", [1, 7, 64, 1000])
def test_chunked_cross_entropy_equals_the_builtin(dtype, smoothing, rows):
    torch.manual_seed(0)
    logits = (torch.randn(150, 37) * 5).to(dtype)
    target = torch.randint(0, 37, (150,))
    target[::5] = 0
    a, b = logits.clone().requires_grad_(), logits.clone().requires_grad_()
    ref = F.cross_entropy(a.float(), target, ignore_index=0, label_smoothing=smoothing)
    ref.backward()
    ours = chunked_cross_entropy(b, target, smoothing, 0, rows=rows)
    ours.backward()
    assert ours.dtype == torch.float32 and torch.allclose(
        ours, ref, rtol=1e-6, atol=1e-6
    )
    assert b.grad.dtype == dtype
    largest = a.grad.float().abs().max()
    assert (b.grad.float() - a.grad.float()).abs().max() <= largest * (
        2**-7 if dtype == torch.bfloat16 else 1e-5
    )
    assert (b.grad[target == 0] == 0).all()


def test_chunked_cross_entropy_without_ignore_and_with_a_scaled_gradient():
    logits = torch.randn(10, 6, requires_grad=True)
    target = torch.randint(0, 6, (10,))
    before = logits.detach().clone()
    (3 * chunked_cross_entropy(logits, target, 0.1, rows=3)).backward()
    assert torch.equal(logits.detach(), before)  # float32 logits are not overwritten
    g = logits.grad.clone()
    logits.grad = None
    (3 * F.cross_entropy(logits, target, label_smoothing=0.1)).backward()
    assert torch.allclose(g, logits.grad, atol=1e-6)


def test_chunked_cross_entropy_all_ignored_is_zero_not_nan():
    logits = torch.randn(4, 5, requires_grad=True)
    loss = chunked_cross_entropy(logits, torch.zeros(4, dtype=torch.long), 0.1, 0)
    loss.backward()
    assert loss.item() == 0 and torch.equal(logits.grad, torch.zeros(4, 5))


@pytest.mark.parametrize(
    "logits,target,kwargs,match",
    [
        (torch.randn(3, 4, 5), torch.zeros(3, dtype=torch.long), {}, "`logits`"),
        (
            torch.ones(3, 5, dtype=torch.long),
            torch.zeros(3, dtype=torch.long),
            {},
            "`logits`",
        ),
        (torch.randn(3, 5), torch.zeros(4, dtype=torch.long), {}, "`target`"),
        (torch.randn(3, 5), torch.zeros(3), {}, "`target`"),
        (torch.randn(3, 5), torch.tensor([1, 5, 2]), {}, r"\[0, 5\)"),
        (torch.randn(3, 5), torch.tensor([1, -3, 2]), {}, r"\[0, 5\)"),
        (
            torch.randn(3, 5),
            torch.zeros(3, dtype=torch.long),
            {"smoothing": 1.0},
            "`smoothing`",
        ),
        (torch.randn(3, 5), torch.zeros(3, dtype=torch.long), {"rows": 0}, "`rows`"),
    ],
)
def test_chunked_cross_entropy_errors(logits, target, kwargs, match):
    with pytest.raises(ValueError, match=match):
        chunked_cross_entropy(logits, target, **kwargs)


# --- the run: switches, allocator, kernel cache ---------------------------------------


def test_train_config_fast_dropout_is_a_checked_bool():
    assert TrainConfig.from_preset("tiny").fast_dropout is True
    assert TrainConfig.from_preset("tiny", fast_dropout=False).fast_dropout is False
    with pytest.raises(TypeError, match="fast_dropout"):
        TrainConfig.from_preset("tiny", fast_dropout="yes")


def test_run_training_uses_fast_dropout_on_a_cpu_and_not_when_off(tmp_path):
    data = toy_translation_data(n_train=80, n_val=8, n_test=8)
    for flag in (True, False):
        cfg = TrainConfig.from_preset(
            "tiny", steps=3, device="cpu", bf16=False, fast_dropout=flag
        )
        model, _ = run_training(cfg, data, None, progress=False, final_eval=())
        kinds = {type(m) for m in model.modules()}
        assert (FastDropout in kinds) is flag and (nn.Dropout in kinds) is (not flag)


def test_keep_freed_memory_on_glibc_linux():
    script = "from transformer_lib import keep_freed_memory; print(keep_freed_memory())"
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout.strip()
    import platform

    expected = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert out == str(expected)


def test_onednn_cache_is_set_on_import_unless_chosen():
    script = (
        "import os, transformer_lib;"
        " print(os.environ['ONEDNN_PRIMITIVE_CACHE_CAPACITY'])"
    )
    env = {
        k: v for k, v in os.environ.items() if k != "ONEDNN_PRIMITIVE_CACHE_CAPACITY"
    }
    run = lambda e: subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=e,
    ).stdout.strip()
    assert run(env) == "8192"
    assert run({**env, "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "100"}) == "100"


def test_fast_dropout_model_compiles_with_fullgraph():
    cfg = TransformerConfig(
        src_vocab_size=20,
        tgt_vocab_size=20,
        d_model=16,
        n_heads=2,
        n_encoder_layers=1,
        n_decoder_layers=1,
        d_ff=32,
        dropout=0.1,
    )
    model = Transformer(cfg).train()
    use_fast_dropout(model)
    compiled = torch.compile(model, fullgraph=True, backend="eager")
    src, tgt = torch.randint(1, 20, (2, 5)), torch.randint(1, 20, (2, 4))
    out = compiled(src, tgt)
    assert out.shape == (2, 4, 20) and torch.isfinite(out).all()
