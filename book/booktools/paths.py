"""Where the book's files are: the repository's root and the folders the tools read and
write."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # book/booktools/paths.py -> the repository
CHAPTERS = ROOT / "chapters"
BOOK = ROOT / "book"
LOCALES = ROOT / "locales"
BUILD = ROOT / "_build"
