"""The race on a screen: the live board (a terminal) and the summary (a table, or JSON).

The board is one line per candidate (agent, state, elapsed, usage and cost, files changed so
far, its last tool call), each cut to the terminal's width (read again at every redraw) and
redrawn in place, at most :data:`MAX_RATE` times a second. Everything an agent wrote (tool
titles, check output, errors) is made safe for a terminal before it gets here
(:mod:`acpcli.text.safe`).
"""

from __future__ import annotations

import os
import threading
import time
from typing import TextIO

from acpcli.race.record import Candidate, Race
from acpcli.render.usage import usage_text
from acpcli.text.safe import safe_line

#: Redraws a second, at most.
MAX_RATE = 10


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def _files(cand: Candidate, final: bool) -> str:
    if final and cand.result is not None:
        n = len(cand.files)
        text = f"{n} file" + ("" if n == 1 else "s")
        return text + (f" +{cand.added} -{cand.removed}" if n else "")
    n = cand.files_so_far
    return f"{n} file" + ("" if n == 1 else "s")


def _state(cand: Candidate) -> str:
    if cand.state == "done" and cand.check is not None:
        return "check ok" if cand.check.passed else ("check timed out" if cand.check.timed_out else f"check exit {cand.check.exit}")
    if cand.state == "done":
        return cand.stop or "done"
    return cand.state


def board_line(cand: Candidate, width: int, name_width: int) -> str:
    """One candidate's line, at most ``width - 1`` characters (the last column is never
    written: a terminal would wrap there)."""
    final = cand.state not in ("waiting", "preparing", "starting", "running")
    parts = [
        safe_line(cand.name).ljust(name_width),
        _state(cand).ljust(10),
        _clock(cand.wall).rjust(7),
        _files(cand, final).ljust(8),
    ]
    usage = usage_text(cand.usage)
    if usage:
        parts.append(usage)
    if cand.last_tool:
        parts.append("· " + cand.last_tool)
    elif cand.error and final:
        parts.append("· " + cand.error)
    line = "  ".join(parts)
    room = max(10, width - 1)
    return line if len(line) <= room else line[: room - 1] + "…"


def board_lines(race: Race, width: int) -> list[str]:
    name_width = min(20, max((len(c.name) for c in race.candidates), default=4))
    return [board_line(c, width, name_width) for c in race.candidates]


def _width(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (OSError, ValueError, AttributeError):
        return 80


class Board:
    """The board drawn in place on a terminal stream; :meth:`tick` redraws when due."""

    def __init__(self, race: Race, stream: TextIO) -> None:
        self.race = race
        self.stream = stream
        self.drawn = 0  # lines on the screen now
        self.last = 0.0
        self.redraws = 0
        self._dirty = True
        self._lock = threading.Lock()
        self._shown: list[str] = []

    def changed(self) -> None:
        self._dirty = True

    def tick(self, *, force: bool = False) -> None:
        """Redraw if something changed (or the clock moved a second), at most
        :data:`MAX_RATE` times a second."""
        now = time.monotonic()
        if not force and now - self.last < 1.0 / MAX_RATE:
            return
        with self._lock:
            lines = board_lines(self.race, _width(self.stream))
            if not force and lines == self._shown:
                return
            self.last = now
            self._draw(lines)

    def _draw(self, lines: list[str]) -> None:
        out = []
        if self.drawn:
            out.append(f"\r\x1b[{self.drawn}A")
        for line in lines:
            out.append("\r\x1b[2K" + line + "\n")
        for _ in range(self.drawn - len(lines)):
            out.append("\r\x1b[2K\n")
        try:
            self.stream.write("".join(out))
            self.stream.flush()
        except (OSError, ValueError):
            return
        self.drawn = max(len(lines), self.drawn)
        self._shown = lines
        self.redraws += 1

    def clear(self) -> None:
        """Take the board off the screen (the summary follows in its place)."""
        with self._lock:
            if not self.drawn:
                return
            try:
                self.stream.write(f"\r\x1b[{self.drawn}A\x1b[J")
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self.drawn = 0
            self._shown = []


def summary_rows(race: Race) -> list[list[str]]:
    """The summary as rows of cells (a header first)."""
    rows = [["CANDIDATE", "STOP", "TIME", "FILES", "+/-", "CHECK", "USAGE", "SESSION"]]
    for c in race.candidates:
        stop = c.stop if c.state == "done" and c.stop else c.state
        if c.check is None:
            check = "-"
        elif c.check.timed_out:
            check = f"timed out {c.check.seconds:.1f}s"
        else:
            check = f"exit {c.check.exit} {c.check.seconds:.1f}s"
        rows.append([
            safe_line(c.name), safe_line(stop or "-"), _clock(c.wall), str(len(c.files)),
            f"+{c.added} -{c.removed}", check, usage_text(c.usage) or "-", safe_line(c.session or "-"),
        ])
    return rows


def summary_text(race: Race) -> str:
    """The summary as a plain table, then one line per candidate that failed and the last
    lines of each check that did not pass."""
    rows = summary_rows(race)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    for c in race.candidates:
        if c.error and c.state != "done":
            out.append(f"{safe_line(c.name)}: {c.error}")
        if c.check is not None and not c.check.passed:
            for line in c.check.tail:
                out.append(f"{safe_line(c.name)} check: {line}")
    winners = [c.name for c in race.candidates if c.succeeded]
    if winners:
        out.append(f"race {race.id}: {', '.join(winners)} succeeded")
    else:
        out.append(f"race {race.id}: no candidate succeeded")
    return "\n".join(out) + "\n"
