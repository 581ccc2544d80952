"""Write the in-browser model of chapter 12b (`make web-model`): export, share, check, describe.

    python scripts/export_onnx.py --run runs/cpu-full --record results/cpu-full-web \
        --out book/_static/translator/model

1. loads the run's weights (`model.pt`, else `checkpoint.pt`) and `tokenizer.json`;
2. exports the encoder and the decoder step with `transformer_lib.export.export_onnx` (float32,
   into a temporary folder), then stores their large tensors once, in 16 bits, in one
   `weights.bin` that both graphs read (`share_weights_fp16`);
3. translates the whole Multi30k test set with PyTorch and with onnxruntime (greedy: the float32
   files and the 16-bit files; beam search with four beams: the 16-bit files), and measures
   the 8-bit alternative on a PyTorch twin (`round_to_int8`);
4. refuses to write anything if onnxruntime and PyTorch disagree on one greedy sentence, if the
   page's BLEU (16-bit files) is more than 0.3 from PyTorch's, greedy or beam, or if the files
   exceed 12 MB;
5. writes `encoder.onnx`, `decoder.onnx`, `weights.bin`, `tokenizer.json` and `model.json`
   (checksums, sizes, configuration, the run and its record, the measured agreement and
   BLEU, the page's example sentences and palette) into `--out`, and copies the run's
   `summary.json` and `metrics.jsonl` into `--record`, the committed record of that run.

Both folders are committed: `make book` then works on a fresh clone, where runs/ is absent.
Data: `$TRANSFORMER_DATA_DIR` (see transformer_lib.data.load_multi30k).
"""
from __future__ import annotations

import argparse
import datetime
import json
import logging
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
from booktools.diagrams import COLORS, INK, MUTED  # the book's palette, for the page's drawings

EXAMPLES = [   # German captions for the page's example buttons, written for this book
    "Ein Hund rennt mit einem Ball im Maul über eine Wiese.",
    "Zwei Kinder spielen im Sand am Strand.",
    "Eine Frau mit einem roten Hut liest ein Buch auf einer Bank.",
    "Ein Mann fährt mit dem Fahrrad eine belebte Straße entlang.",
    "Drei Männer in orangefarbenen Westen arbeiten auf einer Baustelle.",
]
MAX_BLEU_GAP = 0.3          # the page's BLEU against PyTorch's, greedy and beam
MAX_BYTES = 12_000_000      # every file the page downloads for the model, tokenizer included
DECODING = {"extra_len": 50, "beam_size": 4, "length_penalty": 0.6, "max_beam_size": 8}


