"""The book as a PDF, in both languages: `make pdf` writes them into _build/pdf.

The command line of `booktools.pdf` (book/booktools/pdf.py), where its documentation is.
"""

import sys

from booktools.cli import main

if __name__ == "__main__":
    sys.exit(main(["pdf", *sys.argv[1:]]))
