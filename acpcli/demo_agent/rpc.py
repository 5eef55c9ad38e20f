"""JSON-RPC 2.0 over newline-delimited stdio, with plain threads (stdlib only).

Invariants:

- stdout carries only protocol lines: one JSON value per line, written whole under one lock,
  flushed at once. Everything else goes to stderr through :func:`log`.
- The reader thread never runs a handler that can block. Responses to our own requests are
  matched to their waiters on the reader thread, and the caller may handle urgent notifications
  (``session/cancel``) there too, so a turn blocked on ``session/request_permission`` can be
  woken while the dispatcher is busy. Requests and other notifications go to an inbox queue.
- A waiter wakes on its response, on its turn's cancellation, or on end of input; it never
  polls.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import uuid
from collections.abc import Callable
from typing import Any, BinaryIO

from acpcli.errors import RpcError

#: Put on the inbox when stdin reaches end of file.
EOF = None


def log(message: str) -> None:
    """One diagnostic line on stderr (never stdout: stdout is the protocol)."""
    try:
        sys.stderr.write(f"demo-agent: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # stderr closed: nothing useful left to do with a log line


class PeerGone(Exception):
    """The client closed its end: stdout is broken or stdin reached end of file."""


class TurnCancelled(Exception):
    """The turn was cancelled (``session/cancel``, ``session/close`` or end of input)."""


class CancelToken:
    """Cancellation for one prompt turn: a flag plus the events of everything waiting on it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flag = threading.Event()
        self._waiters: set[threading.Event] = set()

    @property
    def cancelled(self) -> bool:
        return self._flag.is_set()

    def cancel(self) -> None:
        """Cancel: wake every sleep and every wait for a client response."""
        with self._lock:
            self._flag.set()
            waiters = list(self._waiters)
        for event in waiters:
            event.set()

    def check(self) -> None:
        """Raise :class:`TurnCancelled` if cancelled."""
        if self._flag.is_set():
            raise TurnCancelled()

    def sleep(self, seconds: float) -> None:
        """Sleep up to ``seconds``; raise :class:`TurnCancelled` if cancelled meanwhile."""
        if seconds > 0:
            self._flag.wait(seconds)
        self.check()

    def attach(self, event: threading.Event) -> None:
        """Set ``event`` on cancellation (at once if already cancelled)."""
        with self._lock:
            self._waiters.add(event)
            if self._flag.is_set():
                event.set()

    def detach(self, event: threading.Event) -> None:
        """Stop setting ``event`` on cancellation."""
        with self._lock:
            self._waiters.discard(event)


class _Pending:
    __slots__ = ("done", "error", "event", "result")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.done = False
        self.result: Any = None
        self.error: Any = None


