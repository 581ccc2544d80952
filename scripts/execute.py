"""Execute chapters top to bottom in a fresh kernel and store their outputs; know which
depend on which.

`booktools execute` (book/booktools/cli.py), the command line of `booktools.execute`
(book/booktools/execute.py), where its documentation is.
"""

import sys

from booktools.cli import main

if __name__ == "__main__":
    sys.exit(main(["execute", *sys.argv[1:]]))
