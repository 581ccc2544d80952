"""Check the Chinese edition's message catalogues against their English messages.

The command line of `booktools.translations` (book/booktools/translations.py), where its
documentation is."""

import sys

from booktools.cli import main

if __name__ == "__main__":
    sys.exit(main(["translations", *sys.argv[1:]]))
