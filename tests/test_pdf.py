"""The book as a PDF (`make pdf`, scripts/make_pdf.py): both editions printed, and what
a reader checks.

Each edition is built as one HTML page and printed by the system Chromium; the script
measures the page in print media, at the printed column's width, before printing, and
writes what it measured beside each PDF (_build/pdf/<name>.json). Chromium: Debian's
`chromium`; pdftotext and pdffonts: Debian's `poppler-utils`. Without them the tests are
skipped with that instruction, except under CI=true, where they fail.

The tests read the printed book as a reader does: its text as pdftotext copies it out
(every code cell comes back as its source), its links' targets, its bookmarks, what its
pages draw (no text at a fill opacity below 1, no code frame without code) and which
pages are nearly empty. The PDFs are printed once, for the whole module, with the site's
address set (BOOK_REPOSITORY, as the Pages workflow sets it) unless the caller set it.
"""

import functools
import importlib
import inspect
import itertools
import json
import os
import re
import unicodedata
from html import unescape
import shutil
import subprocess
import sys

import pikepdf
import pytest
import yaml
from babel.messages.pofile import read_po
from pypdf import PdfReader

from conftest import ROOT, chromium_path, skip_or_fail

OUT = ROOT / "_build" / "pdf"
PDFS = {"en": "the-transformer-built", "zh_CN": "the-transformer-built-zh"}
CJK = re.compile(r"[\u4e00-\u9fff]")
WRAP = "\u21aa"  # ↪: print.js's mark of a code line's continuation
LIVE = {
    "en": "Live, and interactive, on the web page:",
    "zh_CN": "可交互的版本在网页上：",
}
# the body's foot and head on an A4 page, in pt (pdf.py's margins)
BODY = (14 / 25.4 * 72, 841.89 - 16 / 25.4 * 72)
# BOOK_REPOSITORY when the caller sets none
TEST_REPOSITORY = "book-tests/the-transformer-built"
pytestmark = [pytest.mark.book, pytest.mark.browser]


def _tool(name: str) -> str:
    if shutil.which(name) is None:
        skip_or_fail(
            f"{name} not found: install it with `sudo apt-get install poppler-utils`"
            " (Debian/Ubuntu)"
        )
    return name


@pytest.fixture(scope="module")
def pdfs() -> dict[str, tuple[PdfReader, dict]]:
    """Both editions printed by `make pdf`'s script: language -> (the PDF, what the
    script measured)."""
    if chromium_path() is None:
        skip_or_fail(
            "Chromium not found: install it with `sudo apt-get install chromium`"
            " (Debian/Ubuntu)"
        )
    if not (
        ROOT / "book" / "_vendor" / "vendor" / "mathjax" / "es5" / "tex-chtml.js"
    ).exists():
        pytest.fail("book/_vendor is missing: run `make vendor` or use `make test`")
    for name in PDFS.values():
        (OUT / f"{name}.pdf").unlink(missing_ok=True)
    env = {
        **os.environ,
        "BOOK_REPOSITORY": os.environ.get("BOOK_REPOSITORY") or TEST_REPOSITORY,
    }
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_pdf.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    print(proc.stdout)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return {
        lang: (
            PdfReader(OUT / f"{name}.pdf"),
            json.loads((OUT / f"{name}.json").read_text(encoding="utf-8")),
        )
        for lang, name in PDFS.items()
    }


