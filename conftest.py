"""Settings for every pytest run of this repository (unit tests and nbval over
chapters/).

The chapters' kernels inherit this process's environment. An exported ``MPLBACKEND=Agg``
(common on servers and CI images) would make ``plt.show()`` display nothing, and strict
nbval would then miss every stored figure. The kernel's inline backend is therefore
forced here, whatever the caller exported, so the suite does not depend on the caller's
environment. The unit tests that draw choose Agg themselves (``matplotlib.use("Agg")``).
"""

import os

import pytest

INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
os.environ["MPLBACKEND"] = INLINE_BACKEND


# ---- the suite in two processes (`make test`: pytest-xdist, -n 2) --------------------
# A unit of work runs whole, in order, on one worker: a test file; a chapter (its cells
# share one kernel); the training chapters, which hand files to one another (11a's
# tokenizer in runs/, 11b's run that 12 and 12b read, 11c's runs beside them), in the
# book's order; and the test files that build or read the book in _build/ (a build on
# one worker must not rewrite pages the other reads). The two long units go first, so
# that they start at once and the rest fills in around them. `make test` itself runs the
# training chapters after the two-process run, alone (Makefile, TRAINING_NB): beside
# another process, 11b's training cell ran past nbval's cell limit.
TRAINING_CHAPTERS = ("11a_", "11b_", "11c_", "12_", "12b_")
BOOK_TESTS = (
    "test_book.py",
    "test_web.py",
    "test_browser_translate.py",
    "test_editions.py",
    "test_pdf.py",
)
FIRST = ("training-chapters", "the-built-book")


def work_unit(nodeid: str) -> str:
    """What one worker runs whole: a test file, a chapter, the training chapters or the
    book's tests."""
    path = nodeid.split("::", 1)[0]
    name = path.rpartition("/")[2]
    if name.startswith(TRAINING_CHAPTERS) and name.endswith(".ipynb"):
        return "training-chapters"
    return "the-built-book" if name in BOOK_TESTS else path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ChapterScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return ChapterScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """The long units first (a stable sort keeps every unit's tests in their order)."""
    items.sort(key=lambda item: work_unit(item.nodeid) not in FIRST)
