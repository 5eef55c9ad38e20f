"""The wire tap: every JSON-RPC frame, both ways, appended to a log file.

One line per frame: ``<ISO-8601 UTC timestamp> <direction> <frame>``, where the direction is
``->`` (client to agent) or ``<-`` (agent to client).

Invariants:

* Secrets never reach the file: every frame goes through :func:`acpcli.redact.redact_frame`
  (env and header values anywhere, MCP server args and URLs; names are kept).
* A frame that cannot hold a secret (none of :data:`acpcli.redact.MARKERS` in its bytes) is
  written exactly as it was sent or received, never re-serialized.
* The file is opened lazily (owner-only permissions: it holds whole conversations), each
  frame is flushed as it is written, and :meth:`WireTap.close` may be called at any time:
  the next frame reopens the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Protocol

from acpcli.redact import redact_frame
from acpcli.safe_text import json_escape

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

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: IO[bytes] | None = None

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

    def close(self) -> None:
        """Close the file (the next frame reopens it)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> WireTap:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _write(self, direction: bytes, frame: bytes) -> None:
        frame = redact_frame(frame)
        stamp = datetime.now(timezone.utc).isoformat(timespec="microseconds").encode()
        out = self._file if self._file is not None else self._open()
        # One write per frame: lines from one process never interleave.
        out.write(b"%s %s %s\n" % (stamp, direction, frame))
        out.flush()

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
