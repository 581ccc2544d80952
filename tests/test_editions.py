"""The runner editions (scripts/make_notebooks.py) stay true to their chapters.

A runner edition is what Colab, Binder and `make lab` open: the chapter's code cells and
markdown without MyST. These tests generate the editions of all chapters (into a
temporary folder) and fail when

- a chapter cannot be converted (a glued key without a value, a role or directive the
  generator does not know): the message names the chapter and the construct;
- any MyST syntax survives in an edition's markdown (a ``{role}``, a ````
  ```{directive} ```` fence, a ``:::`` fence, a ``(target)=``): every survivor is
  listed;
- a glued value is not written into the edition as its text;
- an edition's markdown differs from its chapter's page in a number: the multiset of
  numbers of every markdown cell, read from the edition, equals the one read from the
  chapter's source as the page shows it (glued values pasted, citations as their years,
  roles as their text);
- the code cells are not the chapter's (same sources and outputs, the install cell
  aside), or a hint or solution is not folded.

One edition (chapter 1) is executed top to bottom in a fresh kernel under strict nbval.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT, TEST_REPOSITORY
from test_glue_keys import referenced_keys
from test_prose_numbers import NUMBER

from booktools import editions as mk
from booktools import myst
from booktools.install_cell import INSTALL_MARK

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
# short (seconds), and it reads ../book
EXECUTED = ROOT / "chapters" / "01_qkv_attention.ipynb"


@pytest.fixture(scope="module")
def editions(tmp_path_factory) -> dict[str, Path]:
    """chapter name -> its edition, all written by the generator into a temporary
    folder."""
    out = tmp_path_factory.mktemp("editions")
    try:
        paths = mk.write_editions(CHAPTERS, out, log=lambda _: None)
    except mk.EditionError as exc:
        pytest.fail(f"chapters that have no runner edition:\n{exc}")
    return {p.name: p for p in paths}


def myst_survivors(source: str) -> list[str]:
    """What MyST (the book's own reader, booktools.myst) still reads as MyST in an
    edition's markdown: roles, directives, colon fences, targets (a role quoted in code
    is code, not a survivor)."""
    found = [f"role: {p.source!r}" for p in myst.roles(source)]
    found += [f"directive: {{{d.name}}} {d.argument}" for d in myst.directives(source)]
    found += [
        f"colon fence: {t.info!r}"
        for t in myst.blocks(source)
        if t.type == "colon_fence"
    ]
    return found + [f"target: ({label})=" for label in myst.targets(source)]


def test_all_chapters_have_an_edition_in_english_and_in_chinese(editions):
    assert len(CHAPTERS) == 17
    assert sorted(editions) == sorted(
        [p.name for p in CHAPTERS] + [f"{p.stem}.zh.ipynb" for p in CHAPTERS]
    )
    for chapter in CHAPTERS:
        zh = nbformat.read(editions[f"{chapter.stem}.zh.ipynb"], as_version=4)
        en = nbformat.read(editions[chapter.name], as_version=4)
        assert zh.metadata["language"] == "zh_CN" and CJK.search(zh.cells[0].source), (
            chapter.name
        )
        # the code and its outputs are the English edition's, cell for cell
        assert [
            (c.source, c.get("outputs")) for c in zh.cells if c.cell_type == "code"
        ] == [
            (c.source, c.get("outputs")) for c in en.cells if c.cell_type == "code"
        ], chapter.name


CJK = re.compile(r"[\u4e00-\u9fff]")


def untranslated(chapter: Path, edition_markdown: str) -> list[str]:
    """The messages that the chapter's Chinese catalogue translates and that the Chinese
    edition's markdown still shows in English (as the edition writes them: roles and
    glue resolved). A translation that keeps the English (a quotation of the paper, then
    its translation) is left out, and so is English that a kept quotation contains."""
    tr = mk.messages(chapter, "zh_CN")
    conv = mk.Converter(
        chapter,
        mk.Glue(nbformat.read(chapter, as_version=4), chapter),
        mk.book_url("zh_CN"),
    )
    plain = lambda s: " ".join(conv.inline(s).split())
    kept = " ".join(plain(s) for m, s in tr.text.items() if plain(m) in plain(s))
    text = " ".join(edition_markdown.split())
    return [
        m
        for m, s in tr.text.items()
        if len(plain(m)) >= 12
        and plain(m) not in plain(s)
        and plain(m) in text
        and plain(m) not in kept
    ]


def test_chinese_editions_show_every_translation_the_catalogues_hold(editions):
    bad = []
    for chapter in CHAPTERS:
        ed = nbformat.read(editions[f"{chapter.stem}.zh.ipynb"], as_version=4)
        md = "\n".join(c.source for c in ed.cells if c.cell_type == "markdown")
        bad += [f"{chapter.stem}: {m[:100]!r}" for m in untranslated(chapter, md)]
    assert not bad, (
        f"{len(bad)} messages left in English in the Chinese runner editions:\n  "
        + "\n  ".join(bad)
    )


def test_untranslated_markdown_is_found():
    """The check above fails on an edition whose markdown was not translated: the
    English edition's."""
    chapter = ROOT / "chapters" / "05_masking.ipynb"
    english = "\n".join(
        c.source
        for c in mk.edition(chapter, language="en").cells
        if c.cell_type == "markdown"
    )
    assert len(untranslated(chapter, english)) > 20


