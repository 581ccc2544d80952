"""Write the in-browser model of chapter 12b (`make web-model`): export, share, check,
describe.

    python scripts/export_onnx.py --run runs/cpu-30min --record results/cpu-30min \
        --out book/_static/translator/model

1. loads the run's weights (`model.pt`, else `checkpoint.pt`) and `tokenizer.json`;
2. exports the encoder and the decoder step with `transformer_lib.export.export_onnx`
   (float32, into a temporary folder), then stores their large tensors once, in 16 bits,
   in one `weights.bin` that both graphs read (`share_weights_fp16`);
3. translates the whole Multi30k test set with PyTorch and with onnxruntime (greedy: the
   float32 files and the 16-bit files; beam search with four beams: the 16-bit files),
   and measures the 8-bit alternative on a PyTorch twin (`round_to_int8`);
4. refuses to write anything if onnxruntime and PyTorch disagree on one greedy sentence,
   if the page's BLEU (16-bit files) is more than 0.3 from PyTorch's, greedy or beam, or
   if the files exceed 12 MB;
5. writes `encoder.onnx`, `decoder.onnx`, `weights.bin`, `tokenizer.json` and
   `model.json` (checksums, sizes, configuration, the run and its record, the measured
   agreement and BLEU, the page's example sentences and palette) into `--out`, and
   copies the run's `summary.json` and `metrics.jsonl` into `--record`, the committed
   record of that run (a record that scripts/record_run.py wrote of the same run, as
   chapter 12's recorded runs are, is kept as it is).

Both folders are committed: `make book` then works on a fresh clone, where runs/ is
absent. Data: `$TRANSFORMER_DATA_DIR` (see transformer_lib.data.load_multi30k).
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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, TypedDict

import torch

if TYPE_CHECKING:
    from transformer_lib import Transformer
    from transformer_lib.export import OnnxTranslator
    from transformer_lib.tokenizer import SubwordTokenizer

ROOT = Path(__file__).resolve().parents[1]
# the book's palette, for the page's drawings
from booktools.diagrams import COLORS, INK, MUTED

EXAMPLES = [  # German captions for the page's example buttons, written for this book
    "Ein Hund rennt mit einem Ball im Maul über eine Wiese.",
    "Zwei Kinder spielen im Sand am Strand.",
    "Eine Frau mit einem roten Hut liest ein Buch auf einer Bank.",
    "Ein Mann fährt mit dem Fahrrad eine belebte Straße entlang.",
    "Drei Männer in orangefarbenen Westen arbeiten auf einer Baustelle.",
]
MAX_BLEU_GAP = 0.3  # the page's BLEU against PyTorch's, greedy and beam
# every file the page downloads for the model, tokenizer included
MAX_BYTES = 12_000_000


class _Decoding(TypedDict):
    """How the page decodes, as model.json tells it (and as this script measures it)."""

    extra_len: int
    beam_size: int
    length_penalty: float
    max_beam_size: int


DECODING: _Decoding = {
    "extra_len": 50,
    "beam_size": 4,
    "length_penalty": 0.6,
    "max_beam_size": 8,
}


@dataclass
class _TestSet:
    """The Multi30k test sentences as both decoders read them."""

    src_ids: list[list[int]]  # German, `<eos>` included, cut at the model's max_len
    refs: list[str]  # English references
    # each sentence's decoding budget (`extra_len` more than its source)
    max_lens: list[int]


@dataclass
class _Measured:
    """What the export measured in its temporary folder (step 3 of this script)."""

    fp32_bytes: dict[str, int]
    # share_weights_fp16's answer: the 16-bit files and what they share
    shared: dict[str, Any]
    agree32: dict[str, Any]  # onnx_agreement: float32 files against PyTorch
    # onnx_agreement: 16-bit files against the rounded PyTorch twin
    agree16: dict[str, Any]
    beam_torch: list[list[int]]
    beam_web: list[list[int]]
    int8_bytes: int
    bleu: dict[str, dict[str, float]]


def _until_eos(ids: list[int], eos_id: int) -> list[int]:
    return ids[: ids.index(eos_id) + 1] if eos_id in ids else ids


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    if args.refresh_summary:
        refresh_summary_line(args.out / "model.json")
        return 0
    from transformer_lib.data import SubwordTokenizer
    from transformer_lib.training import load_checkpoint

    torch.set_num_threads(1)
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", module=r"torch\.onnx.*|copyreg")
    summary = json.loads((args.run / "summary.json").read_text())
    model = load_checkpoint(args.run)
    tok = SubwordTokenizer.load(args.run / "tokenizer.json")
    test = _test_set(tok, model.config.max_len, args.sentences)
    for s in EXAMPLES:
        assert tok.unk_id not in tok.encode(s), f"example with unknown characters: {s}"

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        measured = _export_and_measure(model, tok, test, Path(tmp))
        shared = measured.shared
        files = {
            "encoder": shared["files"]["encoder"],
            "decoder": shared["files"]["decoder"],
            "weights": shared["weights"],
            "tokenizer": args.run / "tokenizer.json",
        }
        total = sum(p.stat().st_size for p in files.values())
        problems = _problems(measured, total)
        if problems:
            print(f"nothing written: {'; '.join(problems)}", file=sys.stderr)
            return 1
        _replace_files(args.out, files.values())
    _write_record(args.record, args.run, summary)
    meta = _model_json(args, summary, model, tok, measured, files, total, t0)
    (args.out / "model.json").write_text(
        json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(
        f"wrote {args.out} ({total / 1e6:.2f} MB) and {args.record} in"
        f" {time.perf_counter() - t0:.0f} s"
    )
    return 0


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--run",
        type=Path,
        default=ROOT / "runs" / "cpu-30min",
        help="the training run's folder",
    )
    ap.add_argument(
        "--record",
        type=Path,
        default=ROOT / "results" / "cpu-30min",
        help="where the run's summary.json and metrics.jsonl are committed",
    )
    ap.add_argument(
        "--out", type=Path, default=ROOT / "book" / "_static" / "translator" / "model"
    )
    ap.add_argument(
        "--refresh-summary",
        action="store_true",
        help=(
            "only rewrite OUT/model.json's one-line summary from its other fields (no"
            " run needed)"
        ),
    )
    ap.add_argument(
        "--sentences",
        type=int,
        default=None,
        help=(
            "only the first N test sentences (a quick trial of the script; the page's"
            " model uses all)"
        ),
    )
    return ap.parse_args(argv)


def _test_set(tok: SubwordTokenizer, max_len: int, sentences: int | None) -> _TestSet:
    """The Multi30k test set (its first `sentences`), encoded, with each sentence's
    budget."""
    from transformer_lib.data import load_multi30k

    pairs = load_multi30k("test_2016_flickr", "de", "en")[:sentences]
    src_ids = [tok.encode(de, eos=True)[:max_len] for de, _ in pairs]
    refs = [en for _, en in pairs]
    max_lens = [min(max_len, len(ids) + DECODING["extra_len"]) for ids in src_ids]
    return _TestSet(src_ids, refs, max_lens)


def _export_and_measure(
    model: Transformer, tok: SubwordTokenizer, test: _TestSet, work: Path
) -> _Measured:
    """Steps 2 and 3: export into `work` (float32, then 16-bit shared weights), then
    translate the test set every way and score it."""
    from transformer_lib.decoding import greedy_decode
    from transformer_lib.export import (
        OnnxTranslator,
        export_onnx,
        onnx_agreement,
        round_to_fp16,
        round_to_int8,
        share_weights_fp16,
    )
    from transformer_lib.training import corpus_bleu

    src_ids, max_lens = test.src_ids, test.max_lens
    bleu_of = lambda outs: corpus_bleu(
        [tok.decode(ids[1:]) for ids in outs], test.refs
    )[0]
    paths = export_onnx(model, work / "fp32")
    fp32_bytes = {name: p.stat().st_size for name, p in paths.items()}
    shared = share_weights_fp16(paths, work / "web")
    agree32 = onnx_agreement(
        model,
        OnnxTranslator(work / "fp32"),
        src_ids,
        bos_id=tok.bos_id,
        eos_id=tok.eos_id,
    )
    web = OnnxTranslator(work / "web")
    agree16 = onnx_agreement(
        round_to_fp16(model), web, src_ids, bos_id=tok.bos_id, eos_id=tok.eos_id
    )
    print(
        f"greedy: float32 files {agree32['identical']}/{agree32['sentences']}"
        " token-identical to PyTorch (max |logit diff|"
        f" {agree32['max_abs_logit_diff']:.1e}); 16-bit files"
        f" {agree16['identical']}/{agree16['sentences']} to the rounded twin",
        flush=True,
    )
    beam_torch, beam_web = _beam_both(model, web, tok, test)
    twin8, int8_bytes = round_to_int8(model)
    with torch.no_grad():
        greedy8 = [
            _until_eos(
                greedy_decode(twin8, torch.tensor([ids]), n, tok.bos_id, tok.eos_id)[
                    0
                ].tolist(),
                tok.eos_id,
            )
            for ids, n in zip(src_ids, max_lens)
        ]
    bleu = {
        "greedy": {
            "torch": bleu_of(agree32["torch"]),
            "onnx_fp32": bleu_of(agree32["onnx"]),
            "onnx_fp16": bleu_of(agree16["onnx"]),
            "torch_int8_twin": bleu_of(greedy8),
        },
        "beam": {"torch": bleu_of(beam_torch), "onnx_fp16": bleu_of(beam_web)},
    }
    print("BLEU:", json.dumps(bleu), flush=True)
    return _Measured(
        fp32_bytes, shared, agree32, agree16, beam_torch, beam_web, int8_bytes, bleu
    )


def _beam_both(
    model: Transformer, web: OnnxTranslator, tok: SubwordTokenizer, test: _TestSet
) -> tuple[list[list[int]], list[list[int]]]:
    """Beam search (DECODING's beams and length penalty) of every test sentence:
    PyTorch's, then the 16-bit files'."""
    from transformer_lib.decoding import beam_search

    src_ids, max_lens = test.src_ids, test.max_lens
    K, alpha = DECODING["beam_size"], DECODING["length_penalty"]
    with torch.no_grad():
        beam_torch = [
            _until_eos(
                beam_search(
                    model,
                    torch.tensor([ids]),
                    n,
                    tok.bos_id,
                    tok.eos_id,
                    beam_size=K,
                    length_penalty=alpha,
                )[0].tolist(),
                tok.eos_id,
            )
            for ids, n in zip(src_ids, max_lens)
        ]
    beam_web = [
        web.beam(ids, n, tok.bos_id, tok.eos_id, beam_size=K, length_penalty=alpha)
        for ids, n in zip(src_ids, max_lens)
    ]
    return beam_torch, beam_web


def _problems(m: _Measured, total: int) -> list[str]:
    """Step 4: why nothing may be written (none: the files may be written)."""
    agree32, agree16, bleu = m.agree32, m.agree16, m.bleu
    return [
        msg
        for bad, msg in (
            (
                agree32["identical"] != agree32["sentences"],
                "float32 files and PyTorch disagree",
            ),
            (
                agree16["identical"] != agree16["sentences"],
                "16-bit files and their PyTorch twin disagree",
            ),
            (
                abs(bleu["greedy"]["onnx_fp16"] - bleu["greedy"]["torch"])
                > MAX_BLEU_GAP,
                "greedy BLEU gap > 0.3",
            ),
            (
                abs(bleu["beam"]["onnx_fp16"] - bleu["beam"]["torch"]) > MAX_BLEU_GAP,
                "beam BLEU gap > 0.3",
            ),
            (total > MAX_BYTES, f"{total:,d} bytes > {MAX_BYTES:,d}"),
        )
        if bad
    ]


def _replace_files(out: Path, files: Iterable[Path]) -> None:
    """`out` holding exactly `files` (copies), whatever it held before."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        old.unlink()
    for p in files:
        shutil.copyfile(p, out / p.name)


def _write_record(record: Path, run: Path, summary: dict[str, Any]) -> None:
    """The run's record, as scripts/record_run.py writes one: `summary` (with how it was
    recorded, added here) and the run's metrics.jsonl. A record of this very run that
    scripts/record_run.py wrote (the same summary, plus how it was recorded) is kept as
    it is."""
    if (record / "summary.json").exists():
        kept = json.loads((record / "summary.json").read_text())
        if {k: v for k, v in kept.items() if k != "recorded"} == summary:
            return
    record.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    summary["recorded"] = {
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "command": f"make train PRESET={summary['preset']}",
        "script": "make web-model (python scripts/export_onnx.py)",
    }
    (record / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    shutil.copyfile(run / "metrics.jsonl", record / "metrics.jsonl")


def _model_json(
    args: argparse.Namespace,
    summary: dict[str, Any],
    model: Transformer,
    tok: SubwordTokenizer,
    m: _Measured,
    files: dict[str, Path],
    total: int,
    t0: float,
) -> dict[str, Any]:
    """model.json: the written files, the model, the run, the measured agreement and
    BLEU, and what the page shows (examples, palette, its one-line summary)."""
    from transformer_lib.export import sha256
    from transformer_lib.params import count_parameters

    described = {
        name: {
            "name": p.name,
            "bytes": (args.out / p.name).stat().st_size,
            "sha256": sha256(args.out / p.name),
        }
        for name, p in files.items()
    }
    params = count_parameters(model)
    mc, shared, bleu = model.config, m.shared, m.bleu
    meta = {
        "about": (
            "The in-browser model of chapter 12b, written by `make web-model`"
            " (scripts/export_onnx.py). Trained on Multi30k: non-commercial research"
            " and educational use only."
        ),
        "files": described,
        "total_bytes": total,
        "float32_bytes": m.fp32_bytes,
        "weights": (
            f"{shared['tensors']} tensors with >= 1024 values stored once each as"
            f" float16 in weights.bin ({shared['shared']} read by both graphs:"
            f" {shared['bytes_saved']:,d} bytes not shipped twice), cast to float32 at"
            " load; float32 arithmetic"
        ),
        "int8_alternative": {
            "bytes_weights": m.int8_bytes,
            "note": (
                "row-wise symmetric int8 weights with a float32 "
                "scale per row (round_to_int8), measured on a PyTorch twin; not shipped"
            ),
        },
        "parameters": params,
        "config": {
            **{
                k: getattr(mc, k)
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
            "d_k": mc.d_model // mc.n_heads,
        },
        "special": {
            "pad_id": tok.pad_id,
            "bos_id": tok.bos_id,
            "eos_id": tok.eos_id,
            "unk_id": tok.unk_id,
        },
        "decoding": DECODING,
        "training": {
            "max_sentence_tokens": summary["config"].get("max_sentence_tokens")
        },
        "run": _run(args.run, args.record, summary),
        "data": summary["data"],
        "agreement": _agreement(m),
        "bleu": bleu,
        "exported": _exported(t0),
        "examples": EXAMPLES,
        "colors": {"query": COLORS["query"], "key": COLORS["key"]},
        "palette": {
            **{
                k: COLORS[k]
                for k in (
                    "query",
                    "key",
                    "value",
                    "mask",
                    "encoder",
                    "decoder",
                    "output",
                )
            },
            "ink": INK,
            "muted": MUTED,
        },
    }
    meta["summary_line"] = summary_line(meta)
    return meta


def summary_line(meta: dict[str, Any]) -> str:
    """The page's one-line description of its model, from model.json's own fields."""
    c, run, bleu = meta["config"], meta["run"], meta["bleu"]
    return (
        f"Model: {meta['parameters'] / 1e6:.2f} million parameters (d_model"
        f" {c['d_model']}, {c['n_encoder_layers']}+{c['n_decoder_layers']} layers,"
        f" {c['n_heads']} heads), {_which_run(run)} ({run['record']});"
        f" {meta['total_bytes'] / 1e6:.1f} MB of files with 16-bit"
        f" weights; BLEU on the Multi30k test set {bleu['greedy']['onnx_fp16']:.2f}"
        f" greedy, {bleu['beam']['onnx_fp16']:.2f} with four beams. Trained on"
        " Multi30k, which is for non-commercial research and educational use only."
    )


def _which_run(run: dict[str, Any]) -> str:
    """The run in words: the book's recorded run itself, or another training of its
    recipe."""
    if run.get("recorded_by", "").startswith("python scripts/record_run.py"):
        return f"the book's recorded {run['preset']} run"
    return f"a training of the book's {run['preset']} recipe"


def refresh_summary_line(path: Path) -> None:
    """Rewrite model.json's `summary_line` from its other fields (no run needed)."""
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["summary_line"] = summary_line(meta)
    path.write_text(
        json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def _rel(p: Path) -> str:
    """`p` relative to the repository when it is inside it."""
    return (
        str(p.resolve().relative_to(ROOT))
        if p.resolve().is_relative_to(ROOT)
        else str(p)
    )


def _run(run: Path, record: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """model.json's "run": the training run the weights come from, and its record."""
    from transformer_lib.export import sha256

    hw = summary["hardware"]
    return {
        "folder": _rel(run),
        "record": _rel(record),
        "summary_sha256": sha256(record / "summary.json"),
        "preset": summary["preset"],
        "command": (
            f"make train PRESET={summary['preset']}  (python -m transformer_lib.train"
            f" --preset {summary['preset']} --out {_rel(run)})"
        ),
        "steps": summary["steps"],
        "train_time_s": summary["train_time_s"],
        "hardware": (
            f"{hw.get('gpu', hw['cpu'])}, {hw['torch_threads']} thread(s), torch"
            f" {hw['torch']}"
        ),
        "bf16_autocast": summary.get("bf16_autocast"),
        "date": (
            datetime.datetime.fromtimestamp(
                (run / "summary.json").stat().st_mtime, datetime.timezone.utc
            ).strftime("%Y-%m-%d %H:%M UTC")
        ),
        "weights": summary.get("selected", ""),
        "bleu_batched": summary.get("bleu"),
        # what wrote the record: scripts/record_run.py (the book's recorded run) or this
        # script (another training)
        "recorded_by": json.loads((record / "summary.json").read_text())["recorded"][
            "script"
        ],
    }


def _agreement(m: _Measured) -> dict[str, Any]:
    """model.json's "agreement": how often onnxruntime's translations equal
    PyTorch's."""
    agree32, agree16 = m.agree32, m.agree16
    return {
        "sentences": agree32["sentences"],
        "identical_fp32_vs_torch": agree32["identical"],
        "max_abs_logit_diff_fp32": agree32["max_abs_logit_diff"],
        "identical_fp16_vs_rounded_torch": agree16["identical"],
        "fp16_same_as_fp32": sum(
            a == b for a, b in zip(agree16["onnx"], agree32["onnx"])
        ),
        "beam_fp16_same_as_torch": sum(
            a == b for a, b in zip(m.beam_web, m.beam_torch)
        ),
    }


def _exported(t0: float) -> dict[str, Any]:
    """model.json's "exported": when, with what, on which machine, in how many seconds
    since `t0`."""
    from transformer_lib.training import hardware_info

    return {
        "date": (
            datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        ),
        "torch": torch.__version__,
        "seconds": round(time.perf_counter() - t0, 1),
        "cpu": hardware_info("cpu")["cpu"],
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "arithmetic": "float32 (onnxruntime CPU and PyTorch eval)",
    }


if __name__ == "__main__":
    sys.exit(main())
