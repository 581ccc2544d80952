"""The book builds with warnings as errors, and a real headless browser renders its
pages.

Chromium: Debian's `chromium` package (`apt-get install chromium`). Without it the
browser test is skipped with that instruction, except under CI=true, where it fails.
"""

import contextlib
import functools
import http.server
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from html import unescape
from pathlib import Path

import pytest

from booktools import myst
from conftest import IN_CI, ROOT, TEST_REPOSITORY, publishing_env

BUILD = ROOT / "_build"
HTML = BUILD / "html"
VENDOR = ROOT / "book" / "_vendor" / "vendor"
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
# The editions and their folders under the site's root (_config.yml, language_editions)
EDITIONS = {"en": "", "zh_CN": "zh/"}
CJK = re.compile(r"[\u4e00-\u9fff]")
CHROME_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-quic",
    "--disable-sync",
    "--hide-scrollbars",
    "--virtual-time-budget=30000",
]


@pytest.fixture(scope="session")
def built_book():
    """Both editions, as `make book` builds them: English in _build/html, Chinese in
    _build/html/zh."""
    if not (VENDOR / "mathjax" / "es5" / "tex-chtml.js").exists():
        pytest.fail(
            "book/_vendor is missing: run `make vendor` (fetches MathJax and the widget"
            " embedder from the npm registry) or use `make test`"
        )
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_book.py"), "--all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        env=publishing_env(),
    )
    assert proc.returncode == 0, (
        "book build failed (warnings are errors):\n"
        + (proc.stdout + proc.stderr)[-6000:]
    )
    for language in EDITIONS:
        assert f"{language}: exit 0, 0 warnings" in proc.stdout, proc.stdout
    return HTML


@pytest.mark.book
@pytest.mark.parametrize("edition", EDITIONS.values(), ids=EDITIONS)
def test_every_chapter_and_page_is_built(built_book, edition):
    for nb in CHAPTERS:
        assert (built_book / edition / "chapters" / f"{nb.stem}.html").exists(), (
            f"{nb.name} not in the book"
        )
    for page in (
        "book/intro.html",
        "book/notation.html",
        "book/bibliography.html",
        "index.html",
    ):
        assert (built_book / edition / page).exists(), page


@pytest.mark.book
def test_no_script_from_a_cdn(built_book):
    """MathJax and the widget embedder are served by the book itself: it works
    offline."""
    for page in built_book.rglob("*.html"):
        srcs = re.findall(
            r'<script[^>]*\ssrc="([^"]+)"', page.read_text(encoding="utf-8")
        )
        remote = [s for s in srcs if s.startswith(("http:", "https:", "//"))]
        assert not remote, (
            f"{page.relative_to(built_book)} loads scripts from the internet: {remote}"
        )
    assert (built_book / "vendor" / "mathjax" / "es5" / "tex-chtml.js").exists()
    assert (built_book / "vendor" / "html-manager" / "dist" / "embed-amd.js").exists()


@pytest.mark.book
def test_no_page_declares_a_script_twice(built_book):
    """A classic script loaded twice re-declares its `const`s: a SyntaxError in the
    console."""
    for page in built_book.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        inline = re.findall(r"<script>(.*?)</script>", text, re.S)
        srcs = re.findall(r'<script[^>]*\ssrc="([^"]+)"', text)
        doubles = {s for s in inline + srcs if (inline + srcs).count(s) > 1}
        assert not doubles, (
            f"{page.relative_to(built_book)} loads a script twice: "
            f"{sorted(doubles)[:2]}"
        )


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="session")
def browser(built_book):
    exe = _chromium()
    if exe is None:
        msg = (
            "Chromium not found: install it with `sudo apt-get install chromium`"
            " (Debian/Ubuntu)"
        )
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # keep the test output readable
            pass

    handler = functools.partial(Quiet, directory=str(built_book))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def run(page: str, *extra: str) -> str:
        with tempfile.TemporaryDirectory() as profile:
            proc = subprocess.run(
                [
                    exe,
                    *CHROME_FLAGS,
                    f"--user-data-dir={profile}",
                    *extra,
                    f"{base}/{page}",
                ],
                capture_output=True,
                text=True,
                timeout=180,
            )
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    yield run
    server.shutdown()


