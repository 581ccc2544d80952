"""Chapter 12b's translator in a real browser: the page's own UI, checked against Python.

The built book (`_build/html`, from `make book`, or from tests/test_book.py earlier in the same
`make test`; built here if missing or older than its sources) is served on 127.0.0.1. Headless
Chromium (Debian's `chromium`, driven by Playwright through `executable_path`) opens chapter
12b, waits for the model to load in onnxruntime-web, then types the first 50 sentences of the
Multi30k test set into the text box one at a time, presses Translate and reads the token ids
the page wrote (`data-ids`). They must equal, token for token, the greedy translations of
`transformer_lib.export.OnnxTranslator` in Python onnxruntime on the same committed files
(which chapter 12b checks equal to PyTorch on a rounded twin of the model). Also checked: beam
search against `OnnxTranslator.beam`, the messages for an empty box, an unknown character
and an over-long text, pasted text (newlines, tabs, decomposed umlauts, »quotes«) read as the
clean caption, the JavaScript tokenizer against the Python one on the test and
validation sets, and that the page requests nothing from another host. The median time
per sentence in the browser is printed and written to `_build/browser_translate.json`, with a
screenshot in `_build/screenshots/12b_translator.png`.

Without Chromium the test is skipped with that instruction, except under CI=true, where it fails.
"""
from __future__ import annotations

import functools
import http.server
import json
import shutil
import statistics
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import IN_CI, ROOT, chromium_path, skip_or_fail

pytestmark = [pytest.mark.browser, pytest.mark.timeout(1500)]

HTML = ROOT / "_build" / "html"
PAGE = "chapters/12b_in_the_browser.html"
MODEL = ROOT / "book" / "_static" / "translator" / "model"
VENDOR = ROOT / "book" / "_vendor" / "translator-vendor"
N_SENTENCES = 50
SOURCES = [ROOT / "chapters" / "12b_in_the_browser.ipynb", *sorted((ROOT / "book" / "_static" / "translator").rglob("*"))]


@pytest.fixture(scope="module")
def site() -> Path:
    """`_build/html` with an up-to-date chapter 12b, built here if it is missing or stale."""
    if not (VENDOR / "ort" / "ort-wasm-simd-threaded.wasm").exists():
        pytest.fail("book/_vendor/translator-vendor is missing: run `make vendor` (fetches onnxruntime-web "
                    "and @huggingface/tokenizers from the npm registry) or use `make test`")
    page = HTML / PAGE
    static = ROOT / "book" / "_static"
    assets = [p for p in SOURCES[1:] if p.is_file()]

    def stale_assets() -> list[Path]:
        built = [HTML / "_static" / p.relative_to(static) for p in assets]
        return [p for p, b in zip(assets, built) if not b.exists() or b.read_bytes() != p.read_bytes()]

    newest = max(p.stat().st_mtime for p in SOURCES if p.is_file())
    if not page.exists() or page.stat().st_mtime < newest or stale_assets():
        # `--all`: Sphinx copies static files only when it writes pages; a changed .js alone
        # leaves an incremental build with "no targets are out of date"
        jb = Path(sys.executable).with_name("jupyter-book")
        proc = subprocess.run([str(jb), "build", str(ROOT), "-W", "-n", "--keep-going", "--all"], cwd=ROOT,
                              capture_output=True, text=True, timeout=1200)
        assert proc.returncode == 0, "book build failed:\n" + "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
    assert not stale_assets(), f"_build/html has other copies of {stale_assets()}: rebuild the book"
    return HTML


