"""The two hidden cells every chapter has, written from one place.

The command line of `booktools.install_cell` (book/booktools/install_cell.py), where its documentation is.
"""
import sys

from booktools.install_cell import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
