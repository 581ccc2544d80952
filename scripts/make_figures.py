"""Write the book's static figures (those outside the notebooks) from
book/booktools/diagrams.py.

    python scripts/make_figures.py          # (re)write book/figures/*.svg
    python scripts/make_figures.py --check  # fail if a committed figure is stale

The chapters draw their diagrams in hidden cells (re-run by nbval); the introduction is
a Markdown page, so its overview figure is generated here and embedded inline (its parts
are links to the chapters). tests/test_diagrams.py runs the check.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from booktools import diagrams

FIGURES = {
    # file under book/figures/ -> the drawing; links are relative to book/intro.html
    "overview.svg": lambda: diagrams.overview(base="../chapters/"),
}


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for name, draw in FIGURES.items():
        path = ROOT / "book" / "figures" / name
        svg = draw().svg()
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != svg:
                stale.append(name)
        else:
            path.write_text(svg, encoding="utf-8", newline="\n")
            print(f"wrote {path.relative_to(ROOT)} ({len(svg):,} bytes)")
    if stale:
        print(
            f"out of date: {stale}; run `python scripts/make_figures.py`",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
