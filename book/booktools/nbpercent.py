"""Author chapters as plain text, keep them as notebooks.

The notebooks in ``chapters/`` are the source of the book and of ``transformer_lib``.
Editing notebook JSON by hand is error-prone, so this helper converts between a
notebook and a "percent" text file (the format Jupytext and VS Code understand):

    # %% [markdown]
    # Markdown text, each line behind "# " (so the file stays valid Python).
    # %% tags=["raises-exception"]
    code()

Usage:
    python scripts/nbpercent.py to-py  chapters/01_qkv_attention.ipynb  /tmp/ch1.py
    python scripts/nbpercent.py to-nb  /tmp/ch1.py  chapters/01_qkv_attention.ipynb

``to-nb`` keeps the outputs and metadata (folds, collapsed outputs) of cells whose
source did not change; a changed cell keeps only the tags written in the text, so fold
it again with ``scripts/reading_path.py --fold`` if it was folded.
``scripts/execute.py`` then re-runs the whole chapter in a fresh kernel.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import nbformat

_MARK = re.compile(r"^# %%(?P<md> \[markdown\])?(?P<meta>.*)$")


def py_to_cells(text: str) -> list[nbformat.NotebookNode]:
    cells: list[nbformat.NotebookNode] = []
    kind: str | None = None  # "markdown" or "code": the cell being read
    meta: dict[str, object] = {}  # its metadata, from the marker line (JSON values)
    buf: list[str] = []  # its lines

    def flush() -> None:
        if kind is None:
            return
        lines = buf
        if kind == "markdown":
            lines = [
                ln[2:] if ln.startswith("# ") else ln[1:] if ln.startswith("#") else ln
                for ln in buf
            ]
        src = "\n".join(lines).strip("\n")
        if kind == "markdown":
            cell = nbformat.v4.new_markdown_cell(src)
        else:
            cell = nbformat.v4.new_code_cell(src)
        if meta:
            cell.metadata.update(meta)
        cells.append(cell)

    for line in text.splitlines():
        m = _MARK.match(line)
        if m:
            flush()
            kind = "markdown" if m.group("md") else "code"
            meta, buf = {}, []
            rest = m.group("meta").strip()
            if rest:
                for key, val in re.findall(r'(\w+)=(\[.*?\]|"[^"]*"|\S+)', rest):
                    meta[key] = json.loads(val)
        else:
            buf.append(line)
    flush()
    return cells


def nb_to_py(nb: nbformat.NotebookNode) -> str:
    out = []
    for cell in nb.cells:
        meta = ""
        tags = cell.metadata.get("tags")
        if tags:
            meta = " tags=" + json.dumps(tags)
        out.append(
            ("# %% [markdown]" if cell.cell_type == "markdown" else "# %%") + meta
        )
        if cell.cell_type == "markdown":
            out.append(
                "\n".join(("# " + ln) if ln else "#" for ln in cell.source.splitlines())
            )
        else:
            out.append(cell.source)
        out.append("")
    return "\n".join(out)


def to_nb(src: Path, dst: Path) -> None:
    cells = py_to_cells(src.read_text(encoding="utf-8"))
    # (cell type, source) -> the cell before
    old: dict[tuple[str, str], nbformat.NotebookNode] = {}
    old_meta, old_book = {}, {}
    if dst.exists():
        old_nb = nbformat.read(dst, as_version=4)
        # saved widget state: the HTML book renders it
        old_meta = old_nb.metadata.get("widgets")
        # what the chapter reads and writes (scripts/execute.py)
        old_book = old_nb.metadata.get("book")
        for c in old_nb.cells:
            old.setdefault((c.cell_type, c.source), c)
    # an unchanged cell keeps its outputs and its metadata (a fold, a collapsed output)
    for c in cells:
        prev = old.get((c.cell_type, c.source))
        if prev is None:
            continue
        # the text's tags win: they are what the author edited
        tags = c.metadata.get("tags")
        c.metadata = nbformat.from_dict(
            {**prev.metadata, **({"tags": tags} if tags else {})}
        )
        if not tags:
            c.metadata.pop("tags", None)
        if c.cell_type == "code":
            c.outputs = prev.outputs
            c.execution_count = prev.execution_count
    seen: dict[str, int] = {}
    # stable ids: the same source gives the same id, so exports diff cleanly
    for c in cells:
        digest = hashlib.sha1(c.source.encode("utf-8")).hexdigest()[:8]
        seen[digest] = seen.get(digest, 0) + 1
        c.id = digest if seen[digest] == 1 else f"{digest}-{seen[digest]}"
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
            "name": "python3",
        },
        "language_info": {"name": "python"},
    }
    if old_meta:
        nb.metadata["widgets"] = old_meta
    if old_book:
        nb.metadata["book"] = old_book
    nbformat.validate(nb)
    nbformat.write(nb, dst)


def main(argv: list[str]) -> None:
    if len(argv) != 4 or argv[1] not in {"to-py", "to-nb"}:
        raise SystemExit(__doc__)
    src, dst = Path(argv[2]), Path(argv[3])
    if argv[1] == "to-nb":
        to_nb(src, dst)
    else:
        dst.write_text(nb_to_py(nbformat.read(src, as_version=4)), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv)
