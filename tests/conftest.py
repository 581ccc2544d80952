"""Shared test settings: deterministic, single-threaded, CPU."""

import importlib.util
import os
import pathlib
import sys
import types

import pytest
import torch

# the browser tests import it from here
from booktools.loopback import serve  # noqa: F401

ROOT = pathlib.Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
# The book's address setting (book/booktools/site.py) for what the suite builds: a
# publishing build (BOOK_PUBLISH=1, which refuses a placeholder) of a repository that is
# not this checkout's remote.
TEST_REPOSITORY = "book-tests/the-transformer-built"


def load_script(name: str) -> types.ModuleType:
    """scripts/NAME.py as a module, to test its functions (registered in sys.modules:
    a dataclass looks its module up)."""
    spec = importlib.util.spec_from_file_location(
        f"script_{name}", ROOT / "scripts" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def publishing_env(**extra: str) -> dict:
    """The environment of a build for publishing, with the address set as the workflow
    sets it."""
    return {
        **os.environ,
        "BOOK_REPOSITORY": TEST_REPOSITORY,
        "BOOK_PUBLISH": "1",
        **extra,
    }


@pytest.fixture(autouse=True)
def _seed_and_threads():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    yield


def chromium_path() -> "str | None":
    """The system Chromium (what the browser tests drive through Playwright), or
    None."""
    import shutil

    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def skip_or_fail(msg: str):
    """A missing browser or build tool: a failure in CI, a skip elsewhere."""
    if IN_CI:
        pytest.fail(msg)
    pytest.skip(msg)
