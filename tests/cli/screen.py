"""A small terminal emulator for the pty tests: what a person would read on the screen.

The raw pty stream repeats text a terminal shows once (rich's live region and
prompt-toolkit redraw in place, moving the cursor up and erasing), so checks of "drawn
once, in order, nothing overwritten" are made on the emulated screen instead. It keeps the
whole scrollback (the screen is its last ``height`` rows) and understands what acpcli's
output uses: printable text, CR, LF, BS, TAB, cursor moves (``A B C D G H``), erasing
(``J K``) and auto-wrap on/off (``?7h``/``?7l``). Colours, modes, OSC strings and device
queries are ignored. Wide characters count as one column (acpcli's glyphs are narrow).
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"\x1b\[([0-9;?<=>]*)([ -/]*)([@-~])"  # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC
    r"|\x1b[()][0-9A-Za-z]|\x1b[=>78NMc]"  # charset, keypad, save/restore, ...
    r"|([\x00-\x1f])"  # a control character
    r"|([^\x00-\x1f\x1b]+)"  # text
)


class Screen:
    """Feed it the bytes a terminal received (as text); read :meth:`text`."""

    def __init__(self, width: int = 100, height: int = 30) -> None:
        self.width, self.height = width, height
        self.lines: list[list[str]] = [[]]
        self.row = self.col = self.top = 0
        self.autowrap = True

    def feed(self, stream: str) -> Screen:
        for m in _TOKEN.finditer(stream):
            params, _inter, final, ctrl, text = m.groups()
            if text is not None:
                for ch in text:
                    self._put(ch)
            elif ctrl is not None:
                self._control(ctrl)
            elif final is not None:
                self._csi(params or "", final)
        return self

    def text(self) -> str:
        """Every line from the top of the scrollback, trailing blanks removed."""
        return "\n".join("".join(line).rstrip() for line in self.lines).rstrip("\n")

    # -- internals ---------------------------------------------------------------------------

    def _line(self) -> list[str]:
        while len(self.lines) <= self.row:
            self.lines.append([])
        line = self.lines[self.row]
        if len(line) < self.col:
            line.extend(" " * (self.col - len(line)))
        return line

    def _put(self, ch: str) -> None:
        if self.col >= self.width:
            if self.autowrap:
                self._newline()
                self.col = 0
            else:
                self.col = self.width - 1
        line = self._line()
        if self.col < len(line):
            line[self.col] = ch
        else:
            line.append(ch)
        self.col += 1

    def _newline(self) -> None:
        self.row += 1
        if self.row >= self.top + self.height:
            self.top = self.row - self.height + 1
        self._line()

    def _control(self, ch: str) -> None:
        if ch == "\n":
            self._newline()
        elif ch == "\r":
            self.col = 0
        elif ch == "\b":
            self.col = max(0, self.col - 1)
        elif ch == "\t":
            self.col = min(self.width - 1, (self.col // 8 + 1) * 8)

    def _csi(self, params: str, final: str) -> None:
        if params.startswith("?"):
            if params[1:] == "7" and final in "hl":
                self.autowrap = final == "h"
            return
        numbers = [int(p) if p.isdigit() else 0 for p in params.split(";")] if params else []
        n = numbers[0] if numbers and numbers[0] else 1
        if final == "A":
            self.row = max(self.top, self.row - n)
        elif final == "B":
            self.row = min(self.top + self.height - 1, self.row + n)
            self._line()
        elif final == "C":
            self.col = min(self.width - 1, self.col + n)
        elif final == "D":
            self.col = max(0, self.col - n)
        elif final == "G":
            self.col = min(self.width - 1, n - 1)
        elif final in "Hf":
            row = numbers[0] if numbers and numbers[0] else 1
            col = numbers[1] if len(numbers) > 1 and numbers[1] else 1
            self.row, self.col = self.top + row - 1, col - 1
            self._line()
        elif final == "K":
            mode = numbers[0] if numbers else 0
            line = self._line()
            if mode == 0:
                del line[self.col :]
            elif mode == 1:
                line[: self.col + 1] = [" "] * min(len(line), self.col + 1)
            else:
                line.clear()
        elif final == "J":
            mode = numbers[0] if numbers else 0
            if mode == 0:
                del self._line()[self.col :]
                del self.lines[self.row + 1 :]
            elif mode == 2:
                for r in range(self.top, len(self.lines)):
                    self.lines[r] = []


def screen_text(stream: str, width: int = 100, height: int = 30) -> str:
    """What a ``width`` x ``height`` terminal shows (scrollback included) after ``stream``."""
    return Screen(width, height).feed(stream).text()
