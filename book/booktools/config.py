"""The book's two Jupyter Book files, read in one place: `_config.yml` and `_toc.yml`.

Every tool that needs a setting or the pages' order asks this module, so each file is
parsed by one function: a change of the files' layout is a change here. Each call
returns a fresh copy (a caller may change it, as `booktools.build.config_for` does for
the Chinese edition); the parsed file is cached until the file changes.

- `config()`: `_config.yml` as a dict; `sphinx_config()`: its ``sphinx.config``;
- `language_editions()`: each edition's language and its folder under the site (``""``:
  the root);
- `repository_settings()`: ``repository`` (``url``, ``branch``), before `booktools.site`
  resolves it;
- `myst_extensions()`: the MyST extensions the book enables
  (``parse.myst_enable_extensions``);
- `toc()`: `_toc.yml` as a dict; `root_page()`: its first page; `pages()`: every page in
  reading order ("book/intro", "chapters/01_qkv_attention" …).
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import yaml

from booktools.paths import ROOT

CONFIG = ROOT / "_config.yml"
TOC = ROOT / "_toc.yml"


@functools.lru_cache(maxsize=16)
def _parsed(path: Path, mtime_ns: int) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _load(path: Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (the book's {path.name})")
    data = _parsed(path.resolve(), path.stat().st_mtime_ns)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a YAML mapping, got {type(data).__name__}")
    return copy.deepcopy(data)


def config(path: Path = CONFIG) -> dict[str, Any]:
    """`_config.yml` as a dict (a fresh copy)."""
    return _load(path)


def sphinx_config(path: Path = CONFIG) -> dict[str, Any]:
    """`_config.yml`'s ``sphinx.config``: the settings Jupyter Book hands to Sphinx."""
    return config(path).get("sphinx", {}).get("config", {})


def language_editions(path: Path = CONFIG) -> dict[str, str]:
    """Each edition's language and its folder under the site's root ("" for the root):
    ``language_editions``."""
    return dict(sphinx_config(path)["language_editions"])


def repository_settings(path: Path = CONFIG) -> dict[str, Any]:
    """`_config.yml`'s ``repository`` (``url``, ``branch``): the setting
    `booktools.site` starts from."""
    return dict(config(path)["repository"])


def myst_extensions(path: Path = CONFIG) -> set[str]:
    """The MyST extensions the book enables (``parse.myst_enable_extensions``)."""
    return set(config(path).get("parse", {}).get("myst_enable_extensions", []))


def toc(path: Path = TOC) -> dict[str, Any]:
    """`_toc.yml` as a dict (a fresh copy)."""
    return _load(path)


def root_page(path: Path = TOC) -> str:
    """The book's first page ("book/intro"): `_toc.yml`'s ``root``."""
    return str(toc(path)["root"])


def pages(path: Path = TOC) -> list[str]:
    """The book's pages in reading order: the root, then each part's chapters
    ("chapters/01_qkv_attention" …)."""
    data = toc(path)
    found = [str(data["root"])]
    for part in data.get("parts", []):
        found += [str(c["file"]) for c in part.get("chapters", [])]
    return found
