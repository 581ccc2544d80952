"""transformer_lib.data: the Multi30k loader (search order, download, checksums, clear
errors), the BPE tokenizer (special ids, round trip, save/load) and token-budget
batching (no example lost or repeated, budget, padding, seeds, DDP sharding).

Everything runs on data generated here (tiny gzip files, num2words pairs); the tests
marked `multi30k` also read the real files when TRANSFORMER_DATA_DIR points at them, and
skip otherwise."""

import gzip
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer_lib import data as D
from transformer_lib.data import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    UNK_ID,
    Batch,
    ChecksumError,
    DataNotFoundError,
    SubwordTokenizer,
    TokenBatches,
    filter_by_length,
    load_multi30k,
    multi30k_file,
    multi30k_search_dirs,
    number_pairs,
    pad_sequences,
    token_batches,
)

from conftest import ROOT

SPLIT_LINES = {
    "train": (
        ["Ein Hund läuft.", "Zwei Männer  spielen Fußball ", "Eine Frau liest."],
        ["A dog runs.", "Two men play soccer.", "A woman reads."],
    ),
    "val": (["Ein Kind lacht."], ["A child laughs."]),
}


def _write_gz(path: Path, lines: list[str]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8", newline="\n") as f:
        f.write("".join(line + "\n" for line in lines))
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A data folder `tmp/src/multi30k` with tiny train/val files, their checksums, an
    empty cache."""
    monkeypatch.delenv(D.DATA_DIR_ENV, raising=False)
    # never touch the real cache
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    folder = tmp_path / "src" / "multi30k"
    sums = {}
    for split, (de, en) in SPLIT_LINES.items():
        sums[f"{split}.de.gz"] = _write_gz(folder / f"{split}.de.gz", de)
        sums[f"{split}.en.gz"] = _write_gz(folder / f"{split}.en.gz", en)
    return folder, sums


def _expected(split):
    return list(zip(*SPLIT_LINES[split]))


# --- loader ---------------------------------------------------------------------------


def test_embedded_checksums_match_the_shared_list():
    sums = Path(os.environ.get(D.DATA_DIR_ENV, str(ROOT.parent / "shared" / "data")))
    for cand in (sums / "multi30k" / "SHA256SUMS", sums / "SHA256SUMS"):
        if cand.is_file():
            listed = dict(
                reversed(line.split())
                for line in cand.read_text().splitlines()
                if line.strip()
            )
            assert listed == D.MULTI30K_SHA256
            return
    pytest.skip("no SHA256SUMS of the shared data here")


@pytest.mark.parametrize("which", ["container", "folder"])
def test_data_dir_argument_and_env_var_accept_both_layouts(tiny, monkeypatch, which):
    folder, sums = tiny
    where = folder.parent if which == "container" else folder
    assert load_multi30k(
        "train", data_dir=where, download=False, checksums=sums
    ) == _expected("train")
    monkeypatch.setenv(D.DATA_DIR_ENV, str(where))
    assert load_multi30k("train", download=False, checksums=sums) == _expected("train")
    assert load_multi30k("val", "en", "de", download=False, checksums=sums) == [
        (en, de) for de, en in _expected("val")
    ]


def test_lines_kept_exactly(tiny):
    folder, sums = tiny
    pairs = load_multi30k("train", data_dir=folder, download=False, checksums=sums)
    # spaces kept, only '\n' removed
    assert pairs[1][0] == "Zwei Männer  spielen Fußball "


def test_search_order(tmp_path, monkeypatch):
    monkeypatch.setenv(D.DATA_DIR_ENV, str(tmp_path / "env"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert multi30k_search_dirs() == [
        tmp_path / "env" / "multi30k",
        tmp_path / "env",
        tmp_path / "xdg" / "transformer_lib" / "multi30k",
    ]
    # the argument wins over the environment variable
    assert multi30k_search_dirs(tmp_path / "arg")[:2] == [
        tmp_path / "arg" / "multi30k",
        tmp_path / "arg",
    ]
    monkeypatch.delenv(D.DATA_DIR_ENV)
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert multi30k_search_dirs() == [
        Path.home() / ".cache" / "transformer_lib" / "multi30k"
    ]


def test_found_in_cache(tiny, tmp_path):
    folder, sums = tiny
    cache = tmp_path / "xdg" / "transformer_lib" / "multi30k"
    cache.mkdir(parents=True)
    for name in sums:
        (cache / name).write_bytes((folder / name).read_bytes())
    assert load_multi30k("val", download=False, checksums=sums) == _expected("val")


def test_download_from_file_url_into_cache(tiny, tmp_path):
    folder, sums = tiny
    pairs = load_multi30k(
        "train", data_dir=tmp_path / "nowhere", checksums=sums, base_url=folder.as_uri()
    )
    assert pairs == _expected("train")
    cached = tmp_path / "xdg" / "transformer_lib" / "multi30k"
    assert sorted(p.name for p in cached.iterdir()) == ["train.de.gz", "train.en.gz"]
    # the second call finds the cached files and does not download again
    assert (
        load_multi30k(
            "train",
            data_dir=tmp_path / "nowhere",
            checksums=sums,
            base_url="file:///does/not/exist",
            download=True,
        )
        == pairs
    )


def test_download_uses_pinned_commit_url_and_fetch_hook(tiny, tmp_path):
    folder, sums = tiny
    calls = []

    def fake_fetch(url, dest):
        calls.append(url)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes((folder / url.rsplit("/", 1)[1]).read_bytes())

    path = multi30k_file(
        "val.de.gz", checksums=sums, fetch=fake_fetch, cache_dir=tmp_path / "c"
    )
    assert path == tmp_path / "c" / "multi30k" / "val.de.gz"
    assert calls == [
        "https://raw.githubusercontent.com/multi30k/dataset/"
        "a3d2e0d26b56f3846f66a952536ffed4e401d05a/data/task1/raw/val.de.gz"
    ]


def test_missing_file_error_names_file_places_and_remedies(tiny, tmp_path):
    _, sums = tiny
    with pytest.raises(DataNotFoundError) as err:
        load_multi30k(
            "val", data_dir=tmp_path / "empty", download=False, checksums=sums
        )
    msg = str(err.value)
    assert "val.de.gz" in msg and "download=False" in msg
    for place in multi30k_search_dirs(tmp_path / "empty"):
        assert str(place / "val.de.gz") in msg
    assert D.DATA_DIR_ENV in msg and "data_dir" in msg and "download=True" in msg
    assert isinstance(err.value, FileNotFoundError)


def test_failed_download_error_says_why(tiny, tmp_path):
    _, sums = tiny
    with pytest.raises(
        DataNotFoundError,
        match=r"downloading file:///no/such/mirror/val\.de\.gz failed",
    ):
        load_multi30k(
            "val",
            data_dir=tmp_path / "empty",
            checksums=sums,
            base_url="file:///no/such/mirror",
        )
    assert not list((tmp_path / "xdg").rglob("*.gz*"))  # no partial file left behind


def test_corrupt_file_found(tiny):
    folder, sums = tiny
    raw = bytearray((folder / "val.en.gz").read_bytes())
    raw[-5] ^= 0x01
    (folder / "val.en.gz").write_bytes(bytes(raw))
    with pytest.raises(ChecksumError) as err:
        load_multi30k("val", data_dir=folder, download=False, checksums=sums)
    msg = str(err.value)
    assert "val.en.gz" in msg and sums["val.en.gz"] in msg and "SHA-256" in msg
    assert str(folder / "val.en.gz") in msg


def test_corrupt_download_is_deleted(tiny, tmp_path):
    folder, sums = tiny
    bad = dict(sums, **{"val.de.gz": "0" * 64})
    with pytest.raises(ChecksumError, match="val.de.gz"):
        load_multi30k(
            "val", data_dir=tmp_path / "empty", checksums=bad, base_url=folder.as_uri()
        )
    assert not (
        tmp_path / "xdg" / "transformer_lib" / "multi30k" / "val.de.gz"
    ).exists()


def test_misaligned_files(tiny):
    folder, sums = tiny
    sums["val.en.gz"] = _write_gz(folder / "val.en.gz", ["one", "two"])
    with pytest.raises(ValueError, match="1 de lines but 2 en lines"):
        load_multi30k("val", data_dir=folder, download=False, checksums=sums)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"split": "dev"}, "split"),
        ({"split": "val", "src_lang": "cs"}, "src_lang"),
        ({"split": "val", "tgt_lang": "de"}, "must differ"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        load_multi30k(**kwargs)


def _real_data_dir():
    root = os.environ.get(D.DATA_DIR_ENV)
    if not root or not any(
        (Path(root) / sub / "train.de.gz").is_file() for sub in ("multi30k", ".")
    ):
        pytest.skip("Multi30k not available: set TRANSFORMER_DATA_DIR")
    return root


@pytest.mark.parametrize("split", ["train", "val", "test_2016_flickr"])
def test_real_multi30k(split):
    pairs = load_multi30k(split, data_dir=_real_data_dir(), download=False)
    assert len(pairs) == D.MULTI30K_SIZES[split]
    assert all(de and en for de, en in pairs)


# --- tokenizer ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def numbers():
    pytest.importorskip("num2words")
    return number_pairs(3000, seed=0)


@pytest.fixture(scope="module")
def tok(numbers):
    pytest.importorskip("tokenizers")
    return SubwordTokenizer.train([s for p in numbers for s in p], vocab_size=400)


def test_number_pairs_deterministic():
    pytest.importorskip("num2words")
    assert number_pairs(5, seed=3) == number_pairs(5, seed=3) != number_pairs(5, seed=4)
    assert ("siebenundneunzig", "ninety-seven") in number_pairs(
        200, seed=0, max_number=99
    )


def test_special_ids_and_size(tok):
    assert (
        (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id)
        == (PAD_ID, BOS_ID, EOS_ID, UNK_ID)
        == (0, 1, 2, 3)
    )
    assert [tok.id_to_token(i) for i in range(4)] == [
        "<pad>",
        "<bos>",
        "<eos>",
        "<unk>",
    ]
    assert tok.vocab_size == len(tok) == 400


def test_round_trip_on_held_out_pairs(tok):
    # odd spaces
    held_out = number_pairs(500, seed=99) + [
        ("zwei  und drei ", "one, two  and three ")
    ]
    texts = [s for p in held_out for s in p]
    ids = tok.encode_batch(texts)
    assert ids == [tok.encode(s) for s in texts]
    assert [tok.decode(x) for x in ids] == texts
    assert all(UNK_ID not in x for x in ids[:-2])


def test_bos_eos_and_decode_stops_at_eos(tok):
    ids = tok.encode("dreizehn", bos=True, eos=True)
    assert ids[0] == BOS_ID and ids[-1] == EOS_ID
    padded = torch.tensor(ids + [PAD_ID] * 3 + tok.encode("vier"))
    assert tok.decode(padded) == "dreizehn"
    assert tok.decode_batch(torch.tensor([ids, ids])) == ["dreizehn", "dreizehn"]


def test_unknown_character_becomes_unk(tok):
    ids = tok.encode("vier ☃")
    assert UNK_ID in ids and tok.decode(ids) == "vier <unk>"


def test_training_is_deterministic(numbers, tok):
    again = SubwordTokenizer.train([s for p in numbers for s in p], vocab_size=400)
    assert again.to_str() == tok.to_str()


def test_lowercase_option(numbers):
    low = SubwordTokenizer.train(
        [s for p in numbers for s in p], vocab_size=300, lowercase=True
    )
    assert low.decode(low.encode("Eins")) == "eins"


def test_save_and_load(tok, numbers, tmp_path):
    path = tok.save(tmp_path / "sub" / "tok.json")
    back = SubwordTokenizer.load(path)
    texts = [s for p in numbers[:200] for s in p]
    assert back.encode_batch(texts) == tok.encode_batch(texts)
    assert back.vocab_size == tok.vocab_size


def test_tokenizer_errors(tok):
    with pytest.raises(TypeError, match="text"):
        tok.encode(3)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([5, 10_000])
    with pytest.raises(ValueError, match="vocab_size"):
        SubwordTokenizer.train(["a b"], vocab_size=2)


def test_import_without_optional_packages():
    code = (
        "import sys; sys.modules['tokenizers'] = None; sys.modules['num2words'] ="
        " None\nimport transformer_lib, transformer_lib.data as d\nassert"
        " 'SubwordTokenizer' in dir(d)\ntry:\n   "
        " d.SubwordTokenizer.train(['a'])\nexcept ImportError:\n    print('lazy')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and out.stdout.strip() == "lazy", out.stderr


# --- batching -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def encoded(tok, numbers):
    return list(
        zip(
            tok.encode_batch([de for de, _ in numbers]),
            tok.encode_batch([en for _, en in numbers]),
        )
    )


@pytest.mark.parametrize("budget", [64, 300, 1000])
@pytest.mark.parametrize("sort", [True, False])
def test_epoch_covers_every_example_once_within_budget(encoded, budget, sort):
    loader = TokenBatches(encoded, budget, seed=1, sort=sort)
    for epoch in range(2):
        loader.set_epoch(epoch)
        seen = []
        for b in loader:
            assert isinstance(b, Batch) and b.src.dtype == b.tgt.dtype == torch.long
            assert len(b) == 1 or b.src.numel() + b.tgt.numel() <= budget
            seen += b.indices.tolist()
        assert sorted(seen) == list(range(len(encoded)))


def test_oversize_example_gets_its_own_batch():
    pairs = [([5] * 50, [6] * 50), ([5], [6]), ([5, 5], [6])]
    batches = token_batches([len(s) for s, _ in pairs], [len(t) for _, t in pairs], 20)
    assert sorted(map(sorted, batches)) == [[0], [1, 2]]


def test_padding_and_specials(encoded):
    loader = TokenBatches(encoded, 300, seed=0)
    for b in loader:
        for row, i in enumerate(b.indices.tolist()):
            src, tgt = encoded[i]
            s, t = b.src[row].tolist(), b.tgt[row].tolist()
            assert s == src + [EOS_ID] + [PAD_ID] * (len(s) - len(src) - 1)
            assert t == [BOS_ID] + tgt + [EOS_ID] + [PAD_ID] * (len(t) - len(tgt) - 2)
        assert b.src.shape[1] == max(len(encoded[i][0]) + 1 for i in b.indices.tolist())
        assert torch.equal(b.tgt_in, b.tgt[:, :-1]) and torch.equal(
            b.tgt_out, b.tgt[:, 1:]
        )
        assert (
            b.src_mask.shape == (len(b), 1, 1, b.src.shape[1])
            and b.src_mask.dtype == torch.bool
        )
        assert torch.equal(b.src_mask[:, 0, 0], b.src != PAD_ID)
        assert b.n_tgt_tokens == sum(len(encoded[i][1]) + 1 for i in b.indices.tolist())
        assert b.n_src_tokens == sum(len(encoded[i][0]) + 1 for i in b.indices.tolist())


def test_sorted_batches_pad_less(encoded):
    S = [len(s) + 1 for s, _ in encoded]
    T = [len(t) + 2 for _, t in encoded]

    def waste(batches):
        padded = sum(
            len(b) * (max(S[j] for j in b) + max(T[j] for j in b)) for b in batches
        )
        return 1 - sum(S[j] + T[j] for b in batches for j in b) / padded

    assert waste(token_batches(S, T, 500)) < 0.5 * waste(
        token_batches(S, T, 500, sort=False)
    )


def test_deterministic_per_seed_and_epoch(encoded):
    def order(seed, epoch):
        loader = TokenBatches(encoded, 300, seed=seed)
        loader.set_epoch(epoch)
        return [b.indices.tolist() for b in loader]

    assert order(0, 0) == order(0, 0)
    assert order(0, 0) != order(0, 1)
    assert order(0, 0) != order(1, 0)
    unshuffled = TokenBatches(encoded, 300, shuffle=False)
    assert [b.indices.tolist() for b in unshuffled] == [
        b.indices.tolist() for b in unshuffled
    ]


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_sharding_partitions_the_data(encoded, world_size):
    full = TokenBatches(encoded, 300, seed=5).batch_indices()
    shards = [
        TokenBatches(
            encoded, 300, seed=5, rank=r, world_size=world_size, even=False
        ).batch_indices()
        for r in range(world_size)
    ]
    flat = [j for shard in shards for b in shard for j in b]
    assert sorted(flat) == list(range(len(encoded)))  # disjoint and complete
    assert sum(map(len, shards)) == len(full)
    even = [
        TokenBatches(encoded, 300, seed=5, rank=r, world_size=world_size)
        for r in range(world_size)
    ]
    lengths = {len(e) for e in even}
    assert len(lengths) == 1  # same number of steps
    # fewer than world_size repeats
    assert lengths.pop() * world_size - len(full) < world_size
    covered = {j for e in even for b in e.batch_indices() for j in b}
    assert covered == set(range(len(encoded)))


def test_reads_rank_from_torch_distributed(encoded, tmp_path):
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("torch.distributed not available")
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0, world_size=1
    )
    try:
        loader = TokenBatches(encoded, 300)
        assert (loader.rank, loader.world_size) == (0, 1)
    finally:
        dist.destroy_process_group()


def test_filter_by_length():
    pairs = [([1] * 3, [1] * 12), ([1] * 13, [1]), ([], [1]), ([1] * 12, [1] * 12)]
    assert filter_by_length(pairs, 12) == [0, 3]
    assert filter_by_length(pairs, 12, min_len=0) == [0, 2, 3]
    with pytest.raises(ValueError):
        filter_by_length(pairs, 0)


def test_batching_errors(encoded):
    with pytest.raises(ValueError, match="max_tokens"):
        token_batches([1], [1], 0)
    with pytest.raises(ValueError, match="differ"):
        token_batches([1, 2], [1], 10)
    with pytest.raises(ValueError, match="rank"):
        TokenBatches(encoded, 100, rank=2, world_size=2)
    with pytest.raises(ValueError, match="at least one"):
        TokenBatches([], 100)
    with pytest.raises(ValueError, match="at least one"):
        pad_sequences([])


def test_batch_to_device():
    b = Batch(torch.tensor([[4, 2]]), torch.tensor([[1, 5, 2]]), torch.tensor([0]))
    c = b.to("cpu")
    assert torch.equal(c.src, b.src) and c.pad_id == b.pad_id
