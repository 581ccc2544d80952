"""The Chinese edition's catalogues are complete and follow the rules of locales/zh_CN/TRANSLATING.md.

- Every message of the English edition, extracted afresh from the chapters and pages as they are now
  (Sphinx's gettext builder, as `make translations` runs it), has a translation that is neither empty
  nor fuzzy: a change of English prose asks for its translation in the same change. The test prints
  messages translated / total for every page.
- Every translation keeps its English message's glued values, maths, inline code, citations, link
  targets and numbers; shows each glossary term by the glossary's Chinese name, with the English at
  its first use on the page; keeps a quotation from a paper in English beside the Chinese
  (scripts/check_translations.py, whose rules are tested here on messages made to break them).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from conftest import ROOT

from booktools import translations as ct

LOCALE = ROOT / "locales" / "zh_CN" / "LC_MESSAGES"
TERMS = ct.term_index(ct.glossary_terms())
QUOTES = ct.paper_quotes()


def _read(path: Path):
    with path.open("rb") as f:
        return read_po(f)


@pytest.fixture(scope="module")
def english_messages(tmp_path_factory) -> dict[str, set[str]]:
    """{page: its messages}, extracted from the sources as they are now."""
    out = tmp_path_factory.mktemp("i18n")
    jb = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run([str(jb), "build", str(ROOT), "--builder", "custom", "--custom-builder", "gettext",
                           "--path-output", str(out), "-q"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    pots = out / "_build" / "gettext"
    return {str(p.relative_to(pots).with_suffix("")): {m.id for m in _read(p) if m.id}
            for p in sorted(pots.rglob("*.pot"))}


@pytest.mark.book
def test_every_english_message_is_translated(english_messages):
    lines, missing = [], []
    for page, messages in english_messages.items():
        po = LOCALE / f"{page}.po"
        assert po.exists(), f"no catalogue for {page}: run `make translations`"
        done = {m.id for m in _read(po) if m.id and m.string and not m.fuzzy}
        lines.append(f"{page}: {len(messages & done)}/{len(messages)} messages translated")
        missing += [f"{page}: {m[:100]!r}" for m in sorted(messages - done)]
    print("\n".join(lines))
    assert not missing, (f"{len(missing)} English messages have no translation (or a fuzzy one); run "
                         "`make translations` and translate them (locales/zh_CN/TRANSLATING.md):\n"
                         + "\n".join(missing[:30]))


def test_every_catalogue_belongs_to_a_page():
    pages = {p.relative_to(ROOT).with_suffix("").as_posix()
             for p in [*ROOT.glob("chapters/*.ipynb"), *ROOT.glob("book/*.md")]}
    for po in LOCALE.rglob("*.po"):
        assert po.relative_to(LOCALE).with_suffix("").as_posix() in pages, f"{po}: no such page"


@pytest.mark.parametrize("po", sorted(LOCALE.rglob("*.po")), ids=lambda p: p.stem)
def test_translations_follow_the_rules(po):
    problems, done, total = ct.check_catalogue(po, TERMS, QUOTES)
    print(f"{po.relative_to(LOCALE)}: {done}/{total} messages translated")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(map(str, problems[:20]))


def test_every_glued_word_is_translated():
    """Glued values that are words ("lower", "about 3 min on a 2-core CPU") are shown in Chinese on
    the Chinese pages: each one the chapters glue now has its translation, with its numbers."""
    problems, done, total = ct.check_glued()
    print(f"glued_values.po: {done}/{total} glued texts translated")
    assert total > 0
    assert not problems, (f"{len(problems)} glued texts: run `make translations` and translate them in "
                          "locales/zh_CN/glued_values.po:\n" + "\n".join(map(str, problems[:20])))


# ---- the checker's rules, on messages made to break them ----------------------------------------
GLUED = "It took {glue:text}`chapter_run_time` with $d_k = 64$, `attention()` and 12,000 rows ({cite:t}`vaswani2017attention`)."
GOOD = "用时 {glue:text}`chapter_run_time`，$d_k = 64$，`attention()`，12,000 行（{cite:t}`vaswani2017attention`）。"


def _problems(msgid: str, msgstr: str, seen: set | None = None) -> list[str]:
    return [p.what for p in ct.check_message(msgid, msgstr, TERMS, QUOTES, seen if seen is not None else set(), "t")]


def test_a_faithful_translation_passes():
    assert _problems(GLUED, GOOD) == []


@pytest.mark.parametrize("broken, kind", [
    (GOOD.replace("chapter_run_time", "chapter_time"), "role"),
    (GOOD.replace("{glue:text}`chapter_run_time`", "15 秒"), "role"),
    (GOOD.replace("$d_k = 64$", "$d_k=64$"), "maths"),
    (GOOD.replace("`attention()`", "`attention`"), "inline code"),
    (GOOD.replace("12,000", "12000"), "number"),
    (GOOD.replace("{cite:t}`vaswani2017attention`", "Vaswani 等人"), "role"),
])
def test_what_a_translation_must_keep(broken, kind):
    assert any(p.startswith(kind) for p in _problems(GLUED, broken)), kind


def test_links_keep_their_target():
    msgid = "See [chapter 2](02_scaling.ipynb)."
    assert _problems(msgid, "见[第 2 章](02_scaling.ipynb)。") == []
    assert any(p.startswith("link target") for p in _problems(msgid, "见[第 2 章](03_multi_head.ipynb)。"))


def test_terms_as_the_glossary_names_them_with_the_english_at_first_use():
    msgid = "Each {term}`head <Attention head>` has its own {term}`keys <Key>`."
    first = "每个{term}`注意力头 <Attention head>`（attention head）都有自己的{term}`键 <Key>`（key）。"
    seen: set = set()
    assert _problems(msgid, first, seen) == []
    later = "每个{term}`注意力头 <Attention head>`都有自己的{term}`键 <Key>`。"
    assert _problems(msgid, later, seen) == []                      # the same page, later: no English
    assert any("first use" in p for p in _problems(msgid, later))  # a new page: the English is due
    wrong = first.replace("注意力头 <", "头 <")
    assert any("the glossary says '注意力头'" in p for p in _problems(msgid, wrong))
    retargeted = first.replace("<Key>", "<Value>")
    assert any(p.startswith("term roles differ") for p in _problems(msgid, retargeted))


def test_paper_quotations_keep_the_english():
    quote = next(q for q in QUOTES if q.startswith("An attention function can be described"))
    assert _problems(quote, quote + "\\\n注意力函数可以描述为……") == []
    assert any("quotation" in p for p in _problems(quote, "注意力函数可以描述为……"))


def test_headings_and_blocks():
    assert _problems("1. Queries, keys and values", "1\\. 查询、键和值") == []
    assert any("numbered heading" in p for p in _problems("1. Queries, keys and values", "1. 查询、键和值"))
    assert any("block syntax" in p for p in _problems("A plain sentence.", "- 一个句子。"))
    assert any("line break" in p for p in _problems("A plain sentence.", "一个\n句子。"))
    bold = "**Two paths, one result.** By default the heads run fused."
    assert _problems(bold, "**两条路径，同一个结果**。默认情况下各个头融合计算。") == []
    assert any("emphasis" in p for p in _problems(bold, "**两条路径，同一个结果。**默认情况下各个头融合计算。"))


def test_a_pair_of_terms_may_be_shown_by_either_name():
    msgid = "A {term}`post-LN <Post-LN>` stack."
    assert _problems(msgid, "一个{term}`后置层归一化 <Post-LN>`（post-LN）堆叠。") == []
    assert _problems(msgid, "一个{term}`后置/前置层归一化 <Post-LN>`（post-LN）堆叠。") == []
    assert any("glossary says" in p for p in _problems(msgid, "一个{term}`层归一化 <Post-LN>`（post-LN）堆叠。"))


def test_the_glossary_is_read_whole():
    """Every entry has one Chinese name; the terms the chapters link are all found."""
    terms = ct.glossary_terms()
    assert len(terms) >= 60
    assert TERMS["multi-head attention"].chinese == "多头注意力"
    assert TERMS["layernorm"] is TERMS["layer normalization"]
