"""A terminal view driven by a real store, on a rich Console writing to a StringIO with a
forced terminal.

Live regions redraw in place, so besides the raw output the tests replay it through a
tiny terminal model (:func:`screen`: cursor up, erase line, carriage return) to see what
a person would have in the scrollback at the end.
"""

from __future__ import annotations

import io
import itertools
import re
from types import SimpleNamespace
from typing import Any

from rich.console import Console

from acpcli.model import Store
from acpcli.render.tty import TtyView

CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def screen(raw: str) -> str:
    """Replay terminal output; return the final screen + scrollback, right-stripped."""
    lines: list[list[str]] = [[]]
    row = col = 0
    pos = 0
    while pos < len(raw):
        m = CSI.match(raw, pos)
        if m:
            pos = m.end()
            args, cmd = m.group(1), m.group(2)
            if cmd == "A":
                row = max(0, row - int(args or 1))
            elif cmd == "K" and args == "2":
                lines[row] = []
            elif cmd in ("m", "h", "l", None):
                pass
            else:
                raise AssertionError(f"unexpected control sequence {m.group(0)!r}")
            continue
        ch = raw[pos]
        pos += 1
        if ch == "\n":
            row += 1
            col = 0
            while len(lines) <= row:
                lines.append([])
        elif ch == "\r":
            col = 0
        else:
            line = lines[row]
            while len(line) < col:
                line.append(" ")
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
    return "\n".join("".join(line).rstrip() for line in lines).rstrip("\n")


def console(color: bool = False, width: int = 60, height: int = 30) -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=width, height=height,
                   color_system="truecolor" if color else None, highlight=False)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def chunk(kind: str, t: str, mid: str | None = None) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": f"{kind}_chunk", "content": text(t)}
    if mid is not None:
        update["messageId"] = mid
    return update


def frozen() -> float:
    return 0.0  # the throttle lets the first refresh through, then holds every later one


def ticking() -> Any:
    counter = itertools.count()
    return lambda: float(next(counter))  # every change is a second later: always refresh


class Run:
    """A view fed by a real store."""

    def __init__(self, con: Console | None = None, **kwargs: Any) -> None:
        self.console = con or console()
        kwargs.setdefault("clock", frozen)
        self.view = TtyView(self.console, **kwargs)
        self.session = SimpleNamespace(store=Store(), session_id="s")

    def feed(self, *updates: dict[str, Any]) -> Run:
        for update in updates:
            change = self.session.store.apply(update)
            if change is not None:
                self.view.on_change(self.session, change)
        return self

    def raw(self) -> str:
        return self.console.file.getvalue()  # type: ignore[attr-defined]

    def screen(self) -> str:
        return screen(self.raw())


ANSWER = (
    "The capital is **Paris**, a city on the Seine.\n\n"
    "Three facts:\n\n- it hosts the Louvre museum\n- it has twenty arrondissements\n\n"
    "```python\ndef capital():\n\n    return 'Paris'\n```\n\n"
    "That is all I know about it."
)


PARAGRAPHS = ["The capital is Paris, a city on the Seine.", "Three facts:", "• it hosts the Louvre museum",
              "• it has twenty arrondissements", "def capital():", "return 'Paris'", "That is all I know about it."]


def stream_answer(run: Run, size: int = 7) -> Run:
    return run.feed(*(chunk("agent_message", ANSWER[i:i + size]) for i in range(0, len(ANSWER), size)))
