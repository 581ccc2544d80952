"""The package is exactly what the chapters export: re-export into a copy and compare."""
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes()
            for p in sorted(path.rglob("*.py")) if "__pycache__" not in p.parts}


def test_package_in_sync_with_chapters(tmp_path):
    for name in ("chapters", "transformer_lib"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    exporter = Path(sys.executable).with_name("nbdev-export")
    subprocess.run([str(exporter)], cwd=tmp_path, check=True, capture_output=True, timeout=120)
    committed, exported = _tree(ROOT / "transformer_lib"), _tree(tmp_path / "transformer_lib")
    stale = sorted(k for k in committed.keys() | exported.keys() if committed.get(k) != exported.get(k))
    assert not stale, (f"transformer_lib is out of sync with chapters/ in {stale}: run `make export` "
                       f"(nbdev-export) and commit; never edit transformer_lib/*.py by hand")


def test_each_module_has_one_home_chapter():
    homes: dict[str, list[str]] = {}
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        text = nb.read_text(encoding="utf-8")
        for line in text.splitlines():
            if "#| default_exp " in line:
                module = line.split("#| default_exp ", 1)[1].split("\\n")[0].strip().strip('",')
                homes.setdefault(module, []).append(nb.name)
    doubles = {m: nbs for m, nbs in homes.items() if len(nbs) > 1}
    assert not doubles, f"modules with more than one home chapter (the later overwrites the earlier): {doubles}"
    generated = {p.stem for p in (ROOT / "transformer_lib").glob("*.py") if not p.name.startswith("_")}
    assert generated <= set(homes), f"modules without a home chapter: {generated - set(homes)}"
