"""The reading path of every chapter: the code a reader sees, and what is folded away.

`booktools reading-path` (book/booktools/cli.py), the command line of
`booktools.reading_path` (book/booktools/reading_path.py), where its documentation is.
"""

import sys

from booktools.cli import main

if __name__ == "__main__":
    sys.exit(main(["reading-path", *sys.argv[1:]]))
