"""Message blocks: agent text, thoughts and the user's prompt.

Agent text is drawn as Markdown while it streams (by :mod:`acpcli.render.markdown_lines`;
code in a block still streaming is highlighted once the block closes): finished Markdown
blocks go to the scrollback, the unfinished tail stays live (:mod:`acpcli.render.tty.split`).
Thoughts are dim and italic, collapsed to a one-line summary once finished (unless
``show_thoughts``); user prompts show as ``› text`` in bold.

Agent text is passed through :mod:`acpcli.text.safe` where the renderables are built (so rich
lays out the visible stand-ins, ``^[`` for ESC).
"""

from __future__ import annotations

import re
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

from rich.console import Group
from rich.padding import Padding
from rich.text import Text

from acpcli.render.markdown_lines import MarkdownLines
from acpcli.render.plain import MessageTrace
from acpcli.render.transcript import block_label
from acpcli.render.tty.blocks import _Block
from acpcli.render.tty.split import BlockSplitter
from acpcli.text.safe import safe_line, safe_text

if TYPE_CHECKING:
    from collections.abc import Iterable

    from rich.console import Console, RenderableType

_RECENT_CHARS = 600  # how much of a collapsed thought the live region shows, at most
_RECENT_LINES = 3


class _View(Protocol):
    """What a message block uses of the view it belongs to
    (:class:`~acpcli.render.tty.view.TtyView`): its console and its queue for the scrollback."""

    @property
    def console(self) -> Console: ...

    def _print(self, renderable: RenderableType) -> None: ...


def _label(block: dict[str, Any]) -> Text:
    return Text(safe_line(block_label(block)), style="dim")


class _MessageBlock(_Block):
    """Shared by agent, thought and user messages: what was consumed, for replacements."""

    def __init__(self, view: _View) -> None:
        self.view = view
        self.trace = MessageTrace()

    def feed(self, blocks: Iterable[dict[str, Any]]) -> None:
        for block in blocks:
            self.trace.add(block)
            if block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str) and text:
                    self.text(safe_text(text))  # the trace keeps it as sent, the screen shows it safe
            else:
                self.other(block)

    def reopen(self) -> None:
        """Live again (new or continued): start a fresh stream."""

    def text(self, text: str) -> None:
        raise NotImplementedError

    def other(self, block: dict[str, Any]) -> None:
        raise NotImplementedError


class _AgentBlock(_MessageBlock):
    """Agent text: finished Markdown blocks to the scrollback, the tail live."""

    def __init__(self, view: _View) -> None:
        super().__init__(view)
        self.splitter = BlockSplitter()

    def reopen(self) -> None:
        self.splitter = BlockSplitter()

    def text(self, text: str) -> None:
        for done in self.splitter.feed(text):
            self.view._print(MarkdownLines(done))

    def other(self, block: dict[str, Any]) -> None:
        rest = self.splitter.close()
        if rest:
            self.view._print(MarkdownLines(rest))
        self.view._print(_label(block))

    def live(self) -> RenderableType | None:
        # no more of a long block than the terminal can show (the live area says how many
        # lines are above): a frame's cost stays a screenful however long the block grows
        console = self.view.console
        height = max(1, console.height)
        tail, self.hidden_lines = self.splitter.tail_window(height, height * max(1, console.width))
        # code is highlighted once its block is finished: not again in every frame while it
        # grows, where half-typed strings and comments would flicker
        return MarkdownLines(tail, highlight=False) if tail.strip() else None

    def finish(self) -> list[RenderableType]:
        rest = self.splitter.close()
        return [MarkdownLines(rest)] if rest else []

    def cut(self) -> None:
        """What is drawn of the text so far, to the scrollback now (its unfinished line stays
        live): a note goes under what the person saw (:meth:`BlockSplitter.cut`)."""
        done = self.splitter.cut()
        if done.strip():
            self.view._print(MarkdownLines(done))


