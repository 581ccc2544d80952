"""The library's manners (issue 10): empty batches, dtypes, device/dtype arguments, a
safe encode/decode split, nn.Transformer weights in a whole model, decoding signatures,
and validation that never breaks a compiled graph or an export."""

import numpy as np
import pytest
import torch
from torch import nn

from transformer_lib import (
    Decoder,
    DecoderLayer,
    DecoderOnlyTransformer,
    Encoder,
    EncoderLayer,
    EncoderOnlyTransformer,
    MultiHeadAttention,
    PositionwiseFeedForward,
    Transformer,
    TransformerConfig,
    beam_search,
    causal_mask,
    greedy_decode,
    padding_mask,
    sample,
    transformer_parameter_count,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::UserWarning:torch.nn.modules.transformer"
)
BOS, EOS = 1, 2


def small(**overrides):
    fields = dict(
        src_vocab_size=50,
        tgt_vocab_size=40,
        d_model=32,
        n_heads=4,
        n_encoder_layers=2,
        n_decoder_layers=2,
        d_ff=64,
        max_len=24,
    )
    return TransformerConfig(**{**fields, **overrides})


@pytest.fixture
def model():
    return Transformer(small()).eval()


@pytest.fixture
def batch():
    src = torch.tensor([[5, 9, 23, 7, 2], [8, 4, 2, 0, 0], [3, 3, 0, 0, 0]])
    tgt = torch.tensor([[1, 12, 33, 8], [1, 19, 0, 0], [1, 5, 6, 0]])
    return src, tgt


# ----- empty batches: an empty result of the right shape, as torch.nn modules give ----
def test_empty_batch_model(model, batch):
    src, tgt = batch
    assert model(src[:0], tgt[:0]).shape == (0, 4, 40)
    assert model.encode(src[:0]).shape == (0, 5, 32)
    assert model.decode(tgt[:0], model.encode(src[:0]), src=src[:0]).shape == (0, 4, 40)


@pytest.mark.parametrize("store_weights", [False, True])
def test_empty_batch_multihead(store_weights):
    mha = MultiHeadAttention(16, 4)
    mha.store_weights = store_weights
    x, mem = torch.randn(0, 5, 16), torch.randn(0, 7, 16)
    assert mha(x, x, x).shape == (0, 5, 16)
    assert mha(x, mem, mem).shape == (0, 5, 16)
    assert mha(
        x, mem, torch.randn(0, 7, 16), mask=torch.ones(0, 1, 1, 7, dtype=torch.bool)
    ).shape == (0, 5, 16)


def test_empty_batch_decoding(model, batch):
    src = batch[0][:0]
    assert greedy_decode(model, src, 10, BOS, EOS).shape == (0, 1)
    assert sample(
        model, src, 10, BOS, EOS, generator=torch.Generator().manual_seed(0)
    ).shape == (0, 1)
    out, scores = beam_search(model, src, 10, BOS, EOS, return_scores=True)
    assert out.shape == (0, 1) and scores.shape == (0,)


# ----- dtypes and arguments that name themselves --------------------------------------
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16])
def test_small_integer_ids_rejected_clearly(model, batch, dtype):
    src, tgt = batch
    with pytest.raises(
        TypeError, match=r"`src` must hold torch.long or torch.int.*src.long\(\)"
    ):
        model(src.to(dtype), tgt)
    with pytest.raises(TypeError, match="`tgt`"):
        model(src, tgt.to(dtype))


def test_int32_ids_accepted(model, batch):
    src, tgt = batch
    torch.testing.assert_close(model(src.int(), tgt.int()), model(src, tgt))


@pytest.mark.parametrize("bad", ["0.1", None, True, -0.1, 1.0])
def test_multihead_dropout_named(bad):
    with pytest.raises(ValueError, match="`dropout`"):
        MultiHeadAttention(16, 4, dropout=bad)


@pytest.mark.parametrize("bad", [0, -2, 2.0, True])
def test_multihead_sizes_named(bad):
    with pytest.raises(ValueError, match="`n_heads`"):
        MultiHeadAttention(16, bad)


