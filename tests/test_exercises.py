"""Every exercise answers back: a hint and a worked solution each, folded, and checks
that name mistakes.

In every chapter the numbered exercises under `## Exercises` are counted against the
folded "Hint — exercise k" and "Solution — exercise k" dropdowns that follow (k = 1, 2,
... in order); hints and solutions are collapsed in JupyterLab too
(`jupyter.source_hidden`), and solution code cells are folded with their output
(`hide-cell`). The checks live in `transformer_lib.exercises.<chapter>` (each chapter's
folded exported cell); there are at least `MIN_CHECKS` of them, each chapter's are
tested against the mistakes they name in `tests/test_exercises_<chapter>.py`, and the
library's own `__all__` does not carry them."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import nbformat
import pytest

from booktools import myst

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
MIN_CHECKS = 20
# Chapters whose exercises have no hints and solutions yet (issue 21 is open for them).
# The set can only shrink: a pending chapter must not be half done, and a finished one
# must leave it.
PENDING: set[str] = set()
_ITEM = re.compile(r"^(\d+)\. ", re.M)


def _exercise_cells(nb) -> tuple[int, list]:
    """(number of exercises, the cells after the `## Exercises` cell)."""
    where = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "markdown" and c.source.lstrip().startswith("## Exercises")
    ]
    assert len(where) == 1, "one markdown cell must start with '## Exercises'"
    items = [int(n) for n in _ITEM.findall(nb.cells[where[0]].source)]
    assert items == list(range(1, len(items) + 1)), f"exercises numbered {items}"
    return len(items), nb.cells[where[0] + 1 :]


def _titles(cells, kind: str) -> list[int]:
    titles = [
        d.argument
        for c in cells
        if c.cell_type == "markdown"
        for d in myst.nested_directives(c.source, "dropdown")
    ]
    return [
        int(title.rpartition(" ")[2])
        for title in titles
        if title.startswith(f"{kind} — exercise ")
        and title.rpartition(" ")[2].isdigit()
    ]


@pytest.mark.parametrize("nb", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_exercise_has_a_hint_and_a_solution(nb):
    book = nbformat.read(nb, as_version=4)
    if nb.stem in PENDING:
        assert not _titles(book.cells, "Hint") and not _titles(
            book.cells, "Solution"
        ), (
            f"{nb.stem} has hints or solutions: finish them all and take it out of"
            " PENDING"
        )
        return
    n, cells = _exercise_cells(book)
    assert n > 0, f"{nb.stem}: no exercises"
    assert _titles(cells, "Hint") == list(range(1, n + 1)), (
        f"{nb.stem}: hints for {_titles(cells, 'Hint')} of {n}"
    )
    assert _titles(cells, "Solution") == list(range(1, n + 1)), (
        f"{nb.stem}: solutions for {_titles(cells, 'Solution')} of {n}"
    )
    for c in cells:
        if c.cell_type == "markdown" and "{dropdown}" in c.source:
            assert c.metadata.get("jupyter", {}).get("source_hidden"), (
                f"{nb.stem}: a hint/solution open in JupyterLab"
            )
        if c.cell_type == "code" and "remove-cell" not in c.metadata.get("tags", []):
            tags, jup = c.metadata.get("tags", []), c.metadata.get("jupyter", {})
            assert "hide-cell" in tags or "hide-input" in tags, (
                f"{nb.stem}: a solution cell in view: {c.source[:60]!r}"
            )
            assert jup.get("source_hidden"), (
                f"{nb.stem}: a solution cell open in JupyterLab: {c.source[:60]!r}"
            )
    assert (
        "remove-cell" in book.cells[-1].metadata.get("tags", [])
        or book.cells[-1].cell_type == "markdown"
    )


def _check_modules():
    import transformer_lib.exercises as ex

    folder = Path(ex.__file__).parent
    return {
        p.stem: importlib.import_module(f"transformer_lib.exercises.{p.stem}")
        for p in sorted(folder.glob("ch*.py"))
    }


def test_enough_checks_and_each_is_tested():
    from transformer_lib.exercises import Exercise

    mods = _check_modules()
    checks = {
        f"{name}.{k}": v
        for name, mod in mods.items()
        for k, v in vars(mod).items()
        if isinstance(v, Exercise)
    }
    assert len(checks) >= MIN_CHECKS, (
        f"{len(checks)} checked exercises: {sorted(checks)}"
    )
    for name in mods:
        test_file = ROOT / "tests" / f"test_exercises_{name}.py"
        assert test_file.exists(), (
            f"transformer_lib.exercises.{name} has no {test_file.name}"
        )
        text = test_file.read_text(encoding="utf-8")
        for key in (k for k in checks if k.startswith(name + ".")):
            assert key.split(".")[1] in text, (
                f"{test_file.name} never submits an answer to {key}"
            )


def test_each_check_sits_with_its_exercise():
    """A check `exK` of chapter NN belongs to exercise K of that chapter, and the
    exercise says how to call it."""
    from transformer_lib.exercises import Exercise

    for name, mod in _check_modules().items():
        nb = nbformat.read(
            ROOT
            / "chapters"
            / next(p.name for p in CHAPTERS if p.stem.split("_")[0] == name[2:]),
            as_version=4,
        )
        n, _ = _exercise_cells(nb)
        text = next(
            c.source
            for c in nb.cells
            if c.cell_type == "markdown"
            and c.source.lstrip().startswith("## Exercises")
        )
        for k, v in vars(mod).items():
            if isinstance(v, Exercise):
                assert k == f"ex{v.number}" and 1 <= v.number <= n, (
                    f"{name}.{k} is exercise {v.number} of {n}"
                )
                assert f"{name}.{k}.check(" in text, (
                    f"chapter {name}'s exercise {v.number} does not show"
                    f" `{name}.{k}.check(...)`"
                )


def test_checks_stay_out_of_the_library_namespace():
    import transformer_lib

    assert not any(
        "exercise" in n.lower() or n.startswith("ex") and n[2:].isdigit()
        for n in transformer_lib.__all__
    )


def test_forbidden_names_the_function_under_any_alias_and_when_caught():
    """`call(..., forbidden=Forbidden(...))` names a forbidden call, however it is
    reached or hidden."""
    import torch
    import torch.nn.functional as F
    from transformer_lib.exercises import Forbidden, Mistake, call

    def guard():
        return Forbidden(
            {torch.softmax: "torch.softmax", F.softmax: "F.softmax"},
            why="write it yourself",
        )

    x = torch.randn(2, 3)
    alias = torch.softmax

    def caught(s):
        try:
            return torch.softmax(s, -1)
        except Exception:
            return s

    for fn, name in (
        (lambda s: alias(s, -1), "torch.softmax"),
        (lambda s: F.softmax(s, -1), "F.softmax"),
        (caught, "torch.softmax"),
    ):
        with pytest.raises(
            Mistake,
            match=f"calls {name}, which this exercise forbids: write it yourself",
        ):
            call(fn, x, forbidden=guard())
    # other torch calls run
    assert torch.equal(call(lambda s: s.exp(), x, forbidden=guard()), x.exp())
    # and nothing is left patched
    assert torch.allclose(torch.softmax(x, -1).sum(-1), torch.ones(2))

    def helper(s):
        return s * 2

    with pytest.raises(Mistake, match="calls helper"):
        call(
            lambda s: helper(s) + 1,
            x,
            forbidden=Forbidden({}, python={helper: "helper"}),
        )


def test_argument_order_names_the_order_that_works():
    import torch
    from transformer_lib.exercises import argument_order

    a, b = torch.tensor(1.0), torch.tensor(3.0)
    said = argument_order(
        lambda y, x: x - y,
        (a, b),
        ("a", "b"),
        lambda out: out == a - b,
        call_as="f(a, b)",
    )
    assert said is not None and "(b, a)" in said and "f(a, b)" in said
    assert (
        argument_order(
            lambda x, y: x * y,
            (a, b),
            ("a", "b"),
            lambda out: out == 7,
            call_as="f(a, b)",
        )
        is None
    )


# ---- no check answers with a traceback, whatever it is given -------------------------


def _all_checks():
    from transformer_lib.exercises import Exercise

    return {
        f"{name}.{k}": v
        for name, mod in _check_modules().items()
        for k, v in vars(mod).items()
        if isinstance(v, Exercise)
    }


def _raises(*a, **k):
    raise RuntimeError("boom")


import numpy as _np
import torch as _torch

GARBAGE = {
    "None": None,
    "a string": "softmax",
    "a NaN": float("nan"),
    "a NumPy array": _np.zeros((2, 2)),
    "a tensor": _torch.zeros(3, 3),
    "a list": [1, 2],
    "a function that raises": _raises,
    "a function of no arguments": lambda: 1.0,
    "a function returning None": lambda *a, **k: None,
    "a function returning a string": lambda *a, **k: "x",
    "a function returning NaN": lambda *a, **k: float("nan"),
    "a function returning a float64 tensor": lambda *a, **k: _torch.zeros(
        3, 3, dtype=_torch.float64
    ),
    "a function returning a wrong shape": lambda *a, **k: _torch.zeros(1),
    "a function returning its first argument": lambda *a, **k: a[0] if a else None,
    "a function returning a pair of None": lambda *a, **k: (None, None),
    "a function returning an int tensor": lambda *a, **k: _torch.ones(
        2, 3, dtype=_torch.long
    ),
    "a function returning a sparse tensor": lambda *a, **k: _torch.eye(3).to_sparse(),
    "a function returning a complex number": lambda *a, **k: 1 + 2j,
}


@pytest.mark.parametrize("garbage", GARBAGE)
def test_no_check_shows_a_traceback(garbage):
    """Every check answers every kind of wrong answer with one sentence of its own,
    never with an exception."""
    answer = GARBAGE[garbage]
    for key, ex in _all_checks().items():
        kwargs = {}
        # chapter 9's checks take named answers
        if key.startswith("ch09."):
            import inspect

            names = [
                p for p in inspect.signature(ex.checker).parameters if p != "answer"
            ]
            kwargs = {n: answer for n in names}
            v = ex.check(**kwargs)
        else:
            v = ex.check(answer)
        assert not v.ok, f"{key} accepted {garbage}"
        assert isinstance(v.message, str) and v.message and "\n" not in v.message, (
            key,
            v.message,
        )
        assert not v.message.startswith("the check could not read your answer"), (
            key,
            garbage,
            v.message,
        )