def _text(pdf: str, first: int = 1, last: int = 0) -> str:
    """pdftotext's text of pages first..last (all: last=0), with its page layout."""
    pages = ["-f", str(first)] + (["-l", str(last)] if last else [])
    return subprocess.run(
        ["pdftotext", "-layout", *pages, pdf, "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _bookmarks(reader: PdfReader) -> list[tuple[int, str, int]]:
    """(depth, title, page index) of every bookmark, in order."""
    found = []

    def walk(items, depth):
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
            else:
                found.append(
                    (
                        depth,
                        " ".join(item.title.split()),
                        reader.get_destination_page_number(item),
                    )
                )

    walk(reader.outline, 0)
    return found


def _chapter_titles(language: str) -> list[str]:
    """Every page of the table of contents' title, from its source (# heading), in
    `language`."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    titles = []
    for doc in [c["file"] for part in toc["parts"] for c in part["chapters"]]:
        source = (
            ROOT / f"{doc}.ipynb"
            if (ROOT / f"{doc}.ipynb").exists()
            else ROOT / f"{doc}.md"
        )
        text = source.read_text(encoding="utf-8")
        if source.suffix == ".ipynb":
            text = "".join(
                c
                for cell in json.loads(text)["cells"]
                if cell["cell_type"] == "markdown"
                for c in cell["source"]
            )
        title = re.search(r"^# (.+)$", text, re.M).group(1).strip()
        if language != "en":
            with open(
                ROOT / "locales" / language / "LC_MESSAGES" / f"{doc}.po",
                encoding="utf-8",
            ) as f:
                title = read_po(f)[title].string
        # as Sphinx prints it: Markdown's escapes read, typographic apostrophes
        titles.append(
            " ".join(re.sub(r"\\(.)", r"\1", title).replace("'", "’").split())
        )
    return titles


def test_both_pdfs_are_built(pdfs):
    for language, (reader, report) in pdfs.items():
        assert len(reader.pages) > 200, f"{language}: only {len(reader.pages)} pages"
        first = reader.pages[0].extract_text()
        # "+": printed from a tree with uncommitted changes
        commit = report["commit"].rstrip("+")
        known = (
            subprocess.run(
                ["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"]
            ).returncode
            == 0
        )
        assert known and report["commit"] in first, (
            f"{language}: the title page names no commit of this repository"
        )
        assert re.search(r"\d{4}-\d{2}-\d{2}", first), (
            f"{language}: title page names no date"
        )
        assert ("中文版" if language == "zh_CN" else "English edition") in first
        print(
            f"{language}: {report['pages']} pages, {report['megabytes']} MB, built"
            f" {report['build_s']} s, loaded {report['load_s']} s, laid out"
            f" {report['layout_s']} s, printed {report['print_s']} s"
        )


@pytest.mark.parametrize("language", PDFS)
def test_every_chapter_is_a_bookmark_with_its_sections(pdfs, language):
    reader, _ = pdfs[language]
    marks = _bookmarks(reader)
    top = [title for depth, title, _ in marks if depth == 0]
    for title in _chapter_titles(language):
        assert title in top, (
            f"{language}: chapter {title!r} is not a bookmark (top level: {top})"
        )
    assert sum(depth == 1 for depth, _, _ in marks) > 150, (
        "sections are not bookmarked under their chapters"
    )
    pages = [page for _, _, page in marks]
    assert pages == sorted(pages), "bookmarks out of page order"


@pytest.mark.parametrize("language", PDFS)
def test_contents_and_links_stay_inside_the_pdf(pdfs, language):
    """The contents page links every chapter to its page in the PDF, not to a web
    page."""
    reader, _ = pdfs[language]
    inside = 0
    for annot in reader.pages[1].get("/Annots", []):
        link = annot.get_object()
        if link.get("/Subtype") == "/Link" and (
            "/Dest" in link or link.get("/A", {}).get("/S") == "/GoTo"
        ):
            inside += 1
    assert inside >= len(_chapter_titles(language)), (
        f"{language}: {inside} internal links on the contents page"
    )
    assert ("目录" if language == "zh_CN" else "Contents") in reader.pages[
        1
    ].extract_text()


@pytest.mark.parametrize("language", PDFS)
def test_every_figure_is_an_image_in_the_pdf(pdfs, language):
    """Each raster image the page shows in print media (plots, widgets' first state) is
    one image of the PDF; each SVG diagram is drawn as vectors, its labels text of the
    PDF."""
    _tool("pdfimages")
    _, report = pdfs[language]
    pdf = str(OUT / f"{PDFS[language]}.pdf")
    listing = subprocess.run(
        ["pdfimages", "-list", pdf], capture_output=True, text=True, check=True
    ).stdout
    images = [line for line in listing.splitlines()[2:] if line.split()[2] == "image"]
    shown = report["with_print_css"]
    assert shown["raster_images"] > 30 and shown["svg_images"] >= 10, shown
    assert len(images) == shown["raster_images"], (
        f"{language}: {shown['raster_images']} raster images shown in print,"
        f" {len(images)} in the PDF"
    )
    # NFKC: the ligature ﬁ is fi
    text = "".join(unicodedata.normalize("NFKC", _text(pdf)).split())
    page = (
        ROOT
        / "_build"
        / "pdf-pages"
        / language
        / "_build"
        / "singlehtml"
        / f"{PDFS[language]}.html"
    )
    svgs = set(
        re.findall(r'<img[^>]*src="([^"]+\.svg)"', page.read_text(encoding="utf-8"))
    )
    assert len(svgs) == shown["svg_images"], (svgs, shown)
    for svg in svgs:
        labels = re.findall(
            r"<text[^>]*>([^<]{3,})</text>",
            (page.parent / svg).read_text(encoding="utf-8"),
        )
        longest = "".join(unescape(max(labels, key=len)).split()) if labels else None
        assert longest is None or longest in text, (
            f"{language}: diagram {svg} is not in the PDF ({longest!r})"
        )


@pytest.mark.parametrize("language", PDFS)
def test_no_code_line_or_equation_wider_than_the_column(pdfs, language):
    """Measured in print media at the printed column's width, before printing
    (make_pdf.py)."""
    _, report = pdfs[language]
    before, after = report["without_print_css"], report["with_print_css"]
    assert after["code_blocks"] > 500 and after["equations"] > 30, after
    # the measure sees an overflow when there is one: without the print stylesheet most
    # code is too wide
    assert before["code_too_wide"] > 100, before
    assert after["code_too_wide"] == 0, (
        f"{language}: code wider than the column: {after['examples']}"
    )
    assert after["equations_too_wide"] == 0, (
        f"{language}: equations wider than the column: {after['examples']}"
    )


def test_pdftotext_finds_an_exported_function_with_its_indentation(pdfs):
    """`check_mask`, exported by chapter 1, as pdftotext copies it from chapter 1's
    pages: every line with text, indented as in the source (a line the column broke,
    joined back at its ↪)."""
    _tool("pdftotext")
    reader, report = pdfs["en"]
    marks = [(title, page) for depth, title, page in _bookmarks(reader) if depth == 0]
    start = next(page for title, page in marks if title.startswith("1. "))
    source = [
        line.rstrip()
        for line in inspect.getsource(
            importlib.import_module("transformer_lib.attention").check_mask
        ).splitlines()
        if line.strip()
    ]
    lines = _code_lines(_pdf("en"), _code_pitch(report))
    pages = [i for i, line in enumerate(lines) if line is None]
    first = pages[start - 1] if start else 0
    found = [
        (i, len(line) - len(line.lstrip()))
        for i, line in enumerate(lines[first:], first)
        if line and line.strip()[:40] == source[0][:40]
    ]
    assert found, f"not found on chapter 1's pages: {source[0]!r}"
    assert any(
        _copied_back(lines, i, column, len(source)) == source for i, column in found
    ), "check_mask does not copy back as its source"


def test_the_chinese_pdf_has_chinese_text_in_an_embedded_font(pdfs):
    """Every font of the Chinese PDF is embedded (Noto CJK, which Chromium embeds as
    Type 3 glyphs), and its text is Chinese characters, not the radicals that look like
    them (a search finds 文)."""
    _tool("pdffonts")
    path = str(OUT / f"{PDFS['zh_CN']}.pdf")
    fonts = subprocess.run(
        ["pdffonts", path], capture_output=True, text=True, check=True
    ).stdout.splitlines()[2:]
    assert fonts and all(line.split()[-5] == "yes" for line in fonts), (
        "a font is not embedded:\n"
        + "\n".join(line for line in fonts if line.split()[-5] != "yes")
    )
    reader, _ = pdfs["zh_CN"]
    text = "".join(reader.pages[i].extract_text() for i in range(1, 6))
    assert len(CJK.findall(text)) > 1000, "little Chinese text in the contents"
    radicals = re.findall("[\u2e80-\u2fdf]", text)
    assert not radicals, f"radicals in place of characters: {sorted(set(radicals))}"
    assert (
        "中文版" in reader.pages[0].extract_text()
        and "目录" in reader.pages[1].extract_text()
    )


def test_published_beside_the_html():
    """The Pages workflow prints both PDFs after `make book` and uploads them with the
    HTML, into which make_pdf.py copies them (_build/html/pdf); the introduction links
    to them there."""
    steps = yaml.safe_load(
        (ROOT / ".github" / "workflows" / "book.yml").read_text(encoding="utf-8")
    )["jobs"]["test"]["steps"]
    runs = [s.get("run", "").strip() for s in steps]
    book = runs.index("make book")
    pdf = next(i for i, run in enumerate(runs) if run.startswith("make pdf"))
    upload = next(
        i
        for i, s in enumerate(steps)
        if s.get("uses", "").startswith("actions/upload-pages-artifact@")
    )
    assert book < pdf < upload and steps[upload]["with"]["path"] == "_build/html"
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    with open(
        ROOT / "locales" / "zh_CN" / "LC_MESSAGES" / "book" / "intro.po",
        encoding="utf-8",
    ) as f:
        translated = " ".join(
            m.string for m in read_po(f) if m.id and isinstance(m.string, str)
        )
    for name in PDFS.values():
        assert f'href="../pdf/{name}.pdf"' in intro, (
            f"book/intro.md does not link {name}.pdf"
        )
        assert f'href="../../pdf/{name}.pdf"' in translated, (
            f"intro.po does not link {name}.pdf from zh/book/"
        )


def test_make_pdf_copies_the_pdfs_beside_the_html_book(pdfs):
    html = ROOT / "_build" / "html"
    if not html.is_dir():
        pytest.skip("the HTML book is not built here (make book)")
    for name in PDFS.values():
        assert (html / "pdf" / f"{name}.pdf").read_bytes() == (
            OUT / f"{name}.pdf"
        ).read_bytes()


# ---- the printed book as a reader reads it -------------------------------------------


def _pdf(language: str) -> str:
    return str(OUT / f"{PDFS[language]}.pdf")


@functools.lru_cache(maxsize=None)
def _pages(pdf: str) -> list[str]:
    """pdftotext's text of every page, with its layout (a page's first line is the
    running header, its last the page number)."""
    return _text(pdf).split("\f")[:-1]


def _body(page: str) -> list[str]:
    """A page's lines without its running head (the first) and its page number ("12 /
    626")."""
    return [
        line
        for line in page.split("\n")[1:]
        if not re.fullmatch(r"\s*\d+ / \d+\s*", line)
    ]


def _chapters(reader: PdfReader) -> list[tuple[str, int]]:
    """(title, first page index) of each top-level bookmark: the chapters, in order."""
    return [(title, page) for depth, title, page in _bookmarks(reader) if depth == 0]


def _multiply(m, n):
    """The matrix m then n, PDF's [a b c d e f] rows."""
    a, b, c, d, e, f = m
    p, q, r, s, t, u = n
    return (
        a * p + b * r,
        a * q + b * s,
        c * p + d * r,
        c * q + d * s,
        e * p + f * r + t,
        e * q + f * s + u,
    )


def _apply(m, x, y):
    return m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]


TOKEN = re.compile(
    rb"<<.*?>>|<[0-9A-Fa-f\s]*>|\((?:\\.|[^\\)])*\)|/[^\s/\[\]<>()]+|[-+]?(?:\d+\.?\d*|\.\d+)|[A-Za-z'\"*][A-Za-z0-9*]*|\[|\]",
    re.S,
)


def _walk(data, resources, ctm, alpha, found: dict) -> None:
    """One content stream of a page (or a form it draws), into `found` (see _drawn)."""
    states = resources.get("/ExtGState", {}) if resources is not None else {}
    forms = resources.get("/XObject", {}) if resources is not None else {}
    stack, colour, path, points, tm, args = [], (0.0, 0.0, 0.0), [], [], None, []
    for m in TOKEN.finditer(data):
        token = m.group()
        first = token[:1]
        if first.isdigit() or first in b"-+.":
            args.append(float(token))
            continue
        if first in b"/<([]":
            args.append(token)
            continue
        op = token.decode()
        if op == "q":
            stack.append((ctm, alpha, colour))
        elif op == "Q" and stack:
            ctm, alpha, colour = stack.pop()
        elif op == "cm" and len(args) >= 6:
            ctm = _multiply(tuple(args[-6:]), ctm)
        elif op == "gs":
            state = states.get(args[-1].decode())
            if state is not None and "/ca" in state:
                alpha = alpha * float(state["/ca"])
        elif op == "rg" and len(args) >= 3:
            colour = tuple(round(v, 3) for v in args[-3:])
        elif op == "g" and args:
            colour = (round(args[-1], 3),) * 3
        elif op == "re" and len(args) >= 4:
            x, y, w, h = args[-4:]
            (ax, ay), (bx, by) = _apply(ctm, x, y), _apply(ctm, x + w, y + h)
            path.append((min(ax, bx), min(ay, by), max(ax, bx), max(ay, by)))
        elif op in ("m", "l", "c", "v", "y") and len(args) >= 2:
            points += [_apply(ctm, x, y) for x, y in zip(args[0::2], args[1::2])]
        elif op in ("f", "F", "f*", "B", "B*"):
            # a drawn outline (a frame's rounded corners): its box
            if points:
                path.append(
                    (
                        min(p[0] for p in points),
                        min(p[1] for p in points),
                        max(p[0] for p in points),
                        max(p[1] for p in points),
                    )
                )
            found["rects"] += [(rect, colour) for rect in path]
            path, points = [], []
        elif op in ("n", "S", "s", "b", "b*"):
            path, points = [], []
        elif op == "Tm" and len(args) >= 6:
            tm = tuple(args[-6:])
        elif op == "Td" and tm is not None and len(args) >= 2:
            a, b, c, d, e, f = tm
            tx, ty = args[-2:]
            tm = (a, b, c, d, e + a * tx + c * ty, f + b * tx + d * ty)
        elif op in ("Tj", "TJ", "'", '"'):
            if alpha < 0.999:
                found["faded"][round(alpha, 2)] = (
                    found["faded"].get(round(alpha, 2), 0) + 1
                )
            if tm is not None:
                found["text"].append(_apply(ctm, tm[4], tm[5]))
        elif op == "Do":
            form = forms.get(args[-1].decode())
            if form is not None and form.get("/Subtype") == "/Form":
                matrix = tuple(
                    float(v) for v in form.get("/Matrix", [1, 0, 0, 1, 0, 0])
                )
                _walk(
                    form.read_bytes(),
                    form.get("/Resources", resources),
                    _multiply(matrix, ctm),
                    alpha,
                    found,
                )
        args = []


@functools.lru_cache(maxsize=None)
def _drawn(pdf: str) -> list[dict]:
    """What each page draws, read from its content streams (and its forms'): the text
    drawn under a fill opacity below 1 ({alpha: count}), the filled rectangles ((x0, y0,
    x1, y1), fill colour) and where each text run starts, all in page coordinates. (A
    tokenizer of its own: pikepdf's parser makes an object of every operand, four times
    slower on 600 pages.)"""
    pages = []
    with pikepdf.open(pdf) as doc:
        for page in doc.pages:
            found: dict = {"faded": {}, "rects": [], "text": []}

            contents = page.obj.get("/Contents")
            parts = (
                contents
                if isinstance(contents, pikepdf.Array)
                else [contents]
                if contents is not None
                else []
            )
            _walk(
                b"\n".join(part.read_bytes() for part in parts),
                page.obj.get("/Resources"),
                (1.0, 0.0, 0.0, 1.0, 0.0, 0.0),
                1.0,
                found,
            )
            pages.append(found)
    return pages


def _code_background() -> tuple[float, float, float]:
    """The code frames' fill, as print.css sets it."""
    css = (ROOT / "book" / "_static" / "print.css").read_text(encoding="utf-8")
    hex_ = re.search(r"pre, \.highlight pre[^}]*background: #([0-9a-f]{6})", css).group(
        1
    )
    return tuple(round(int(hex_[i : i + 2], 16) / 255, 3) for i in (0, 2, 4))


@pytest.mark.parametrize("language", PDFS)
def test_no_text_is_drawn_under_a_fill_opacity_below_1(pdfs, language):
    """A fold's fade-in caught part-way by the print printed its code at 21 %
    opacity."""
    faded = [
        (n + 1, page["faded"])
        for n, page in enumerate(_drawn(_pdf(language)))
        if page["faded"]
    ]
    assert not faded, (
        f"{language}: {len(faded)} pages draw text under a fill opacity below 1:"
        f" {faded[:10]}"
    )


@pytest.mark.parametrize("language", PDFS)
def test_no_code_frame_is_empty(pdfs, language):
    """Every code frame a page draws holds code: no frame left at a page's foot with its
    code on the next."""
    # print.css's frame, and MyST-NB's cell background (#f7f7f7), the frame of the first
    # prints
    colours = [_code_background(), (0.969, 0.969, 0.969)]
    empty = []
    for n, page in enumerate(_drawn(_pdf(language)), 1):
        for (x0, y0, x1, y1), fill in page["rects"]:
            if (
                min(max(abs(a - b) for a, b in zip(fill, c)) for c in colours) > 0.006
                or y1 - y0 < 2
                or x1 - x0 < 200
                or y1 < BODY[0]
                or y0 > BODY[1]
            ):
                # another fill, a rule, or a piece outside the page's body (clipped)
                continue
            if not any(
                x0 <= x <= x1 and y0 - 1 <= y <= y1 + 1 for x, y in page["text"]
            ):
                empty.append((n, round(y1 - y0)))
    assert not empty, (
        f"{language}: {len(empty)} empty code frames (page, height in pt): {empty[:20]}"
    )


def _printed_cells() -> list[tuple[str, str]]:
    """(chapter, source) of every code cell the book prints (all but those tagged
    remove-*)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    cells = []
    for doc in [c["file"] for part in toc["parts"] for c in part["chapters"]]:
        if not (ROOT / f"{doc}.ipynb").exists():
            continue
        for cell in json.loads((ROOT / f"{doc}.ipynb").read_text(encoding="utf-8"))[
            "cells"
        ]:
            tags = cell.get("metadata", {}).get("tags", [])
            source = "".join(cell["source"]).rstrip("\n")
            if (
                cell["cell_type"] == "code"
                and source.strip()
                and not any(t.startswith("remove") for t in tags)
            ):
                cells.append((doc, source))
    return cells


def _code_pitch(report: dict) -> float:
    """The code's character width in pt, as make_pdf.py measured it in print (5.1715 pt:
    8.6-pt DejaVu Sans Mono as Chromium lays it out, before the report said)."""
    return report.get("code_char_pt") or 5.1715


@functools.lru_cache(maxsize=None)
def _code_lines(pdf: str, pitch: float) -> list[str]:
    """The book's text a line at a time as pdftotext copies it, laid out on the code's
    character grid (-fixed: its other modes change runs of spaces), without the running
    heads and page numbers, a None where a page ends."""
    out = subprocess.run(
        ["pdftotext", "-fixed", f"{pitch:.5f}", pdf, "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines: list = []
    for page in out.split("\f")[:-1]:
        body = page.split("\n")
        while body and not body[-1].strip():
            body.pop()
        lines += body[1:-1] + [None]
    return lines


def _copied_back(
    lines: list, start: int, column: int, count: int, joined: list | None = None
) -> list[str]:
    """The code lines with text read from `lines[start:]` at `column`, until there are
    `count`: a line starting with ↪ joins the one above (and is added to `joined`); page
    ends are skipped; a line with text left of the column ends the block. (Blank lines
    are left out: pdftotext's page layout adds some.)"""
    out: list[str] = []
    for line in itertools.islice(lines, start, None):
        if line is None or not line.strip():
            continue
        if line[:column].strip():
            break
        text = line[column:].rstrip()
        if text.lstrip().startswith(WRAP) and out:
            out[-1] += text.lstrip()[1:]
            if joined is not None:
                joined.append(out[-1])
        elif len(out) < count:
            out.append(text)
        else:
            break
    return out


@functools.lru_cache(maxsize=None)
def _cells_copied_back(language: str, pitch: float) -> dict:
    """Every printed code cell read back out of the PDF: those that do not come back as
    their source (`bad`), those that do but only by joining a line the column broke
    (`broken`), the cells, and those skipped (an emoji, drawn from a colour font
    pdftotext cannot read)."""
    lines = _code_lines(_pdf(language), pitch)
    starts: dict[str, list[tuple[int, int]]] = {}
    for i, line in enumerate(lines):
        if line and line.strip():
            starts.setdefault(line.strip()[:40], []).append(
                (i, len(line) - len(line.lstrip()))
            )
    cells = _printed_cells()
    bad, broken = [], []
    skipped = [
        source for _, source in cells if re.search("[\U00010000-\U0010ffff]", source)
    ]
    for doc, source in cells:
        if source in skipped:
            continue
        want = [line.rstrip() for line in source.split("\n") if line.strip()]
        first = want[0].lstrip()
        found, joined = None, []
        for i, column in starts.get(first.rstrip()[:40], []):
            column -= len(want[0]) - len(first)
            joined = []
            got = _copied_back(lines, i, column, len(want), joined)
            if got == want:
                found = got
                break
            found = found or got
        if found != want:
            wrong = found and next(
                (g for g, w in zip(found, want) if g != w), found[:1]
            )
            bad.append((doc, source[:80], wrong))
        elif joined:
            broken.append((doc, joined[0][:100]))
    return {"bad": bad, "broken": broken, "cells": cells, "skipped": skipped}


@pytest.mark.parametrize("language", PDFS)
def test_every_code_cell_copies_back_out_as_its_source(pdfs, language):
    """pdftotext's text of each printed code cell equals the cell's source, every line
    with text, in order, indented as in the source (lines the column broke joined back
    where the continuation starts with ↪; blank lines aside, which pdftotext's page
    layout adds and drops), and the source compiles. Each cell is found by its first
    line, at any of that line's places in the book."""
    _tool("pdftotext")
    read = _cells_copied_back(language, _code_pitch(pdfs[language][1]))
    cells, bad = read["cells"], read["bad"]
    assert len(cells) > 500 and len(read["skipped"]) <= 2, len(read["skipped"])
    assert not bad, (
        f"{language}: {len(bad)} of {len(cells)} code cells do not copy back: {bad[:8]}"
    )
    for doc, source in cells:
        # IPython magics and shell lines are not Python
        if not re.search(r"^\s*[%!]", source, re.M):
            compile(source, f"<{doc}>", "exec")


@pytest.mark.parametrize("language", PDFS)
def test_no_code_line_is_broken_at_the_column(pdfs, language):
    """The chapters' code is formatted at the printed column's width (ruff at 88,
    pyproject.toml; `make lint`), so no printed line of code needs a ↪ continuation: a
    reader copies each line as it stands. (Outputs may still wrap with a hanging ↪.)"""
    _tool("pdftotext")
    broken = _cells_copied_back(language, _code_pitch(pdfs[language][1]))["broken"]
    assert not broken, (
        f"{language}: {len(broken)} code cells print a line broken at the column: "
        f"{broken[:8]}"
    )


@pytest.mark.parametrize("language", PDFS)
def test_no_bookmark_repeats_itself_and_maths_stay_in_them(pdfs, language):
    reader, _ = pdfs[language]
    titles = [title for _, title, _ in _bookmarks(reader)]
    repeated = [t for t in titles if re.search(r"(.{6,}?)\s*\1", t)]
    assert not repeated, f"{language}: bookmarks that repeat themselves: {repeated[:8]}"
    # chapter 2's "Link 1: the variance of $q \cdot k$ is $d_k$", chapter 5's
    # "$-\infty$", chapter 4's "$2\pi$"
    for maths in ("q · k", "∞", "2π"):
        assert any(maths in t for t in titles), (
            f"{language}: no bookmark keeps the maths {maths!r}"
        )


def _links(
    pdf: str, pages: range | None = None, points: bool = False
) -> list[tuple[int, list[float], object]]:
    """(page index, rectangle, destination page index or URI) of every link; with
    `points`, a destination is (page index, height on the page)."""
    found = []
    with pikepdf.open(pdf) as doc:
        index = {page.obj.objgen: i for i, page in enumerate(doc.pages)}
        dests = doc.Root.get("/Dests", pikepdf.Dictionary())
        for n in pages or range(len(doc.pages)):
            for annot in doc.pages[n].obj.get("/Annots", []):
                if annot.get("/Subtype") != "/Link":
                    continue
                rect = [float(v) for v in annot.Rect]
                if "/Dest" in annot:
                    dest = annot.Dest
                    dest = (
                        dests.get(str(dest)) if isinstance(dest, pikepdf.Name) else dest
                    )
                    page = index.get(dest[0].objgen) if dest is not None else None
                    found.append(
                        (
                            n,
                            rect,
                            (
                                (page, float(dest[3]))
                                if points and page is not None
                                else page
                            ),
                        )
                    )
                elif "/A" in annot and "/URI" in annot.A:
                    found.append((n, rect, str(annot.A.URI)))
    return found


def _words(
    pdf: str, first: int, last: int
) -> list[tuple[int, float, float, float, float, str]]:
    """(page index, x0, y0, x1, y1, word) of pages first..last (1-based), y up from the
    page's foot."""
    out = subprocess.run(
        ["pdftotext", "-bbox", "-f", str(first), "-l", str(last), pdf, "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    words, n = [], first - 2
    for line in out.splitlines():
        if "<page " in line:
            n += 1
            height = float(re.search(r'height="([\d.]+)"', line).group(1))
        m = re.search(
            r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)"'
            r' yMax="([\d.]+)">(.*)</word>',
            line,
        )
        if m:
            x0, y0, x1, y1 = (float(v) for v in m.groups()[:4])
            words.append((n, x0, height - y1, x1, height - y0, unescape(m.group(5))))
    return words


@pytest.mark.parametrize("language", PDFS)
def test_contents_links_land_on_their_headings_page_and_show_it(pdfs, language):
    """Each chapter's line in the contents links to the page of its heading (its
    bookmark's page), and that page's number is printed on the line."""
    _tool("pdftotext")
    reader, _ = pdfs[language]
    chapters = _chapters(reader)
    first_chapter = min(page for title, page in chapters[1:])
    contents = range(1, first_chapter)
    words = _words(_pdf(language), 2, first_chapter)
    checked = 0
    for n, (x0, y0, x1, y1), dest in _links(_pdf(language), contents):
        inside = [
            w
            for w in words
            if w[0] == n
            and x0 - 1 <= (w[1] + w[3]) / 2 <= x1 + 1
            and y0 - 1 <= (w[2] + w[4]) / 2 <= y1 + 1
        ]
        # in reading order (pdftotext's own order puts "4b." after a Chinese title)
        one_line = y1 - y0 < 25
        text = " ".join(
            w[5]
            for w in sorted(
                inside,
                key=lambda w: (0 if one_line else -round((w[2] + w[4]) / 8), w[1]),
            )
        )
        title = next(
            (
                page
                for title, page in chapters
                if "".join(title.split()) == "".join(text.split())
            ),
            None,
        )
        if title is None:
            continue
        assert dest == title, (
            f"{language}: the contents' {text!r} lands on page {dest + 1}, its heading"
            f" is on {title + 1}"
        )
        line = [
            w[5]
            for w in words
            if w[0] == n and abs((w[2] + w[4]) / 2 - (y0 + 0.5 * min(y1 - y0, 16))) < 8
        ]
        assert str(title + 1) in line or str(title + 1) in " ".join(
            w[5] for w in words if w[0] == n and w[2] >= y0 - 2 and w[4] <= y1 + 2
        ), (
            f"{language}: the contents' line {text!r} does not show its page number"
            f" {title + 1}"
        )
        checked += 1
    assert checked >= len(_chapter_titles(language)) - 1, (
        f"{language}: {checked} chapter lines in the contents"
    )


@pytest.mark.parametrize("language", PDFS)
def test_links_land_where_they_say(pdfs, language):
    """No link or printed address is the print server's (127.0.0.1) or the placeholder
    site's. (Chapter links: the contents test; citations: the test below.)"""
    reader, report = pdfs[language]
    links = _links(_pdf(language))
    uris = [dest for _, _, dest in links if isinstance(dest, str)]
    local = [
        u
        for u in uris
        if re.search(r"127\.0\.0\.1|localhost|owner\.github\.io|/OWNER/", u, re.I)
    ]
    assert not local, (
        f"{language}: links to the print server or the placeholder site: {local[:5]}"
    )
    # (the code's own 127.0.0.1, a socket's address, is no link)
    text = "".join(_pages(_pdf(language)))
    assert not re.search(
        r"https?://(127\.0\.0\.1|localhost)|owner\.github\.io", text
    ), f"{language}: a printed local or placeholder address"
    assert "owner" not in report["site"].lower().split("//")[1].split(".")[0]


@pytest.mark.parametrize("language", PDFS)
def test_citations_land_in_the_bibliography(pdfs, language):
    reader, _ = pdfs[language]
    chapters = _chapters(reader)
    bibliography = next(
        i
        for i, (title, _) in enumerate(chapters)
        if title in ("Bibliography", "参考文献")
    )
    bib_pages = range(
        chapters[bibliography][1],
        (
            chapters[bibliography + 1][1]
            if bibliography + 1 < len(chapters)
            else len(reader.pages)
        ),
    )
    links = _links(_pdf(language))
    citations = [
        (n, dest)
        for n, (x0, y0, x1, y1), dest in links
        if isinstance(dest, int) and _cites(_pdf(language), n, x0, y0, x1, y1)
    ]
    assert len(citations) > 30, f"{language}: {len(citations)} citation links"
    wrong = [(n + 1, dest + 1) for n, dest in citations if dest not in bib_pages]
    assert not wrong, (
        f"{language}: {len(wrong)} of {len(citations)} citations land outside the"
        f" bibliography (pages {bib_pages.start + 1}-{bib_pages.stop}): {wrong[:10]}"
    )


@functools.lru_cache(maxsize=None)
def _year_boxes(pdf: str) -> dict[int, list[tuple[float, float, float, float]]]:
    """Where each page prints a citation's year in brackets ([2017], [2015a]; 2017] and
    [2017 too)."""
    boxes: dict[int, list] = {}
    for n, x0, y0, x1, y1, word in _all_words(pdf):
        if re.fullmatch(r"\[?(19|20)\d\d[a-z]?[\],;]*\]?[.,;:)]*", word) and (
            "[" in word or "]" in word
        ):
            boxes.setdefault(n, []).append((x0, y0, x1, y1))
    return boxes


@functools.lru_cache(maxsize=None)
def _all_words(pdf: str) -> list:
    out = subprocess.run(
        ["pdftotext", "-bbox", pdf, "-"], capture_output=True, text=True, check=True
    ).stdout
    words, n, height = [], -1, 0.0
    for line in out.splitlines():
        if "<page " in line:
            n += 1
            height = float(re.search(r'height="([\d.]+)"', line).group(1))
        elif "<word " in line:
            m = re.search(
                r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)"'
                r' yMax="([\d.]+)">(.*)</word>',
                line,
            )
            if m is None:  # a word with a line break in it
                continue
            x0, y0, x1, y1 = (float(v) for v in m.groups()[:4])
            words.append((n, x0, height - y1, x1, height - y0, unescape(m.group(5))))
    return words


def _cites(pdf: str, n: int, x0: float, y0: float, x1: float, y1: float) -> bool:
    """Whether a link's rectangle holds a citation's bracketed year."""
    return any(
        x0 - 1 <= (a + c) / 2 <= x1 + 1 and y0 - 1 <= (b + d) / 2 <= y1 + 1
        for a, b, c, d in _year_boxes(pdf).get(n, [])
    )


def _interactive_widgets() -> dict[str, int]:
    """Chapter -> how many of its outputs are widgets with a control (a slider, a
    dropdown …), from the widget state its notebook stores (a progress bar has none)."""
    controls = re.compile(
        r"(Slider|Dropdown|ToggleButtons|Button|Play|Select|Checkbox|Text|RadioButtons)Model$"
    )
    found = {}
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        notebook = json.loads(nb.read_text(encoding="utf-8"))
        state = (
            notebook["metadata"]
            .get("widgets", {})
            .get("application/vnd.jupyter.widget-state+json", {})
            .get("state", {})
        )

        def models(model_id, seen):
            if model_id in seen or model_id not in state:
                return []
            seen.add(model_id)
            refs = re.findall(
                r"IPY_MODEL_([0-9a-f]+)", json.dumps(state[model_id]["state"])
            )
            return [state[model_id]["model_name"]] + [
                m for r in refs for m in models(r, seen)
            ]

        for cell in notebook["cells"]:
            for output in cell.get("outputs", []):
                view = output.get("data", {}).get(
                    "application/vnd.jupyter.widget-view+json"
                )
                if view and any(
                    controls.search(m) for m in models(view["model_id"], set())
                ):
                    found[f"chapters/{nb.stem}"] = (
                        found.get(f"chapters/{nb.stem}", 0) + 1
                    )
    return found


@pytest.mark.parametrize("language", PDFS)
def test_every_widget_is_printed_with_its_live_address(pdfs, language):
    _, report = pdfs[language]
    text = "".join(
        "".join("".join(_body(page)).split()) for page in _pages(_pdf(language))
    )
    widgets = _interactive_widgets()
    assert sum(widgets.values()) >= 5, widgets
    for doc, count in widgets.items():
        line = "".join(f"{LIVE[language]}{report['site']}{doc}.html".split())
        assert text.count(line) >= count, (
            f"{language}: {count} widgets in {doc}, {text.count(line)} printed with"
            f" {line!r}"
        )


@pytest.mark.parametrize("language", PDFS)
def test_no_page_with_fewer_than_3_lines_but_a_chapters_last(pdfs, language):
    """A page holds 3 lines of text or more, or a picture, unless it is the title page
    or a chapter's last (the next starts a page)."""
    _tool("pdfimages")
    reader, _ = pdfs[language]
    starts = {page for _, page in _chapters(reader)}
    listing = subprocess.run(
        ["pdfimages", "-list", _pdf(language)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    pictured = {
        int(line.split()[0]) - 1
        for line in listing.splitlines()[2:]
        if line.split()[2] == "image"
    }
    short = []
    for n, page in enumerate(_pages(_pdf(language))):
        body = [line for line in _body(page) if line.strip()]
        if (
            len(body) < 3
            and n > 0
            and n + 1 not in starts
            and n + 1 != len(reader.pages)
            and n not in pictured
        ):
            short.append((n + 1, [line.strip()[:40] for line in body]))
    assert not short, (
        f"{language}: {len(short)} pages with fewer than 3 lines: {short[:10]}"
    )


@pytest.mark.parametrize("language", PDFS)
def test_one_title_per_edition(pdfs, language):
    """The title page, the running heads and the first chapter's heading name the book
    alike."""
    reader, _ = pdfs[language]
    title = _chapters(reader)[1][0]  # after the contents: the introduction
    head = _pages(_pdf(language))[5].split("\n")[0]
    assert (
        title in " ".join(reader.pages[0].extract_text().split()) and title in head
    ), (
        f"{language}: the first chapter is {title!r}, the title page and running heads"
        f" say otherwise ({head.strip()!r})"
    )


def test_a_narrow_table_column_wraps_between_words_not_inside_them(pdfs):
    """Chapter 1's table of queries, keys and values: its short first columns hold their
    words whole ("name", "symbol", "query"), where the web stylesheet's wrap-anywhere
    once printed "nam/e", "symb/ol" and "quer/y" (print.css overrides it in every
    cell)."""
    _tool("pdftotext")
    pages = _text(_pdf("en")).split("\f")
    page = next(p for p in pages if "borrowed from databases" in p)
    table = page[page.index("borrowed from databases") :]
    rows = [line.split() for line in table.splitlines() if line.strip()]
    assert any(row[:2] == ["name", "symbol"] for row in rows), table
    assert any(row[:2] == ["query", "q"] for row in rows), table