# ----- device= and dtype= like torch.nn modules ---------------------------------------
def test_device_and_dtype_arguments(batch):
    src, tgt = batch
    meta = Transformer(small(), device="meta")
    assert all(p.device.type == "meta" for p in meta.parameters())
    out = meta(src.to("meta"), tgt.to("meta"))  # no values: checks of values skipped
    assert out.shape == (3, 4, 40) and out.device.type == "meta"
    doubles = Transformer(small(), dtype=torch.float64).eval()
    assert {p.dtype for p in doubles.parameters()} == {torch.float64}
    assert doubles(src, tgt).dtype == torch.float64
    mha = MultiHeadAttention(16, 4, device="meta", dtype=torch.bfloat16)
    assert (
        mha.in_proj.weight.device.type == "meta"
        and mha.out_proj.weight.dtype == torch.bfloat16
    )
    with pytest.raises(TypeError, match="`dtype`"):
        Transformer(small(), dtype=torch.long)


def test_big_model_on_meta_counts_like_the_closed_form():
    config = TransformerConfig.big(37000)
    model = Transformer(config, device="meta")
    assert sum(p.numel() for p in model.parameters()) == transformer_parameter_count(
        config
    )


# ----- encode / decode: the obvious split equals forward, or a clear error ------------
def test_decode_refuses_to_guess_the_source_padding(model, batch):
    src, tgt = batch
    memory = model.encode(src)
    with pytest.raises(ValueError, match="`decode` needs the source padding"):
        model.decode(tgt, memory)
    torch.testing.assert_close(model.decode(tgt, memory, src=src), model(src, tgt))
    torch.testing.assert_close(
        model.decode(tgt, memory, padding_mask(src, 0)), model(src, tgt)
    )
    unmasked = model.decode(
        tgt, memory, src_mask=torch.ones(1, 1, 1, 5, dtype=torch.bool)
    )
    # the padding matters: the check is real
    assert (unmasked - model(src, tgt)).abs().max() > 1e-3
    with pytest.raises(ValueError, match="either `src` or `src_mask`"):
        model.decode(tgt, memory, padding_mask(src, 0), src=src)
    with pytest.raises(ValueError, match="does not match `memory`"):
        model.decode(tgt, memory, src=src[:, :4])


# ----- torch.nn.Transformer's weights in a whole Transformer --------------------------
@pytest.mark.parametrize("norm_first", [False, True])
def test_whole_model_loads_torch_transformer(norm_first, batch):
    torch.manual_seed(0)
    src, tgt = batch
    ref = nn.Transformer(
        32, 4, 2, 2, 64, dropout=0.1, batch_first=True, norm_first=norm_first
    ).eval()
    ours = Transformer(small(norm_first=norm_first, final_norm=True)).eval()
    assert ours.load_torch_transformer_weights(ref) is ours
    with torch.no_grad():
        theirs = ref(
            ours.embed_src(src),
            ours.embed_tgt(tgt),
            tgt_mask=~causal_mask(4),
            src_key_padding_mask=src == 0,
            tgt_key_padding_mask=tgt == 0,
            memory_key_padding_mask=src == 0,
        )
        torch.testing.assert_close(
            ours(src, tgt), ours.project(theirs), atol=1e-5, rtol=1e-5
        )
    assert sum(p.numel() for p in ours.parameters()) == transformer_parameter_count(
        ours.config
    )


def test_whole_model_without_final_norms_refuses():
    ref = nn.Transformer(32, 4, 2, 2, 64, batch_first=True)
    with pytest.raises(ValueError, match="final_norm=True"):
        Transformer(small()).load_torch_transformer_weights(ref)
    with pytest.raises(TypeError, match="`final_norm`"):
        small(final_norm="yes")