def test_translation_keeps_quote_and_list_markers():
    tr = mk.Messages(
        "zh_CN",
        {
            "A long sentence that runs over two lines.": "一句话。",
            "Item one goes on.": "第一项。",
            "Title": "标题",
            "cell text": "单元格",
            "Quoted line one and line two.": "第一行\\\n第二行",
        },
        {},
    )
    src = (
        "# Title\n\nA long sentence that\nruns over two lines.\n\n- Item one\n  goes"
        " on.\n\n| cell text | other |\n|---|---|\n| x | y |\n\n> Quoted line one\n>"
        " and line two."
    )
    assert (
        mk.translate_blocks(src, tr)
        == "# 标题\n\n一句话。\n\n- 第一项。\n\n| 单元格 | other |\n|---|---|\n"
        "| x | y |\n\n> 第一行\\\n> 第二行"
    )


def test_no_myst_survives(editions):
    bad = [
        f"{name} cell {i}: {s}"
        for name, path in editions.items()
        for i, c in enumerate(nbformat.read(path, as_version=4).cells)
        if c.cell_type == "markdown"
        for s in myst_survivors(c.source)
    ]
    assert not bad, "MyST left in the runner editions:\n  " + "\n  ".join(bad)


def chapters_and_editions(editions):
    """(chapter path, chapter notebook, its edition) for every chapter."""
    for chapter in CHAPTERS:
        yield (
            chapter,
            nbformat.read(chapter, as_version=4),
            nbformat.read(editions[chapter.name], as_version=4),
        )


def test_every_glued_value_is_written_in(editions):
    missing = []
    for chapter, nb, ed in chapters_and_editions(editions):
        glue = mk.Glue(nb, chapter)
        for i, (src, out) in enumerate(zip(nb.cells, ed.cells)):
            if src.cell_type != "markdown":
                continue
            for role in myst.roles(src.source):
                if role.name in ("glue", "glue:text"):
                    text = mk.escape_markdown(glue.text(role.content))
                    if not text or text not in out.source:
                        missing.append(
                            f"{chapter.name} cell {i}: {role.content} = {text!r}"
                        )
            for key in referenced_keys(nbformat.v4.new_notebook(cells=[src])):
                if (
                    key.startswith("fig")
                    and f"attachment:{key.split('::')[-1]}." not in out.source
                ):
                    missing.append(f"{chapter.name} cell {i}: figure {key}")
    assert not missing, "glued values not written into the editions:\n  " + "\n  ".join(
        missing
    )


# --------------------------------------------------------------------- numbers: page vs
# edition

_BIB_YEARS = dict(
    re.findall(
        r"@\w+\{([^,\s]+),.*?\byear\s*=\s*[{\"]?(\d{4})",
        (ROOT / "book" / "references.bib").read_text(encoding="utf-8"),
        re.S,
    )
)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_TAG = re.compile(r"<[^>\n]+>")


def _page_lines(source: str) -> list[str]:
    """The lines of MyST markdown as its page shows them, read by booktools.myst: each
    directive's fence replaced by its title in a paragraph of its own (a glued figure's
    by nothing), its options dropped but a figure's alt text, its markdown body read the
    same way; targets dropped."""
    lines, out, at = source.split("\n"), [], 0
    for tok in mk._special_blocks(source):
        start, end = tok.map
        out += lines[at:start]
        d = myst.directive_of(tok)
        if tok.type == "myst_target":
            out.append("")
        elif d is None:  # a code block: as written
            out += lines[start:end]
        else:
            out.append("" if d.name.startswith("glue") else d.argument + "\n")
            out += [d.options["alt"]] if "alt" in d.options else []
            out += (
                d.body_lines if d.name in myst.RAW_BODIES else _page_lines(d.body)
            ) + [""]
        at = end
    return out + lines[at:]


