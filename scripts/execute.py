"""Execute chapters top to bottom in a fresh kernel and store their outputs; know which depend on which.

The command line of `booktools.execute` (book/booktools/execute.py), where its documentation is.
"""
import sys

from booktools.execute import main

if __name__ == "__main__":
    sys.exit(main())
