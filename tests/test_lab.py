"""A real client in a live JupyterLab: chapter 2's explorer runs and its slider redraws
the figure; a runner edition (scripts/make_notebooks.py) shows glued numbers as text and
folded solutions.

The test starts JupyterLab (the one `make lab` runs) on 127.0.0.1 with a random port and
a token, over a temporary copy of chapter 2, so the notebook in `chapters/` is never
touched (and the copy is checked unchanged at the end: nothing was saved).
Headless Chromium (Debian's `chromium`, driven by Playwright through `executable_path`:
Playwright's own browser download is not needed) opens the notebook, runs every cell up
to the explorer and the explorer itself, moves the `d_k` slider with the keyboard, and
checks that the slider's value and the figure the kernel draws both change; then it
checks a wrong answer to exercise 1 in the same kernel and reads the sentence that names
the mistake. The round trip of the slider (the browser tells the kernel, the kernel
redraws, the browser shows it) is what "live widgets" means. Without Chromium the test
is skipped with that instruction, except under CI=true, where it fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, chromium_path, skip_or_fail

CHAPTER = ROOT / "chapters" / "02_scaling.ipynb"
# identifies the explorer cell
EXPLORER_SOURCE = "d_k_slider = widgets.SelectionSlider("
LAB = Path(sys.executable).with_name("jupyter-lab")

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_up(
    url: str, proc: subprocess.Popen, log: Path, timeout: float = 120
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(
                f"JupyterLab exited with {proc.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    pytest.fail(
        f"JupyterLab did not answer within {timeout:.0f} s:\n{log.read_text()[-3000:]}"
    )


@pytest.fixture
def lab(tmp_path):
    """JupyterLab on loopback over a copy of chapter 2: (base URL, token, notebook
    folder)."""
    notebooks = tmp_path / "chapters"
    notebooks.mkdir()
    shutil.copy2(CHAPTER, notebooks / CHAPTER.name)
    yield from _serve(tmp_path, notebooks)


def _serve(tmp_path: Path, notebooks: Path, notebook_settings: "dict | None" = None):
    """JupyterLab (as `make lab` runs it) on loopback over `notebooks`: yields (base
    URL, token, folder, log)."""
    if chromium_path() is None:
        skip_or_fail(
            "Chromium not found: install it with `sudo apt-get install chromium`"
            " (Debian/Ubuntu)"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        skip_or_fail("Playwright is missing: `make venv` installs requirements.txt")
    if not LAB.exists():
        skip_or_fail(
            "jupyter-lab is missing from the venv: `make venv` installs"
            " requirements.txt"
        )
    # settings, workspaces, runtime files: nothing of the user's is used or written
    home = tmp_path / "home"
    # No autosave: the test never saves, so the copy must come out as it went in
    # (checked below).
    settings = (
        home
        / "config"
        / "lab"
        / "user-settings"
        / "@jupyterlab"
        / "docmanager-extension"
    )
    settings.mkdir(parents=True)
    (settings / "plugin.jupyterlab-settings").write_text(
        json.dumps({"autosave": False})
    )
    if notebook_settings:
        nb_settings = (
            home
            / "config"
            / "lab"
            / "user-settings"
            / "@jupyterlab"
            / "notebook-extension"
        )
        nb_settings.mkdir(parents=True)
        (nb_settings / "tracker.jupyterlab-settings").write_text(
            json.dumps(notebook_settings)
        )
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
        # the project's kernel first
        "JUPYTER_PATH": str(Path(sys.prefix) / "share" / "jupyter"),
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "PYTHONHASHSEED": "0",
    }
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [
        str(LAB),
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={notebooks}",
        # window.jupyterapp: run cells by command
        "--LabApp.expose_app_in_browser=True",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
        "--MultiKernelManager.default_kernel_name=python3",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = tmp_path / "jupyterlab.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp_path,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(f"{base}/api/status?token={token}", proc, log)
        yield base, token, notebooks, log
    finally:
        proc.terminate()  # SIGTERM: the server shuts its kernels down and exits
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _fail_with_screenshot(page, log: Path, exc: Exception, name: str) -> None:
    """Raise `exc` again with a screenshot of the page (under _build/screenshots) and
    the server's log."""
    shot = ROOT / "_build" / "screenshots" / name
    shot.parent.mkdir(parents=True, exist_ok=True)
    try:
        page.screenshot(path=str(shot), full_page=True)
    except Exception:  # noqa: BLE001 - the page may be gone
        pass
    raise AssertionError(
        f"{exc}\n(screenshot: {shot})\nJupyterLab log:\n{log.read_text()[-3000:]}"
    ) from exc


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_chapter_2_explorer_is_live_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright

    base, token, notebooks, log = lab
    copy = notebooks / CHAPTER.name
    original = _digest(copy)
    t0 = time.monotonic()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium_path(),
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            _open_chapter(page, base, token)
            _check_folded_cells_collapsed(page)
            _run_up_to_explorer(page)
            _check_slider_redraws(page)
            _check_exercise_1_names_mistake(page)
            assert not errors, f"JavaScript errors in the page: {errors}"
        # leave a picture and the server's log for whoever reads the failure
        except Exception as exc:
            _fail_with_screenshot(page, log, exc, "jupyterlab_failure.png")
        finally:
            browser.close()
    elapsed = time.monotonic() - t0
    print(f"JupyterLab client test: {elapsed:.1f} s in the browser")
    # Nothing was saved, not even to the copy the server was given (chapters/ is outside
    # its root).
    assert _digest(copy) == original, "JupyterLab saved the notebook"