def _image_outputs(nb: Path) -> int:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    return sum(
        "image/png" in o.get("data", {})
        for c in cells
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
    )


def _has_maths(nb: Path) -> bool:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    return any(
        myst.has_maths("".join(c["source"]))
        for c in cells
        if c["cell_type"] == "markdown"
    )


def _has_widgets(nb: Path) -> bool:
    meta = json.loads(nb.read_text(encoding="utf-8")).get("metadata", {})
    return bool(
        meta.get("widgets", {})
        .get("application/vnd.jupyter.widget-state+json", {})
        .get("state")
    )


@pytest.mark.browser
@pytest.mark.parametrize("edition", EDITIONS.values(), ids=EDITIONS)
@pytest.mark.parametrize("nb", CHAPTERS, ids=[nb.stem for nb in CHAPTERS])
def test_chapter_renders_in_browser(browser, nb, edition):
    dom = browser(f"{edition}chapters/{nb.stem}.html", "--dump-dom")
    if edition:  # the Chinese edition: the chapter's prose is Chinese, its title first
        article = re.sub(
            r"<(script|style|pre)\b.*?</\1>",
            "",
            dom.split("<article", 1)[-1],
            flags=re.S,
        )
        title = re.search(r"<h1>(.*?)<", article, flags=re.S)
        assert title and CJK.search(title.group(1)), (
            f"{nb.stem}: the title is not translated"
        )
        assert len(CJK.findall(article)) > 2000, (
            f"{nb.stem}: only {len(CJK.findall(article))} Chinese characters"
        )
    # Maths typeset by MathJax: every math element holds MathJax output, no raw TeX is
    # left.
    math = re.findall(
        r'class="math notranslate nohighlight">(.{0,40})', dom, flags=re.S
    )
    if _has_maths(nb):
        assert math, f"{nb.stem}: the notebook has maths, the page shows none"
    raw = [m for m in math if not m.lstrip().startswith("<mjx-container")]
    assert not raw, (
        f"{nb.stem}: {len(raw)} of {len(math)} formulas not typeset, e.g. {raw[:2]}"
    )
    assert "$$" not in re.sub(r"<(script|style)\b.*?</\1>", "", dom, flags=re.S)
    # Every figure the notebook stores is on the page.
    images = re.findall(r'<img[^>]+src="([^"]*_images/[^"]+\.png)"', dom)
    assert len(images) >= _image_outputs(nb), (
        f"{nb.stem}: {len(images)} figures shown, {_image_outputs(nb)} stored"
    )
    for src in images:
        assert (HTML / edition / "chapters" / src).resolve().exists(), src
    # every widget view's model is in the state the page loads when a reader
    if _has_widgets(nb):
        # comes near a widget (book/_static/widgets.js; tests/test_web.py scrolls to
        # them and sees them drawn)
        loader = re.search(
            r'<script[^>]*data-state="([^"]+)"[^>]*src="[^"]*widgets\.js', dom
        ) or re.search(
            r'<script[^>]*src="[^"]*widgets\.js[^"]*"[^>]*data-state="([^"]+)"', dom
        )
        assert loader, f"{nb.stem}: no widget loader"
        state = json.loads(
            (HTML / edition / "chapters" / unescape(loader.group(1))).read_text(
                encoding="utf-8"
            )
        )["state"]
        views = [
            json.loads(unescape(v))["model_id"]
            for v in re.findall(
                r"<script"
                r' type="application/vnd.jupyter.widget-view\+json"'
                r"[^>]*>(.*?)</script>",
                dom,
                flags=re.S,
            )
        ]
        assert views and all(v in state for v in views), (
            f"{nb.stem}: widget views without their state"
        )


@pytest.mark.browser
def test_screenshot_of_chapter_1(browser):
    """A full-length screenshot for people to look at: typeset maths, tables and the
    heatmap."""
    shot = BUILD / "screenshots" / "01_qkv_attention.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    shot.unlink(missing_ok=True)
    browser(
        "chapters/01_qkv_attention.html",
        f"--screenshot={shot}",
        "--window-size=1280,13000",
    )
    assert shot.exists() and shot.stat().st_size > 200_000, (
        "screenshot missing or blank"
    )


