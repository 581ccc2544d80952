"""The book as a PDF, in both languages: `make pdf` writes them into _build/pdf.

    .venv/bin/python scripts/make_pdf.py                # both editions
    .venv/bin/python scripts/make_pdf.py --only zh_CN   # one
    .venv/bin/python scripts/make_pdf.py --no-build     # print the last build's pages

Each edition is built by Jupyter Book as one HTML page (`--builder singlehtml`; the
Chinese one with the configuration scripts/build_book.py writes for it), into a folder
of its own, _build/pdf-pages/<language> (apart from the HTML book's builds, whose
doctrees a build running at the same time would read half-written). The page lands in
book/ with paths relative to the build's root (jupyter-book#2204), so it is copied
there; then it is served over HTTP and printed by the system Chromium (found as the
browser tests find it) through Playwright's `page.pdf()`, once MathJax's own promise has
resolved and the widgets are drawn: bookmarks from the headings (Chromium's tagged PDF
outline), page numbers in the footer, links kept inside the PDF. The print stylesheet
and its script are the book's own, book/_static/print.css and print.js (a browser's
print of any page uses them too); print.js adds the title page and the contents. With
`--no-build`, the last single page is printed with the current print.css and print.js.

After printing, the PDF is finished here (pikepdf): Chromium has no page counter for
another element, so the contents' page numbers are drawn into the PDF beside each of its
links, from the page its link lands on (digits of DejaVu Sans, embedded); the bookmarks
take their titles from the headings as print.js read them (Chromium's repeat a heading's
first line where the heading starts a page, and drop its maths, which MathJax draws from
its stylesheet).

Route: Chromium, kept over a paged-media engine. WeasyPrint runs no JavaScript (the
maths, the widgets and chapter 12b's translator are drawn by scripts) and Vivliostyle is
a second browser toolchain (npm) for the same print; Sphinx's LaTeX builder (xeCJK)
would need every notebook output, widget and raw-HTML figure converted. What paged media
would add, page numbers in the contents and `break-*` rules, Chromium does itself or
this module adds after printing.

Before printing, in print media and at the width of the printed column, the page is
measured: code blocks and display equations wider than the column, with the print
stylesheet and without. The figures go into _build/pdf/<name>.json beside each PDF
(tests/test_pdf.py reads them). Where the HTML book is built (`make book`), each PDF is
also copied beside it, into _build/html/pdf, where the introduction links to it (and the
Pages workflow publishes it)."""

from __future__ import annotations

import argparse
import html
import io
import json
import re
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

import pikepdf
import yaml

from booktools import config as book_config
from booktools.build import BUILD, HTML, ROOT, TITLES, config_for
from booktools.editions import book_url
from booktools.loopback import serve

OUT = BUILD / "pdf"
# each edition's single-page build, its own folder
PAGES = BUILD / "pdf-pages"
PDF_NAMES = {"en": "the-transformer-built", "zh_CN": "the-transformer-built-zh"}
MARGIN_MM = 20  # left and right; the column is 210 - 2 * 20 mm wide
COLUMN_PX = round((210 - 2 * MARGIN_MM) / 25.4 * 96)
HEADER = (
    '<div style="font: 7.5pt sans-serif; color: #777; width: 100%; margin: 0 {m}mm;'
    " display: flex; justify-content:"
    ' space-between"><span>{title}</span><span>{edition}</span></div>'
)
FOOTER = (
    '<div style="font: 8pt sans-serif; color: #444; width: 100%; text-align: center">'
    '<span class="pageNumber"></span> / <span class="totalPages"></span></div>'
)
WIDGET_VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]'
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# every widget view whose model is in the page's saved state has been drawn by the
# embedder
WIDGETS_DRAWN = f"""() => {{
  const state = JSON.parse(
    document.querySelector('script[type="{WIDGET_STATE}"]').textContent
  ).state;
  return [...document.querySelectorAll('{WIDGET_VIEW}')].every((view) =>
    !(JSON.parse(view.textContent).model_id in state) ||
    view.parentElement.querySelector('.widget-subarea'));
}}"""