def _open_chapter(page, base: str, token: str) -> None:
    """Open the copy of chapter 2 and wait for its kernel to be idle."""
    page.goto(f"{base}/lab/tree/{CHAPTER.name}?token={token}", timeout=120_000)
    page.wait_for_function(
        """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                   return w && w.content && w.content.widgets
                          && w.content.widgets.length > 0
                          && w.sessionContext && w.sessionContext.session
                          && w.sessionContext.session.kernel
                          && w.sessionContext.session.kernel.status === 'idle'; }""",
        timeout=120_000,
    )


def _check_folded_cells_collapsed(page) -> None:
    """Folded cells (jupyter.source_hidden, scripts/reading_path.py) open collapsed here
    too."""
    folded = sum(
        c["cell_type"] == "code"
        and c["metadata"].get("jupyter", {}).get("source_hidden", False)
        for c in json.loads(CHAPTER.read_text(encoding="utf-8"))["cells"]
    )
    collapsed = page.evaluate(
        """() => window.jupyterapp.shell.currentWidget.content.widgets
            .filter(c => c.model.type === 'code' && c.inputHidden).length"""
    )
    assert folded > 0 and collapsed == folded, (
        f"{collapsed} code cells collapsed in JupyterLab, {folded} folded"
    )


def _run_up_to_explorer(page) -> None:
    """Mark the explorer cell (data-test="explorer"), run every cell above it and then
    it, with no stored output left, and check that none raised."""
    # The explorer cell, by its source; select it, run everything above it, then it.
    index = page.evaluate(
        """(needle) => { const nb = window.jupyterapp.shell.currentWidget.content;
                         const i = nb.widgets.findIndex(
                             c => c.model.sharedModel.getSource().includes(needle));
                         if (i >= 0) {
                             nb.activeCellIndex = i; nb.deselectAll();
                             nb.widgets[i].node.setAttribute('data-test', 'explorer');
                         }
                         return i; }""",
        EXPLORER_SOURCE,
    )
    assert index > 0, f"no cell of {CHAPTER.name} contains {EXPLORER_SOURCE!r}"
    # The stored outputs go first, so every widget on the page comes from this kernel.
    page.evaluate("""async () => { const c = window.jupyterapp.commands;
                                   await c.execute('notebook:clear-all-cell-outputs');
                                   await c.execute('notebook:run-all-above');
                                   await c.execute('notebook:run-cell'); }""")
    # Wait for the kernel to finish and for the explorer's widgets to be rendered.
    page.wait_for_function(
        """(i) => { const nb = window.jupyterapp.shell.currentWidget;
                    const cell = nb.content.widgets[i];
                    return nb.sessionContext.session.kernel.status === 'idle'
                           && cell.model.executionCount !== null
                           && cell.node.querySelector('.widget-slider .noUi-handle')
                           && cell.node.querySelector('img.widget-image'); }""",
        arg=index,
        timeout=240_000,
        polling=500,
    )
    failed = page.evaluate(
        """(i) => window.jupyterapp.shell.currentWidget.content.widgets.slice(0, i + 1)
               .filter(c => c.model.type === 'code')
               .flatMap(c => c.model.outputs.toJSON())
               .filter(o => o.output_type === 'error')
               .map(o => o.ename + ': ' + o.evalue)""",
        index,
    )
    assert not failed, f"cells up to the explorer raised: {failed}"


