"""The host's log (``ACPCLI_HOME/logs/host-<key>.log``, its stderr): bounded whatever its
clients do.

* **Capped** as the agent's stderr log is (:class:`~acpcli.wire.transport.StderrLog`): at most
  :data:`~acpcli.wire.transport.STDERR_LOG_MAX_BYTES` per file and one older file
  (``host-<key>.log.1``); a line at the top of a file says how much was dropped.
* **Repeats left out**: at most :data:`REPEATS` records of one kind (logger, level and message
  template: "dropping a client whose message could not be handled", say) per :data:`WINDOW`
  seconds. The last one let through says that more are left out; the next one after the
  window says how many were, and so does the end of the log. A client that misbehaves a
  thousand times a second costs a few lines a minute.
* **Each record clipped** to :data:`RECORD_MAX` characters (after the host's formatter has
  masked it), so that one message quoting what a client or the agent sent is never megabytes.

Before the host knows its log file (the spec names it), records go to stderr as they are;
a stderr that is not that file (a test running the host on a pipe) stays uncapped.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Records of one kind let through per :data:`WINDOW` seconds.
REPEATS = 10
WINDOW = 60.0
#: The longest record written (characters, after masking); the rest is said in a count.
RECORD_MAX = 8000
#: Overrides the cap of each host log file (bytes): tests, which cannot wait for 4 MiB of lines.
MAX_BYTES_ENV = "ACPCLI_HOST_LOG_MAX_BYTES"
_KINDS_MAX = 1000  # kinds remembered; past it they start again (templates are few)


def clip(text: str, limit: int = RECORD_MAX) -> str:
    """``text`` at most ``limit`` characters, the rest counted."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters left out]"


class Repeats(logging.Filter):
    """Lets at most :data:`REPEATS` records of a kind through per :data:`WINDOW` seconds
    (see the module docstring)."""

    def __init__(self, repeats: int = REPEATS, window: float = WINDOW, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.repeats = repeats
        self.window = window
        self.clock = clock
        # kind -> [window start, records let through in it, records left out]
        self._kinds: dict[tuple[str, int, str], list[Any]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        kind = (record.name, record.levelno, str(record.msg))
        now = self.clock()
        seen = self._kinds.get(kind)
        if seen is None:
            if len(self._kinds) >= _KINDS_MAX:
                self._kinds.clear()
            seen = self._kinds[kind] = [now, 0, 0]
        said = ""
        if now - seen[0] >= self.window:
            if seen[2]:
                said = f" [{seen[2]} more like this were left out in the {self.window:g} s before]"
            seen[:] = [now, 0, 0]
        if seen[1] >= self.repeats:
            seen[2] += 1
            return False
        seen[1] += 1
        if seen[1] == self.repeats:
            said += f" [more like this in the next {self.window - (now - seen[0]):.0f} s are left out]"
        if said:  # after the formatted record (the template stays whole)
            record.left_out = said
        return True

    def left_out(self) -> list[str]:
        """What is still left out, one line per kind (the log's last words)."""
        return [
            f"{count} more records like '{template}' were left out"
            for (_name, _level, template), (_start, _let, count) in self._kinds.items()
            if count
        ]


class HostLog(logging.Handler):
    """The host log handler: stderr until :meth:`use_file` (then the capped file), each
    record clipped and followed by what :class:`Repeats` left out."""

    def __init__(self, stream: Any) -> None:
        super().__init__()
        self.stream = stream
        self.file: Any = None  # the StderrLog, once the log file is known
        self.repeats = Repeats()
        self.addFilter(self.repeats)

    def use_file(self, path: str | os.PathLike[str] | None) -> None:
        """Write to ``path`` from now on, capped, if it is the file stderr is (else go on
        writing to stderr)."""
        if path is None:
            return
        from acpcli.wire.transport import STDERR_LOG_MAX_BYTES, StderrLog

        try:
            if not os.path.samestat(os.fstat(self.stream.fileno()), os.stat(path)):
                return
        except (OSError, AttributeError, ValueError):
            return
        try:
            limit = int(os.environ.get(MAX_BYTES_ENV, "")) or STDERR_LOG_MAX_BYTES
        except ValueError:
            limit = STDERR_LOG_MAX_BYTES
        self.acquire()
        try:
            self.file = StderrLog.open(Path(path), max(limit, 1))
        finally:
            self.release()

    def renamed(self, path: Path) -> None:
        """The open log file was renamed (a new session's log takes the session's name):
        rotation goes on at its new name."""
        if self.file is not None:
            self.acquire()
            try:
                self.file.path = path
            finally:
                self.release()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = clip(self.format(record)) + getattr(record, "left_out", "") + "\n"
            if self.file is not None:
                self.file.write(text.encode("utf-8", "replace"))
            else:
                self.stream.write(text)
                self.stream.flush()
        except Exception:  # noqa: BLE001 - a log that cannot be written never stops the host
            pass

    def close(self) -> None:
        try:
            for line in self.repeats.left_out():
                record = logging.LogRecord("acpcli.host", logging.INFO, __file__, 0, "%s", (line,), None)
                self.emit(record)
            if self.file is not None:
                self.file.close()
        finally:
            super().close()
