"""The book's tools (booktools): the one MyST reader, the glue of translated pages, the
pinned toolchain.

booktools.myst is how every tool reads the chapters' MyST; these tests hold it to what
MyST-Parser itself reads (a role quoted in code is code, a directive's options are its
options). The Chinese edition's glued values go through MyST-NB's documented
cross-document glue; the versions it was written for are pinned in requirements.txt and
checked here, so that an upgrade fails here, by name, before it fails in the Chinese
build."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

from booktools import myst
from booktools.ext import translated_glue
from conftest import ROOT

# ------------------------------------------------------------------ the pinned
# toolchain

TOOLCHAIN = (
    "sphinx",
    "myst-nb",
    "myst-parser",
    "markdown-it-py",
    "mdit-py-plugins",
    "sphinx-book-theme",
    "pydata-sphinx-theme",
    "sphinx-external-toc",
    "jupyter-book",
    "sphinxcontrib-bibtex",
    # what the tools import themselves, and jupyter-book's Sphinx plug-ins
    "docutils",
    "pyyaml",
    "pybtex",
    "pybtex-docutils",
    "linkify-it-py",
    "sphinx-comments",
    "sphinx-copybutton",
    "sphinx-design",
    "sphinx-jupyterbook-latex",
    "sphinx-multitoc-numbering",
    "sphinx-thebe",
    "sphinx-togglebutton",
)


def _pins() -> dict[str, str]:
    text = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    return {
        m[1].lower(): m[2]
        for m in re.finditer(r"^([A-Za-z0-9_.-]+)==(\S+)", text, re.M)
    }


@pytest.mark.parametrize("name", TOOLCHAIN)
def test_the_documentation_toolchain_is_pinned_and_installed_as_pinned(name):
    pins = _pins()
    assert name in pins, (
        f"requirements.txt: pin {name} (==), the version the book builds with"
    )
    assert importlib.metadata.version(name) == pins[name], (
        f"{name} {importlib.metadata.version(name)} is installed, requirements.txt pins"
        f" {pins[name]}: `make venv`"
    )


def test_translated_glue_runs_on_the_versions_it_was_written_for():
    """The extension relies on Sphinx's i18n naming a translated message's source
    "...<translated>" and on MyST-NB's glue cache; on another version, read both again
    before changing WRITTEN_FOR."""
    for name, version in translated_glue.WRITTEN_FOR.items():
        assert importlib.metadata.version(name) == version, (
            f"booktools.ext.translated_glue was written for {name} {version}, this is"
            f" {importlib.metadata.version(name)}: check that Sphinx still parses a"
            " translated message from a source ending in '<translated>' and that"
            " MyST-NB still resolves {glue:text}`page.ipynb::key` from its glue"
            " cache (make book, the Chinese pages' numbers), then update WRITTEN_FOR"
        )


def test_a_translated_message_names_its_page_in_each_glued_key():
    message = (
        "约 {glue:text}`ch01_x:.2f` 秒，"
        "{glue:text}`ch01_n`，``{glue:text}`code` `` 不变，"
        "{glue:text}`other.ipynb::k:s` 亦然，{term}`Softmax` 与 $x_{glue}$ 也是。"
    )
    got = translated_glue.with_page(message, "01_qkv_attention.ipynb")
    assert (
        got == "约 {glue:text}`01_qkv_attention.ipynb::ch01_x:.2f` 秒，"
        "{glue:text}`01_qkv_attention.ipynb::ch01_n:s`，``{glue:text}`code` ``"
        " 不变，{glue:text}`other.ipynb::k:s` 亦然，{term}`Softmax` 与"
        " $x_{glue}$ 也是。"
    )


# ------------------------------------------------------------------ the MyST reader


def test_roles_are_what_myst_reads_as_roles():
    text = (
        "A {term}`query <Query>`, ``{glue:text}`x` `` in code, $\\{a\\}$,"
        " {cite:t}`vaswani2017`."
    )
    assert [(p.name, p.content) for p in myst.roles(text)] == [
        ("term", "query <Query>"),
        ("cite:t", "vaswani2017"),
    ]
    assert myst.titled("query <Query>") == ("query", "Query") and myst.titled(
        "Query"
    ) == ("Query", "Query")


def test_directives_their_arguments_options_and_bodies():
    text = (
        "(target)=\n::::{dropdown} Solution — exercise 1\n:class: tip\n:name:"
        " sol\n\nBody {term}`x`.\n\n```python\nprint(1)\n```\n::::\n\n```{glue:figure}"
        " fig_key\n:alt: A figure\nIts caption.\n```\n"
    )
    first, second = myst.directives(text)
    assert (first.name, first.argument, first.options) == (
        "dropdown",
        "Solution — exercise 1",
        {"class": "tip", "name": "sol"},
    )
    assert (
        first.body == "\nBody {term}`x`.\n\n```python\nprint(1)\n```\n"
        and first.fence == "::::"
    )
    assert (second.name, second.argument, second.options, second.body) == (
        "glue:figure",
        "fig_key",
        {"alt": "A figure"},
        "Its caption.\n",
    )
    assert myst.targets(text) == ["target"]
    # ```python is code, not a directive
    assert [d.name for d in myst.directives(first.body)] == []


def test_located_pieces_are_where_they_are_written():
    text = "x {glue:text}`a` y ``a `b` c`` z $m$ and\n  {doc}`other <02_scaling>` w"
    found = [(text[s:e], p.kind) for s, e, p in myst.located(text)]
    assert found == [
        ("{glue:text}`a`", "role"),
        ("``a `b` c``", "code"),
        ("$m$", "math"),
        ("{doc}`other <02_scaling>`", "role"),
    ]
    assert (
        myst.substitute_roles(text, lambda r: r.name.upper())
        == "x GLUE:TEXT y ``a `b` c`` z $m$ and\n  DOC w"
    )


def test_every_chapter_reads_without_surprise():
    """Every role of every chapter is found where it is written (the editions depend on
    it)."""
    import nbformat

    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                for d in [None, *myst.directives(cell.source)]:
                    source = cell.source if d is None else d.body
                    assert all(
                        source[s:e] == p.source
                        for s, e, p in myst.located(source)
                        if p.kind == "role"
                    )


def test_no_tool_finds_another_through_sys_path():
    """The book's tools are a package (booktools), the library is installed: nothing in
    the repository edits the import path to find one or the other."""
    import subprocess

    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    mark = "sys.path" + ".insert("
    found = [
        f
        for f in tracked
        if f.endswith((".py", ".ipynb", ".md", ".sh", ".yml", ".cfg", ".toml"))
        and mark in (ROOT / f).read_text(encoding="utf-8", errors="replace")
    ]
    assert not found, f"sys.path edited in: {found}"


# ------------------------------------------------------------------ one command, one
# reader of the book's files


def _dependencies() -> set[str]:
    text = (ROOT / "book" / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^dependencies = \[(.*?)^\]", text, re.M | re.S)
    assert block, "book/pyproject.toml declares no dependencies"
    return {
        re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0].lower()
        for d in re.findall(r'"([^"]+)"', block[1])
    }


def _third_party_imports() -> dict[str, set[str]]:
    """Each distribution the tools import, with the modules that import it (booktools/
    and its ext/)."""
    distributions = importlib.metadata.packages_distributions()
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "book" / "booktools").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else (
                    [node.module]
                    if isinstance(node, ast.ImportFrom)
                    and node.level == 0
                    and node.module
                    else []
                )
            )
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in ("booktools", "__future__"):
                    continue
                for dist in distributions.get(top, [top]):
                    found.setdefault(dist.lower(), set()).add(path.name)
    return found


def test_every_import_of_the_tools_is_declared_and_pinned():
    declared, pins = _dependencies(), _pins()
    for dist, modules in _third_party_imports().items():
        assert dist in declared, (
            f"booktools imports {dist} ({sorted(modules)}): declare it in"
            " book/pyproject.toml"
        )
    for dist in declared:
        assert dist in pins, (
            f"book/pyproject.toml declares {dist}: pin it in requirements.txt (==)"
        )


def test_every_sphinx_plugin_of_jupyter_book_is_pinned():
    pins = _pins()
    for requirement in importlib.metadata.requires("jupyter-book") or []:
        name = (
            re.split(r"[<>=!~ ;\[(]", requirement, maxsplit=1)[0]
            .lower()
            .replace("_", "-")
        )
        if "extra ==" not in requirement and name.startswith(("sphinx", "myst")):
            assert name in pins, (
                f"jupyter-book loads {name}: pin it in requirements.txt like the rest"
            )


def test_booktools_help_lists_every_subcommand():
    """The console script `make venv` installs, and `python -m booktools`, list the same
    subcommands."""
    from booktools import cli

    assert {"build", "editions", "translations", "execute", "pdf"} <= set(cli.COMMANDS)
    script = Path(sys.executable).with_name("booktools")
    assert script.is_file(), (
        "no `booktools` console script: `make venv` (pip install -e book)"
    )
    for command in (
        [str(script), "--help"],
        [sys.executable, "-m", "booktools", "--help"],
    ):
        out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        listed = re.findall(r"^    (\S+)", out.stdout, re.M)
        assert listed == list(cli.COMMANDS), (command, out.stdout)
    wrong = subprocess.run(
        [str(script), "nothing"], capture_output=True, text=True, cwd=ROOT
    )
    assert wrong.returncode == 2 and "unknown subcommand 'nothing'" in wrong.stderr


def test_each_subcommand_runs_its_module_command_line():
    """`booktools execute --check` is `booktools.execute`'s command line; each module
    has a main."""
    from booktools import cli

    for name, command in cli.COMMANDS.items():
        assert callable(
            getattr(
                importlib.import_module(f"booktools.{command.module}"), "main", None
            )
        ), name
    out = subprocess.run(
        [sys.executable, "-m", "booktools", "execute", "--help"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and out.stdout.startswith("usage: booktools execute"), (
        out.stdout
    )


def _thin_scripts() -> list[str]:
    """The scripts in scripts/ that only hand their arguments to a booktools command
    line."""
    return sorted(
        p.name
        for p in (ROOT / "scripts").glob("*.py")
        if re.search(
            r"^from booktools(\.\w+)? import main$", p.read_text(encoding="utf-8"), re.M
        )
    )


@pytest.mark.parametrize("script", _thin_scripts())
def test_each_thin_script_calls_booktools_one_way(script):
    from booktools import cli

    text = (ROOT / "scripts" / script).read_text(encoding="utf-8")
    call = re.search(
        r'^from booktools\.cli import main\n\nif __name__ == "__main__":\n'
        r'    sys\.exit\(main\(\["([\w-]+)", \*sys\.argv\[1:\]\]\)\)\n\Z',
        text,
        re.M,
    )
    assert call, (
        f"scripts/{script}: call booktools one way: sys.exit(main([SUBCOMMAND,"
        " *sys.argv[1:]])) from booktools.cli"
    )
    assert cli.COMMANDS[call[1]].script == script, (script, call[1])


def _reads_book_files(path: Path) -> bool:
    """Whether a module parses YAML and names _config.yml or _toc.yml in its code (not
    its docstrings)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    names = any(
        isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and id(n) not in docstrings
        and re.search(r"(^|/)_(config|toc)\.yml$", n.value)
        for n in ast.walk(tree)
    )
    parses = any(
        isinstance(n, ast.Attribute) and n.attr in ("safe_load", "load", "full_load")
        for n in ast.walk(tree)
    )
    return names and parses


