"""Author chapters as plain text, keep them as notebooks.

The command line of `booktools.nbpercent` (book/booktools/nbpercent.py), where its documentation is.
"""
import sys

from booktools.nbpercent import main

if __name__ == "__main__":
    main(sys.argv)
