"""The package is exactly what the chapters export: re-export into a copy and
compare."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

# the export processor's own reading of a directive
from transformer_book_export import _DIRECTIVE


def _tree(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def test_package_in_sync_with_chapters(tmp_path):
    for name in ("chapters", "transformer_lib"):
        shutil.copytree(
            ROOT / name,
            tmp_path / name,
            ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"),
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    exporter = Path(sys.executable).with_name("nbdev-export")
    for command in ([str(exporter)], [sys.executable, "-m", "transformer_book_export"]):
        subprocess.run(
            command, cwd=tmp_path, check=True, capture_output=True, timeout=120
        )
    committed, exported = (
        _tree(ROOT / "transformer_lib"),
        _tree(tmp_path / "transformer_lib"),
    )
    stale = sorted(
        k
        for k in committed.keys() | exported.keys()
        if committed.get(k) != exported.get(k)
    )
    assert not stale, (
        f"transformer_lib is out of sync with chapters/ in {stale}: run `make export` "
        "(nbdev-export) and commit; never edit transformer_lib/*.py by hand"
    )


def _export_directives() -> list[tuple[str, str, str]]:
    """(notebook, "default_exp" or "export", module) for every export directive naming a
    module, notebooks in nbdev-export's order (by name)."""
    found = []
    for nb in sorted((ROOT / "chapters").glob("*.ipynb"), key=lambda p: p.name):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        for cell in (c for c in cells if c["cell_type"] == "code"):
            for line in "".join(cell["source"]).splitlines():
                m = _DIRECTIVE.match(line)
                if m:
                    found.append(
                        (
                            nb.name,
                            "default_exp" if m.group(1) == "default_exp" else "export",
                            m.group(2),
                        )
                    )
    return found


def test_each_module_has_one_home_chapter():
    """A module's home is the chapter that names it in `#| default_exp` (nbdev writes it
    anew at every export), or, for a module made only of `#| export module` cells, the
    first chapter that exports to it (scripts/export_hooks writes it anew there). Two
    `default_exp` homes overwrite each other; a module with no home would grow at every
    export."""
    directives = _export_directives()
    homes: dict[str, list[str]] = {}
    for nb, kind, module in directives:
        if kind == "default_exp":
            homes.setdefault(module, []).append(nb)
    doubles = {m: nbs for m, nbs in homes.items() if len(nbs) > 1}
    assert not doubles, (
        "modules with more than one home chapter (the later overwrites the earlier):"
        f" {doubles}"
    )
    for nb, kind, module in directives:
        if kind == "export" and module not in homes:
            homes[module] = [nb]  # its first chapter in export order
    lib = ROOT / "transformer_lib"
    generated = {
        ".".join(p.relative_to(lib).with_suffix("").parts)
        for p in lib.rglob("*.py")
        # hand-written; nbdev's index
        if "__pycache__" not in p.parts
    } - {"__init__", "_modidx"}
    assert generated <= set(homes), (
        f"modules without a home chapter: {generated - set(homes)}"
    )
    assert "_checks" in homes and "training.loop" in homes, sorted(homes)