@pytest.mark.parametrize(
    "module",
    [
        p.name
        for p in sorted((ROOT / "book" / "booktools").glob("*.py"))
        if p.name != "config.py"
    ],
)
def test_the_books_yaml_files_are_read_in_one_module(module):
    assert not _reads_book_files(ROOT / "book" / "booktools" / module), (
        f"booktools/{module} parses _config.yml or _toc.yml itself: "
        "use booktools.config"
    )


def test_config_reads_the_books_files():
    from booktools import config

    assert config.root_page() == "book/intro" and config.pages()[0] == "book/intro"
    assert (
        "chapters/01_qkv_attention" in config.pages()
        and config.language_editions()["en"] == ""
    )
    assert (
        "dollarmath" in config.myst_extensions() and config.repository_settings()["url"]
    )
    settings = config.config()
    settings["title"] = "changed"  # a caller's change stays its own
    assert config.config()["title"] != "changed"
    with pytest.raises(FileNotFoundError, match="no such file"):
        config.config(ROOT / "nothing.yml")


def test_the_quick_tier_leaves_out_only_tests_that_exist():
    """`make test-quick` deselects the slow runs by name: a renamed or removed test is
    named here, not silently run (or left out) in the quick tier; `make test` prints its
    slowest tests."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(
        r"^\t\$\(PY\) -m pytest tests chapters \$\(NBVAL_ARGS\) -n \$\(WORKERS\)"
        r" --durations=25 ",
        makefile,
        re.M,
    )
    left_out = re.findall(r"--deselect (tests/\S+?)::(\w+)", makefile)
    assert left_out, "the Makefile's test-quick deselects nothing"
    for path, name in left_out:
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        assert name in {
            n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
        }, f"{path}::{name}"
    for path in re.findall(r"--ignore=(tests/\S+)", makefile):
        assert (ROOT / path).is_file(), path


# ---- one MyST reader: no second grammar of regular expressions -----------------------

RE_CALLS = {
    "compile",
    "search",
    "match",
    "fullmatch",
    "findall",
    "finditer",
    "sub",
    "subn",
    "split",
}
# What a pattern of MyST's own syntax looks like: a role or directive name in braces, a
# backtick after a closing brace (a role's content), a code fence, a colon fence.
MYST_SYNTAX = re.compile(
    r"(?<![A-Za-z])\\\{[A-Za-z]|\{\{[A-Za-z]|\}`|```|`\{3|:\{3|(?<!\\):::"
)


def _patterns(path: Path) -> list[tuple[int, str]]:
    """(line, pattern) of every regular expression `path` hands to the `re` module,
    f-strings' text parts included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in RE_CALLS
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "re"
            and node.args
        ):
            first = node.args[0]
            parts = first.values if isinstance(first, ast.JoinedStr) else [first]
            text = "".join(
                p.value
                for p in parts
                if isinstance(p, ast.Constant) and isinstance(p.value, str)
            )
            found.append((node.lineno, text))
    return found


