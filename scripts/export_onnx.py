"""Write the in-browser model of chapter 12b (`make web-model`): export, reduce, check, describe.

    python scripts/export_onnx.py --run runs/chapter_cpu --out book/_static/translator/model

1. loads the run's weights (`model.pt`, else `checkpoint.pt`) and `tokenizer.json`;
2. exports the encoder and the decoder step with `transformer_lib.export.export_onnx` (float32,
   into a temporary folder) and stores their large tensors in 16 bits (`reduce_to_fp16`);
3. translates the whole Multi30k test set greedily with PyTorch, the float32 files and the
   16-bit files, and refuses to write anything if onnxruntime and PyTorch disagree on one
   sentence or the 16-bit files cost more than 0.5 BLEU;
4. writes `encoder.onnx`, `decoder.onnx`, `tokenizer.json` and `model.json` (checksums, sizes,
   configuration, the run's command, hardware and date, the measured agreement and BLEU, the
   page's example sentences) into `--out`.

The output folder is committed: `make book` then works on a fresh clone, where runs/ is absent.
Data: `$TRANSFORMER_DATA_DIR` (see transformer_lib.data.load_multi30k).
"""
from __future__ import annotations

import argparse
import datetime
import json
import logging
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = [   # German captions for the page's example buttons, written for this book
    "Ein Hund rennt mit einem Ball im Maul über eine Wiese.",
    "Zwei Kinder spielen im Sand am Strand.",
    "Eine Frau mit einem roten Hut liest ein Buch auf einer Bank.",
    "Ein Mann fährt mit dem Fahrrad eine belebte Straße entlang.",
    "Drei Männer in orangefarbenen Westen arbeiten auf einer Baustelle.",
]
MAX_BLEU_COST = 0.5


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, default=ROOT / "runs" / "chapter_cpu", help="the training run's folder")
    ap.add_argument("--out", type=Path, default=ROOT / "book" / "_static" / "translator" / "model")
    args = ap.parse_args(argv)
    from transformer_lib.data import SubwordTokenizer, load_multi30k
    from transformer_lib.export import (OnnxTranslator, export_onnx, onnx_agreement, reduce_to_fp16,
                                        round_to_fp16, sha256)
    from transformer_lib.params import count_parameters
    from transformer_lib.training import corpus_bleu, load_checkpoint

    torch.set_num_threads(1)
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", module=r"torch\.onnx.*|copyreg")
    summary = json.loads((args.run / "summary.json").read_text())
    model = load_checkpoint(args.run)
    tok = SubwordTokenizer.load(args.run / "tokenizer.json")
    mc = model.config
    pairs = load_multi30k("test_2016_flickr", "de", "en")
    src_ids = [tok.encode(de, eos=True)[:mc.max_len] for de, _ in pairs]
    refs = [en for _, en in pairs]
    for s in EXAMPLES:
        assert tok.unk_id not in tok.encode(s), f"example with unknown characters: {s}"

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        paths = export_onnx(model, work / "fp32")
        (work / "fp16").mkdir()
        for p in paths.values():
            reduce_to_fp16(p, work / "fp16" / p.name)
        agree32 = onnx_agreement(model, OnnxTranslator(work / "fp32"), src_ids, bos_id=tok.bos_id, eos_id=tok.eos_id)
        agree16 = onnx_agreement(round_to_fp16(model), OnnxTranslator(work / "fp16"), src_ids,
                                 bos_id=tok.bos_id, eos_id=tok.eos_id)
        bleu = {name: corpus_bleu([tok.decode(ids[1:]) for ids in out], refs)[0]
                for name, out in (("torch", agree32["torch"]), ("onnx_fp32", agree32["onnx"]),
                                  ("onnx_fp16", agree16["onnx"]))}
        print(f"float32 files: {agree32['identical']}/{agree32['sentences']} token-identical to PyTorch, "
              f"max |logit diff| {agree32['max_abs_logit_diff']:.1e}")
        print(f"16-bit files: {agree16['identical']}/{agree16['sentences']} token-identical to the rounded "
              f"PyTorch twin; BLEU torch {bleu['torch']:.2f}, fp32 {bleu['onnx_fp32']:.2f}, fp16 {bleu['onnx_fp16']:.2f}")
        if agree32["identical"] != agree32["sentences"] or agree16["identical"] != agree16["sentences"]:
            print("onnxruntime and PyTorch disagree: nothing written", file=sys.stderr)
            return 1
        if bleu["onnx_fp32"] - bleu["onnx_fp16"] > MAX_BLEU_COST:
            print(f"16-bit weights cost more than {MAX_BLEU_COST} BLEU: nothing written", file=sys.stderr)
            return 1
        args.out.mkdir(parents=True, exist_ok=True)
        for p in paths.values():
            shutil.copyfile(work / "fp16" / p.name, args.out / p.name)
        fp32_bytes = {name: p.stat().st_size for name, p in paths.items()}
    shutil.copyfile(args.run / "tokenizer.json", args.out / "tokenizer.json")
    hw = summary["hardware"]
    files = {name: {"name": name if name == "tokenizer" else f"{name}.onnx", "bytes": 0, "sha256": ""}
             for name in ("encoder", "decoder", "tokenizer")}
    files["tokenizer"]["name"] = "tokenizer.json"
    for f in files.values():
        f["bytes"] = (args.out / f["name"]).stat().st_size
        f["sha256"] = sha256(args.out / f["name"])
    total_mb = (files["encoder"]["bytes"] + files["decoder"]["bytes"]) / 1e6
    params = count_parameters(model)
    meta = {
        "about": "The in-browser model of chapter 12b, written by `make web-model` (scripts/export_onnx.py). "
                 "Trained on Multi30k: non-commercial research and educational use only.",
        "files": files,
        "float32_bytes": fp32_bytes,
        "weights": "tensors with >= 1024 values stored as float16, cast to float32 at load; float32 arithmetic",
        "parameters": params,
        "config": {k: getattr(mc, k) for k in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads",
                                               "n_encoder_layers", "n_decoder_layers", "d_ff", "max_len",
                                               "norm_first", "share_embeddings", "tie_output")},
        "special": {"pad_id": tok.pad_id, "bos_id": tok.bos_id, "eos_id": tok.eos_id, "unk_id": tok.unk_id},
        "decoding": {"extra_len": 50, "beam_size": 4, "length_penalty": 0.6},
        "training": {"max_sentence_tokens": summary["config"].get("max_sentence_tokens")},
        "run": {"folder": str(args.run.resolve().relative_to(ROOT) if args.run.resolve().is_relative_to(ROOT) else args.run),
                "preset": summary["preset"],
                "command": summary.get("command", f"chapter 11b: run_training(TrainConfig.from_preset('{summary['preset']}')) "
                                                 f"into {args.run.name}/"),
                "steps": summary["steps"], "train_time_s": summary["train_time_s"],
                "hardware": f"{hw.get('gpu', hw['cpu'])}, {hw['torch_threads']} thread(s), torch {hw['torch']}",
                "date": datetime.datetime.fromtimestamp((args.run / "summary.json").stat().st_mtime,
                                                        datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "weights": summary.get("selected", "")},
        "data": summary["data"],
        "agreement": {"sentences": agree32["sentences"], "identical_fp32_vs_torch": agree32["identical"],
                      "max_abs_logit_diff_fp32": agree32["max_abs_logit_diff"],
                      "identical_fp16_vs_rounded_torch": agree16["identical"],
                      "fp16_same_as_fp32": sum(a == b for a, b in zip(agree16["onnx"], agree32["onnx"]))},
        "bleu": bleu,
        "exported": {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                     "torch": torch.__version__, "seconds": round(time.perf_counter() - t0, 1)},
        "examples": EXAMPLES,
        "colors": {"query": "#D55E00", "key": "#0072B2"},
        "summary_line": (f"Model: {params / 1e6:.2f} million parameters (d_model {mc.d_model}, "
                         f"{mc.n_encoder_layers}+{mc.n_decoder_layers} layers, {mc.n_heads} heads), "
                         f"{total_mb:.1f} MB of ONNX files with 16-bit weights; greedy BLEU "
                         f"{bleu['onnx_fp16']:.2f} on the Multi30k test set. Trained on Multi30k, which is for "
                         f"non-commercial research and educational use only."),
    }
    (args.out / "model.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {total_mb:.1f} MB of ONNX files in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