# ----- decoding: one signature style, eos optional, numpy / 0-d tensor ids ------------
def test_decoding_signature_style(model, batch):
    src = batch[0]
    ref = greedy_decode(model, src, 12, BOS, EOS)
    assert torch.equal(
        greedy_decode(model, src, max_len=12, bos_id=BOS, eos_id=EOS), ref
    )
    assert torch.equal(beam_search(model, src, 12, BOS, EOS, beam_size=1), ref)
    assert torch.equal(sample(model, src, 12, BOS, EOS, top_k=1), ref)
    for fn in (greedy_decode, sample, beam_search):
        # eos_id optional: exactly max_len
        assert fn(model, src, 12, BOS).shape == (3, 12)
        with pytest.raises(TypeError, match="`bos_id` is required"):
            fn(model, src, 12)
    with pytest.raises(TypeError):  # old positional beam_size: loud
        beam_search(model, src, 4, 12, BOS, EOS)
    # S + 50, capped at max_len
    assert greedy_decode(model, src, bos_id=BOS, eos_id=None).shape[1] == 24


@pytest.mark.parametrize("as_id", [np.int64, np.int32, torch.tensor])
def test_numpy_and_tensor_token_ids(model, batch, as_id):
    src = batch[0]
    ref = greedy_decode(model, src, 12, BOS, EOS)
    assert torch.equal(
        greedy_decode(model, src, as_id(12), as_id(BOS), as_id(EOS)), ref
    )
    assert torch.equal(
        beam_search(model, src, 12, as_id(BOS), as_id(EOS), beam_size=as_id(2)),
        beam_search(model, src, 12, BOS, EOS, beam_size=2),
    )


def test_non_scalar_or_float_ids_rejected(model, batch):
    src = batch[0]
    for bad in (torch.tensor([BOS]), 1.0, np.float32(1), "1"):
        with pytest.raises(TypeError, match="`bos_id`"):
            greedy_decode(model, src, 12, bad, EOS)


# ----- validation: eager errors, no graph break, export, meta -------------------------
def test_eager_errors_kept(model, batch):
    src, tgt = batch
    with pytest.raises(ValueError, match=r"\[0, 50\]"):
        model(src.clone().index_fill_(1, torch.tensor([1]), 50), tgt)
    model.validate_args = False  # opt out: no value check at all
    with pytest.raises(IndexError):
        model(src.clone().index_fill_(1, torch.tensor([1]), 50), tgt)


def test_compile_fullgraph_no_graph_break(batch):
    import torch._dynamo

    src, tgt = batch
    model = Transformer(small())
    for mode in ("train", "eval"):
        getattr(model, mode)()
        explanation = torch._dynamo.explain(model)(src, tgt)
        assert explanation.graph_count == 1 and explanation.graph_break_count == 0, mode
    torch._dynamo.reset()
    # raises on any break
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    model.train()
    # a training step's forward + backward
    compiled(src, tgt).float().mean().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.eval()
    for T in (4, 6, 9):  # new lengths: dynamic shapes, no error
        s, t = torch.randint(1, 50, (3, T + 2)), torch.randint(1, 40, (3, T))
        torch.testing.assert_close(compiled(s, t), model(s, t), atol=1e-5, rtol=1e-5)
    torch._dynamo.reset()


def test_torch_export_dynamic_lengths(model, batch):
    from torch.export import Dim

    src, tgt = batch
    B, S, T = Dim("B", min=1, max=64), Dim("S", min=1, max=24), Dim("T", min=1, max=24)
    program = torch.export.export(
        model, (src, tgt), dynamic_shapes=({0: B, 1: S}, {0: B, 1: T})
    )
    s, t = torch.randint(1, 50, (2, 11)), torch.randint(1, 40, (2, 7))
    torch.testing.assert_close(
        program.module()(s, t), model(s, t), atol=1e-5, rtol=1e-5
    )


def test_jit_trace_refused_with_a_reason(model, batch):
    with pytest.raises(RuntimeError, match="torch.export"):
        torch.jit.trace(model, batch)


# ----- training: the config, checkpoints, bf16 on CPU, the command line ---------------
from transformer_lib import (
    TrainConfig,
    load_checkpoint,
    native_bf16,
    run_training,
    toy_translation_data,
)