def _repository() -> tuple[str, str]:
    """The repository the suite's build was given (conftest.publishing_env), and the
    source branch."""
    import yaml

    repo = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))[
        "repository"
    ]
    return f"https://github.com/{TEST_REPOSITORY}", repo.get("branch", "main")


def _buttons(html: str, stem: str) -> list[str]:
    """What is missing among a chapter page's launch, download and repository
    buttons."""
    url, branch = _repository()
    import yaml

    # Colab and Binder open the chapter's runner edition, on the branch the publishing
    # workflow writes
    editions = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))[
        "sphinx"
    ]["config"]["launch_editions_branch"]
    slug = url.removeprefix("https://github.com/")
    hrefs = set(re.findall(r'href="([^"]+)"', html))
    wanted = {
        "Colab": (
            f"https://colab.research.google.com/github/{slug}/blob/{editions}/chapters/{stem}.ipynb"
        ),
        "Binder": (
            f"https://mybinder.org/v2/gh/{slug}/{editions}?urlpath=lab/tree/chapters/{stem}.ipynb"
        ),
        "download .ipynb": f"../_sources/chapters/{stem}.ipynb",
        "repository": url,
        "edit": f"{url}/edit/{branch}/chapters/{stem}.ipynb",
    }
    missing = [name for name, href in wanted.items() if href not in hrefs]
    if not any(h.startswith(f"{url}/issues/new") for h in hrefs):
        missing.append("issues")
    return missing


@pytest.mark.book
@pytest.mark.parametrize("nb", CHAPTERS, ids=[nb.stem for nb in CHAPTERS])
def test_chapter_pages_have_launch_download_and_repository_buttons(built_book, nb):
    page = built_book / "chapters" / f"{nb.stem}.html"
    assert not _buttons(page.read_text(encoding="utf-8"), nb.stem), (
        f"{nb.stem}: missing {_buttons(page.read_text(encoding='utf-8'), nb.stem)}"
    )
    assert (built_book / "_sources" / "chapters" / f"{nb.name}").exists(), (
        "the .ipynb to download"
    )


@pytest.mark.browser
def test_buttons_are_in_the_rendered_page(browser):
    """In the page as Chromium renders it (after the theme's scripts ran), the buttons
    are there."""
    dom = browser("chapters/02_scaling.html", "--dump-dom")
    assert not _buttons(dom, "02_scaling"), _buttons(dom, "02_scaling")
    assert "btn-launch-colab" in dom or "colab" in dom.lower()


# ---- figures: every chapter's diagrams load and are not blank; screenshots to look at
# The diagrams the book promises (issue 12), by the MyST name of their figure on each
# page.
DIAGRAMS = {
    "01_qkv_attention": ["fig-query-path", "fig-attention-block"],
    "03_multi_head": ["fig-multi-head"],
    "04_positional_encoding": ["fig-positional-sum"],
    "04b_relative_positions": ["fig-rope"],
    "05_masking": ["fig-mask-grids"],
    "06_encoder": ["fig-encoder-layer-ln", "fig-norm-axes"],
    "07_decoder_cross_attention": [
        "fig-three-ways",
        "fig-whole-model",
        "fig-decoder-inputs",
    ],
    "10_decoding": ["fig-kv-cache", "fig-beam-tree"],
    "11a_data": ["fig-training-pipeline"],
}

