"""A local web site for the browser-tab tests: a few pages, a link and a cookie.

Served by ``http.server`` on a loopback port in a thread; Chromium reaches nothing
else (its background networking is off).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["site"]

PAGES = {
    "/a": "<title>Page A</title><h1>Page A</h1><p>The first page.</p><a href='/b'>to B</a>",
    "/b": "<title>Page B</title><h1>Page B</h1><p>The second page.</p>",
    "/c": "<title>Page C</title><h1>Page C</h1><p>The third page.</p>",
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/cookie":
            self._send("<title>Cookie</title><p>Cookie set.</p>", (("Set-Cookie", "seen=yes"),))
        elif self.path == "/whoami":
            cookies = self.headers.get("Cookie") or "none"
            self._send(f"<title>Who</title><p>cookies: {cookies}</p>")
        elif self.path in PAGES:
            self._send(PAGES[self.path])
        else:
            self.send_error(404)

    def _send(self, html: str, extra: tuple[tuple[str, str], ...] = ()) -> None:
        body = html.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def site() -> Iterator[str]:
    """Serve the pages; yield the base URL (``http://127.0.0.1:<port>``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