def test_trainconfig_preset_is_a_field_not_a_method(tmp_path):
    small = TransformerConfig(
        1,
        1,
        d_model=32,
        n_heads=2,
        n_encoder_layers=1,
        n_decoder_layers=1,
        d_ff=64,
        max_len=64,
        share_embeddings=True,
    )
    cfg = TrainConfig(
        model=small,
        max_tokens=400,
        steps=3,
        warmup_steps=10,
        log_every=1,
        eval_every=100,
        eval_bleu_sentences=4,
    )
    assert cfg.preset == "custom"
    assert TrainConfig.from_preset("cpu").preset == "cpu"
    _, summary = run_training(
        cfg,
        toy_translation_data(n_train=64, n_val=8, n_test=8),
        tmp_path,
        progress=False,
        final_eval=(),
    )
    assert summary["preset"] == "custom" and (tmp_path / "summary.json").exists()


@pytest.mark.parametrize(
    "field, value, error",
    [
        ("steps", -5, ValueError),
        ("steps", 0, ValueError),
        ("steps", 2.5, ValueError),
        ("warmup_steps", 0, ValueError),
        ("max_tokens", 0, ValueError),
        ("log_every", 0, ValueError),
        ("label_smoothing", -0.1, ValueError),
        ("lr_scale", 0.0, ValueError),
        ("lr_scale", float("nan"), ValueError),
        ("clip_grad_norm", -1.0, ValueError),
        ("time_budget_s", 0, ValueError),
        ("num_threads", 0, ValueError),
        ("max_sentence_tokens", 0, ValueError),
        ("eval_bleu_sentences", -1, ValueError),
        ("seed", -1, ValueError),
        ("bf16", "yes", TypeError),
        ("compile", 1, TypeError),
        ("device", "gpu0", ValueError),
        ("device", 0, TypeError),
        ("preset", None, TypeError),
        ("max_epochs", 0, ValueError),
        ("average_last", 0, ValueError),
        ("pad_to_multiple", 0, ValueError),
        ("snapshot_every", -1, ValueError),
        ("checkpoint_every", 0, ValueError),
        ("model", {"d_model": 32}, TypeError),
    ],
)
def test_trainconfig_rejects_nonsense(field, value, error):
    with pytest.raises(error, match=f"`{field}`"):
        TrainConfig(**{field: value})
    if field != "model":
        with pytest.raises(error, match=f"`{field}`"):
            TrainConfig.from_preset("tiny", **{field: value})


@pytest.mark.parametrize(
    "field, value", [("n_heads", 3), ("d_model", 0), ("dropout", 1.0), ("max_len", -1)]
)
def test_trainconfig_checks_the_nested_model(field, value):
    with pytest.raises(ValueError, match=f"`{field}`|{field}"):
        TrainConfig.from_preset("tiny", model={field: value})
    with pytest.raises(ValueError, match=f"`{field}`|{field}"):
        TrainConfig.from_preset("tiny").updated({f"model.{field}": value})


def test_trainconfig_nests_the_model_config():
    cfg = TrainConfig.from_preset("cpu", model=dict(d_model=512, n_heads=8), steps=7)
    assert isinstance(cfg.model, TransformerConfig)
    assert (cfg.model.d_model, cfg.model.n_heads, cfg.steps) == (512, 8, 7)
    # merged
    assert (
        cfg.model.n_encoder_layers
        == TrainConfig.from_preset("cpu").model.n_encoder_layers
    )
    again = cfg.updated({"model.d_model": 256, "max_epochs": 3})
    assert (
        again.model.d_model,
        again.model.n_heads,
        again.max_epochs,
        cfg.model.d_model,
    ) == (256, 8, 3, 512)
    built = cfg.model_config(vocab_size=123, pad_id=5)
    assert (
        built.src_vocab_size,
        built.tgt_vocab_size,
        built.pad_id,
        built.d_model,
    ) == (123, 123, 5, 512)
    with pytest.raises(TypeError, match="unknown TrainConfig field 'd_model'"):
        cfg.updated({"d_model": 256})
    with pytest.raises(TypeError, match="unknown TransformerConfig field"):
        cfg.updated({"model.width": 256})