def test_no_regular_expression_reads_myst():
    """Tests and tools read roles, glue and directives through booktools.myst
    (MyST-Parser's own markdown-it plugins), never with a regular expression of their
    own (a second grammar that disagrees with the renderer at the edges: nested
    directives, roles in dropdowns, ```` fences)."""
    files = sorted((ROOT / "tests").glob("*.py")) + sorted(
        (ROOT / "book" / "booktools").rglob("*.py")
    )
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {pattern!r}"
        for path in files
        if path.name not in ("myst.py", "test_book_tools.py")
        for line, pattern in _patterns(path)
        if MYST_SYNTAX.search(pattern)
    ]
    assert not offenders, (
        "MyST read with a regular expression; use booktools.myst:\n"
        + "\n".join(offenders)
    )


def test_the_myst_regex_check_sees_one():
    """The scan is not vacuous: it finds a role, a glue role, a dropdown and a fence
    pattern."""
    for pattern in (
        r"\{cite:t\}`[^`]*`",
        r"\{glue(?::\w+)?\}`",
        r"^:{3,}\{dropdown\}",
        r"```.*?```",
    ):
        assert MYST_SYNTAX.search(pattern), pattern
    for pattern in (
        r"\d+(?:\.\d+)?",
        r"[\u4e00-\u9fff]",
        r"\\text\{[^{}]*\}",
        r"^#{1,6}\s",
    ):
        assert not MYST_SYNTAX.search(pattern), pattern
