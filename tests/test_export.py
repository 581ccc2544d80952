"""transformer_lib.export: the shared 16-bit weights file, the PyTorch twins, reading
the page's model back, and the committed model's record (chapter 12b)."""

import json
import logging
import warnings

import numpy as np
import pytest
import torch

from conftest import ROOT, load_script
from transformer_lib import greedy_decode
from transformer_lib.export import (
    OnnxTranslator,
    export_onnx,
    load_web_model,
    round_to_fp16,
    round_to_int8,
    sha256,
    share_weights_fp16,
)
from transformer_lib.model import Transformer, TransformerConfig

MODEL = ROOT / "book" / "_static" / "translator" / "model"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A small random model with the page's layout (shared, tied embedding), exported
    and shared."""
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", module=r"torch\.onnx.*|copyreg")
    torch.manual_seed(0)
    cfg = TransformerConfig(
        src_vocab_size=300,
        tgt_vocab_size=300,
        d_model=32,
        n_heads=4,
        n_encoder_layers=2,
        n_decoder_layers=2,
        d_ff=64,
        max_len=40,
        share_embeddings=True,
        tie_output=True,
    )
    model = Transformer(cfg).eval()
    tmp = tmp_path_factory.mktemp("export")
    paths = export_onnx(model, tmp / "fp32")
    shared = share_weights_fp16(paths, tmp / "web")
    meta = {
        "config": {
            k: getattr(cfg, k)
            for k in (
                "src_vocab_size",
                "tgt_vocab_size",
                "d_model",
                "n_heads",
                "n_encoder_layers",
                "n_decoder_layers",
                "d_ff",
                "max_len",
                "norm_first",
                "final_norm",
                "share_embeddings",
                "tie_output",
            )
        },
        "special": {"pad_id": 0, "bos_id": 1, "eos_id": 2, "unk_id": 3},
        "files": {
            "encoder": {"name": "encoder.onnx"},
            "decoder": {"name": "decoder.onnx"},
        },
    }
    (tmp / "web" / "model.json").write_text(json.dumps(meta))
    return model, paths, shared, tmp / "web"


def test_shared_file_stores_each_tensor_once(exported):
    model, paths, shared, web = exported
    assert shared["shared"] == 2  # the tied embedding and the positional encoding
    emb = model.config.src_vocab_size * model.config.d_model
    pe = model.config.max_len * model.config.d_model
    assert shared["bytes_saved"] == 2 * (emb + pe)
    big = sum(
        t.numel() for t in [*model.parameters(), *model.buffers()] if t.numel() >= 1024
    )
    # every large tensor once, in 16 bits (plus alignment)
    assert shared["weights"].stat().st_size >= 2 * big
    assert shared["weights"].stat().st_size < 2 * big + 64 * shared["tensors"]
    assert (
        sum(p.stat().st_size for p in paths.values())
        > 2 * shared["weights"].stat().st_size
    )


def test_page_files_compute_the_rounded_twin(exported):
    model, _, _, web = exported
    twin, back = round_to_fp16(model), load_web_model(web)
    for (name, a), b in zip(twin.state_dict().items(), back.state_dict().values()):
        assert torch.equal(a, b), name
    onnx = OnnxTranslator(web)
    src = [5, 17, 42, 9, 2]
    got = onnx.greedy(src, 12, 1, 2)
    assert (
        got.ids
        == greedy_decode(twin, torch.tensor([src]), 12, 1, 2)[0].tolist()[
            : len(got.ids)
        ]
    )
    scores, weights = onnx.encoder_attention(src)
    assert scores.shape == weights.shape == (2, 4, 5, 5)
    d_k = model.config.d_model // model.config.n_heads
    assert np.allclose(
        torch.softmax(torch.tensor(scores) / d_k**0.5, -1).numpy(), weights, atol=1e-6
    )
    assert [a.shape for a in got.self_attention] == [
        (2, 4, t) for t in range(1, len(got.ids))
    ]


def test_int8_twin_and_its_size():
    torch.manual_seed(0)
    model = Transformer(
        TransformerConfig(
            src_vocab_size=300,
            tgt_vocab_size=300,
            d_model=32,
            n_heads=4,
            n_encoder_layers=1,
            n_decoder_layers=1,
            d_ff=64,
            max_len=40,
            share_embeddings=True,
        )
    )
    twin, size = round_to_int8(model)
    w, q = model.output.weight, twin.output.weight  # (V, d): one scale per row
    step = w.abs().amax(1, keepdim=True) / 127
    assert torch.all((w - q).abs() <= step / 2 + 1e-7) and not torch.equal(w, q)
    assert len(torch.unique(torch.round(q / step))) <= 255
    assert torch.equal(
        twin.encoder.layers[0].norm1.weight, model.encoder.layers[0].norm1.weight
    )
    # shared ones once
    tensors = [
        t for t in [*model.parameters(), *model.buffers()] if t.is_floating_point()
    ]
    assert size == sum(
        (
            t.numel() + 4 * t.shape[0]
            if t.dim() == 2 and t.numel() >= 1024
            else 4 * t.numel()
        )
        for t in tensors
    )
    with pytest.raises(ValueError, match="min_elements"):
        round_to_int8(model, min_elements=0)


def test_clear_errors(tmp_path, exported):
    with pytest.raises(FileNotFoundError, match="model.json"):
        load_web_model(tmp_path)
    with pytest.raises(
        TypeError, match="`model` must be a transformer_lib.Transformer"
    ):
        export_onnx("not a model", tmp_path)
    with pytest.raises(ValueError, match="min_elements"):
        share_weights_fp16(exported[1], tmp_path / "x", min_elements=0)


def test_committed_model_is_the_recorded_run():
    meta = json.loads((MODEL / "model.json").read_text(encoding="utf-8"))
    for f in meta["files"].values():
        assert sha256(MODEL / f["name"]) == f["sha256"], (
            f"{f['name']} differs from model.json"
        )
    assert (
        meta["total_bytes"]
        == sum(f["bytes"] for f in meta["files"].values())
        <= 12_000_000
    )
    record = ROOT / meta["run"]["record"]
    assert sha256(record / "summary.json") == meta["run"]["summary_sha256"], (
        "model.json names another run"
    )
    summary = json.loads((record / "summary.json").read_text())
    assert (
        summary["preset"] == meta["run"]["preset"]
        and summary["steps"] == meta["run"]["steps"]
    )
    assert summary["bleu"] == meta["run"]["bleu_batched"]
    records = [
        json.loads(ln)
        for ln in (record / "metrics.jsonl").read_text().splitlines()
        if ln
    ]
    assert records[-1]["kind"] == "end" and records[-1]["bleu"] == summary["bleu"]
    for method in ("greedy", "beam"):
        assert (
            abs(meta["bleu"][method]["onnx_fp16"] - meta["bleu"][method]["torch"])
            <= 0.3
        )
    line = meta["summary_line"]  # what the page prints under the translator
    # the record says which run this is: the book's recorded run of the preset
    # (scripts/record_run.py), or another training of its recipe (make web-model)
    recorded_by = summary["recorded"]["script"]
    assert meta["run"]["recorded_by"] == recorded_by
    recorded_run = f"the book's recorded {meta['run']['preset']} run"
    if recorded_by.startswith("python scripts/record_run.py"):
        assert f"{recorded_run} ({meta['run']['record']})" in line
    else:
        assert f"({meta['run']['record']})" in line and recorded_run not in line
    assert (
        f"{meta['bleu']['greedy']['onnx_fp16']:.2f} greedy,"
        f" {meta['bleu']['beam']['onnx_fp16']:.2f}" in line
    )
    assert (
        f"{meta['parameters'] / 1e6:.2f} million" in line
        and f"{meta['total_bytes'] / 1e6:.1f} MB" in line
    )
    latency = json.loads((ROOT / "results" / "page-latency.json").read_text())
    assert latency["model_weights_sha256"] == meta["files"]["weights"]["sha256"], (
        "latency of another model"
    )


def test_web_model_keeps_the_record_that_record_run_wrote(tmp_path):
    """`make web-model` on a recorded run leaves its record (results/NAME, written by
    scripts/record_run.py) as it is; the record of another training is written."""
    script = load_script("export_onnx")
    run, record = tmp_path / "run", tmp_path / "record"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"kind": "end"}\n')
    summary = {"preset": "p", "bleu": {"greedy": 1.0}}
    recorded = {"script": "python scripts/record_run.py --preset p", "date": "then"}
    record.mkdir()
    kept = json.dumps({**summary, "recorded": recorded})
    (record / "summary.json").write_text(kept)
    script._write_record(record, run, dict(summary))
    assert (record / "summary.json").read_text() == kept
    assert not (record / "metrics.jsonl").exists()
    other = {**summary, "steps": 7}  # another run of the preset: its record is written
    script._write_record(record, run, other)
    written = json.loads((record / "summary.json").read_text())
    assert written["steps"] == 7
    assert written["recorded"]["script"].startswith("make web-model")
    assert (record / "metrics.jsonl").exists()
