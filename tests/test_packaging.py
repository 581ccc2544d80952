"""The wheel a user installs: typed (py.typed), licensed, a long description that stands
on its own, the [train] extra, a top-level __all__; and mypy on the package, which
reports no error."""

import collections
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import transformer_lib
from booktools import myst
from conftest import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out, src = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("source")
    # build from a clean copy: setuptools' build/ folder would otherwise carry stale
    # files
    for name in ("pyproject.toml", "PYPI.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "transformer_lib",
        src / "transformer_lib",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (path,) = out.glob("transformer_lib-*.whl")
    return path


def test_wheel_contents(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "transformer_lib/py.typed" in names
    assert {
        "transformer_lib/training/__init__.py",
        "transformer_lib/training/loop.py",
        # the subpackage ships too
        "transformer_lib/_checks.py",
    } <= set(names)
    assert any(re.search(r"\.dist-info/licenses/LICENSE$", n) for n in names), names
    assert not any(n.startswith(("chapters/", "tests/", "book/")) for n in names)


def test_wheel_metadata_stands_alone(wheel):
    z = zipfile.ZipFile(wheel)
    meta = z.read(
        next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    ).decode()
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
    blocks = myst.code_blocks(text, "python")
    assert blocks
    for code in blocks:
        exec(compile(code, "PYPI.md", "exec"), {})


def test_top_level_all():
    public = set(transformer_lib.__all__)
    assert len(public) == len(transformer_lib.__all__)  # no duplicates
    namespace: dict = {}
    exec("from transformer_lib import *", namespace)
    assert set(namespace) - {"__builtins__"} == public
    assert {
        "Transformer",
        "TransformerConfig",
        "greedy_decode",
        "load_checkpoint",
        "native_bf16",
    } <= public
    assert not any(
        n in public for n in ("torch", "nn", "math", "attention_module", "Optional")
    )


def _mypy_counts(paths: list[str], cwd: Path) -> tuple[collections.Counter, str]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-error-summary",
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            *paths,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors = [ln for ln in proc.stdout.splitlines() if ": error:" in ln]
    return collections.Counter(ln.split(":", 1)[0] for ln in errors), proc.stdout


def test_mypy_reports_no_error():
    """mypy on the package reports nothing: a typed library (py.typed ships) must
    type-check.

    PyTorch types a submodule reached through `nn.Module.__getattr__` as
    `Tensor | Module` and the items of an `nn.ModuleList` as `Module`; the package names
    what they hold (buffers annotated on the class,
    `cast(Sequence[EncoderLayer], encoder.layers)`), never `Any`."""
    counts, report = _mypy_counts(["transformer_lib"], ROOT)
    assert not counts, f"mypy errors per file: {dict(counts)}\n{report}"
    # every function body is checked
    assert "annotation-unchecked" not in report, report


def test_mypy_reads_the_installed_package(wheel, tmp_path):
    """Installed from the wheel, the package is typed for its users (PEP 561:
    py.typed)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    user = tmp_path / "user.py"
    user.write_text(
        "from transformer_lib import TrainConfig, TransformerConfig\n"
        "config = TransformerConfig(100, 100)\n"
        "reveal_type(config.d_model)\n"
        "config.d_model = 'wide'\n"
        "reveal_type(TrainConfig().warmup_steps)\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--python-executable",
            str(py),
            "--no-error-summary",
            "--ignore-missing-imports",
            "--follow-imports=silent",
            str(user),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout
    assert "py.typed" not in out and "missing library stubs" not in out, out
    # Any without py.typed
    assert re.search(r'Revealed type is "(builtins\.)?int"', out), out
    assert (
        'incompatible types in assignment (expression has type "str", variable has type'
        ' "int")' in out.lower()
    ), out
    # the training names too (their module's __all__ is built at import time: imported
    # by name)
    assert len(re.findall(r'Revealed type is "(builtins\.)?int"', out)) == 2, out
    assert "has no attribute" not in out, out


def test_the_top_level_imports_every_training_name():
    """transformer_lib/__init__.py imports the training names one by one (type checkers
    cannot evaluate training's generated __all__): the list is exactly training's public
    names."""
    import ast
    import transformer_lib.training

    tree = ast.parse(
        (ROOT / "transformer_lib" / "__init__.py").read_text(encoding="utf-8")
    )
    named = [
        a.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.level == 1
        and node.module == "training"
        for a in node.names
    ]
    assert sorted(named) == sorted(transformer_lib.training.__all__), (
        f"missing: {sorted(set(transformer_lib.training.__all__) - set(named))}, extra:"
        f" {sorted(set(named) - set(transformer_lib.training.__all__))}"
    )