def _until_eos(ids: list[int], eos_id: int) -> list[int]:
    return ids[:ids.index(eos_id) + 1] if eos_id in ids else ids


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, default=ROOT / "runs" / "cpu-full", help="the training run's folder")
    ap.add_argument("--record", type=Path, default=ROOT / "results" / "cpu-full-web",
                    help="where the run's summary.json and metrics.jsonl are committed")
    ap.add_argument("--out", type=Path, default=ROOT / "book" / "_static" / "translator" / "model")
    ap.add_argument("--sentences", type=int, default=None,
                    help="only the first N test sentences (a quick trial of the script; the page's model uses all)")
    args = ap.parse_args(argv)
    from transformer_lib import hardware_info
    from transformer_lib.data import SubwordTokenizer, load_multi30k
    from transformer_lib.decoding import beam_search, greedy_decode
    from transformer_lib.export import (OnnxTranslator, export_onnx, onnx_agreement, round_to_fp16, round_to_int8,
                                        sha256, share_weights_fp16)
    from transformer_lib.params import count_parameters
    from transformer_lib.training import corpus_bleu, load_checkpoint

    torch.set_num_threads(1)
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", module=r"torch\.onnx.*|copyreg")
    summary = json.loads((args.run / "summary.json").read_text())
    model = load_checkpoint(args.run)
    tok = SubwordTokenizer.load(args.run / "tokenizer.json")
    mc = model.config
    pairs = load_multi30k("test_2016_flickr", "de", "en")[:args.sentences]
    src_ids = [tok.encode(de, eos=True)[:mc.max_len] for de, _ in pairs]
    refs = [en for _, en in pairs]
    max_lens = [min(mc.max_len, len(ids) + DECODING["extra_len"]) for ids in src_ids]
    bleu_of = lambda outs: corpus_bleu([tok.decode(ids[1:]) for ids in outs], refs)[0]  # noqa: E731
    for s in EXAMPLES:
        assert tok.unk_id not in tok.encode(s), f"example with unknown characters: {s}"

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        paths = export_onnx(model, work / "fp32")
        fp32_bytes = {name: p.stat().st_size for name, p in paths.items()}
        shared = share_weights_fp16(paths, work / "web")
        agree32 = onnx_agreement(model, OnnxTranslator(work / "fp32"), src_ids, bos_id=tok.bos_id, eos_id=tok.eos_id)
        web = OnnxTranslator(work / "web")
        agree16 = onnx_agreement(round_to_fp16(model), web, src_ids, bos_id=tok.bos_id, eos_id=tok.eos_id)
        print(f"greedy: float32 files {agree32['identical']}/{agree32['sentences']} token-identical to PyTorch "
              f"(max |logit diff| {agree32['max_abs_logit_diff']:.1e}); 16-bit files {agree16['identical']}/"
              f"{agree16['sentences']} to the rounded twin", flush=True)
        K, alpha = DECODING["beam_size"], DECODING["length_penalty"]
        with torch.no_grad():
            beam_torch = [_until_eos(beam_search(model, torch.tensor([ids]), n, tok.bos_id, tok.eos_id, beam_size=K,
                                                 length_penalty=alpha)[0].tolist(), tok.eos_id)
                          for ids, n in zip(src_ids, max_lens)]
        beam_web = [web.beam(ids, n, tok.bos_id, tok.eos_id, beam_size=K, length_penalty=alpha)
                    for ids, n in zip(src_ids, max_lens)]
        twin8, int8_bytes = round_to_int8(model)
        with torch.no_grad():
            greedy8 = [_until_eos(greedy_decode(twin8, torch.tensor([ids]), n, tok.bos_id, tok.eos_id)[0].tolist(),
                                  tok.eos_id) for ids, n in zip(src_ids, max_lens)]
        bleu = {"greedy": {"torch": bleu_of(agree32["torch"]), "onnx_fp32": bleu_of(agree32["onnx"]),
                           "onnx_fp16": bleu_of(agree16["onnx"]), "torch_int8_twin": bleu_of(greedy8)},
                "beam": {"torch": bleu_of(beam_torch), "onnx_fp16": bleu_of(beam_web)}}
        print("BLEU:", json.dumps(bleu), flush=True)
        files = {"encoder": shared["files"]["encoder"], "decoder": shared["files"]["decoder"],
                 "weights": shared["weights"], "tokenizer": args.run / "tokenizer.json"}
        total = sum(p.stat().st_size for p in files.values())
        problems = [msg for bad, msg in (
            (agree32["identical"] != agree32["sentences"], "float32 files and PyTorch disagree"),
            (agree16["identical"] != agree16["sentences"], "16-bit files and their PyTorch twin disagree"),
            (abs(bleu["greedy"]["onnx_fp16"] - bleu["greedy"]["torch"]) > MAX_BLEU_GAP, "greedy BLEU gap > 0.3"),
            (abs(bleu["beam"]["onnx_fp16"] - bleu["beam"]["torch"]) > MAX_BLEU_GAP, "beam BLEU gap > 0.3"),
            (total > MAX_BYTES, f"{total:,d} bytes > {MAX_BYTES:,d}")) if bad]
        if problems:
            print(f"nothing written: {'; '.join(problems)}", file=sys.stderr)
            return 1
        args.out.mkdir(parents=True, exist_ok=True)
        for old in args.out.iterdir():
            old.unlink()
        for p in files.values():
            shutil.copyfile(p, args.out / p.name)
    args.record.mkdir(parents=True, exist_ok=True)     # the run's record, as scripts/record_run.py writes one
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    summary["recorded"] = {"date": datetime.date.today().isoformat(), "commit": commit,
                           "command": f"make train PRESET={summary['preset']}",
                           "script": "make web-model (python scripts/export_onnx.py)"}
    (args.record / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    shutil.copyfile(args.run / "metrics.jsonl", args.record / "metrics.jsonl")
    described = {name: {"name": p.name, "bytes": (args.out / p.name).stat().st_size, "sha256": sha256(args.out / p.name)}
                 for name, p in files.items()}
    params = count_parameters(model)
    hw = summary["hardware"]
    rel = lambda p: str(p.resolve().relative_to(ROOT)) if p.resolve().is_relative_to(ROOT) else str(p)  # noqa: E731
    mb = total / 1e6
    meta = {
        "about": "The in-browser model of chapter 12b, written by `make web-model` (scripts/export_onnx.py). "
                 "Trained on Multi30k: non-commercial research and educational use only.",
        "files": described,
        "total_bytes": total,
        "float32_bytes": fp32_bytes,
        "weights": (f"{shared['tensors']} tensors with >= 1024 values stored once each as float16 in weights.bin "
                    f"({shared['shared']} read by both graphs: {shared['bytes_saved']:,d} bytes not shipped twice), "
                    f"cast to float32 at load; float32 arithmetic"),
        "int8_alternative": {"bytes_weights": int8_bytes, "note": "row-wise symmetric int8 weights with a float32 "
                             "scale per row (round_to_int8), measured on a PyTorch twin; not shipped"},
        "parameters": params,
        "config": {**{k: getattr(mc, k) for k in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads",
                                                  "n_encoder_layers", "n_decoder_layers", "d_ff", "max_len",
                                                  "norm_first", "final_norm", "share_embeddings", "tie_output")},
                   "d_k": mc.d_model // mc.n_heads},
        "special": {"pad_id": tok.pad_id, "bos_id": tok.bos_id, "eos_id": tok.eos_id, "unk_id": tok.unk_id},
        "decoding": DECODING,
        "training": {"max_sentence_tokens": summary["config"].get("max_sentence_tokens")},
        "run": {"folder": rel(args.run), "record": rel(args.record),
                "summary_sha256": sha256(args.record / "summary.json"), "preset": summary["preset"],
                "command": f"make train PRESET={summary['preset']}  (python -m transformer_lib.train --preset "
                           f"{summary['preset']} --out {rel(args.run)})",
                "steps": summary["steps"], "train_time_s": summary["train_time_s"],
                "hardware": f"{hw.get('gpu', hw['cpu'])}, {hw['torch_threads']} thread(s), torch {hw['torch']}",
                "bf16_autocast": summary.get("bf16_autocast"),
                "date": datetime.datetime.fromtimestamp((args.run / "summary.json").stat().st_mtime,
                                                        datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "weights": summary.get("selected", ""), "bleu_batched": summary.get("bleu")},
        "data": summary["data"],
        "agreement": {"sentences": agree32["sentences"], "identical_fp32_vs_torch": agree32["identical"],
                      "max_abs_logit_diff_fp32": agree32["max_abs_logit_diff"],
                      "identical_fp16_vs_rounded_torch": agree16["identical"],
                      "fp16_same_as_fp32": sum(a == b for a, b in zip(agree16["onnx"], agree32["onnx"])),
                      "beam_fp16_same_as_torch": sum(a == b for a, b in zip(beam_web, beam_torch))},
        "bleu": bleu,
        "exported": {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                     "torch": torch.__version__, "seconds": round(time.perf_counter() - t0, 1),
                     "cpu": hardware_info("cpu")["cpu"],
                     "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                     "arithmetic": "float32 (onnxruntime CPU and PyTorch eval)"},
        "examples": EXAMPLES,
        "colors": {"query": COLORS["query"], "key": COLORS["key"]},
        "palette": {**{k: COLORS[k] for k in ("query", "key", "value", "mask", "encoder", "decoder", "output")},
                    "ink": INK, "muted": MUTED},
        "summary_line": (f"Model: {params / 1e6:.2f} million parameters (d_model {mc.d_model}, "
                         f"{mc.n_encoder_layers}+{mc.n_decoder_layers} layers, {mc.n_heads} heads), the book's "
                         f"{summary['preset']} run; {mb:.1f} MB of files with 16-bit weights; BLEU on the Multi30k "
                         f"test set {bleu['greedy']['onnx_fp16']:.2f} greedy, {bleu['beam']['onnx_fp16']:.2f} with "
                         f"four beams. Trained on Multi30k, which is for non-commercial research and educational "
                         f"use only."),
    }
    (args.out / "model.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({mb:.2f} MB) and {args.record} in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