def page_text(source: str, glue: "mk.Glue", chapter: Path) -> str:
    """A chapter's markdown cell as its page reads: glued values pasted, roles as their
    text, citations as their years, directive fences and options (but a figure's alt
    text) dropped."""
    lines = _page_lines(source)

    def role(r: myst.Piece) -> str:
        name, body = r.name, r.content
        if name in ("glue", "glue:text"):
            return glue.text(body)
        if name.startswith("cite"):
            return "; ".join(_BIB_YEARS[k.strip()] for k in body.split(","))
        text, target = myst.titled(body)
        if name == "doc" and text == target:
            rel = (
                (chapter.parent / target)
                if not target.startswith("/")
                else ROOT / target.lstrip("/")
            )
            return mk.doc_title(
                next(
                    rel.with_suffix(s)
                    for s in (".ipynb", ".md")
                    if rel.with_suffix(s).exists()
                )
            )
        return text

    text = myst.substitute_roles("\n".join(lines), role)
    return _TAG.sub(" ", _LINK_TARGET.sub("]", text))


def edition_text(source: str) -> str:
    return re.sub(
        r"\\([\\`*_\[\]|$])", r"\1", _TAG.sub(" ", _LINK_TARGET.sub("]", source))
    )


def numbers(text: str) -> collections.Counter:
    return collections.Counter(
        m.group() for m in NUMBER.finditer(text.replace("{,}", ","))
    )


def test_numbers_are_the_pages(editions):
    bad = []
    for chapter, nb, ed in chapters_and_editions(editions):
        glue = mk.Glue(nb, chapter)
        for i, (src, out) in enumerate(zip(nb.cells, ed.cells)):
            if src.cell_type == "markdown":
                page, edition = (
                    numbers(page_text(src.source, glue, chapter)),
                    numbers(edition_text(out.source)),
                )
                if page != edition:
                    bad.append(
                        f"{chapter.name} cell {i}: only on the page"
                        f" {dict(page - edition)}, only in the edition"
                        f" {dict(edition - page)}"
                    )
    assert not bad, (
        "editions whose numbers differ from their pages':\n  " + "\n  ".join(bad)
    )


def test_code_cells_are_the_chapters_and_folds_stay(editions):
    bad = []
    for chapter, nb, ed in chapters_and_editions(editions):
        if [c.cell_type for c in nb.cells] != [c.cell_type for c in ed.cells]:
            bad.append(f"{chapter.name}: the cells are not the chapter's, one for one")
            continue
        for i, (src, out) in enumerate(zip(nb.cells, ed.cells)):
            if src.cell_type == "code":
                # the chapter's clocks, then the edition's own install
                if INSTALL_MARK in src.source:
                    clocks = src.source[: src.source.index("\nif not all(")]
                    url, commit = mk.repository()
                    if (
                        not out.source.startswith(clocks)
                        or f'_REPOSITORY, _COMMIT = "{url}", "{commit}"'
                        not in out.source
                    ):
                        bad.append(
                            f"{chapter.name} cell {i}: the install cell lost the"
                            " chapter's lines or its commit"
                        )
                elif out.source != src.source or out.outputs != src.outputs:
                    bad.append(
                        f"{chapter.name} cell {i}: code or outputs differ from the"
                        " chapter's"
                    )
                if src.metadata.get("jupyter", {}).get("source_hidden") and not (
                    out.metadata.get("jupyter", {}).get("source_hidden")
                    and out.metadata.get("cellView") == "form"
                ):
                    bad.append(
                        f"{chapter.name} cell {i}: folded in the chapter, not in the"
                        " edition"
                    )
            elif myst.nested_directives(src.source, "dropdown"):
                opened = len(myst.nested_directives(src.source, "dropdown"))
                if (
                    out.source.count("<details>") != opened
                    or out.source.count("</details>") != opened
                ):
                    bad.append(
                        f"{chapter.name} cell {i}: {opened} dropdowns, not all in"
                        " <details>"
                    )
    assert not bad, "\n  ".join(bad)


# --------------------------------------------------------------------- the converter on
# its own


