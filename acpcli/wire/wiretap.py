"""The wire tap: every JSON-RPC frame, both ways, appended to a log file.

One line per frame: ``<ISO-8601 UTC timestamp> <direction> <frame>``, where the direction is
``->`` (client to agent) or ``<-`` (agent to client).

Invariants:

* Secrets never reach the file: every frame goes through :func:`acpcli.wire.redact.redact_frame`
  (env and header values anywhere, MCP server args and URLs; names are kept).
* A frame that cannot hold a secret (none of :data:`acpcli.wire.redact.MARKERS` in its bytes) is
  written exactly as it was sent or received, never re-serialized.
* The file is opened lazily (owner-only permissions: it holds whole conversations), or at
  once with :meth:`WireTap.open` (so a path that cannot be written is known before an agent
  starts); each frame is flushed as it is written, and :meth:`WireTap.close` may be called at
  any time: the next frame reopens the file.
* A log that cannot be written (a full disk, an I/O error) never stops the conversation it
  records: the first failure is remembered as one line (:attr:`WireTap.failure`), told to
  ``on_failure`` once, and every later frame is counted (:attr:`WireTap.lost`) and dropped.
  What to make of it is the command's business (acpcli: exit 17 at the end).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Protocol

from acpcli.text.safe import json_escape
from acpcli.wire.redact import redact_frame

__all__ = ["ENV_VAR", "StreamTap", "WireTap"]

ENV_VAR = "ACPCLI_LOG_FILE"


class Tap(Protocol):
    """Whatever records the frames of a connection both ways (:class:`WireTap`,
    :class:`StreamTap`, the supervisor's ``GuardedTap``)."""

    def sent(self, frame: bytes) -> None: ...

    def received(self, frame: bytes) -> None: ...

    def close(self) -> None: ...


class WireTap:
    """Appends frames to ``path``; the connection calls :meth:`sent` and :meth:`received`."""

    def __init__(self, path: str | os.PathLike[str], *, on_failure: Callable[[str], None] | None = None) -> None:
        self.path = Path(path)
        self._file: IO[bytes] | None = None
        self.on_failure = on_failure
        #: The first write failure as one line ("cannot write the wire log PATH: REASON"), or None.
        self.failure: str | None = None
        #: Frames not written since that failure (the failing one included).
        self.lost = 0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WireTap | None:
        """A tap writing to ``$ACPCLI_LOG_FILE``, or ``None`` if it is unset or empty."""
        value = (os.environ if environ is None else environ).get(ENV_VAR, "")
        return cls(Path(value).expanduser()) if value else None

    def sent(self, frame: bytes) -> None:
        """Record a frame we sent to the agent."""
        self._write(b"->", frame)

    def received(self, frame: bytes) -> None:
        """Record a frame the agent sent us."""
        self._write(b"<-", frame)

    def open(self) -> None:
        """Open the file now (it is opened at the first frame otherwise); raises ``OSError``
        when it cannot be, so the caller can refuse before anything starts."""
        if self._file is None:
            self._open()

    def close(self) -> None:
        """Close the file (the next frame reopens it)."""
        if self._file is not None:
            out, self._file = self._file, None
            try:
                out.close()
            except OSError as exc:  # what the buffer still held could not be written
                self._failed(exc)

    def __enter__(self) -> WireTap:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _write(self, direction: bytes, frame: bytes) -> None:
        if self.failure is not None:
            self.lost += 1
            return
        frame = redact_frame(frame)
        stamp = datetime.now(timezone.utc).isoformat(timespec="microseconds").encode()
        try:
            out = self._file if self._file is not None else self._open()
            # One write per frame: lines from one process never interleave.
            out.write(b"%s %s %s\n" % (stamp, direction, frame))
            out.flush()
        except OSError as exc:
            self.lost += 1
            self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        """The first failure: remembered, told once; the file is closed (what its buffer held is lost)."""
        if self.failure is not None:
            return
        self.failure = f"cannot write the wire log {self.path}: {exc.strerror or exc}"
        out, self._file = self._file, None
        if out is not None:
            try:
                out.close()  # its flush fails the same way, but the file is closed all the same
            except OSError:
                pass
        if self.on_failure is not None:
            self.on_failure(self.failure)

    def _open(self) -> IO[bytes]:
        from acpcli.paths import open_private

        self._file = open_private(self.path, "ab")  # 0600 whatever the umask: whole conversations
        return self._file


class StreamTap:
    """``--raw``: every frame both ways as one JSON line on a text stream (stdout).

    ``{"direction": "send"|"receive", "message": <the frame>}``; secrets are redacted as in the
    log file, and a received line that is not JSON is carried as a string under ``"line"``.
    Flushed per frame so a pipe sees each one as it happens.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def sent(self, frame: bytes) -> None:
        self._write("send", frame)

    def received(self, frame: bytes) -> None:
        self._write("receive", frame)

    def close(self) -> None:
        """Nothing to close: the stream belongs to the caller."""

    def _write(self, direction: str, frame: bytes) -> None:
        text = redact_frame(frame).decode("utf-8", "replace")
        try:
            json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or nested too deep for the parser
            line = json.dumps({"direction": direction, "line": text}, ensure_ascii=False)
        else:
            line = f'{{"direction":"{direction}","message":{text}}}'
        # The same JSON, with DEL and C1 escaped: raw, a terminal would obey them.
        self._stream.write(json_escape(line) + "\n")
        self._stream.flush()