# A same-origin page that opens a book page in an iframe and reports, for every figure
# image, whether it loaded and how much of it is not white (drawn onto a canvas), and
# for every inline SVG (the introduction's map) its size and whether each of its links
# answers.
FIGCHECK = r"""<!doctype html><html><body><pre id="figcheck">pending</pre><iframe id="f"
style="width:1280px;height:3000px"></iframe><script>
const out = {images: [], figures: [], inline: []};
const frame = document.getElementById('f');
frame.onload = async () => {
  const doc = frame.contentDocument;
  out.figures = Array.from(doc.querySelectorAll('figure[id]')).map(f => f.id);
  out.height = doc.documentElement.scrollHeight;
  const imgs = Array.from(doc.querySelectorAll('img'))
    .filter(i => /_images\//.test(i.getAttribute('src') || ''));
  // the book loads a figure when it nears the screen
  imgs.forEach(img => { img.loading = 'eager'; });
  await Promise.all(imgs.map(img => img.complete ? null : new Promise(r => {
    img.onload = r; img.onerror = r;
  })));
  for (const img of imgs) {
    const rec = {src: img.getAttribute('src'), alt: img.getAttribute('alt') || '',
                 w: img.naturalWidth, h: img.naturalHeight,
                 figure: (img.closest('figure[id]') || {}).id || null,
                 ink: 0, colours: 0};
    if (img.naturalWidth > 0) {
      const c = document.createElement('canvas');
      c.width = Math.min(img.naturalWidth, 2400);
      c.height = Math.min(img.naturalHeight, 2400);
      const g = c.getContext('2d');
      g.fillStyle = '#fff'; g.fillRect(0, 0, c.width, c.height);
      g.drawImage(img, 0, 0, c.width, c.height);
      const d = g.getImageData(0, 0, c.width, c.height).data, seen = new Set();
      let ink = 0, n = 0;
      for (let i = 0; i < d.length; i += 4 * 3) {
        n++; if (d[i] < 235 || d[i + 1] < 235 || d[i + 2] < 235) ink++;
        seen.add((d[i] >> 4) << 8 | (d[i + 1] >> 4) << 4 | (d[i + 2] >> 4));
      }
      rec.ink = ink / n; rec.colours = seen.size;
    }
    out.images.push(rec);
  }
  for (const svg of doc.querySelectorAll('article svg[aria-labelledby]')) {
    const box = svg.getBoundingClientRect();
    const links = Array.from(svg.querySelectorAll('a'))
      .map(a => new URL(a.getAttribute('href'), doc.baseURI).href);
    const status = await Promise.all([...new Set(links)].map(u =>
      fetch(u, {method: 'HEAD'}).then(r => [u, r.status], () => [u, 0])));
    out.inline.push({w: box.width, h: box.height,
                     texts: svg.querySelectorAll('text').length,
                     links: links.length, status: Object.fromEntries(status)});
  }
  document.getElementById('figcheck').textContent = JSON.stringify(out);
};
frame.src = new URLSearchParams(location.search).get('page');
</script></body></html>"""


@pytest.fixture(scope="session")
def figcheck(browser, built_book):
    """`figcheck(page)` -> what the page's figures look like in Chromium (see
    FIGCHECK)."""
    # in the build output only, removed afterwards
    probe = built_book / "_figcheck.html"
    probe.write_text(FIGCHECK, encoding="utf-8")

    def check(page: str) -> dict:
        dom = browser(f"_figcheck.html?page={page}", "--dump-dom")
        found = re.search(r'<pre id="figcheck">(.*?)</pre>', dom, flags=re.S)
        assert found and found.group(1) != "pending", (
            f"{page}: the figure check did not finish"
        )
        return json.loads(unescape(found.group(1)))

    yield check
    probe.unlink(missing_ok=True)


def _not_blank(img: dict) -> bool:
    return img["w"] > 0 and img["h"] > 0 and img["ink"] > 0.01 and img["colours"] >= 3


@pytest.mark.browser
@pytest.mark.parametrize("nb", CHAPTERS, ids=[nb.stem for nb in CHAPTERS])
def test_chapter_figures_load_and_are_not_blank(figcheck, nb):
    report = figcheck(f"chapters/{nb.stem}.html")
    images = report["images"]
    assert len(images) >= _image_outputs(nb), (
        f"{nb.stem}: {len(images)} images, {_image_outputs(nb)} stored"
    )
    blank = [i["src"] for i in images if not _not_blank(i)]
    assert not blank, f"{nb.stem}: images that did not load or are blank: {blank}"
    # each promised diagram: there, loaded, with alt text
    for name in DIAGRAMS.get(nb.stem, []):
        assert name in report["figures"], f"{nb.stem}: figure {name} missing"
        drawn = [i for i in images if i["figure"] == name]
        assert drawn and all(_not_blank(i) and len(i["alt"]) > 80 for i in drawn), (
            f"{nb.stem}: {name}"
        )
        assert all(i["src"].endswith(".svg") for i in drawn), (
            f"{nb.stem}: {name} is not SVG"
        )