def _convert(source: str, glued: dict[str, str] | None = None) -> str:
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("glue(...)")
    code.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={"application/papermill.record/text/plain": repr(v)},
            metadata={
                "scrapbook": {"name": k, "mime_prefix": "application/papermill.record/"}
            },
        )
        for k, v in (glued or {}).items()
    ]
    nb.cells = [code]
    path = ROOT / "chapters" / "00_example.ipynb"
    return mk.Converter(path, mk.Glue(nb, path), "https://example.org/book/").convert(
        source
    )


def test_converter_writes_plain_markdown():
    md = _convert(
        "BLEU is {glue:text}`bleu`, {glue:text}`ratio:.1f` times;"
        " {cite:t}`vaswani2017attention` and {cite:p}`bahdanau2015neural`; a"
        " {term}`query <Query>`; `{glue:text}` in code.",
        {"bleu": "27.3", "ratio": 2.25},
    )
    assert "BLEU is 27.3, 2.2 times" in md
    assert (
        "[Vaswani et al. (2017)](https://example.org/book/book/bibliography.html)" in md
    )
    assert (
        "([Bahdanau et al., 2015](https://example.org/book/book/bibliography.html))"
        in md
    )
    # Sphinx keeps the case
    assert "[query](https://example.org/book/book/glossary.html#term-Query)" in md
    assert "`{glue:text}` in code" in md
    md = _convert(
        ":::{admonition} Careful\n:class: tip\nText **here**.\n:::\n\n::::{dropdown}"
        " Solution — exercise 1\nIt is $x$.\n\n```python\nprint(1)\n```\n::::"
    )
    assert md.startswith("> **Careful**\n>\n> Text **here**.")
    assert (
        "<details>\n<summary>Solution — exercise 1</summary>\n\nIt is"
        " $x$.\n\n```python\nprint(1)\n```\n\n</details>" in md
    )
    assert not myst_survivors(md)


@pytest.mark.parametrize(
    "source, named",
    [
        ("{glue:text}`nowhere`", "'nowhere'"),
        ("{abbr}`LN (LayerNorm)`", "{abbr}"),
        (":::{margin}\nside\n:::", "{margin}"),
        ("{term}`Flux capacitor`", "Flux capacitor"),
        ("{cite:t}`nobody2099`", "nobody2099"),
    ],
)
def test_unknown_constructs_are_errors(source, named):
    with pytest.raises(mk.EditionError, match=re.escape(named)):
        _convert(source)


def test_the_checks_find_what_they_look_for():
    assert myst_survivors(
        "a {term}`x` b\n:::{note}\nc\n:::\n(lbl)=\n```{code-cell}\n```"
    ) == [
        "role: '{term}`x`'",
        "directive: {note} ",
        "directive: {code-cell} ",
        "colon fence: '{note}'",
        "target: (lbl)=",
    ]
    assert myst_survivors(":::\nno directive\n:::") == ["colon fence: ''"]
    assert myst_survivors("code `{glue:text}` and\n```md\n{term}`x`\n```") == []
    assert numbers(
        edition_text("[Vaswani et al. (2017)](https://x/y2.html) and 0.51")
    ) == numbers("2017 0.51")


# --------------------------------------------------------------------- one edition,
# executed


