"""A registry served from loopback: a tiny http.server thread whose answer a test sets.

``server.body`` is what ``GET /registry.json`` returns (with an ``ETag``; a matching
``If-None-Match`` gets 304); ``server.status`` another status; ``server.stop()`` closes the
port, so the next fetch fails as on a machine that is offline. ``server.requests`` counts
the requests and keeps their conditional headers.

``server.responders[path]`` answers ``path`` with a function of the request handler instead
(a body that never ends, a server that trickles: see :func:`endless` and :func:`trickle`);
such a function stops when ``server.stopping`` is set and counts what it sent in
``server.sent[path]``.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


class RegistryServer:
    def __init__(self, body: bytes = b"") -> None:
        self.body = body
        self.status = 200
        self.redirect_to: str | None = None  # answer 302 to this location instead
        self.delay = 0.0  # seconds to wait before answering
        self.files: dict[str, bytes] = {}  # other paths served as they are (archives)
        self.responders: dict[str, Callable[[RegistryServer, BaseHTTPRequestHandler], None]] = {}
        self.sent: dict[str, int] = {}  # bytes a responder wrote
        self.stopping = threading.Event()
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests.append(
                    {"path": self.path, "if-none-match": self.headers.get("If-None-Match")}
                )
                if self.path in owner.responders:
                    try:
                        owner.responders[self.path](owner, self)
                    except (BrokenPipeError, ConnectionResetError):
                        pass  # the client gave up, as it should
                    return
                if self.path in owner.files:
                    data = owner.files[self.path]
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if not self.path.endswith(".json"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if owner.delay:
                    time.sleep(owner.delay)
                if owner.redirect_to and self.path != urlsplit(owner.redirect_to).path:
                    self.send_response(302)
                    self.send_header("Location", owner.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                etag = '"' + hashlib.sha256(owner.body).hexdigest()[:16] + '"'
                if owner.status != 200:
                    self.send_response(owner.status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.headers.get("If-None-Match") == etag:
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("ETag", etag)
                self.send_header("Content-Length", str(len(owner.body)))
                self.end_headers()
                try:
                    self.wfile.write(owner.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/registry.json"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def base(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return self.url.rsplit("/", 1)[0]

    def stop(self) -> None:
        self.stopping.set()
        if self._thread.is_alive():
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()


def endless(chunk: bytes = b"\0" * 65536, most: int = 256 << 20) -> Callable[[RegistryServer, BaseHTTPRequestHandler], None]:
    """A responder whose 200 body (no Content-Length) never ends: ``chunk`` after ``chunk``
    until the client goes away, the server stops, or ``most`` bytes (a guard for the test
    that checks the code from before, which would read it all)."""

    def respond(server: RegistryServer, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Connection", "close")
        handler.end_headers()
        sent = 0
        while sent < most and not server.stopping.is_set():
            handler.wfile.write(chunk)
            sent += len(chunk)
            server.sent[handler.path] = sent

    return respond


def trickle(every: float, *, headers_too: bool = False, most: float = 20.0) -> Callable[[RegistryServer, BaseHTTPRequestHandler], None]:
    """A responder that sends one byte every ``every`` seconds: of a body that claims 10,000
    bytes, or (``headers_too``) of its status line and headers already. It gives up after
    ``most`` seconds (a guard for the code from before, which would wait for all of it)."""

    def respond(server: RegistryServer, handler: BaseHTTPRequestHandler) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Length: 10000\r\nConnection: close\r\n\r\n"
        handler.close_connection = True
        ends = time.monotonic() + most
        if not headers_too:
            handler.wfile.write(head)
            handler.wfile.flush()
            head = b""
        data = head + b"x" * 10000
        for i in range(len(data)):
            if time.monotonic() > ends or server.stopping.wait(every):
                return
            handler.wfile.write(data[i : i + 1])
            handler.wfile.flush()
            server.sent[handler.path] = i + 1

    return respond