def _check_slider_redraws(page) -> None:
    """One step right on the explorer's d_k slider: its readout, the kernel's value and
    the figure the kernel draws all change."""
    cell = page.locator('.jp-Cell[data-test="explorer"]')
    cell.scroll_into_view_if_needed()
    slider = cell.locator(
        ".widget-slider", has=page.locator(".widget-label", has_text="d_k")
    )
    readout = slider.locator(".widget-readout")
    image = cell.locator("img.widget-image")

    # the figure the kernel sent, hashed (its blob: URL changes too)
    def image_bytes() -> str:
        return page.evaluate(
            """async (img) => { const r = await fetch(img.src);
                                 const b = new Uint8Array(await r.arrayBuffer());
                                 const h = await crypto.subtle.digest('SHA-256', b);
                                 return Array.from(new Uint8Array(h))
                                     .map(x => x.toString(16).padStart(2, '0'))
                                     .join(''); }""",
            image.element_handle(),
        )

    before_value, before_image = readout.inner_text().strip(), image_bytes()
    assert before_value == "256", (
        f"the d_k slider starts at {before_value!r}, expected 256"
    )
    # Move the slider as a reader would: focus its handle, press the right arrow key.
    handle = slider.locator(".noUi-handle")
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_function(
        "(el) => el.innerText.trim() !== '256'",
        arg=readout.element_handle(),
        timeout=30_000,
    )
    after_value = readout.inner_text().strip()
    assert after_value == "1024", (
        f"after one step right the slider reads {after_value!r}"
    )
    # The kernel saw the new value (observe callback), redrew, and the browser shows it.
    deadline = time.monotonic() + 60
    while (
        after_image := image_bytes()
    ) == before_image and time.monotonic() < deadline:
        page.wait_for_timeout(250)
    assert after_image != before_image, (
        "the figure did not change after moving the slider"
    )
    kernel_value = page.evaluate(
        """async () => { const k = window.jupyterapp.shell.currentWidget
                             .sessionContext.session.kernel;
                         const f = k.requestExecute({code: 'print(d_k_slider.value)',
                             silent: false, store_history: false});
                         let text = '';
                         f.onIOPub = m => {
                             if (m.header.msg_type === 'stream') text += m.content.text;
                         };
                         await f.done; return text.trim(); }"""
    )
    assert kernel_value == "1024", (
        f"the kernel's slider value is {kernel_value!r}, expected 1024"
    )


def _check_exercise_1_names_mistake(page) -> None:
    """A reader's wrong answer to exercise 1, checked in the same kernel: the check
    names the mistake."""
    verdict = page.evaluate(
        """async () => { const k = window.jupyterapp.shell.currentWidget
                             .sessionContext.session.kernel;
                         const code = 'from transformer_lib.exercises import ch02\\n'
                             + 'print(repr(ch02.ex1.check('
                             + 'lambda d_k, sigma: 1 / d_k ** 0.5)))';
                         const f = k.requestExecute({code, silent: false,
                             store_history: false});
                         let text = '';
                         f.onIOPub = m => {
                             if (m.header.msg_type === 'stream') text += m.content.text;
                         };
                         await f.done; return text.trim(); }"""
    )
    assert verdict.startswith("✗") and "1/√d_k ignores σ" in verdict, (
        f"the check answered {verdict!r}"
    )


# ---- the runner edition a reader opens with `make lab` -------------------------------
EDITION_OF = ROOT / "chapters" / "01_qkv_attention.ipynb"