@pytest.fixture(scope="module")
def server(site):
    class Handler(http.server.SimpleHTTPRequestHandler):
        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                          ".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm"}

        def log_message(self, *args):  # keep the test output readable
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def page(server):
    """The chapter page in headless Chromium, model loaded; `page.requests` lists every URL asked for."""
    if chromium_path() is None:
        skip_or_fail("Chromium not found: install it with `sudo apt-get install chromium` (Debian/Ubuntu)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        pg = browser.new_page(viewport={"width": 1100, "height": 900})
        requests: list[str] = []
        errors: list[str] = []
        pg.on("request", lambda r: requests.append(r.url))
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(f"{server}/{PAGE}", wait_until="load")
        pg.wait_for_function("['ready', 'error'].includes(document.getElementById('translator').dataset.state)",
                             timeout=180_000)
        state = pg.eval_on_selector("#translator", "e => e.dataset.state")
        assert state == "ready", f"the model did not load: {pg.inner_text('#tr-status')} {errors}"
        pg.requests, pg.errors = requests, errors
        yield pg
        browser.close()


def _translate(pg, text: str, method: str = "greedy") -> dict:
    """Type `text`, choose `method`, press Translate; the page's answer once it is written."""
    seq = pg.eval_on_selector("#tr-output", "e => Number(e.dataset.seq || 0)")
    pg.select_option("#tr-method", method)
    pg.fill("#tr-input", text)
    pg.click("#tr-go")
    pg.wait_for_function(f"Number(document.getElementById('tr-output').dataset.seq || 0) > {seq}", timeout=120_000)
    return pg.evaluate("""() => { const o = document.getElementById('tr-output');
        return {ids: o.dataset.ids ? JSON.parse(o.dataset.ids) : null, ms: Number(o.dataset.ms),
                text: o.textContent, status: document.getElementById('tr-status').textContent,
                state: document.getElementById('translator').dataset.state}; }""")


@pytest.fixture(scope="module")
def reference():
    from transformer_lib.data import SubwordTokenizer, load_multi30k
    from transformer_lib.export import OnnxTranslator
    meta = json.loads((MODEL / "model.json").read_text(encoding="utf-8"))
    tok = SubwordTokenizer.load(MODEL / "tokenizer.json")
    return meta, tok, OnnxTranslator(MODEL), load_multi30k("test_2016_flickr", "de", "en")


def _max_len(meta: dict, ids: list[int]) -> int:
    return min(meta["config"]["max_len"], len(ids) + meta["decoding"]["extra_len"])


def test_first_50_test_sentences_token_identical_to_python(page, reference):
    meta, tok, onnx, pairs = reference
    times, mismatches = [], []
    for i, (de, _) in enumerate(pairs[:N_SENTENCES]):
        got = _translate(page, de)
        assert got["state"] == "done", f"sentence {i}: {got['status']}"
        ids = tok.encode(de, eos=True)
        want = onnx.greedy(ids, _max_len(meta, ids), tok.bos_id, tok.eos_id).ids
        if got["ids"] != want:
            mismatches.append((i, de, got["ids"], want))
        assert got["text"] == tok.decode(want[1:]), f"sentence {i}: the page shows {got['text']!r}"
        times.append(got["ms"])
    assert not mismatches, f"{len(mismatches)} of {N_SENTENCES} differ, e.g. {mismatches[:2]}"
    median = statistics.median(times)
    report = {"sentences": N_SENTENCES, "identical": N_SENTENCES - len(mismatches),
              "median_ms_per_sentence": round(median, 1), "max_ms": round(max(times), 1),
              "browser": page.context.browser.version}
    (ROOT / "_build").mkdir(exist_ok=True)
    (ROOT / "_build" / "browser_translate.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nbrowser: {N_SENTENCES}/{N_SENTENCES} token-identical; median {median:.1f} ms per sentence "
          f"(greedy, Chromium {report['browser']})")


def test_beam_search_matches_python(page, reference):
    meta, tok, onnx, pairs = reference
    d = meta["decoding"]
    for de, _ in pairs[:3]:
        got = _translate(page, de, "beam")
        ids = tok.encode(de, eos=True)
        want = onnx.beam(ids, _max_len(meta, ids), tok.bos_id, tok.eos_id, beam_size=d["beam_size"],
                         length_penalty=d["length_penalty"])
        assert got["ids"] == want, f"beam search: page {got['ids']} vs Python {want} for {de!r}"
        assert "beam search" in got["status"]


def test_clear_messages_for_bad_input(page, reference):
    meta = reference[0]
    empty = _translate(page, "   ")
    assert empty["state"] == "refused" and "Type a German sentence" in empty["status"]
    odd = _translate(page, "Ein Hund 😀 läuft.")
    assert odd["state"] == "refused" and "“😀”" in odd["status"] and "never seen" in odd["status"]
    long = _translate(page, " ".join(["Ein Hund läuft über eine Wiese."] * 30))
    assert long["state"] == "refused" and f"at most {meta['config']['max_len']}" in long["status"]
    ok = _translate(page, meta["examples"][0])                     # and the page still works after them
    assert ok["state"] == "done" and ok["text"]


def test_pasted_text_is_read_as_the_captions_are_written(page, reference):
    """Newlines, tabs, runs of spaces, decomposed umlauts and typographic variants are normalised
    (NFC, one space, the captions' dashes and quotes) and translate exactly as the clean text does."""
    clean = _translate(page, "Ein Mann – mit einer „Mütze“ – geht über die Straße.")
    assert clean["state"] == "done" and "Read as" not in clean["status"]
    messy = _translate(page, "  Ein\nMann \u2014 mit einer \u00bbMu\u0308tze\u00ab\u00a0\u2014\tgeht  über die Straße.\n")
    assert messy["state"] == "done", messy["status"]
    assert messy["ids"] == clean["ids"], "the normalised text must translate exactly as the clean one"
    assert "Read as: “Ein Mann – mit einer „Mütze“ – geht über die Straße.”" in messy["status"]
    still = _translate(page, "Ein Hund\n😀 läuft.")                  # what is truly unknown is still named
    assert still["state"] == "refused" and "“😀”" in still["status"]


def test_map_drawn_and_screenshot(page, reference):
    meta, tok, _, _ = reference
    got = _translate(page, meta["examples"][0])
    n_out, n_src = len(got["ids"]) - 1, len(tok.encode(meta["examples"][0], eos=True))
    cells = page.eval_on_selector("#tr-attention svg", "s => s.querySelectorAll('rect > title').length")
    assert cells == n_out * n_src, f"the map has {cells} cells, expected {n_out} x {n_src}"
    page.select_option("#tr-map-choice", "0:1")                     # layer 1, head 2: redrawn
    assert "head 2" in page.text_content("#tr-attention svg > text.tr-map-title")
    page.select_option("#tr-map-choice", index=0)
    shot = ROOT / "_build" / "screenshots" / "12b_translator.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.locator("#translator").screenshot(path=str(shot))
    assert shot.stat().st_size > 20_000


def test_javascript_tokenizer_agrees_with_python(page, server, reference):
    """@huggingface/tokenizers in the page and `tokenizers` in Python: the same ids for every
    sentence of the test and validation sets, both languages, and the same text back."""
    from transformer_lib.data import load_multi30k
    tok = reference[1]
    texts = [s for split in ("test_2016_flickr", "val") for pair in load_multi30k(split, "de", "en") for s in pair]
    want = tok.encode_batch(texts)
    got = page.evaluate("""async ([lib, json, texts, ids]) => {
        const { Tokenizer } = await import(lib);
        const t = new Tokenizer(await (await fetch(json)).json(), {});
        const opts = { skip_special_tokens: false, clean_up_tokenization_spaces: false };
        return { ids: texts.map((s) => t.encode(s, { add_special_tokens: false }).ids),
                 text: ids.map((i) => (i.length ? t.decode(i, opts) : "")) }; }""",
        [f"{server}/translator-vendor/tokenizers/tokenizers.min.mjs",
         f"{server}/_static/translator/model/tokenizer.json", texts, want])
    bad = [i for i, (a, b) in enumerate(zip(got["ids"], want)) if a != b]
    assert not bad, f"{len(bad)} of {len(texts)} sentences tokenized differently, e.g. {texts[bad[0]]!r}"
    back = [tok.decode(ids) for ids in want]
    bad = [i for i, (a, b) in enumerate(zip(got["text"], back)) if a != b]
    assert not bad, f"{len(bad)} of {len(texts)} decoded differently, e.g. {got['text'][bad[0]]!r} vs {back[bad[0]]!r}"


def test_nothing_loaded_from_another_host(page, server):
    foreign = [u for u in page.requests if not u.startswith((server, "data:", "blob:"))]
    assert not foreign, f"the page asked other hosts for {foreign[:5]}"
    ours = [e for e in page.errors if "THEBE_JS_URL" not in e]   # (a sphinx-book-theme script, not ours)
    assert not ours, ours
