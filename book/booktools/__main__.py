"""`python -m booktools`: the `booktools` command (booktools.cli)."""

import sys

from booktools.cli import main

sys.exit(main())
