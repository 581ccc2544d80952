"""Build the book's editions: English at the root of _build/html, Chinese under
_build/html/zh.

The command line of `booktools.build` (book/booktools/build.py), where its documentation
is."""

import sys

from booktools.cli import main

if __name__ == "__main__":
    sys.exit(main(["build", *sys.argv[1:]]))
