"""The book as a PDF (`make pdf`, scripts/make_pdf.py): both editions printed, and what a reader checks.

Each edition is built as one HTML page and printed by the system Chromium; the script measures the
page in print media, at the printed column's width, before printing, and writes what it measured
beside each PDF (_build/pdf/<name>.json). Chromium: Debian's `chromium`; pdftotext and pdffonts:
Debian's `poppler-utils`. Without them the tests are skipped with that instruction, except under
CI=true, where they fail.
"""
import importlib
import inspect
import json
import re
import unicodedata
from html import unescape
import shutil
import subprocess
import sys

import pytest
import yaml
from babel.messages.pofile import read_po
from pypdf import PdfReader

from conftest import ROOT, chromium_path, skip_or_fail

OUT = ROOT / "_build" / "pdf"
PDFS = {"en": "the-transformer-built", "zh_CN": "the-transformer-built-zh"}
CJK = re.compile(r"[\u4e00-\u9fff]")
pytestmark = [pytest.mark.book, pytest.mark.browser]


def _tool(name: str) -> str:
    if shutil.which(name) is None:
        skip_or_fail(f"{name} not found: install it with `sudo apt-get install poppler-utils` (Debian/Ubuntu)")
    return name


@pytest.fixture(scope="module")
def pdfs() -> dict[str, tuple[PdfReader, dict]]:
    """Both editions printed by `make pdf`'s script: language -> (the PDF, what the script measured)."""
    if chromium_path() is None:
        skip_or_fail("Chromium not found: install it with `sudo apt-get install chromium` (Debian/Ubuntu)")
    if not (ROOT / "book" / "_vendor" / "vendor" / "mathjax" / "es5" / "tex-chtml.js").exists():
        pytest.fail("book/_vendor is missing: run `make vendor` or use `make test`")
    for name in PDFS.values():
        (OUT / f"{name}.pdf").unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_pdf.py")], cwd=ROOT,
                          capture_output=True, text=True, timeout=1500)
    print(proc.stdout)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return {lang: (PdfReader(OUT / f"{name}.pdf"), json.loads((OUT / f"{name}.json").read_text(encoding="utf-8")))
            for lang, name in PDFS.items()}


def _text(pdf: str, first: int = 1, last: int = 0) -> str:
    """pdftotext's text of pages first..last (all: last=0), with its page layout."""
    pages = ["-f", str(first)] + (["-l", str(last)] if last else [])
    return subprocess.run(["pdftotext", "-layout", *pages, pdf, "-"], capture_output=True, text=True, check=True).stdout


def _bookmarks(reader: PdfReader) -> list[tuple[int, str, int]]:
    """(depth, title, page index) of every bookmark, in order."""
    found = []

    def walk(items, depth):
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
            else:
                found.append((depth, " ".join(item.title.split()), reader.get_destination_page_number(item)))
    walk(reader.outline, 0)
    return found


