"""The two hidden cells every chapter has, written from one place.

`booktools install-cell` (book/booktools/cli.py), the command line of
`booktools.install_cell` (book/booktools/install_cell.py), where its documentation is.
"""

import sys

from booktools.cli import main

if __name__ == "__main__":
    sys.exit(main(["install-cell", *sys.argv[1:]]))
