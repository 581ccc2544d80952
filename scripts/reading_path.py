"""The reading path of every chapter: the code a reader sees, and what is folded away.

The command line of `booktools.reading_path` (book/booktools/reading_path.py), where its documentation is.
"""
from booktools.reading_path import main

if __name__ == "__main__":
    main()