@pytest.mark.browser
def test_intro_map_is_drawn_and_its_links_work(figcheck):
    report = figcheck("book/intro.html")
    (svg,) = report["inline"]
    assert svg["w"] > 300 and svg["h"] > 150 and svg["texts"] > 20, svg
    assert svg["links"] >= len(set(diagrams_pages())), svg
    broken = {u: s for u, s in svg["status"].items() if s != 200}
    assert not broken, f"links of the introduction's map that do not answer: {broken}"
    chapters = {u.rsplit("/", 1)[-1] for u in svg["status"]}
    assert {f"{p}.html" for p in diagrams_pages()} <= chapters


def diagrams_pages() -> list[str]:
    from booktools import diagrams

    return list(diagrams.CHAPTER_PAGES.values())


SCREENSHOTS = {
    "intro": "book/intro.html",
    "03_multi_head": "chapters/03_multi_head.html",
    "07_decoder_cross_attention": "chapters/07_decoder_cross_attention.html",
}


@pytest.mark.browser
@pytest.mark.parametrize("name", SCREENSHOTS)
def test_screenshots_to_look_at(browser, figcheck, name):
    """Full-length screenshots for people to look at (not committed):
    _build/screenshots/."""
    from PIL import Image, ImageStat

    page = SCREENSHOTS[name]
    # the whole page, as laid out at 1280 px
    height = min(figcheck(page)["height"] + 40, 30000)
    shot = BUILD / "screenshots" / f"{name}.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    shot.unlink(missing_ok=True)
    browser(page, f"--screenshot={shot}", f"--window-size=1280,{height}")
    assert shot.exists(), shot
    with Image.open(shot) as im:
        # the text column
        band = im.convert("L").crop((300, 0, 1000, min(im.height, 4000)))
        assert ImageStat.Stat(band).stddev[0] > 20, (
            f"{name}: the screenshot looks blank"
        )


# ---- folded code: exported and drawing cells are closed until the reader opens them
def _folded_cells(nb: Path) -> int:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    return sum(
        c["cell_type"] == "code" and "hide-input" in c["metadata"].get("tags", [])
        for c in cells
    )


@pytest.mark.book
@pytest.mark.parametrize("nb", CHAPTERS, ids=[nb.stem for nb in CHAPTERS])
def test_folded_cells_are_closed_toggles_in_the_page(built_book, nb):
    """Every `hide-input` cell of the notebook is a closed <details> on its page
    (MyST-NB's toggle)."""
    html = (built_book / "chapters" / f"{nb.stem}.html").read_text(encoding="utf-8")
    toggles = re.findall(
        r'<div class="cell tag_hide-input[^"]*"[^>]*>\s*<details class="[^"]*\bhide'
        r' above-input[^"]*"( open)?',
        html,
    )
    assert len(toggles) == _folded_cells(nb), (
        f"{nb.stem}: {len(toggles)} toggles, {_folded_cells(nb)} folded cells"
    )
    assert not any(toggles), f"{nb.stem}: a folded cell is rendered open"


@contextlib.contextmanager
def _playwright_page(site: Path):
    """(a Playwright page in headless Chromium, the base URL of `site` served on
    loopback)."""
    from conftest import chromium_path, skip_or_fail

    if chromium_path() is None:
        skip_or_fail(
            "Chromium not found: install it with `sudo apt-get install chromium`"
            " (Debian/Ubuntu)"
        )
    from playwright.sync_api import sync_playwright

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(site))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=chromium_path(),
                headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
            )
            yield (
                browser.new_page(viewport={"width": 1200, "height": 900}),
                f"http://127.0.0.1:{server.server_address[1]}",
            )
            browser.close()
    finally:
        server.shutdown()