def test_an_edition_runs_top_to_bottom_under_nbval(tmp_path):
    """Chapter 1's edition, in a fresh kernel, reproduces its stored outputs (strict
    nbval)."""
    [path] = mk.write_editions(
        [EXECUTED], tmp_path, log=lambda _: None, languages=("en",)
    )
    env = {
        **os.environ,
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "PYTHONHASHSEED": "0",
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(path),
            "--nbval",
            "--nbval-current-env",
            "--nbval-sanitize-with",
            str(ROOT / "tests" / "nbval_sanitize.cfg"),
            "--nbval-cell-timeout=600",
            "-p",
            "no:cacheprovider",
            "-q",
            "--rootdir",
            str(tmp_path),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = (proc.stdout + proc.stderr)[-4000:]
    assert proc.returncode == 0, (
        f"nbval on the edition of {EXECUTED.name} failed:\n{tail}"
    )
    assert re.search(r"\b\d+ passed\b", tail) and " failed" not in tail, tail


# --------------------------------------------------------------------- launch buttons

from booktools.ext import launch_editions


def _editions_branch() -> str:
    import yaml

    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["sphinx"][
        "config"
    ]["launch_editions_branch"]


def launch_targets(html: str, stem: str, suffix: str = "") -> dict[str, str]:
    """What a chapter page's Colab and Binder buttons must open: the edition (in the
    page's language: `suffix` ".zh" for the Chinese pages) on the editions' branch of
    the repository the build was given."""
    slug, branch, name = TEST_REPOSITORY, _editions_branch(), f"{stem}{suffix}.ipynb"
    return {
        "Colab": (
            f"https://colab.research.google.com/github/{slug}/blob/{branch}/chapters/{name}"
        ),
        "Binder": (
            f"https://mybinder.org/v2/gh/{slug}/{branch}?urlpath=lab/tree/chapters/{name}"
        ),
    }


def test_launch_urls_move_to_the_editions_branch_only():
    colab = "https://colab.research.google.com/github/o/r/blob/main/chapters/01_x.ipynb"
    binder = "https://mybinder.org/v2/gh/o/r/main?urlpath=lab/tree/chapters/01_x.ipynb"
    assert launch_editions.retarget(
        colab, "Colab", "main", "notebooks"
    ) == colab.replace("/main/", "/notebooks/")
    assert launch_editions.retarget(
        binder, "Binder", "main", "notebooks"
    ) == binder.replace("/main?", "/notebooks?")
    with pytest.raises(Exception, match="theme's launch URLs changed"):
        launch_editions.retarget(
            "https://colab.research.google.com/drive/xyz", "Colab", "main", "notebooks"
        )
    # on a Chinese page, the Chinese edition beside the English one
    assert launch_editions.retarget(
        colab, "Colab", "main", "notebooks", "zh_CN"
    ) == colab.replace("/main/", "/notebooks/").replace("01_x.ipynb", "01_x.zh.ipynb")
    assert launch_editions.retarget(
        binder, "Binder", "main", "notebooks", "zh_CN"
    ).endswith("chapters/01_x.zh.ipynb")
    # the workflow publishes the editions to the branch the buttons open
    workflow = (ROOT / ".github" / "workflows" / "book.yml").read_text(encoding="utf-8")
    assert "make notebooks" in workflow and "launch_editions_branch" in workflow
    assert _editions_branch() != mk.site.repository().branch


@pytest.mark.book
def test_built_pages_launch_the_editions():
    """In the built book (tests/test_book.py builds it), every chapter's Colab and
    Binder buttons open its runner edition; the edit button still opens the source."""
    from test_book import HTML

    if not (HTML / "chapters").exists():
        pytest.skip(
            "no built book in _build/html: `make book`, or run with tests/test_book.py"
        )
    bad = []
    url, branch = f"https://github.com/{TEST_REPOSITORY}", "main"
    for chapter in CHAPTERS:
        for folder, suffix in (("", ""), ("zh/", ".zh")):
            html = (HTML / folder / "chapters" / f"{chapter.stem}.html").read_text(
                encoding="utf-8"
            )
            hrefs = set(re.findall(r'href="([^"]+)"', html))
            bad += [
                f"{folder}{chapter.stem}: {kind}"
                for kind, href in launch_targets(html, chapter.stem, suffix).items()
                if href not in hrefs
            ]
            if f"{url}/edit/{branch}/chapters/{chapter.name}" not in hrefs:
                bad.append(f"{folder}{chapter.stem}: the edit button left the source")
    assert not bad, f"launch buttons that do not open the editions: {bad}"


@pytest.mark.book
def test_built_site_holds_no_placeholder():
    """The suite builds the site for publishing with the address setting
    (conftest.publishing_env): no page, and no notebook a page offers for download,
    names the placeholder repository."""
    from test_book import HTML

    if not (HTML / "chapters").exists():
        pytest.skip(
            "no built book in _build/html: `make book`, or run with tests/test_book.py"
        )
    bad = []
    for page in sorted(HTML.rglob("*")):
        if (
            page.suffix in (".html", ".ipynb", ".js", ".txt")
            and page.is_file()
            and "_vendor" not in page.parts
        ):
            text = page.read_text(encoding="utf-8", errors="replace")
            n = len(re.findall(r"github\.com/OWNER\b|owner\.github\.io", text))
            if n:
                bad.append(f"{page.relative_to(HTML)}: {n}")
    assert not bad, "the placeholder address in the built site:\n  " + "\n  ".join(bad)
    intro = (HTML / "chapters" / "01_qkv_attention.html").read_text(encoding="utf-8")
    assert f"https://github.com/{TEST_REPOSITORY}" in intro
