"""The book's own tools: everything around the library that builds, checks and publishes
the book.

`transformer_lib` is what a reader imports; `booktools` is what makes the book from it.
It is installed with the project (`make venv`: ``pip install -e book``) and never
published.

- `cli`: the `booktools` command, each tool below a subcommand (`booktools --help`).
- `config`: the one reader of the book's `_config.yml` and `_toc.yml`.
- `myst`: the one reader of the chapters' MyST (markdown-it-py with MyST-Parser's own
  plugins): roles, directives, maths and code spans, as the book's renderer sees them.
- `glossary`: the glossary's terms; `glue`: the values the chapters glue into their
  prose.
- `editions`: the runner editions (plain notebooks for Colab, Binder, JupyterLab).
- `translations`, `terms`: the Chinese edition's checks, its term map (one word for one
  idea) and its catalogue of glued words.
- `install_cell`, `execute`, `reading_path`, `nbpercent`: the chapters' hidden cells,
  their execution and dependencies, their folding, and their editing as percent scripts.
- `build`, `pdf`: the HTML book in both languages and its printed edition.
- `diagrams`: the book's figures, drawn as SVG from the real objects' shapes.
- `opcount`, `machine`: an operator counter and the CPU's matrix-product peak, for the
  benchmarks, the GPU check and chapter 11b.
- `ext`: the Sphinx extensions of the build.

The command lines in `scripts/` are thin wrappers over `booktools`' subcommands.
"""
