"""The splitter: streamed Markdown cut into finished blocks (:class:`BlockSplitter`).

A streaming message is split at blank lines outside fenced code: finished Markdown blocks go
to the scrollback, only the unfinished tail stays live, so a frame costs O(tail), not
O(message) (see ``bench/bench_stream.py``).
"""

from __future__ import annotations

import re

from acpcli.render.markdown_lines import table_starts

_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")


def _line_end(line: str, chars: int) -> str:
    """The last ``chars`` characters of a long line, from a word's start where there is one
    near, after an ellipsis."""
    end = line[-chars:]
    space = end.find(" ", 0, 200)
    return "…" + (end[space + 1 :] if space >= 0 else end)


class BlockSplitter:
    """Cuts streamed Markdown into finished blocks at blank lines outside fenced code.

    :meth:`feed` returns the blocks a chunk finished; :meth:`tail` is the unfinished rest
    (what a live region shows); :meth:`close` returns that rest as the last block. A blank
    line ends a block only when the next line is not indented (an indented line continues
    a list item or an indented code block). Cost: O(len(chunk)) per feed, plus O(line)
    when a line completes.
    """

    __slots__ = ("_blanks", "_fence", "_fence_line", "_fences", "_lines", "_partial")

    def __init__(self) -> None:
        self._lines: list[str] = []  # complete lines of the open block
        self._partial: list[str] = []  # parts of the unfinished line (non-empty strings)
        self._fence: str | None = None  # the opening fence while inside fenced code
        self._fence_line = 0  # the index in _lines of that opening fence
        self._blanks = 0  # blank lines after the open block, not yet known to end it
        self._fences: list[tuple[int, int]] = []  # closed fences in _lines: (opening, after closing)

    def feed(self, text: str) -> list[str]:
        """Take the next piece of text; return the blocks it finished (often none)."""
        done: list[str] = []
        if "\n" not in text:
            if text:
                self._partial.append(text)
        else:
            pieces = text.split("\n")
            first = pieces[0]
            if self._partial:
                self._partial.append(first)
                first = "".join(self._partial)
                self._partial = []
            self._line(first, done)
            for piece in pieces[1:-1]:
                self._line(piece, done)
            if pieces[-1]:
                self._partial.append(pieces[-1])
        # a new block has visibly begun: end the previous one now, not a line later
        if self._blanks and self._partial and self._partial[0][0] not in " \t":
            done.append("\n".join(self._lines))
            self._lines, self._fences = [], []
            self._blanks = 0
        return done

    def _line(self, line: str, done: list[str]) -> None:
        if self._fence is not None:
            self._lines.append(line)
            m = _FENCE.match(line)
            if (
                m
                and m.group(1)[0] == self._fence[0]
                and len(m.group(1)) >= len(self._fence)
                and not line[m.end():].strip()
            ):
                self._fence = None
                self._fences.append((self._fence_line, len(self._lines)))
            return
        if not line.strip():
            if self._lines:
                self._blanks += 1
            return
        if self._blanks:
            if line[0] in " \t":
                self._lines.extend([""] * self._blanks)
            else:
                done.append("\n".join(self._lines))
                self._lines, self._fences = [], []
            self._blanks = 0
        self._lines.append(line)
        m = _FENCE.match(line)
        if m and (m.group(1)[0] == "~" or "`" not in line[m.end():]):
            self._fence = m.group(1)
            self._fence_line = len(self._lines) - 1

    def tail(self) -> str:
        """The unfinished text: O(tail)."""
        lines = self._lines + [""] * self._blanks
        if self._partial:
            lines.append("".join(self._partial))
        return "\n".join(lines)

    def tail_window(self, limit: int, chars: int) -> tuple[str, int]:
        """:meth:`tail`, cut to what a live region of ``limit`` lines can show, so that a
        frame costs O(limit) however long the block grows; and how many lines were left out.

        Open fenced code keeps what precedes the fence and its last ``limit`` lines. Other
        blocks (a long list, a table, a closed fence with text right after it) keep their
        last ``limit`` lines, after a table's header rows or the opening fence of the code
        they start in. A line longer than ``chars`` keeps its end (one unbroken paragraph is
        one line)."""
        lines = self._lines
        n = len(lines)
        if self._fence is not None:
            start = self._fence_line + 1
            if n - start <= limit:
                return self._clip(lines, chars), 0
            return self._clip(lines[:start] + lines[-limit:], chars), n - start - limit
        cut = n - limit
        if cut <= 0:
            return self._clip(lines, chars), 0
        head = lines[:2] if n > 1 and table_starts(lines[0], lines[1]) else []
        for opened, closed in self._fences:  # cut inside closed code: keep its opening fence
            if opened < cut < closed:
                head = [lines[opened]]
        if cut <= len(head):
            return self._clip(lines, chars), 0
        return self._clip(head + lines[cut:], chars), cut - len(head)

    def _clip(self, lines: list[str], chars: int) -> str:
        window = lines + [""] * self._blanks
        if self._partial:
            window.append("".join(self._partial))
        return "\n".join(line if len(line) <= chars else _line_end(line, chars) for line in window)

    def cut(self) -> str:
        """The open block's complete lines as a finished block now ("" if none), the
        unfinished line kept: a line drawn under them (``cancelling…``) goes where the person
        saw the text end. Inside fenced code the cut block is closed with its fence and the
        code goes on under the same opening fence."""
        if self._fence is None:
            done, self._lines = "\n".join(self._lines), []
        else:
            opening = self._lines[self._fence_line]
            code = self._lines[self._fence_line + 1 :]
            head = self._lines[: self._fence_line]
            if code:
                indent = opening[: len(opening) - len(opening.lstrip())]
                head = [*head, opening, *code, indent + self._fence]
            done, self._lines, self._fence_line = "\n".join(head), [opening], 0
        self._fences, self._blanks = [], 0
        return done

    def close(self) -> str:
        """End of the text: return the rest ("" if none) and start over."""
        rest = self.tail().strip("\n")
        self._lines, self._partial, self._fence, self._blanks, self._fences = [], [], None, 0, []
        return rest
