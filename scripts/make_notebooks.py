"""Runner editions: every chapter as a plain notebook that Jupyter, JupyterLab and Colab render.

The command line of `booktools.editions` (book/booktools/editions.py), where its documentation is.
"""
import sys

from booktools.editions import main

if __name__ == "__main__":
    sys.exit(main())
