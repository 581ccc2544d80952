"""Runner editions: every chapter as a plain notebook that Jupyter, JupyterLab and Colab
render.

`booktools editions` (book/booktools/cli.py), the command line of `booktools.editions`
(book/booktools/editions.py), where its documentation is.
"""

import sys

from booktools.cli import main

if __name__ == "__main__":
    sys.exit(main(["editions", *sys.argv[1:]]))
