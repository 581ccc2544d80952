"""Publishing: the GitHub Actions workflow, Binder's environment, the chapters' install
cell, the glossary.

The workflow cannot run here, so its structure is checked: it runs `make test`, and on
the default branch builds the book and deploys `_build/html` with the documented
upload-pages-artifact / deploy-pages pair. The install cell, which makes a chapter work
on Colab and Binder, is run in a fresh virtual environment that lacks the package,
installing from a local copy of this checkout instead of the git URL (offline: no index,
no dependencies)."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest
import yaml

from conftest import ROOT

from booktools import install_cell, myst

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"
SEEDS = ROOT.parent / "shared" / "seeds"
CJK = re.compile(r"[\u4e00-\u9fff]")
DEFAULT_BRANCH = (
    "github.ref == format('refs/heads/{0}', github.event.repository.default_branch)"
)


# --- the workflow ---------------------------------------------------------------------


def _steps(job: dict) -> list[dict]:
    steps = job.get("steps")
    assert isinstance(steps, list) and steps, "a job without steps"
    for step in steps:
        assert isinstance(step, dict) and ("uses" in step) != ("run" in step), (
            f"a step needs uses or run: {step}"
        )
    return steps


def check_workflow(wf: dict) -> None:
    assert isinstance(wf, dict) and wf.get("name")
    on = wf.get(True, wf.get("on"))  # YAML 1.1 reads the key `on` as the boolean True
    assert on is not None, "no `on:` triggers"
    assert set(on) >= {"push", "pull_request"}, on
    assert "main" in on["push"]["branches"]
    assert wf["permissions"] == {"contents": "read"}, (
        "least privilege at the top; deploy asks for more"
    )

    jobs = wf["jobs"]
    assert set(jobs) == {"test", "deploy", "editions"}, set(jobs)
    test, deploy, editions = jobs["test"], jobs["deploy"], jobs["editions"]
    # the runner editions go to their own branch, which the launch buttons open; only
    # after the tests pass
    assert editions["needs"] == "test" and editions["permissions"] == {
        "contents": "write"
    }, editions
    for job in jobs.values():
        assert job["runs-on"] == "ubuntu-latest"
    steps = _steps(test)
    runs = "\n".join(s.get("run", "") for s in steps)
    uses = [s.get("uses", "") for s in steps]
    assert uses[0].startswith("actions/checkout@")
    assert re.search(r"apt-get install\b.*\bchromium\b.*\bnpm\b", runs), (
        "Chromium and npm from apt"
    )
    assert ".ci/run" in runs and "make test" in (ROOT / ".ci" / "run").read_text(), (
        "the test step runs make test"
    )
    assert "make test-slow" in runs, (
        "CI runs the slow tier (exercise sweeps, acceptance tests)"
    )
    assert test["env"]["CI"] == "true", (
        "under CI=true the browser tests fail instead of skipping"
    )
    # the address setting (booktools.site) from the repository and commit the workflow
    # runs in
    assert test["env"].get("BOOK_REPOSITORY") == "${{ github.repository }}", (
        "BOOK_REPOSITORY from github.repository"
    )
    assert (
        test["env"].get("BOOK_REF") == "${{ github.sha }}"
        and test["env"].get("BOOK_PUBLISH") == "1"
    )

    book = [s for s in steps if s.get("run", "").strip() == "make book"]
    upload = [
        s
        for s in steps
        if s.get("uses", "").startswith("actions/upload-pages-artifact@")
    ]
    assert len(book) == 1 and len(upload) == 1, (
        "one `make book` step and one upload-pages-artifact step"
    )
    assert steps.index(book[0]) < steps.index(upload[0]) and steps.index(
        book[0]
    ) > uses.index(next(u for u in uses if u.startswith("actions/checkout@")))
    assert upload[0]["with"]["path"] == "_build/html"
    for step in book + upload:
        assert DEFAULT_BRANCH in step["if"] and "push" in step["if"], (
            "publish only from the default branch"
        )

    assert deploy["needs"] == "test" and DEFAULT_BRANCH in deploy["if"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    (step,) = _steps(deploy)
    assert (
        step["uses"].startswith("actions/deploy-pages@") and step["id"] == "deployment"
    )
    assert "steps.deployment.outputs.page_url" in deploy["environment"]["url"]


def test_workflow_runs_make_test_and_deploys_the_book_from_the_default_branch():
    check_workflow(yaml.safe_load(WORKFLOW.read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    "break_it",
    [
        "deploy from every branch",
        "no id-token",
        "upload another folder",
        "no tests",
        "no address",
    ],
)
def test_workflow_check_catches_a_broken_workflow(break_it):
    """The structure check is not vacuous: each of these mistakes fails it."""
    wf = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert True in wf, "PyYAML reads `on:` as True (the check relies on it)"
    steps = wf["jobs"]["test"]["steps"]
    if break_it == "deploy from every branch":
        wf["jobs"]["deploy"]["if"] = "always()"
    elif break_it == "no id-token":
        del wf["jobs"]["deploy"]["permissions"]["id-token"]
    elif break_it == "upload another folder":
        next(s for s in steps if "upload-pages-artifact" in s.get("uses", ""))["with"][
            "path"
        ] = "_build"
    elif break_it == "no address":
        del wf["jobs"]["test"]["env"]["BOOK_REPOSITORY"]
    else:
        wf["jobs"]["test"]["steps"] = [
            s for s in steps if ".ci/run" not in s.get("run", "")
        ]
    with pytest.raises(AssertionError):
        check_workflow(wf)


# --- Binder ---------------------------------------------------------------------------


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line.strip())
        if m:
            pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    return pins


def test_binder_environment_is_cpu_torch_and_the_projects_pins():
    binder = ROOT / "binder" / "requirements.txt"
    lines = [
        ln.strip()
        for ln in binder.read_text(encoding="utf-8").splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    assert lines[-2:] == [
        ".",
        "./book",
    ], "the library and the book's tools, installed from the checkout"
    ours, project = _pins(binder), _pins(ROOT / "requirements.txt")
    assert ours["torch"] == project["torch"] + "+cpu", "CPU-only torch, same version"
    for name in (
        "numpy",
        "matplotlib",
        "ipywidgets",
        "jupyterlab",
        "tokenizers",
        "num2words",
        "sacrebleu",
        "tqdm",
    ):
        assert ours.get(name) == project[name], (
            f"{name}: binder {ours.get(name)} vs requirements.txt {project[name]}"
        )
    assert ours["myst-nb"] == importlib.metadata.version("myst-nb"), (
        "the MyST-NB the book is built with (glue)"
    )
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == "python-3.11"


# --- the install cell -----------------------------------------------------------------


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_starts_with_the_install_cell_and_ends_with_its_run_time(path):
    nb = nbformat.read(path, as_version=4)
    url, branch = install_cell.repository()
    assert not install_cell.problems(nb, url, branch), (
        f"{path.name}: {install_cell.problems(nb, url, branch)}; run `python"
        f" scripts/install_cell.py {path}`, then `make execute NB={path}`"
    )
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].outputs == [], (
        "where the package is installed the install cell prints nothing"
    )
    glued = [
        o
        for o in code[-1].outputs
        if "application/papermill.record/text/plain" in o.get("data", {})
    ]
    assert glued and re.fullmatch(
        r"'about \d+(\.5)? (s|min) on a \d+-core CPU'",
        glued[0]["data"]["application/papermill.record/text/plain"],
    ), code[-1].outputs
    first_md = next(c for c in nb.cells if c.cell_type == "markdown")
    assert (
        "{glue:text}`chapter_run_time`" in first_md.source and "GPU" in first_md.source
    ), "the note under the title: how long the chapter takes, whether it uses a GPU"


def test_install_cell_follows_the_repository_set_in_config():
    url, branch = install_cell.repository()
    assert url.startswith("https://github.com/") and branch
    source = install_cell.install_cell_source(url, branch)
    assert f'"git+{url}@{branch}"' in source
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["repository"]["url"] == url
    other = install_cell.install_cell_source("https://github.com/someone/fork", "dev")
    assert "git+https://github.com/someone/fork@dev" in other and url not in other


def test_install_cell_installs_the_package_in_a_fresh_venv(tmp_path):
    """The cell, run by IPython in a venv without transformer_lib, installs it (from a
    local copy)."""
    # The package's sources only: a build in the checkout itself would leave build/
    # behind.
    src = tmp_path / "checkout"
    src.mkdir()
    for f in ROOT.iterdir():
        if (
            f.is_file()
            and f.suffix in {"", ".toml", ".md", ".txt", ".cfg"}
            and not f.name.startswith(".")
        ):
            shutil.copy2(f, src / f.name)
    shutil.copytree(
        ROOT / "transformer_lib",
        src / "transformer_lib",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (src / "book").mkdir()
    shutil.copy2(ROOT / "book" / "pyproject.toml", src / "book" / "pyproject.toml")
    shutil.copytree(
        ROOT / "book" / "booktools",
        src / "book" / "booktools",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    venv = tmp_path / "venv"
    base_python = getattr(sys, "_base_executable", sys.executable)
    subprocess.run(
        [base_python, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # Everything else (IPython, pip, setuptools, torch, myst_nb) from the project's
    # venv, read-only: its site-packages on the path, without running its .pth files, so
    # the editable transformer_lib of the checkout is NOT importable.
    (site / "_project_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    script = tmp_path / "run_cell.py"
    script.write_text(
        "import importlib.util, sys\n"
        "assert importlib.util.find_spec('transformer_lib') is None, 'the fresh venv"
        " already has it'\n"
        "assert importlib.util.find_spec('booktools') is None, 'the fresh venv already"
        " has the tools'\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "result ="
        " shell.run_cell("
        f"{install_cell.install_cell_source(*install_cell.repository())!r}"
        ")\n"
        "result.raise_error()\n"
        "import transformer_lib, torch\n"
        "out, w = transformer_lib.attention(torch.ones(1, 2, 4), torch.ones(1, 3, 4),"
        " torch.ones(1, 3, 4))\n"
        "print('installed at', transformer_lib.__file__, tuple(out.shape))\n"
        "from booktools import diagrams\n"
        "print('tools at', diagrams.__file__)\n"
        "again ="
        " shell.run_cell("
        f"{install_cell.install_cell_source(*install_cell.repository())!r}"
        ")\n"
        "again.raise_error()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    env.update(
        TRANSFORMER_LIB_SOURCE=src.as_uri(),
        PIP_NO_INDEX="1",
        PIP_NO_DEPS="1",
        # i.e. --no-build-isolation (pip's env quirk)
        PIP_NO_BUILD_ISOLATION="0",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        MPLBACKEND="agg",
    )
    proc = subprocess.run(
        [python, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    installed = re.search(r"installed at (\S+) \(1, 2, 4\)", proc.stdout)
    assert installed, proc.stdout
    assert Path(installed.group(1)).is_relative_to(site), (
        f"not installed into the fresh venv: {installed.group(1)}"
    )
    tools = re.search(r"tools at (\S+)", proc.stdout)
    assert tools and Path(tools.group(1)).is_relative_to(site), (
        f"the book's tools not installed: {proc.stdout}"
    )
    assert proc.stdout.count("Note: you may need to restart the kernel") == 1, (
        "the second run is a no-op"
    )


# --- the glossary ---------------------------------------------------------------------


def _glossary() -> list[tuple[list[str], str]]:
    """(the entry's names: English, Chinese and aliases, its text) for every glossary
    entry, as the one glossary reader (booktools.glossary) reads them."""
    from booktools.glossary import glossary_terms

    return [
        ([*t.english, t.chinese, *t.aliases], t.definition) for t in glossary_terms()
    ]


def test_glossary_gives_every_term_its_chinese_name():
    """Every entry has its text and its Chinese name: a Chinese term, or (softmax,
    logits, BLEU, dropout) the English word the Chinese edition writes, named by the
    entry's †."""
    from booktools.glossary import glossary_terms

    entries = glossary_terms()
    assert len(entries) >= 40
    for term in entries:
        assert term.definition, term.english
        assert CJK.search(term.chinese) or term.chinese == term.in_english, (
            f"{term.english[0]}: no Chinese name"
        )
    names = {name for t in entries for name in (t.chinese, *t.aliases)}
    for zh in (
        "自注意力",
        "多头注意力",
        "位置编码",
        "掩码",
        "交叉注意力",
        "残差连接",
        "层归一化",
        "前馈网络",
        "教师强制",
        "前瞻掩码",
        "KV 缓存",
    ):
        assert zh in names, f"{zh} is not in the glossary"
    in_english = {t.english[0]: t.chinese for t in entries if not CJK.search(t.chinese)}
    assert in_english == {
        "Softmax": "softmax",
        "Logits": "logits",
        "BLEU": "BLEU",
        "Dropout": "dropout",
    }


def test_glossary_marks_only_terms_written_in_english():
    """A † says Chinese writing usually keeps the term in English, and names the English
    word: one the Chinese seed notes or the Chinese edition itself write so (LayerNorm,
    token, BLEU, FLOPs); the entries Chinese writes in Chinese (交叉熵, 采样, 词表,
    因果掩码 …) carry none."""
    from booktools.glossary import glossary_terms

    seeds = (
        "".join(p.read_text(encoding="utf-8") for p in SEEDS.glob("*.txt"))
        if SEEDS.is_dir()
        else ""
    )
    from babel.messages.pofile import read_po

    chinese = ""
    # the translations, not their English
    for po in (ROOT / "locales" / "zh_CN").rglob("*.po"):
        with po.open("rb") as f:
            chinese += "\n".join(
                str(m.string) for m in read_po(f) if m.id and m.string != m.id
            )
    marked = {t.english[0]: t for t in glossary_terms() if t.definition.startswith("†")}
    for name, term in marked.items():
        words = [w.strip() for w in term.in_english.split(",")]
        assert all(re.search(re.escape(w), seeds + chinese, re.I) for w in words), (
            f"{name}: † says it is written {term.in_english!r}, but no Chinese text"
            " writes it so"
        )
    for name in (
        "Cross-entropy",
        "Saturation",
        "Sampling",
        "Vocabulary",
        "Label smoothing",
        "Learning-rate warm-up",
        "Length penalty",
        "Greedy decoding",
        "Causal mask",
        "Padding mask",
        "Scaled dot-product attention",
        "Weight tying",
        "Mixed precision",
        "Attention weights",
        "Beam search",
        "Tokenizer",
    ):
        assert name not in marked, (
            f"{name}: written in Chinese in Chinese writing, no †"
        )


def test_chapters_link_to_the_glossary_and_every_link_resolves():
    terms = {t.lower() for ts, _ in _glossary() for t in ts}
    for path in CHAPTERS:
        nb = nbformat.read(path, as_version=4)
        links = [
            r.content
            for c in nb.cells
            if c.cell_type == "markdown"
            for r in myst.nested_roles(c.source, "term")
        ]
        assert links, f"{path.name} never links to the glossary"
        for link in links:
            target = myst.titled(link)[1].lower()
            assert target in terms, (
                f"{path.name}: {{term}}`{link}` is not in book/glossary.md"
            )


# --- the book's address: one setting --------------------------------------------------

from booktools import site


def test_the_address_comes_from_one_setting():
    repo = site.repository({"BOOK_REPOSITORY": "alice/the-transformer-built"})
    assert (repo.url, repo.owner, repo.name, repo.placeholder) == (
        "https://github.com/alice/the-transformer-built",
        "alice",
        "the-transformer-built",
        False,
    )
    assert (
        site.site_url({"BOOK_REPOSITORY": "Alice/book"})
        == "https://alice.github.io/book/"
    )
    assert (
        site.site_url(
            {"BOOK_REPOSITORY": "alice/book", "BOOK_SITE_URL": "https://x.org/b"}
        )
        == "https://x.org/b/"
    )
    assert (
        site.repository({"BOOK_REPOSITORY": "https://github.com/bob/r.git"}).web_url
        == "https://github.com/bob/r"
    )
    assert (
        site.repository({"BOOK_REPOSITORY": "file:///tmp/clone"}).url
        == "file:///tmp/clone"
    )
    assert site.ref({"BOOK_REF": "abc123"}) == "abc123"


@pytest.mark.parametrize(
    "env",
    [{}, {"BOOK_REPOSITORY": "OWNER/the-transformer-built"}],
    ids=["unset", "placeholder"],
)
def test_a_publishing_build_refuses_the_placeholder_by_name(env, monkeypatch):
    # a checkout without a GitHub remote
    monkeypatch.setattr(site, "_remote", lambda: "")
    assert site.repository(env).placeholder  # locally: the placeholder, no error
    with pytest.raises(
        site.SiteError, match="BOOK_REPOSITORY is not set .* BOOK_REPOSITORY=owner/name"
    ):
        site.repository({**env, "BOOK_PUBLISH": "1"})
    with pytest.raises(
        site.SiteError, match="BOOK_REPOSITORY: expected owner/name .* got 'not a repo'"
    ):
        site.repository({"BOOK_REPOSITORY": "not a repo"})


def test_the_checkouts_github_remote_is_the_default(monkeypatch):
    monkeypatch.setattr(
        site, "_remote", lambda: "git@github.com:carol/the-transformer-built.git"
    )
    assert site.repository({}).url == "https://github.com/carol/the-transformer-built"


def test_runner_editions_hold_the_setting_and_no_placeholder(tmp_path, monkeypatch):
    """Made with the setting given (as the workflow does), an edition in each language
    installs that repository at that commit and links to that site; nothing says
    OWNER."""
    from booktools import editions

    monkeypatch.setenv("BOOK_REPOSITORY", "alice/the-transformer-built")
    monkeypatch.setenv("BOOK_REF", "0123456789abcdef0123456789abcdef01234567")
    chapter = ROOT / "chapters" / "05_masking.ipynb"
    for path in editions.write_editions(
        [chapter], tmp_path, link_siblings=False, log=lambda _: None
    ):
        text = path.read_text(encoding="utf-8")
        assert "OWNER" not in text and "owner.github.io" not in text, path.name
        assert (
            "_REPOSITORY, _COMMIT ="
            ' \\"https://github.com/alice/the-transformer-built\\",'
            ' \\"0123456789abcdef0123456789abcdef01234567\\"' in text
        ), path.name
        assert (
            "https://alice.github.io/the-transformer-built/"
            + ("zh/" if ".zh." in path.name else "book/")
            in text
        )


def test_package_metadata_links_follow_the_setting(tmp_path):
    """The wheel's Homepage/Source/Issues come from the setting (setup.py); without it,
    none."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "PYPI.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "transformer_lib",
        src / "transformer_lib",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for value, expected in (
        (
            "alice/the-transformer-built",
            "https://github.com/alice/the-transformer-built",
        ),
        ("", None),
    ):
        env = {k: v for k, v in os.environ.items() if not k.startswith("BOOK_")}
        env["BOOK_REPOSITORY"] = value
        out = tmp_path / f"dist{bool(value)}"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                "--no-build-isolation",
                "-w",
                str(out),
                str(src),
            ],
            check=True,
            env=env,
            capture_output=True,
            timeout=300,
        )
        import zipfile

        [wheel] = out.glob("*.whl")
        with zipfile.ZipFile(wheel) as z:
            meta = z.read(
                next(n for n in z.namelist() if n.endswith("METADATA"))
            ).decode()
        urls = re.findall(r"^Project-URL: (.*)$", meta, re.M)
        assert ("Source, " + expected in urls) if expected else urls == [], urls
        assert "OWNER" not in meta


def test_the_build_takes_the_address_from_the_setting(tmp_path, monkeypatch):
    """booktools.ext.site_address: the theme's repository (its buttons) and the
    canonical base from the setting; a publishing build without it stops by name;
    downloadable notebooks install from it."""
    from types import SimpleNamespace
    from sphinx.errors import ConfigError
    from booktools.ext import site_address

    def config(language=None):
        return SimpleNamespace(
            html_theme_options={
                "repository_url": "https://github.com/OWNER/the-transformer-built",
                "repository_branch": "main",
            },
            html_baseurl="",
            language=language,
            language_editions={"en": "", "zh_CN": "zh"},
        )

    app = SimpleNamespace()
    monkeypatch.setenv("BOOK_REPOSITORY", "alice/the-transformer-built")
    for language, base in ((None, ""), ("zh_CN", "zh/")):
        cfg = config(language)
        site_address._set_address(app, cfg)
        assert (
            cfg.html_theme_options["repository_url"]
            == "https://github.com/alice/the-transformer-built"
        )
        assert (
            cfg.html_baseurl == "https://alice.github.io/the-transformer-built/" + base
        )
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                install_cell.install_cell_source(
                    "https://github.com/OWNER/the-transformer-built", "main"
                )
            )
        ]
    )
    (tmp_path / "_sources" / "chapters").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "_sources" / "chapters" / "01.ipynb")
    site_address._downloads(
        SimpleNamespace(
            outdir=str(tmp_path),
            builder=SimpleNamespace(format="html"),
            env_site_repository=app.env_site_repository,
        ),
        None,
    )
    text = (tmp_path / "_sources" / "chapters" / "01.ipynb").read_text()
    assert (
        "OWNER" not in text
        and "git+https://github.com/alice/the-transformer-built@main" in text
    )
    monkeypatch.delenv("BOOK_REPOSITORY")
    monkeypatch.setenv("BOOK_PUBLISH", "1")
    monkeypatch.setattr(site, "_remote", lambda: "")
    with pytest.raises(ConfigError, match="BOOK_REPOSITORY"):
        site_address._set_address(app, config())