def _chapter_titles(language: str) -> list[str]:
    """Every page of the table of contents' title, from its source (# heading), in `language`."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    titles = []
    for doc in [c["file"] for part in toc["parts"] for c in part["chapters"]]:
        source = ROOT / f"{doc}.ipynb" if (ROOT / f"{doc}.ipynb").exists() else ROOT / f"{doc}.md"
        text = source.read_text(encoding="utf-8")
        if source.suffix == ".ipynb":
            text = "".join(c for cell in json.loads(text)["cells"] if cell["cell_type"] == "markdown"
                           for c in cell["source"])
        title = re.search(r"^# (.+)$", text, re.M).group(1).strip()
        if language != "en":
            with open(ROOT / "locales" / language / "LC_MESSAGES" / f"{doc}.po", encoding="utf-8") as f:
                title = read_po(f)[title].string
        # as Sphinx prints it: Markdown's escapes read, typographic apostrophes
        titles.append(" ".join(re.sub(r"\\(.)", r"\1", title).replace("'", "’").split()))
    return titles


def test_both_pdfs_are_built(pdfs):
    for language, (reader, report) in pdfs.items():
        assert len(reader.pages) > 200, f"{language}: only {len(reader.pages)} pages"
        first = reader.pages[0].extract_text()
        commit = report["commit"].rstrip("+")          # "+": printed from a tree with uncommitted changes
        known = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"]).returncode == 0
        assert known and report["commit"] in first, f"{language}: the title page names no commit of this repository"
        assert re.search(r"\d{4}-\d{2}-\d{2}", first), f"{language}: title page names no date"
        assert ("中文版" if language == "zh_CN" else "English edition") in first
        print(f"{language}: {report['pages']} pages, {report['megabytes']} MB, built {report['build_s']} s, "
              f"loaded {report['load_s']} s, laid out {report['layout_s']} s, printed {report['print_s']} s")


@pytest.mark.parametrize("language", PDFS)
def test_every_chapter_is_a_bookmark_with_its_sections(pdfs, language):
    reader, _ = pdfs[language]
    marks = _bookmarks(reader)
    top = [title for depth, title, _ in marks if depth == 0]
    for title in _chapter_titles(language):
        assert title in top, f"{language}: chapter {title!r} is not a bookmark (top level: {top})"
    assert sum(depth == 1 for depth, _, _ in marks) > 150, "sections are not bookmarked under their chapters"
    pages = [page for _, _, page in marks]
    assert pages == sorted(pages), "bookmarks out of page order"


@pytest.mark.parametrize("language", PDFS)
def test_contents_and_links_stay_inside_the_pdf(pdfs, language):
    """The contents page links every chapter to its page in the PDF, not to a web page."""
    reader, _ = pdfs[language]
    inside = 0
    for annot in reader.pages[1].get("/Annots", []):
        link = annot.get_object()
        if link.get("/Subtype") == "/Link" and ("/Dest" in link or link.get("/A", {}).get("/S") == "/GoTo"):
            inside += 1
    assert inside >= len(_chapter_titles(language)), f"{language}: {inside} internal links on the contents page"
    assert ("目录" if language == "zh_CN" else "Contents") in reader.pages[1].extract_text()


@pytest.mark.parametrize("language", PDFS)
def test_every_figure_is_an_image_in_the_pdf(pdfs, language):
    """Each raster image the page shows in print media (plots, widgets' first state) is one image of
    the PDF; each SVG diagram is drawn as vectors, its labels text of the PDF."""
    _tool("pdfimages")
    _, report = pdfs[language]
    pdf = str(OUT / f"{PDFS[language]}.pdf")
    listing = subprocess.run(["pdfimages", "-list", pdf], capture_output=True, text=True, check=True).stdout
    images = [line for line in listing.splitlines()[2:] if line.split()[2] == "image"]
    shown = report["with_print_css"]
    assert shown["raster_images"] > 30 and shown["svg_images"] >= 10, shown
    assert len(images) == shown["raster_images"], (
        f"{language}: {shown['raster_images']} raster images shown in print, {len(images)} in the PDF")
    text = "".join(unicodedata.normalize("NFKC", _text(pdf)).split())     # NFKC: the ligature ﬁ is fi
    page = ROOT / ("_build" if language == "en" else f"_build/{language}/_build") / "singlehtml" / f"{PDFS[language]}.html"
    svgs = set(re.findall(r'<img[^>]*src="([^"]+\.svg)"', page.read_text(encoding="utf-8")))
    assert len(svgs) == shown["svg_images"], (svgs, shown)
    for svg in svgs:
        labels = re.findall(r"<text[^>]*>([^<]{3,})</text>", (page.parent / svg).read_text(encoding="utf-8"))
        longest = "".join(unescape(max(labels, key=len)).split()) if labels else None
        assert longest is None or longest in text, f"{language}: diagram {svg} is not in the PDF ({longest!r})"


@pytest.mark.parametrize("language", PDFS)
def test_no_code_line_or_equation_wider_than_the_column(pdfs, language):
    """Measured in print media at the printed column's width, before printing (make_pdf.py)."""
    _, report = pdfs[language]
    before, after = report["without_print_css"], report["with_print_css"]
    assert after["code_blocks"] > 500 and after["equations"] > 30, after
    # the measure sees an overflow when there is one: without the print stylesheet most code is too wide
    assert before["code_too_wide"] > 100, before
    assert after["code_too_wide"] == 0, f"{language}: code wider than the column: {after['examples']}"
    assert after["equations_too_wide"] == 0, f"{language}: equations wider than the column: {after['examples']}"


def test_pdftotext_finds_an_exported_function_with_its_indentation(pdfs):
    """`check_mask`, exported by chapter 1, as pdftotext reads it from chapter 1's pages: every line,
    indented as in the source (a line the column wraps: its beginning)."""
    _tool("pdftotext")
    reader, _ = pdfs["en"]
    marks = [(title, page) for depth, title, page in _bookmarks(reader) if depth == 0]
    start = next(page for title, page in marks if title.startswith("1. "))
    end = next(page for title, page in marks if title.startswith("2. "))
    text = _text(str(OUT / f"{PDFS['en']}.pdf"), start + 1, end)
    source = inspect.getsource(importlib.import_module("transformer_lib.attention").check_mask).splitlines()
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.lstrip().startswith(source[0]))
    column = len(lines[first]) - len(lines[first].lstrip())
    printed = iter(line[column:].rstrip() for line in lines[first:] if not line[:column].strip())
    for line in source:
        want = line.rstrip() if len(line) <= 90 else line[:60]
        assert any(got.startswith(want) for got in printed), f"not found, indented as in the source: {want!r}"


