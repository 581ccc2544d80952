"""`booktools`: the book's tools as one command, each tool a subcommand.

    booktools --help                         # the subcommands
    booktools build [--only zh_CN]           # the HTML book, both languages (make book)
    booktools execute chapters/01_qkv_attention.ipynb
    booktools <subcommand> --help            # a subcommand's own options

`make venv` installs it (``pip install -e book``: the console script ``booktools``);
``python -m booktools`` is the same command. The Makefile and the thin scripts in
`scripts/` call it one way: ``main([subcommand, *arguments])``, which hands the
arguments, without the program's name, to the module's own command line, where its
documentation is."""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True)
class Command:
    module: str  # booktools.<module> holds the command line
    help: str
    script: str  # the thin script in scripts/ that calls it


def _argv_main(module, argv: list[str]) -> Optional[int]:
    return module.main(argv)


def _argv0_main(module, argv: list[str]) -> Optional[int]:
    """A main that takes the whole sys.argv, its program name first
    (booktools.nbpercent)."""
    return module.main([sys.argv[0], *argv])


def _sys_argv_main(module, argv: list[str]) -> Optional[int]:
    """A main that parses sys.argv itself (booktools.reading_path)."""
    saved = sys.argv
    sys.argv = [sys.argv[0], *argv]
    try:
        return module.main()
    finally:
        sys.argv = saved


COMMANDS: dict[str, Command] = {
    "build": Command(
        "build",
        "build the HTML book, both editions, into _build/html (make book)",
        "build_book.py",
    ),
    "editions": Command(
        "editions",
        "write the runner editions (plain notebooks) into _build/notebooks "
        "(make notebooks)",
        "make_notebooks.py",
    ),
    "translations": Command(
        "translations",
        "check the Chinese edition's catalogues; --update-glued, --terms "
        "(make translations)",
        "check_translations.py",
    ),
    "execute": Command(
        "execute",
        "execute chapters in a fresh kernel and store their outputs; --check names "
        "the stale ones (make execute)",
        "execute.py",
    ),
    "pdf": Command(
        "pdf",
        "print the book as a PDF in each language into _build/pdf (make pdf)",
        "make_pdf.py",
    ),
    "install-cell": Command(
        "install_cell",
        "write (or --check) the chapters' two hidden cells",
        "install_cell.py",
    ),
    "nbpercent": Command(
        "nbpercent",
        "a chapter as a percent script and back: to-py NB PY, to-nb PY NB",
        "nbpercent.py",
    ),
    "reading-path": Command(
        "reading_path",
        "measure the chapters' reading path; --fold folds long cells",
        "reading_path.py",
    ),
    "site": Command("site", "print the book's resolved repository and address", ""),
}
# How each module's main takes its arguments, where it is not main(argv) without the
# program's name.
CALLS: dict[str, Callable[..., Optional[int]]] = {
    "nbpercent": _argv0_main,
    "reading_path": _sys_argv_main,
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="booktools",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="`booktools SUBCOMMAND --help` shows a subcommand's options.",
    )
    sub = p.add_subparsers(dest="command", metavar="SUBCOMMAND", title="subcommands")
    for name, command in COMMANDS.items():
        sub.add_parser(name, help=command.help, add_help=False)
    return p


def main(argv: Optional[list[str]] = None) -> int:
    """Run `booktools` with `argv` (default: sys.argv[1:]); the subcommand's exit
    status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        p = parser()
        if not argv or argv[0] in ("-h", "--help"):
            p.print_help()
            return 0 if argv else 2
        p.error(
            f"unknown subcommand {argv[0]!r}; expected one of {', '.join(COMMANDS)}"
        )
    name, rest = argv[0], argv[1:]
    command = COMMANDS[name]
    module = importlib.import_module(f"booktools.{command.module}")
    prog = sys.argv[0]
    # argparse's usage line names the subcommand
    sys.argv[0] = f"booktools {name}"
    try:
        status = CALLS.get(command.module, _argv_main)(module, rest)
    finally:
        sys.argv[0] = prog
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