def chromium() -> str:
    """The system Chromium, as the browser tests find it (Debian's `chromium`
    package)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return str(shutil.which(name))
    raise SystemExit(
        "Chromium not found: install it with `sudo apt-get install chromium`"
        " (Debian/Ubuntu)"
    )


def edition_config(language: str) -> dict[str, Any]:
    """The edition's Jupyter Book configuration: `_config.yml`, or build_book.py's for a
    translation."""
    if language == "en":
        return book_config.config()
    (PAGES / language).mkdir(parents=True, exist_ok=True)
    return config_for(language, PAGES / language)


def build_page(language: str) -> Path:
    """Build the edition as one HTML page and copy it to its build's root; the copy's
    path."""
    jb = str(Path(sys.executable).with_name("jupyter-book"))
    root = PAGES / language
    root.mkdir(parents=True, exist_ok=True)
    cmd = [
        jb,
        "build",
        str(ROOT),
        "--builder",
        "singlehtml",
        "--path-output",
        str(root),
    ]
    if language != "en":
        config = yaml.safe_dump(
            edition_config(language), allow_unicode=True, sort_keys=False
        )
        (root / "_config.yml").write_text(config, encoding="utf-8")
        cmd += ["--config", str(root / "_config.yml")]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(
            f"{language}: the single-page build"
            f" failed:\n{(proc.stdout + proc.stderr)[-4000:]}"
        )
    return copy_to_root(language)


def copy_to_root(language: str) -> Path:
    """The built single page, copied from book/ to the root its asset paths are relative
    to."""
    folder = PAGES / language / "_build" / "singlehtml"
    # the current ones (--no-build prints an older page)
    for name in ("print.css", "print.js"):
        shutil.copyfile(ROOT / "book" / "_static" / name, folder / "_static" / name)
    start = book_config.root_page()
    page = folder / f"{PDF_NAMES[language]}.html"
    text = (folder / f"{start}.html").read_text(encoding="utf-8")
    page.write_text(
        text.replace(
            "</head>", widget_scripts(edition_config(language)) + "\n</head>", 1
        ),
        encoding="utf-8",
    )
    return page


def widget_scripts(config: dict[str, Any]) -> str:
    """What MyST-NB writes into each page with widgets and the single page lacks: their
    state, the embedder."""
    state: dict[str, Any] = {}
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        widgets = json.loads(nb.read_text(encoding="utf-8"))["metadata"].get(
            "widgets", {}
        )
        state.update(widgets.get(WIDGET_STATE, {}).get("state", {}))
    body = json.dumps({"version_major": 2, "version_minor": 0, "state": state}).replace(
        "</", "<\\/"
    )
    tags = [f'<script type="{WIDGET_STATE}">{body}</script>']
    for path, attrs in config["sphinx"]["config"]["nb_ipywidgets_js"].items():
        extra = "".join(
            f' {name}="{html.escape(value)}"' for name, value in attrs.items()
        )
        tags.append(f'<script src="_static/{path}"{extra}></script>')
    return "\n".join(tags)


def book_meta(language: str) -> dict[str, Any]:
    """What print.js puts on the title page and in the contents (bookPrint.book)."""
    folder = edition_config("en")["sphinx"]["config"]["language_editions"][language]
    toc = book_config.toc()
    git = ["git", "-C", str(ROOT), "log", "-1", "--format=%h %cs"]
    commit, _, date = (
        subprocess.run(git, capture_output=True, text=True)
        .stdout.strip()
        .partition(" ")
    )
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {
        "title": TITLES.get(language, edition_config("en")["title"]),
        "root": toc["root"],
        "commit": (commit or "unknown") + ("+" if dirty else ""),
        "date": date or time.strftime("%Y-%m-%d"),
        "site": book_url() + (f"{folder}/" if folder else ""),
        "parts": [[c["file"] for c in part["chapters"]] for part in toc["parts"]],
    }


def load(page: Any, url: str) -> None:
    """Open the page and wait for what it draws: MathJax (its own promise), widgets, the
    translator."""
    page.goto(url, wait_until="load", timeout=300_000)
    page.wait_for_function(
        "() => window.MathJax && MathJax.startup && MathJax.startup.promise",
        timeout=120_000,
    )
    page.evaluate("() => MathJax.startup.promise.then(() => true)")
    page.wait_for_function(WIDGETS_DRAWN, timeout=120_000)
    if page.locator("#translator").count():
        # chapter 12b's translator prints one example: its first, translated in this
        # browser
        state = "() => document.getElementById('translator').dataset.state"
        page.wait_for_function(
            f"() => ['ready', 'error'].includes(({state})())", timeout=120_000
        )
        if page.evaluate(state) == "ready":
            page.click("#tr-go")
            page.wait_for_function(
                f"() => ['done', 'error', 'refused'].includes(({state})())",
                timeout=120_000,
            )
    page.evaluate(
        "() => Promise.all([...document.images].map((i) => { i.loading = 'eager';"
        " return i.decode().catch(() => null); })).then(() =>"
        " document.fonts.ready).then(() => true)"
    )


def print_pdf(page: Any, language: str, target: Path) -> dict[str, Any]:
    """Lay the loaded page out for print, measure it, print it to `target`; the
    measurements."""
    meta = book_meta(language)
    page.emulate_media(media="print")
    start = time.perf_counter()
    laid = page.evaluate("(meta) => bookPrint.book(meta)", meta)
    before = page.evaluate("() => bookPrint.measure(false)")
    after = page.evaluate("() => bookPrint.measure(true)")
    laid_out = time.perf_counter()
    edition = "中文版" if language.startswith("zh") else "English edition"
    header = HEADER.format(
        m=MARGIN_MM, title=html.escape(meta["title"]), edition=edition
    )
    page.pdf(
        path=str(target),
        format="A4",
        print_background=True,
        outline=True,
        tagged=True,
        display_header_footer=True,
        header_template=header,
        footer_template=FOOTER,
        margin={
            "top": "16mm",
            "bottom": "14mm",
            "left": f"{MARGIN_MM}mm",
            "right": f"{MARGIN_MM}mm",
        },
    )
    printed = time.perf_counter()
    finished = finish(target, laid)
    return {
        "layout_s": round(laid_out - start, 1),
        "print_s": round(printed - laid_out, 1),
        "finish_s": round(time.perf_counter() - printed, 1),
        "commit": meta["commit"],
        "site": meta["site"],
        "wrapped_code_lines": laid["wrapped"],
        "code_char_pt": round(laid["codeCharPx"] * 0.75, 5),
        **finished,
        "without_print_css": before,
        "with_print_css": after,
    }


def make_pdf(browser: Any, language: str, build: bool) -> dict[str, Any]:
    """One edition: built as one page (unless `build` is false), printed; its report."""
    start = time.perf_counter()
    source = build_page(language) if build else copy_to_root(language)
    built = time.perf_counter()
    target = OUT / f"{PDF_NAMES[language]}.pdf"
    with serve(source.parent) as address:
        page = browser.new_page(viewport={"width": COLUMN_PX, "height": 1000})
        load(page, f"{address}/{source.name}")
        loaded = time.perf_counter()
        report = print_pdf(page, language, target)
        page.close()
    report = {
        "edition": language,
        "pdf": str(target.relative_to(ROOT)),
        "pages": report.pop("pages"),
        "megabytes": round(target.stat().st_size / 1e6, 1),
        "build_s": round(built - start, 1),
        "load_s": round(loaded - built, 1),
        **report,
    }
    target.with_suffix(".json").write_text(
        json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8"
    )
    # beside the HTML book (`make book`), where its introduction links to it
    if HTML.is_dir():
        (HTML / "pdf").mkdir(exist_ok=True)
        shutil.copyfile(target, HTML / "pdf" / target.name)
    return report


def finish(target: Path, laid: dict[str, Any]) -> dict[str, Any]:
    """Finish the printed PDF: the contents' page numbers (`contents_numbers`), the
    bookmarks' titles (`bookmark_titles`), the fonts' text maps (`searchable`), its
    objects packed into compressed object streams (qpdf, through pikepdf: Chromium
    writes the tagged structure as 250,000 plain objects, two thirds of the file). What
    it did, and the number of pages."""
    with pikepdf.open(target, allow_overwriting_input=True) as pdf:
        numbered = contents_numbers(pdf, laid["chapters"], laid["sections"])
        renamed = bookmark_titles(pdf, laid["headings"])
        none = pikepdf.Dictionary()
        fonts = {
            font.objgen: font
            for page in pdf.pages
            for font in page.obj.get("/Resources", none).get("/Font", none).values()
        }
        for font in fonts.values():
            cmap = font.get("/ToUnicode")
            fixed = searchable(cmap.read_bytes()) if cmap is not None else None
            if cmap is not None and fixed is not None:
                cmap.write(fixed)
        pdf.save(
            target,
            object_stream_mode=pikepdf.ObjectStreamMode.generate,
            compress_streams=True,
        )
        return {
            "pages": len(pdf.pages),
            "contents_numbers": numbered,
            "bookmarks_renamed": renamed,
        }


PAGE_PT = (595.28, 841.89)  # A4
# the contents' type: print.css's 15 px, and 0.88 of it
NUMBER_PT = {"chapter": 11.25, "section": 9.9}


def digits_font(pdf: pikepdf.Pdf) -> tuple[pikepdf.Object, dict[str, float]]:
    """A font of the ten digits, DejaVu Sans (matplotlib's copy) subset and embedded:
    the font, and each digit's width in thousandths of the type size."""
    import matplotlib
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf")
    options = subset.Options()
    # FontForge's timestamps, which fontTools cannot subset
    options.drop_tables += ["FFTM"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(text="0123456789")
    subsetter.subset(font)
    scale = 1000 / font["head"].unitsPerEm
    cmap = font.getBestCmap()
    widths = {d: font["hmtx"][cmap[ord(d)]][0] * scale for d in "0123456789"}
    data = io.BytesIO()
    font.save(data)
    head = font["head"]
    descriptor = pikepdf.Dictionary(
        Type=pikepdf.Name.FontDescriptor,
        FontName=pikepdf.Name("/BOOKPN+DejaVuSans"),
        Flags=32,
        FontBBox=[
            round(v * scale) for v in (head.xMin, head.yMin, head.xMax, head.yMax)
        ],
        ItalicAngle=0,
        Ascent=round(font["hhea"].ascent * scale),
        Descent=round(font["hhea"].descent * scale),
        CapHeight=729,
        StemV=80,
        FontFile2=pikepdf.Stream(pdf, data.getvalue()),
    )
    return (
        pdf.make_indirect(
            pikepdf.Dictionary(
                Type=pikepdf.Name.Font,
                Subtype=pikepdf.Name.TrueType,
                BaseFont=pikepdf.Name("/BOOKPN+DejaVuSans"),
                FirstChar=48,
                LastChar=57,
                Widths=[round(widths[d]) for d in "0123456789"],
                Encoding=pikepdf.Name.WinAnsiEncoding,
                FontDescriptor=pdf.make_indirect(descriptor),
            )
        ),
        widths,
    )


def contents_numbers(pdf: pikepdf.Pdf, chapters: list[str], sections: list[str]) -> int:
    """Write, beside each of the contents' links, the number of the page it lands on: a
    chapter's at the column's right edge, a section's in the room print.css keeps after
    its link. How many."""
    kinds = {**{s: "section" for s in sections}, **{c: "chapter" for c in chapters}}
    dests = pdf.Root.get("/Dests", pikepdf.Dictionary())
    index = {page.obj.objgen: i for i, page in enumerate(pdf.pages)}
    font, widths = digits_font(pdf)
    right = PAGE_PT[0] - MARGIN_MM / 25.4 * 72
    written = 0
    for page in pdf.pages[1:12]:  # the contents follow the title page
        # a link's last line: its lowest rectangle
        last: dict[str, list[float]] = {}
        for annot in page.obj.get("/Annots", []):
            name = str(annot.get("/Dest", ""))[1:]
            if name in kinds:
                rect = [float(v) for v in annot.Rect]
                if (
                    name not in last
                    or rect[1] < last[name][1] - 1
                    or (abs(rect[1] - last[name][1]) <= 1 and rect[2] > last[name][2])
                ):
                    last[name] = rect
        ops = []
        for name, (x0, y0, x1, y1) in last.items():
            dest = dests.get("/" + name)
            if dest is None or dest[0].objgen not in index:
                continue
            text = str(index[dest[0].objgen] + 1)
            size = NUMBER_PT[kinds[name]]
            width = sum(widths[d] for d in text) * size / 1000
            x = (right if kinds[name] == "chapter" else x1) - width
            # the link's last line box, the text centred in it
            line = min(y1 - y0, size * 1.5)
            y = y0 + (line - size * 1.164) / 2 + size * 0.236
            ops.append(
                f"BT /BookPN {size} Tf 1 0 0 1 {x:.2f} {y:.2f} Tm ({text}) Tj ET"
            )
            written += 1
        if ops:
            page.contents_coalesce()
            old = page.obj.Contents.read_bytes()
            new = (
                b"q\n"
                + old
                + b"\nQ\n/Artifact BMC q 0.2 0.2 0.2 rg\n"
                + "\n".join(ops).encode()
                + b"\nQ EMC\n"
            )
            page.obj.Contents = pikepdf.Stream(pdf, new)
            resources = page.obj.Resources
            if "/Font" not in resources:
                resources.Font = pikepdf.Dictionary()
            resources.Font.BookPN = font
    return written


def bookmark_titles(pdf: pikepdf.Pdf, headings: list[dict[str, Any]]) -> int:
    """Each bookmark titled as its heading reads, maths included (print.js's `headings`,
    in the page's order): Chromium's titles, from the tagged text, drop the maths and
    repeat a heading's first line where it starts a page. A bookmark is matched to the
    next heading whose text without maths starts as its title does. How many titles
    changed."""

    # how many characters two titles start with alike
    def shared(a: str, b: str) -> int:
        a, b = "".join(a.split()), "".join(b.split())
        return next(
            (i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b))
        )

    changed, at = 0, 0
    with pdf.open_outline() as outline:
        stack = list(reversed(outline.root))
        while stack:
            item = stack.pop()
            stack.extend(reversed(item.children))
            window = range(at, min(at + 8, len(headings)))
            scores = [(shared(item.title, headings[j]["plain"]), -j) for j in window]
            if not scores:
                break
            score, j = max(scores)
            j = -j
            if (
                score >= min(6, len("".join(headings[j]["plain"].split())))
                and score > 0
            ):
                if item.title != headings[j]["text"]:
                    item.title = headings[j]["text"]
                    changed += 1
                at = j + 1
    return changed


BF_BLOCK = re.compile(rb"\d+\s+begin(bfchar|bfrange)(.*?)end\1", re.S)
BF_CHAR = re.compile(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]*)>")
BF_RANGE = re.compile(
    rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*(<[0-9A-Fa-f]*>|\[[^\]]*\])"
)
# CJK radicals (supplement) and Kangxi radicals
RADICALS = re.compile("[\u2e80-\u2fdf]")
# the supplement's simplified radicals, which NFKC leaves alone, and the characters they
# look like
SIMPLIFIED = str.maketrans(
    dict(
        zip(
            "⻅⻆⻈⻉⻋⻓⻔⻘⻙⻚⻛⻜⻢⻤⻥⻦⻧⻨⻩⻬⻮⻳",
            "见角讠贝车长门青韦页风飞马鬼鱼鸟卤麦黄齐齿龟",
        )
    )
)


