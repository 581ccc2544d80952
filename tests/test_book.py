"""The book builds with warnings as errors, and a real headless browser renders its pages.

Chromium: Debian's `chromium` package (`apt-get install chromium`). Without it the browser
test is skipped with that instruction, except under CI=true, where it fails.
"""
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from conftest import IN_CI, ROOT

BUILD = ROOT / "_build"
HTML = BUILD / "html"
VENDOR = ROOT / "book" / "_vendor" / "vendor"
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--no-first-run", "--disable-quic", "--disable-sync",
                "--hide-scrollbars", "--virtual-time-budget=30000"]


@pytest.fixture(scope="session")
def built_book():
    if not (VENDOR / "mathjax" / "es5" / "tex-chtml.js").exists():
        pytest.fail("book/_vendor is missing: run `make vendor` (fetches MathJax and the widget "
                    "embedder from the npm registry) or use `make test`")
    jb = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run([str(jb), "build", str(ROOT), "-W", "-n", "--keep-going", "--all"],
                          cwd=ROOT, capture_output=True, text=True, timeout=1200)
    log = proc.stdout + proc.stderr
    warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    assert proc.returncode == 0 and not warnings, "book build failed:\n" + "\n".join(warnings or log.splitlines()[-40:])
    return HTML


@pytest.mark.book
def test_every_chapter_and_page_is_built(built_book):
    for nb in CHAPTERS:
        assert (built_book / "chapters" / f"{nb.stem}.html").exists(), f"{nb.name} not in the book"
    for page in ("book/intro.html", "book/notation.html", "book/bibliography.html", "index.html"):
        assert (built_book / page).exists(), page


@pytest.mark.book
def test_no_script_from_a_cdn(built_book):
    """MathJax and the widget embedder are served by the book itself: it works offline."""
    for page in built_book.rglob("*.html"):
        srcs = re.findall(r'<script[^>]*\ssrc="([^"]+)"', page.read_text(encoding="utf-8"))
        remote = [s for s in srcs if s.startswith(("http:", "https:", "//"))]
        assert not remote, f"{page.relative_to(built_book)} loads scripts from the internet: {remote}"
    assert (built_book / "vendor" / "mathjax" / "es5" / "tex-chtml.js").exists()
    assert (built_book / "vendor" / "html-manager" / "dist" / "embed-amd.js").exists()


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="session")
def browser(built_book):
    exe = _chromium()
    if exe is None:
        msg = "Chromium not found: install it with `sudo apt-get install chromium` (Debian/Ubuntu)"
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
            proc = subprocess.run([exe, *CHROME_FLAGS, f"--user-data-dir={profile}", *extra, f"{base}/{page}"],
                                  capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    yield run
    server.shutdown()


def _image_outputs(nb: Path) -> int:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    return sum("image/png" in o.get("data", {}) for c in cells if c["cell_type"] == "code" for o in c.get("outputs", []))


def _has_maths(nb: Path) -> bool:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    text = re.sub(r"```.*?```|`[^`]*`", "", text, flags=re.S)   # code is not maths
    return re.search(r"\$[^$\s][^$]*\$", text) is not None


def _has_widgets(nb: Path) -> bool:
    meta = json.loads(nb.read_text(encoding="utf-8")).get("metadata", {})
    return bool(meta.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state"))


@pytest.mark.browser
@pytest.mark.parametrize("nb", CHAPTERS, ids=[nb.stem for nb in CHAPTERS])
def test_chapter_renders_in_browser(browser, nb):
    dom = browser(f"chapters/{nb.stem}.html", "--dump-dom")
    # Maths typeset by MathJax: every math element holds MathJax output, no raw TeX is left.
    math = re.findall(r'class="math notranslate nohighlight">(.{0,40})', dom, flags=re.S)
    if _has_maths(nb):
        assert math, f"{nb.stem}: the notebook has maths, the page shows none"
    raw = [m for m in math if not m.lstrip().startswith("<mjx-container")]
    assert not raw, f"{nb.stem}: {len(raw)} of {len(math)} formulas not typeset, e.g. {raw[:2]}"
    assert "$$" not in re.sub(r"<(script|style)\b.*?</\1>", "", dom, flags=re.S)
    # Every figure the notebook stores is on the page.
    images = re.findall(r'<img[^>]+src="([^"]*_images/[^"]+\.png)"', dom)
    assert len(images) >= _image_outputs(nb), f"{nb.stem}: {len(images)} figures shown, {_image_outputs(nb)} stored"
    for src in images:
        assert (HTML / "chapters" / src).resolve().exists(), src
    if _has_widgets(nb):  # the widget embedder turned the saved state into live controls
        assert "jupyter-widgets" in dom and "widget-" in dom, f"{nb.stem}: widgets not rendered"


@pytest.mark.browser
def test_screenshot_of_chapter_1(browser):
    """A full-length screenshot for people to look at: typeset maths, tables and the heatmap."""
    shot = BUILD / "screenshots" / "01_qkv_attention.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    shot.unlink(missing_ok=True)
    browser("chapters/01_qkv_attention.html", f"--screenshot={shot}", "--window-size=1280,13000")
    assert shot.exists() and shot.stat().st_size > 200_000, "screenshot missing or blank"


def _repository() -> tuple[str, str]:
    import yaml
    repo = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]
    return repo["url"].rstrip("/"), repo.get("branch", "main")


def _buttons(html: str, stem: str) -> list[str]:
    """What is missing among a chapter page's launch, download and repository buttons."""
    url, branch = _repository()
    slug = url.removeprefix("https://github.com/")
    hrefs = set(re.findall(r'href="([^"]+)"', html))
    wanted = {
        "Colab": f"https://colab.research.google.com/github/{slug}/blob/{branch}/chapters/{stem}.ipynb",
        "Binder": f"https://mybinder.org/v2/gh/{slug}/{branch}?urlpath=lab/tree/chapters/{stem}.ipynb",
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
    assert not _buttons(page.read_text(encoding="utf-8"), nb.stem), f"{nb.stem}: missing {_buttons(page.read_text(encoding='utf-8'), nb.stem)}"
    assert (built_book / "_sources" / "chapters" / f"{nb.name}").exists(), "the .ipynb to download"


@pytest.mark.browser
def test_buttons_are_in_the_rendered_page(browser):
    """In the page as Chromium renders it (after the theme's scripts ran), the buttons are there."""
    dom = browser("chapters/02_scaling.html", "--dump-dom")
    assert not _buttons(dom, "02_scaling"), _buttons(dom, "02_scaling")
    assert "btn-launch-colab" in dom or "colab" in dom.lower()
