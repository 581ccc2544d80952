"""Build the book's editions: English at the root of _build/html, Chinese under
_build/html/zh.

    .venv/bin/python scripts/build_book.py              # both, warnings as errors
    .venv/bin/python scripts/build_book.py --only zh_CN # one
    .venv/bin/python scripts/build_book.py --all        # every page, changed or not

Both editions are built by Jupyter Book from the same chapters and `_config.yml`. The
Chinese one adds Sphinx's `language` (so its messages come from
locales/zh_CN/LC_MESSAGES, see locales/zh_CN/TRANSLATING.md), the Chinese title and, for
its search, the glossary's Chinese terms as a dictionary for jieba (which cuts Chinese
text into the words Sphinx indexes: without it "束搜索" would be cut into characters),
through a configuration written to _build/zh_CN/_config.yml (the build's extensions are
the installed package booktools.ext, so they need no path there). The Chinese build
lives in _build/zh_CN and is copied to _build/html/zh, the folder `language_editions`
names. Exits non-zero when a build fails or prints a warning.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from booktools import config as book_config
from booktools.paths import ROOT

BUILD = ROOT / "_build"
HTML = BUILD / "html"
TITLES = {"zh_CN": "动手搭建 Transformer"}


def search_dictionary(out: Path) -> Path:
    """The glossary's Chinese terms and their aliases, one per line, as a jieba user
    dictionary (word, frequency)."""
    from booktools.glossary import CJK, chinese_names, glossary_terms

    names = {
        name
        for term in glossary_terms()
        for name in chinese_names(term) | set(term.aliases)
    }
    # jieba's dictionary is one word a line, its frequency after a space: "KV 缓存" is
    # written "KV缓存"
    words = sorted(
        {
            name.replace(" ", "")
            for name in names
            if "/" not in name and CJK.search(name)
        }
    )
    path = out / "search_words.txt"
    path.write_text("".join(f"{w} 1000\n" for w in words), encoding="utf-8")
    return path


def config_for(language: str, out: Path) -> dict:
    """`_config.yml` with `language` set, for the edition in that language (files it
    needs into `out`)."""
    config = book_config.config()
    sphinx = config.setdefault("sphinx", {})
    sphinx.setdefault("config", {})["language"] = language
    if language.startswith("zh"):
        sphinx["config"]["html_search_options"] = {"dict": str(search_dictionary(out))}
    config["title"] = TITLES.get(language, config["title"])
    return config


def folder_of(language: str) -> Path:
    """Where the edition in `language` is published: its folder under _build/html."""
    folders = book_config.language_editions()
    return HTML / folders[language] if folders[language] else HTML


def build(language: str, rebuild_all: bool) -> tuple[int, str]:
    """(exit status, log) of the jupyter-book build of one edition."""
    jb = str(Path(sys.executable).with_name("jupyter-book"))
    cmd = [jb, "build", str(ROOT), "-W", "-n", "--keep-going"] + (
        ["--all"] if rebuild_all else []
    )
    if language != "en":
        out = BUILD / language
        out.mkdir(parents=True, exist_ok=True)
        (out / "_config.yml").write_text(
            yaml.safe_dump(
                config_for(language, out), allow_unicode=True, sort_keys=False
            ),
            encoding="utf-8",
        )
        cmd += ["--config", str(out / "_config.yml"), "--path-output", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    if proc.returncode == 0 and language != "en":
        target = folder_of(language)
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(
            BUILD / language / "_build" / "html",
            target,
            ignore=shared_with_root(target),
        )
    return proc.returncode, log


# What every edition's build writes but only the site's root keeps: chapter 12b's
# translator (its model and onnxruntime-web, 26 MB), MathJax and the widget scripts
# (vendor/), which the other editions' pages load from the root's folders
# (booktools.ext.web), so a reader who switches language downloads them once.
SHARED = ("_static/translator", "translator-vendor", "vendor")


def shared_with_root(target: Path):
    """A copytree `ignore` that leaves out of an edition's folder what it shares with
    the root."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        here = (
            Path(folder)
            .relative_to(BUILD / language_of(target) / "_build" / "html")
            .as_posix()
        )
        return {n for n in names if (n if here == "." else f"{here}/{n}") in SHARED}

    return ignore


def language_of(target: Path) -> str:
    folders = book_config.language_editions()
    return next(
        language
        for language, folder in folders.items()
        if folder and HTML / folder == target
    )


def warnings_in(log: str) -> list[str]:
    return [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["en", "zh_CN"], help="build one edition")
    parser.add_argument("--all", action="store_true", help="rebuild every page")
    args = parser.parse_args(argv)
    failed = 0
    # English first: it makes _build/html, into which the other editions are copied
    for language in [args.only] if args.only else ["en", "zh_CN"]:
        status, log = build(language, args.all)
        problems = warnings_in(log)
        print(f"{language}: exit {status}, {len(problems)} warnings")
        for line in problems or (log.splitlines()[-40:] if status else []):
            print("   ", line)
        failed += status != 0 or bool(problems)
    print(
        f"The book: {HTML / 'index.html'}; the Chinese edition:"
        f" {folder_of('zh_CN') / 'index.html'}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