class _ThoughtBlock(_MessageBlock):
    """A thought: live while it streams, then one summary line (or all of it, if asked)."""

    def __init__(self, view: _View, show: bool) -> None:
        super().__init__(view)
        self.show = show
        self.splitter = BlockSplitter()
        self.recent: deque[str] = deque()
        self.recent_len = 0
        self.printed = False  # (show_thoughts) the first paragraph went out with the header

    def reopen(self) -> None:
        self.splitter = BlockSplitter()
        self.recent.clear()
        self.recent_len = 0
        self.printed = False

    def _para(self, text: str) -> RenderableType:
        body = Padding(Text(text, style="dim italic"), (0, 0, 0, 2))
        if self.printed:
            return body
        self.printed = True
        return Group(Text("✻ Thinking", style="dim"), body)

    def text(self, text: str) -> None:
        if self.show:
            for done in self.splitter.feed(text):
                self.view._print(self._para(done))
            return
        recent = self.recent
        recent.append(text)
        self.recent_len += len(text)
        while len(recent) > 1 and self.recent_len - len(recent[0]) >= _RECENT_CHARS:
            self.recent_len -= len(recent.popleft())

    def other(self, block: dict[str, Any]) -> None:
        self.text("\n" + safe_line(block_label(block)) + "\n")

    def live(self) -> RenderableType | None:
        if self.show:
            tail = self.splitter.tail().strip("\n")
            if not tail:
                return None
            return self._peek(tail)
        text = "".join(self.recent)[-_RECENT_CHARS:].strip("\n")
        lines = text.split("\n")[-_RECENT_LINES:]
        body = Text("\n".join(lines), style="dim italic", no_wrap=True, overflow="ellipsis")
        return Group(Text("✻ Thinking…", style="dim"), Padding(body, (0, 0, 0, 2)))

    def _peek(self, tail: str) -> RenderableType:
        body = Padding(Text(tail, style="dim italic"), (0, 0, 0, 2))
        return body if self.printed else Group(Text("✻ Thinking", style="dim"), body)

    def finish(self) -> list[RenderableType]:
        if self.show:
            rest = self.splitter.close()
            return [self._para(rest)] if rest else []
        text = _joined(self.trace)
        return [thought_summary(text)] if text.strip() else []


def _joined(trace: MessageTrace) -> str:
    """All the text a trace consumed (O(message): once per finished block)."""
    parts = [s for s in trace.segments if isinstance(s, str)]
    if trace.run:
        joined = "".join(trace.run)
        trace.run = [joined]  # join once; later appends extend the list again
        parts.append(joined)
    return "".join(parts)


#: Markdown a thought's first line may carry (gemini's ``**Analyzing the request**``): a
#: heading's ``#``s, and the ``**``, ``*`` or ``~~`` around words -- not a lone ``*`` (``a * b``),
#: nor underscores (``__init__``, ``snake_case`` are more often code than emphasis).
_HEADING = re.compile(r"^#{1,6}\s+")
_EMPTY_EMPHASIS = re.compile(r"\*{4,}|~{4,}")  # gemini's ``**subject**`` without a subject
_EMPHASIS = re.compile(r"(\*\*|~~)(?=\S)(.+?)(?<=\S)\1|(?<![\w*])(\*)(?=[^\s*])(.+?)(?<=[^\s*])\3(?![\w*])")


def plain_summary_line(line: str) -> str:
    """``line`` without the Markdown of emphasis and headings, for a one-line summary (where
    it would show as ``**`` markers)."""
    line = _EMPTY_EMPHASIS.sub("", _HEADING.sub("", line))
    return _EMPHASIS.sub(lambda m: m.group(2) if m.group(1) else m.group(4), line)


def thought_summary(text: str) -> Text:
    """``✻ Thought · N words: first line…`` on one line (its Markdown emphasis left out)."""
    words = len(text.split())
    lines = (plain_summary_line(line).strip() for line in text.split("\n"))
    first = safe_line(next((line for line in lines if line), ""))
    summary = Text(no_wrap=True, overflow="ellipsis")
    summary.append(f"✻ Thought · {words} word{'s' if words != 1 else ''}: ", style="dim")
    summary.append(first, style="dim italic")
    return summary


class _UserBlock(_MessageBlock):
    """The user's prompt, ``› text`` in bold (short: rendered whole)."""

    def text(self, text: str) -> None:
        pass  # the trace holds it

    def other(self, block: dict[str, Any]) -> None:
        pass

    def live(self) -> RenderableType | None:
        return user_renderable([*self.trace.segments, "".join(self.trace.run)])

    def finish(self) -> list[RenderableType]:
        rendered = self.live()
        return [rendered] if rendered is not None else []


def user_renderable(segments: Iterable[Any]) -> Text | None:
    """``› text``: the first line after the marker, the rest indented under it."""
    body = Text(style="bold")
    for seg in segments:
        if isinstance(seg, str):
            body.append(safe_text(seg))
        else:
            if body.plain and not body.plain.endswith("\n"):
                body.append("\n")
            body.append(safe_line(block_label(seg)) + "\n", style="dim")
    plain = body.plain.strip("\n")
    if not plain.strip():
        return None
    lines = body.split("\n")
    out = Text()
    first = True
    for line in lines:
        if first and not line.plain.strip():
            continue
        out.append("› " if first else "\n  ", style="bold cyan" if first else "")
        out.append_text(line)
        first = False
    out.rstrip()
    return out