class Peer:
    """Our end of the connection: framing, request ids, pending requests, the reader loop."""

    def __init__(self, rfile: BinaryIO, wfile: BinaryIO, *, string_ids: bool = False) -> None:
        """``rfile``/``wfile`` are raw (unbuffered) binary files, e.g. ``open(0, "rb", buffering=0)``."""
        self._rfile = rfile
        self._wfile = wfile
        self._string_ids = string_ids
        self._write_lock = threading.Lock()
        self._lock = threading.Lock()
        self._pending: dict[Any, _Pending] = {}
        self._next_id = 0
        self._closed = False

    # -- writing -------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """Write one message as one line. Raises :class:`PeerGone` if stdout is broken."""
        data = memoryview((json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8"))
        with self._write_lock:
            try:
                # Raw (unbuffered) file: a write may be partial, so loop until the line is out.
                while data:
                    written = self._wfile.write(data)
                    data = data[written or 0 :]
            except (OSError, ValueError) as exc:
                raise PeerGone() from exc

    def hold_output(self) -> threading.Lock:
        """The write lock, for a caller that must not interleave with a half-written line."""
        return self._write_lock

    def notify(self, method: str, params: Any) -> None:
        """Send a notification."""
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def respond(self, req_id: Any, result: Any) -> None:
        """Answer request ``req_id`` with ``result``."""
        self.send({"jsonrpc": "2.0", "id": req_id, "result": result})

    def respond_error(self, req_id: Any, error: RpcError) -> None:
        """Answer request ``req_id`` with a JSON-RPC error."""
        self.send({"jsonrpc": "2.0", "id": req_id, "error": error.to_wire()})

    def request(self, method: str, params: Any, token: CancelToken | None = None) -> Any:
        """Send a request to the client and block until it answers.

        Raises :class:`RpcError` for an error answer, :class:`TurnCancelled` if ``token`` is
        cancelled first (the late answer is then dropped), :class:`PeerGone` at end of input.
        """
        pending = _Pending()
        with self._lock:
            if self._closed:
                raise PeerGone()
            self._next_id += 1
            req_id: Any = f"req-{uuid.uuid4()}" if self._string_ids else self._next_id
            self._pending[req_id] = pending
        if token is not None:
            token.attach(pending.event)
        try:
            self.send({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params})
            pending.event.wait()
        finally:
            if token is not None:
                token.detach(pending.event)
            with self._lock:
                self._pending.pop(req_id, None)
        if not pending.done:
            if self._closed:
                raise PeerGone()
            raise TurnCancelled()
        if pending.error is not None:
            raise RpcError.from_wire(pending.error, method=method)
        return pending.result

    # -- reading -------------------------------------------------------------------------------

    def read_forever(self, inbox: queue.Queue[Any], urgent: Callable[[dict[str, Any]], bool]) -> None:
        """Reader-thread body: frame stdin into messages until end of file.

        ``urgent(notification)`` runs on this thread and returns True when it handled the
        notification; it must not block. At end of file every waiter is woken and
        :data:`EOF` is put on ``inbox``.
        """
        parts: list[bytes] = []  # the current line so far: joined once, so long lines stay linear
        try:
            while True:
                # One read() on a raw file is one os.read: no buffered-reader lock is held
                # while blocked, so interpreter shutdown never waits on this daemon thread.
                data = self._rfile.read(65536)
                if not data:
                    break
                start = 0
                while (newline := data.find(b"\n", start)) >= 0:
                    parts.append(data[start:newline])
                    self._dispatch_raw(b"".join(parts), inbox, urgent)
                    parts.clear()
                    start = newline + 1
                parts.append(data[start:])
            self._dispatch_raw(b"".join(parts), inbox, urgent)  # a last line without newline
        except (OSError, ValueError) as exc:
            log(f"stdin read failed: {exc}")
        finally:
            with self._lock:
                self._closed = True
                waiters = list(self._pending.values())
            for pending in waiters:
                pending.event.set()
            inbox.put(EOF)

    def _dispatch_raw(
        self, raw: bytes, inbox: queue.Queue[Any], urgent: Callable[[dict[str, Any]], bool]
    ) -> None:
        line = raw.decode("utf-8", errors="replace").strip()
        if line:
            self._dispatch_line(line, inbox, urgent)

    def _dispatch_line(
        self, line: str, inbox: queue.Queue[Any], urgent: Callable[[dict[str, Any]], bool]
    ) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            log(f"unparseable line from client: {line[:200]!r}")
            self._try_send_error(None, RpcError(RpcError.PARSE_ERROR, "Parse error"))
            return
        if not isinstance(msg, dict):
            log(f"not a JSON-RPC object: {line[:200]!r}")
            self._try_send_error(None, RpcError(RpcError.INVALID_REQUEST, "Invalid Request"))
            return
        if isinstance(msg.get("method"), str):
            if "id" in msg or not urgent(msg):
                inbox.put(msg)
            return
        if "id" in msg and ("result" in msg or "error" in msg):
            self._resolve(msg)
            return
        log(f"invalid message from client: {line[:200]!r}")
        self._try_send_error(msg.get("id"), RpcError(RpcError.INVALID_REQUEST, "Invalid Request"))

    def _resolve(self, msg: dict[str, Any]) -> None:
        with self._lock:
            pending = self._pending.get(msg["id"])
        if pending is None:
            # Normal after a cancel: the client answers a request we stopped waiting for.
            log(f"response to request {msg['id']!r}, which nobody awaits (cancelled?): dropped")
            return
        pending.result = msg.get("result")
        pending.error = msg.get("error")
        pending.done = True
        pending.event.set()

    def _try_send_error(self, req_id: Any, error: RpcError) -> None:
        try:
            self.respond_error(req_id, error)
        except PeerGone:
            pass
