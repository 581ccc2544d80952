"""Author chapters as plain text, keep them as notebooks.

`booktools nbpercent` (book/booktools/cli.py), the command line of `booktools.nbpercent`
(book/booktools/nbpercent.py), where its documentation is.
"""

import sys

from booktools.cli import main

if __name__ == "__main__":
    sys.exit(main(["nbpercent", *sys.argv[1:]]))