def test_the_chinese_pdf_has_chinese_text_in_an_embedded_font(pdfs):
    """Every font of the Chinese PDF is embedded (Noto CJK, which Chromium embeds as Type 3 glyphs),
    and its text is Chinese characters, not the radicals that look like them (a search finds 文)."""
    _tool("pdffonts")
    path = str(OUT / f"{PDFS['zh_CN']}.pdf")
    fonts = subprocess.run(["pdffonts", path], capture_output=True, text=True, check=True).stdout.splitlines()[2:]
    assert fonts and all(line.split()[-5] == "yes" for line in fonts), "a font is not embedded:\n" + "\n".join(
        line for line in fonts if line.split()[-5] != "yes")
    reader, _ = pdfs["zh_CN"]
    text = "".join(reader.pages[i].extract_text() for i in range(1, 6))
    assert len(CJK.findall(text)) > 1000, "little Chinese text in the contents"
    radicals = re.findall("[\u2e80-\u2fdf]", text)
    assert not radicals, f"radicals in place of characters: {sorted(set(radicals))}"
    assert "中文版" in reader.pages[0].extract_text() and "目录" in reader.pages[1].extract_text()


def test_published_beside_the_html():
    """The Pages workflow prints both PDFs after `make book` and uploads them with the HTML, into
    which make_pdf.py copies them (_build/html/pdf); the introduction links to them there."""
    steps = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text(encoding="utf-8"))["jobs"]["test"]["steps"]
    runs = [s.get("run", "").strip() for s in steps]
    book = runs.index("make book")
    pdf = next(i for i, run in enumerate(runs) if run.startswith("make pdf"))
    upload = next(i for i, s in enumerate(steps) if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert book < pdf < upload and steps[upload]["with"]["path"] == "_build/html"
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    with open(ROOT / "locales" / "zh_CN" / "LC_MESSAGES" / "book" / "intro.po", encoding="utf-8") as f:
        translated = " ".join(m.string for m in read_po(f) if m.id and isinstance(m.string, str))
    for name in PDFS.values():
        assert f'href="../pdf/{name}.pdf"' in intro, f"book/intro.md does not link {name}.pdf"
        assert f'href="../../pdf/{name}.pdf"' in translated, f"intro.po does not link {name}.pdf from zh/book/"


def test_make_pdf_copies_the_pdfs_beside_the_html_book(pdfs):
    html = ROOT / "_build" / "html"
    if not html.is_dir():
        pytest.skip("the HTML book is not built here (make book)")
    for name in PDFS.values():
        assert (html / "pdf" / f"{name}.pdf").read_bytes() == (OUT / f"{name}.pdf").read_bytes()