@pytest.mark.browser
def test_folded_code_is_hidden_until_clicked(built_book):
    """In Chromium: chapter 1's first solution and chapter 7's folded decoder layer are
    invisible; one click shows them (and a second click folds the layer again)."""
    with _playwright_page(built_book) as (page, base):
        # An exercise's solution (a sphinx-design dropdown) too: closed until its title
        # is clicked.
        page.goto(f"{base}/chapters/01_qkv_attention.html")
        solution = page.locator(
            "details.sd-dropdown", has_text="Solution — exercise 1"
        ).first
        body = solution.locator(".sd-summary-content")
        assert solution.count() == 1 and not body.is_visible(), (
            "exercise 1's solution is not folded"
        )
        solution.locator("summary").click()
        body.wait_for(state="visible", timeout=10_000)
        page.goto(f"{base}/chapters/07_decoder_cross_attention.html")
        cell = page.locator(
            "div.cell.tag_hide-input", has_text="class DecoderLayer"
        ).first
        code = cell.locator("div.cell_input")
        assert cell.count() == 1 and not code.is_visible(), (
            "the exported DecoderLayer is not folded"
        )
        cell.locator("summary").click()
        code.wait_for(state="visible", timeout=10_000)
        assert "class DecoderLayer" in code.inner_text()
        cell.locator("summary").click()
        code.wait_for(state="hidden", timeout=10_000)


# ---- the Chinese edition: one click from every page to the same page in the other
# language
def _pages(edition: str) -> list[str]:
    """The pages of an edition with a place in the book (not the search, index or
    redirect pages)."""
    root = HTML / edition
    return [
        p.relative_to(root).as_posix()
        for p in [*root.glob("chapters/*.html"), *root.glob("book/*.html")]
    ]


def _switch(html: str) -> str | None:
    """The URL the page's language button opens (None: no button)."""
    found = re.search(
        r"onclick=\"window\.location\.href='([^']+)'\+window\.location\.hash\"\s+class=\"[^\"]*btn-language-switch",
        html,
    )
    return found.group(1) if found else None


@pytest.mark.book
@pytest.mark.parametrize("here, there", [("en", "zh_CN"), ("zh_CN", "en")])
def test_every_page_links_to_itself_in_the_other_edition(built_book, here, there):
    pages = _pages(EDITIONS[here])
    assert len(pages) == len(CHAPTERS) + 4, pages
    for page in pages:
        html = (built_book / EDITIONS[here] / page).read_text(encoding="utf-8")
        url = _switch(html)
        assert url, f"{EDITIONS[here]}{page}: no language switch"
        target = (built_book / EDITIONS[here] / page).parent / url
        assert target.resolve() == (built_book / EDITIONS[there] / page).resolve(), (
            f"{page}: {url}"
        )
        assert f'hreflang="{"zh-CN" if there == "zh_CN" else "en"}"' in html


def _glued(html: str) -> list[str]:
    return sorted(
        unescape(t)
        for t in re.findall(r'<span class="pasted-text">(.*?)</span>', html, flags=re.S)
    )


def _maths(html: str) -> set[str]:
    """The page's inline formulas, whitespace runs read as one space (a source line
    break may fall inside a formula in one language and not in the other)."""
    spans = re.findall(
        r'<span class="math notranslate nohighlight">(.*?)</span>', html, flags=re.S
    )
    return {" ".join(unescape(m).split()) for m in spans}


