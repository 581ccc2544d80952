"""A folder served over HTTP on 127.0.0.1, for a browser that needs http:// (ES modules,
WebAssembly, the widget embedder): the PDF's printing (booktools.pdf) and the browser
tests (tests/conftest.py)."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """Serves files with the types a browser insists on for modules and WebAssembly;
    logs nothing."""

    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".wasm": "application/wasm",
    }

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def serve(folder: Path | str) -> Iterator[str]:
    """`folder` served on loopback at a free port; yields its address
    (http://127.0.0.1:PORT)."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
