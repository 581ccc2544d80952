"""The wheel a user installs: typed (py.typed), licensed, a long description that stands on its
own, the [train] extra, a top-level __all__; and mypy on the package against a baseline that
may only shrink."""
import collections
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import transformer_lib
from conftest import ROOT

MYPY_BASELINE = ROOT / "tests" / "mypy_baseline.txt"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out, src = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("source")
    # build from a clean copy: setuptools' build/ folder would otherwise carry stale files
    for name in ("pyproject.toml", "PYPI.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "transformer_lib", src / "transformer_lib", ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (path,) = out.glob("transformer_lib-*.whl")
    return path


def test_wheel_contents(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "transformer_lib/py.typed" in names
    assert any(re.search(r"\.dist-info/licenses/LICENSE$", n) for n in names), names
    assert not any(n.startswith(("chapters/", "tests/", "book/")) for n in names)


def test_wheel_metadata_stands_alone(wheel):
    z = zipfile.ZipFile(wheel)
    meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    head, _, description = meta.partition("\n\n")
    assert "Provides-Extra: train" in head
    assert re.search(r"Requires-Dist: sacrebleu.*extra == .train", head)
    assert re.search(r"Requires-Dist: torch>=2\.5", head)
    assert "License-Expression: Apache-2.0" in head
    assert "make book" not in description and "make test" not in description
    relative = re.findall(r'(?:\]\(|src=")(?!https?://|#)([^)"]+)', description)
    assert not relative, f"relative links or images in the PyPI description: {relative}"


def test_long_description_example_runs():
    """The example on the package's page is real code."""
    text = (ROOT / "PYPI.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for code in blocks:
        exec(compile(code, "PYPI.md", "exec"), {})


def test_top_level_all():
    public = set(transformer_lib.__all__)
    assert len(public) == len(transformer_lib.__all__)               # no duplicates
    namespace: dict = {}
    exec("from transformer_lib import *", namespace)
    assert set(namespace) - {"__builtins__"} == public
    assert {"Transformer", "TransformerConfig", "greedy_decode", "load_checkpoint", "native_bf16"} <= public
    assert not any(n in public for n in ("torch", "nn", "math", "attention_module", "Optional"))


def _mypy_counts(paths: list[str], cwd: Path) -> tuple[collections.Counter, str]:
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--cache-dir",
                           str(ROOT / ".mypy_cache"), *paths], cwd=cwd, capture_output=True, text=True,
                          timeout=600)
    errors = [ln for ln in proc.stdout.splitlines() if ": error:" in ln]
    return collections.Counter(ln.split(":", 1)[0] for ln in errors), proc.stdout


def test_mypy_no_new_errors():
    """mypy on the package: per file, no more errors than the committed baseline (it may only shrink).

    Most of what is left is PyTorch's typing of submodules (`nn.Module.__getattr__` says
    `Tensor | Module`), which the chapters would have to annotate or cast one by one."""
    counts, report = _mypy_counts(["transformer_lib"], ROOT)
    baseline = collections.Counter({path: int(n) for n, path in
                                    (ln.split() for ln in MYPY_BASELINE.read_text().splitlines()
                                     if ln.strip() and not ln.startswith("#"))})
    worse = {f: (counts[f], baseline[f]) for f in counts if counts[f] > baseline[f]}
    assert not worse, f"new mypy errors (found, baseline): {worse}\n{report}"
    better = {f: (counts[f], baseline[f]) for f in baseline if counts[f] < baseline[f]}
    assert not better, f"fewer mypy errors than the baseline {better}: lower tests/mypy_baseline.txt"


def test_mypy_reads_the_installed_package(wheel, tmp_path):
    """Installed from the wheel, the package is typed for its users (PEP 561: py.typed)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    user = tmp_path / "user.py"
    user.write_text("from transformer_lib import TransformerConfig\n"
                    "config = TransformerConfig(100, 100)\n"
                    "reveal_type(config.d_model)\n"
                    "config.d_model = 'wide'\n")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--python-executable", str(py), "--no-error-summary",
                           "--ignore-missing-imports", "--follow-imports=silent", str(user)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    out = proc.stdout
    assert "py.typed" not in out and "missing library stubs" not in out, out
    assert re.search(r'Revealed type is "(builtins\.)?int"', out), out   # Any without py.typed
    assert 'incompatible types in assignment (expression has type "str", variable has type "int")' in out.lower(), out