def _glued_keys(markdown: str) -> list[str]:
    """The keys of the {glue:text} roles of `markdown`, as MyST reads them
    (booktools.myst): in its paragraphs, then in its directives' bodies, nested ones
    included (the edition converts those too)."""
    from booktools import myst

    return [role.content for role in myst.roles(markdown, "glue:text")] + [
        key for d in myst.directives(markdown) for key in _glued_keys(d.body)
    ]


@pytest.fixture
def lab_editions(tmp_path):
    """JupyterLab over the runner edition of chapter 1, written by
    scripts/make_notebooks.py."""
    from booktools import editions

    [edition] = editions.write_editions(
        [EDITION_OF], tmp_path / "editions", log=lambda _: None, languages=("en",)
    )
    # every cell rendered at once (no windowing), so that any cell can be read without
    # scrolling
    yield from _serve(tmp_path, edition.parent, {"windowingMode": "none"})


def test_edition_shows_glued_numbers_and_folds_solutions(lab_editions):
    """In the edition, a glued number is rendered as its text (no `{glue:text}` role),
    the hints and solutions are folded (<details>) until a click opens them, and no MyST
    is left on screen. The markdown goes through jupyterlab-myst, as in `make lab`."""
    from playwright.sync_api import sync_playwright

    from booktools.glue import Glue
    import nbformat

    base, token, notebooks, log = lab_editions
    source = nbformat.read(EDITION_OF, as_version=4)
    glue = Glue(source, EDITION_OF)
    # the first cell whose prose quotes a glued value: that value, as the page shows it
    index, key = next(
        (i, k)
        for i, c in enumerate(source.cells)
        if c.cell_type == "markdown"
        for k in _glued_keys(c.source)
        if c.metadata.get("jupyter", {}).get("source_hidden") is None
    )
    value = glue.text(key)
    solution = next(
        i
        for i, c in enumerate(source.cells)
        if c.cell_type == "markdown"
        and c.source.lstrip(":").startswith("{dropdown} Solution")
    )
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium_path(),
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(
                f"{base}/lab/tree/{EDITION_OF.name}?token={token}", timeout=120_000
            )
            page.wait_for_function(
                """() => { const w = window.jupyterapp
                               && window.jupyterapp.shell.currentWidget;
                           return w && w.content && w.content.widgets
                                  && w.content.widgets.length > 0; }""",
                timeout=120_000,
            )

            def cell_text(i: int) -> str:
                page.evaluate(
                    "(i) =>"
                    " window.jupyterapp.shell.currentWidget.content.widgets[i]"
                    ".node.scrollIntoView()",
                    i,
                )
                page.wait_for_function(
                    "(i) => { const n ="
                    " window.jupyterapp.shell.currentWidget.content.widgets[i].node"
                    ".querySelector('.jp-Cell-inputArea');"
                    " return n && n.textContent.trim().length > 10; }",
                    arg=i,
                    timeout=60_000,
                )
                return page.evaluate(
                    "(i) =>"
                    " window.jupyterapp.shell.currentWidget.content.widgets[i]"
                    ".node.textContent",
                    i,
                )

            text = cell_text(index)
            assert value in text, (
                f"cell {index}: the glued {key} = {value!r} is not in the rendered text"
                f" {text[:400]!r}"
            )
            assert (
                "{glue" not in text and "{term}" not in text and "{cite" not in text
            ), text[:400]
            cell_text(solution)
            cell = page.locator(".jp-Notebook .jp-Cell").nth(solution)
            cell.scroll_into_view_if_needed()
            details = cell.locator("details")
            # rendered once in view
            details.first.wait_for(state="attached", timeout=60_000)
            assert details.count() == 1, (
                f"cell {solution}: {details.count()} <details> rendered"
            )
            body = details.locator("p").first
            assert details.get_attribute("open") is None and not body.is_visible(), (
                "the solution is not folded"
            )
            details.locator("summary").click()
            page.wait_for_function(
                "(d) => d.open", arg=details.element_handle(), timeout=10_000
            )
            assert body.is_visible(), "the solution did not open on a click"
        except Exception as exc:
            _fail_with_screenshot(page, log, exc, "jupyterlab_edition_failure.png")
        finally:
            browser.close()