@pytest.mark.book
@pytest.mark.parametrize("nb", CHAPTERS, ids=[nb.stem for nb in CHAPTERS])
def test_both_editions_show_the_same_glued_values_maths_and_outputs(built_book, nb):
    """The translation changes words only: every glued value (a glued text of words in
    its translation), formula, figure and output of the English page is on the Chinese
    one (a paper's quotation adds its English original there)."""
    from booktools.ext.translated_glue import glued_translations

    # glued values that are words, in Chinese
    words = glued_translations(str(ROOT), "zh_CN")
    en = (built_book / "chapters" / f"{nb.stem}.html").read_text(encoding="utf-8")
    zh = (built_book / "zh" / "chapters" / f"{nb.stem}.html").read_text(
        encoding="utf-8"
    )
    # the English page shows a glued text with Sphinx's smart quotes (’ “ ”); the
    # catalogue holds it as glued
    straight = str.maketrans(
        {"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'}
    )
    assert _glued(zh) == sorted(
        words.get(v.translate(straight), words.get(v, v)) for v in _glued(en)
    ), f"{nb.stem}: glued values differ"
    assert _maths(en) <= _maths(zh), (
        f"{nb.stem}: formulas missing in Chinese: {sorted(_maths(en) - _maths(zh))[:3]}"
    )
    outputs = lambda h: re.findall(
        r'<div class="output[^"]*">\s*<pre>(.*?)</pre>', h, flags=re.S
    )
    assert outputs(zh) == outputs(en), f"{nb.stem}: cell outputs differ"
    images = lambda h: re.findall(r'<img[^>]+src="([^"]*_images/[^"]+)"', h)
    assert images(zh) == images(en), f"{nb.stem}: figures differ"


@pytest.mark.browser
def test_the_language_switch_in_the_browser(built_book):
    """In Chromium: the button on a Chinese page opens the same page, at the same
    section, in English; the English page's button leads back."""
    with _playwright_page(built_book) as (page, base):
        page.goto(f"{base}/zh/chapters/05_masking.html")
        section = page.locator("article section[id]").nth(1).get_attribute("id")
        page.goto(f"{base}/zh/chapters/05_masking.html#{section}")
        assert page.evaluate("document.documentElement.lang") == "zh-CN"
        button = page.locator(".btn-language-switch")
        assert button.inner_text().strip() == "English"
        button.click()
        page.wait_for_url(f"{base}/chapters/05_masking.html#{section}", timeout=10_000)
        assert page.evaluate("document.documentElement.lang") == "en"
        assert page.locator(".btn-language-switch").inner_text().strip() == "中文"
        page.locator(".btn-language-switch").click()
        page.wait_for_url(
            f"{base}/zh/chapters/05_masking.html#{section}", timeout=10_000
        )


ZH_SCREENSHOTS = {
    "zh_intro": "zh/book/intro.html",
    "zh_01_qkv_attention": "zh/chapters/01_qkv_attention.html",
    "zh_11b_training": "zh/chapters/11b_training.html",
}


@pytest.mark.browser
@pytest.mark.parametrize("name", ZH_SCREENSHOTS)
def test_screenshots_of_the_chinese_edition(browser, figcheck, name):
    """Full-length screenshots of three Chinese pages for people to look at:
    _build/screenshots/. Without a CJK font Chromium draws boxes; `.ci/run` installs one
    (fonts-noto-cjk)."""
    from PIL import Image, ImageStat

    fonts = (
        subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True)
        if shutil.which("fc-list")
        else None
    )
    if fonts is None or not fonts.stdout.strip():
        msg = (
            "no CJK font: install one (`sudo apt-get install fonts-noto-cjk`) to"
            " screenshot the Chinese edition"
        )
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    page = ZH_SCREENSHOTS[name]
    height = min(figcheck(page)["height"] + 40, 30000)
    shot = BUILD / "screenshots" / f"{name}.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    shot.unlink(missing_ok=True)
    browser(page, f"--screenshot={shot}", f"--window-size=1280,{height}")
    with Image.open(shot) as im:
        band = im.convert("L").crop((300, 0, 1000, min(im.height, 4000)))
        assert ImageStat.Stat(band).stddev[0] > 20, (
            f"{name}: the screenshot looks blank"
        )


@pytest.mark.book
def test_the_chinese_sidebar_names_its_parts_in_chinese(built_book):
    """The table of contents' part captions come from `_toc.yml` after Sphinx translated
    the page (book/booktools/ext/translated_toc.py translates them): every one is
    Chinese on every Chinese page."""
    for page in ("book/intro.html", "chapters/11b_training.html"):
        html = (built_book / "zh" / page).read_text(encoding="utf-8")
        captions = re.findall(
            r'<p aria-level="2" class="caption" role="heading"><span'
            r' class="caption-text">([^<]+)',
            html,
        )
        assert len(captions) >= 8, captions
        assert all(CJK.search(c) for c in captions), (
            f"{page}: captions in English: {captions}"
        )


@pytest.mark.browser
def test_the_chinese_search_finds_chinese_terms(built_book):
    """The Chinese edition's search cuts Chinese into words (jieba, with the glossary's
    terms as its dictionary, scripts/build_book.py): a glossary term finds the chapter
    that builds it."""
    with _playwright_page(built_book) as (page, base):
        for query, chapter in (
            ("束搜索", "10_decoding"),
            ("多头注意力", "03_multi_head"),
            ("掩码", "05_masking"),
        ):
            page.goto(f"{base}/zh/search.html?q={query}")
            page.wait_for_function(
                f"""Array.from(document.querySelectorAll('#search-results li a'))
                .some(a => a.getAttribute('href').includes('{chapter}'))""",
                timeout=30_000,
            )