def test_checkpoint_loads_with_weights_only(tmp_path):
    cfg = TrainConfig.from_preset(
        "tiny", steps=4, eval_every=100, checkpoint_every=100, average_last=1
    )
    data = toy_translation_data(n_train=64, n_val=8, n_test=8)
    model, _ = run_training(cfg, data, tmp_path, progress=False, final_eval=())
    # nothing but tensors and plain values
    ck = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert ck["state"]["step"] == 4
    loaded = load_checkpoint(tmp_path)
    src = data.val_batches[0][0]
    assert torch.equal(
        greedy_decode(loaded, src, 10, data.bos_id, data.eos_id),
        greedy_decode(model, src, 10, data.bos_id, data.eos_id),
    )
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "nothing.pt")
    _, summary = run_training(
        TrainConfig.from_preset("tiny", steps=6, eval_every=100, checkpoint_every=100),
        data,
        tmp_path,
        resume=True,
        progress=False,
        final_eval=(),
    )
    assert summary["steps"] == 6  # resume reads it weights_only too


def test_native_bf16_detection(monkeypatch, tmp_path):
    import transformer_lib.training.hardware as training

    flags = tmp_path / "cpuinfo"
    real = training.Path

    def fake(text):
        flags.write_text(text)
        monkeypatch.setattr(
            training, "Path", lambda p: flags if p == "/proc/cpuinfo" else real(p)
        )

    fake("flags : fpu sse2 avx2 avx512f avx512_bf16\n")
    assert native_bf16("cpu")
    fake("flags : fpu sse2 avx2 amx_bf16\n")
    assert native_bf16("cpu")
    fake("flags : fpu sse2 avx2 avx512f\n")
    assert not native_bf16("cpu")
    assert not native_bf16("meta")


def test_cli_one_line_errors_and_import_check(monkeypatch, capsys):
    import importlib.util

    import transformer_lib.train as train

    assert train.cli(["--set", "steps=-5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "`steps` must be a positive int" in err
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda m: None if m == "sacrebleu" else real(m)
    )
    with pytest.raises(ImportError, match=r"sacrebleu.*transformer-lib\[train\]"):
        train.check_training_imports("toy")
    assert train.cli(["--preset", "tiny", "--data", "toy", "--steps", "1"]) == 2
    assert "sacrebleu" in capsys.readouterr().err


def _count_aten(fn, name: str) -> int:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.__name__.startswith(name):
                Count.n += 1
            return func(*args, **(kwargs or {}))

    with Count():
        fn()
    return Count.n


def test_ids_checked_once_per_call_and_never_when_switched_off(model, batch):
    """Each token tensor's range is read once per call (one host sync each on a GPU),
    not once per internal method; with `validate_args=False` (the training loop)
    never."""
    src, tgt = batch
    with torch.no_grad():
        assert _count_aten(lambda: model(src, tgt), "aminmax") == 2
        assert _count_aten(lambda: model.encode(src), "aminmax") == 1
        model.validate_args = False
        assert _count_aten(lambda: model(src, tgt), "aminmax") == 0


def test_resolve_bf16_obeys_the_setting_then_the_environment_then_the_hardware(
    monkeypatch,
):
    from transformer_lib import resolve_bf16

    monkeypatch.delenv("TRANSFORMER_BF16", raising=False)
    assert resolve_bf16(True, "cpu") is True and resolve_bf16(False, "cpu") is False
    assert resolve_bf16("auto", "cpu") == native_bf16("cpu")
    for text, want in (
        ("0", False),
        ("off", False),
        ("FALSE", False),
        ("1", True),
        ("on", True),
        ("true", True),
    ):
        monkeypatch.setenv("TRANSFORMER_BF16", text)
        assert resolve_bf16("auto", "cpu") is want
        # an explicit setting wins over the environment
        assert resolve_bf16(not want, "cpu") is (not want)
    monkeypatch.setenv("TRANSFORMER_BF16", "maybe")
    with pytest.raises(ValueError, match="TRANSFORMER_BF16='maybe'"):
        resolve_bf16("auto", "cpu")
    with pytest.raises(TypeError, match='`bf16` must be True, False or "auto"'):
        resolve_bf16("yes", "cpu")
    assert (
        TrainConfig().bf16 == "auto" and TrainConfig.from_preset("cpu").bf16 == "auto"
    )


def test_cli_reads_bf16_auto_true_false():
    from transformer_lib.train import _parse_field

    assert _parse_field("bf16", "auto") == "auto"
    assert _parse_field("bf16", "false") is False and _parse_field("bf16", "1") is True
    with pytest.raises(ValueError, match="expected true or false"):
        _parse_field("bf16", "maybe")


def _tiny_run_summary(**overrides) -> dict:
    cfg = TrainConfig.from_preset(
        "tiny", steps=2, eval_every=100, checkpoint_every=100, **overrides
    )
    _, summary = run_training(
        cfg,
        toy_translation_data(n_train=64, n_val=8, n_test=8),
        None,
        progress=False,
        final_eval=(),
    )
    return summary


def test_training_uses_bf16_exactly_where_native_unless_told(monkeypatch):
    monkeypatch.delenv("TRANSFORMER_BF16", raising=False)
    assert _tiny_run_summary()["bf16_autocast"] == native_bf16("cpu")
    assert _tiny_run_summary(bf16=False)["bf16_autocast"] is False
    monkeypatch.setenv("TRANSFORMER_BF16", "0")  # how the tests train in float32
    assert _tiny_run_summary()["bf16_autocast"] is False


def test_build_outputs_ignored_by_git(tmp_path):
    import subprocess

    from conftest import ROOT

    for path in ("build/lib/x.py", "transformer_lib.egg-info/PKG-INFO", "dist/x.whl"):
        proc = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT)
        assert proc.returncode == 0, f"{path} is not ignored by .gitignore"