def searchable(cmap: bytes) -> bytes | None:
    """A font's ToUnicode map with every radical replaced by its character
    (⽂ -> 文, ⻅ -> 见), or None when it has none. Noto CJK draws both with one glyph
    and Chromium names the glyph by the first code point, the radical's: the PDF's text
    would not match a search for 文, nor copy as it."""
    utf16 = lambda h: bytes.fromhex(h.decode()).decode("utf-16-be")
    entries: list[tuple[int, int, str]] = []  # (hex digits of the code, code, text)
    for kind, body in BF_BLOCK.findall(cmap):
        if kind == b"bfchar":
            entries += [
                (len(src), int(src, 16), utf16(dst))
                for src, dst in BF_CHAR.findall(body)
            ]
            continue
        for low, high, dst in BF_RANGE.findall(body):
            count = int(high, 16) - int(low, 16) + 1
            if dst.startswith(b"["):
                texts = [utf16(d) for d in re.findall(rb"<([0-9A-Fa-f]*)>", dst)]
            else:
                first = utf16(dst[1:-1])
                texts = [first[:-1] + chr(ord(first[-1]) + i) for i in range(count)]
            entries += [
                (len(low), int(low, 16) + i, text) for i, text in enumerate(texts)
            ]
    if not any(RADICALS.search(text) for _, _, text in entries):
        return None
    named = [
        (
            width,
            code,
            RADICALS.sub(
                lambda m: unicodedata.normalize("NFKC", m[0].translate(SIMPLIFIED)),
                text,
            ),
        )
        for width, code, text in entries
    ]
    lines = [
        f"<{code:0{width}X}> <{text.encode('utf-16-be').hex().upper()}>"
        for width, code, text in named
    ]
    blocks = "".join(
        f"{len(lines[i : i + 100])} beginbfchar\n"
        + "\n".join(lines[i : i + 100])
        + "\nendbfchar\n"
        for i in range(0, len(lines), 100)
    ).encode()
    start = BF_BLOCK.search(cmap).start()  # type: ignore[union-attr]
    rest = BF_BLOCK.sub(b"", cmap)
    return rest[:start] + blocks + rest[start:]


