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
from typing import Any, TextIO

from acpcli.racing.record import Candidate, Race
from acpcli.render.usage import cost_text, usage_text
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


def short_usage(usage: dict[str, Any] | None) -> str | None:
    """``12.3k tok $0.04``: what the board has room for (the summary says it all)."""
    if not usage:
        return None
    parts = []
    used = usage.get("used")
    if isinstance(used, int) and not isinstance(used, bool):
        parts.append(f"{used / 1000:.1f}k tok" if used >= 1000 else f"{used} tok")
    cost = cost_text(usage)
    if cost is not None:
        parts.append(cost)
    return " ".join(parts) or None


def board_line(cand: Candidate, width: int, name_width: int) -> str:
    """One candidate's line, at most ``width - 1`` characters (the last column is never
    written: a terminal would wrap there). The name, state, elapsed time and files always
    show; usage and the last tool call share the room left (narrow: the cost alone)."""
    final = cand.state not in ("waiting", "preparing", "starting", "running")
    base = f"{safe_line(cand.name).ljust(name_width)}  {_state(cand):<9} {_clock(cand.wall):>6}  {_files(cand, final)}"
    room = max(10, width - 1)
    usage = short_usage(cand.usage) or ""
    tail = safe_line(cand.last_tool or (cand.error if final and cand.error else ""))
    left = room - len(base) - 2
    extra = []
    if usage and tail and left < len(usage) + len(tail) + 4:
        usage = usage.split(" tok ", 1)[-1] if " tok " in usage else usage  # narrow: the cost alone
    if usage:
        extra.append(usage)
    if tail:
        extra.append("· " + tail)
    line = base + ("  " + "  ".join(extra) if extra else "")
    return line if len(line) <= room else line[: room - 1] + "…"


def board_lines(race: Race, width: int) -> list[str]:
    name_width = min(20, max((len(c.name) for c in race.candidates), default=4))
    return [board_line(c, width, name_width) for c in race.candidates]


def terminal_width(stream: TextIO) -> int:
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
            lines = board_lines(self.race, terminal_width(self.stream))
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
            f"+{c.added} -{c.removed}", check, safe_line(usage_text(c.usage) or "-"), safe_line(c.session or "-"),
        ])
    return rows


def summary_text(race: Race, width: int | None = None) -> str:
    """The summary as a plain table, then one line per candidate that failed and the last
    lines of each check that did not pass. ``width`` (a terminal's): columns are dropped,
    the session's first, then lines cut, until each fits."""
    rows = summary_rows(race)
    keep = list(range(len(rows[0])))

    def lines() -> list[str]:
        widths = {i: max(len(r[i]) for r in rows) for i in keep}
        return ["  ".join(row[i].ljust(widths[i]) for i in keep).rstrip() for row in rows]

    if width is not None:
        for drop in ("SESSION", "USAGE", "+/-", "CHECK"):
            if max(len(line) for line in lines()) <= width - 1:
                break
            keep.remove(rows[0].index(drop))
    out = lines()
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
    if width is not None:
        room = max(10, width - 1)
        out = [line if len(line) <= room else line[: room - 1] + "…" for line in out]
    return "\n".join(out) + "\n"