_BUILDERS = {
    "PositionwiseFeedForward": lambda **kw: PositionwiseFeedForward(8, 16, **kw),
    "EncoderLayer": lambda **kw: EncoderLayer(8, 2, 16, **kw),
    "Encoder": lambda **kw: Encoder(8, 2, 16, 2, final_norm=True, **kw),
    "DecoderLayer": lambda **kw: DecoderLayer(8, 2, 16, **kw),
    "Decoder": lambda **kw: Decoder(8, 2, 16, 2, final_norm=True, **kw),
    "MultiHeadAttention": lambda **kw: MultiHeadAttention(8, 2, **kw),
    "Transformer": lambda **kw: Transformer(
        TransformerConfig(
            30,
            30,
            d_model=8,
            n_heads=2,
            n_encoder_layers=1,
            n_decoder_layers=1,
            d_ff=16,
            max_len=16,
        ),
        **kw,
    ),
    "EncoderOnlyTransformer": lambda **kw: EncoderOnlyTransformer(
        30, 8, 2, 1, 16, max_len=16, **kw
    ),
    "DecoderOnlyTransformer": lambda **kw: DecoderOnlyTransformer(
        30, 8, 2, 1, 16, max_len=16, **kw
    ),
}


@pytest.mark.parametrize("name", sorted(_BUILDERS))
def test_every_module_takes_device_and_dtype(name):
    """As PyTorch's own modules do: parameters and buffers made where and as asked, and
    a dtype that is not floating-point refused with the argument's name."""
    module = _BUILDERS[name](device="meta", dtype=torch.float64)
    tensors = list(module.parameters()) + list(module.buffers())
    assert tensors and {(t.device.type, t.dtype) for t in tensors} == {
        ("meta", torch.float64)
    }
    plain = _BUILDERS[name]()
    assert {t.dtype for t in plain.parameters()} == {torch.float32}
    with pytest.raises(
        TypeError,
        match=r"`dtype` must be a floating-point torch.dtype, got torch.int64",
    ):
        _BUILDERS[name](dtype=torch.long)