def summary(r: dict[str, Any]) -> str:
    """One report as the lines `make pdf` prints."""
    a, b = r["with_print_css"], r["without_print_css"]
    return (
        f"{r['pdf']}: {r['pages']} pages, {r['megabytes']} MB; built in {r['build_s']}"
        f" s, loaded in {r['load_s']} s, laid out and measured in {r['layout_s']} s,"
        f" printed in {r['print_s']} s, finished in {r['finish_s']} s;"
        f" {r['wrapped_code_lines']} code lines broken at the column,"
        f" {r['contents_numbers']} page numbers in the contents,"
        f" {r['bookmarks_renamed']} bookmarks retitled\n    wider than the column:"
        f" {a['code_too_wide']} of {a['code_blocks']} code blocks ({b['code_too_wide']}"
        f" without the print stylesheet), {a['equations_too_wide']} of {a['equations']}"
        f" display equations ({b['equations_too_wide']} without;"
        f" {a['equations_shrunk']} shrunk)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=list(PDF_NAMES), help="print one edition")
    parser.add_argument(
        "--no-build", action="store_true", help="print the single pages built last time"
    )
    args = parser.parse_args(argv)
    # the editions side by side, one process each: each keeps about one core busy
    if args.only is None:
        again = [sys.executable, "-m", "booktools.pdf"] + (
            ["--no-build"] if args.no_build else []
        )
        runs = [
            subprocess.Popen(again + ["--only", language]) for language in PDF_NAMES
        ]
        return max(run.wait() for run in runs)
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium(), headless=True, args=["--no-sandbox"]
        )
        report = make_pdf(browser, args.only, not args.no_build)
        browser.close()
    print(summary(report), flush=True)
    clipped = (
        report["with_print_css"]["code_too_wide"]
        + report["with_print_css"]["equations_too_wide"]
    )
    if clipped:
        print(
            f"warning: {clipped} code blocks or equations wider than the printed"
            " column",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
