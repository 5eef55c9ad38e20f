"""The plain view: stdout is a file or a pipe. Plain text, no ANSI, no live regions.

The layout is the one :mod:`acpcli.render.transcript` documents (``> `` user lines, agent
text verbatim, ``[thought]``, ``[tool]`` and ``[plan]`` lines, unified diffs). Everything
is written as it arrives and the stream is flushed after every change, so ``| tee`` and
``| grep --line-buffered`` see the answer while it streams.

Invariants:

* **Append-only output, O(chunk) per chunk.** A streamed chunk writes exactly the text it
  appended (``EntryUpdated.appended``); the message text is never re-read per chunk.
* **Entries are blocks separated by one blank line.** When the entries arrive whole, the
  streamed output equals :func:`~acpcli.render.transcript.to_text` of the final store.
* **Nothing is rewritten, nothing is lost.** A pipe cannot take text back, so:

  - a tool call that changes is written again as a ``[tool]`` header line with its new
    status, followed only by the locations and content items not written yet (if its
    content was replaced by something else, all of the new content is written);
  - a plan that changes is written again in full;
  - a whole-message update (``agent_message`` etc., common in replays) whose content
    merely *extends* what was written writes just the rest (the usual v2 pattern: chunks,
    then the same text whole, writes nothing more); one that *changes* what was written
    writes the corrected message again in full below a ``[<kind> message replaced]`` line
    (``[... cleared]`` when the content was removed).

For ``load`` the CLI may prefer one finished transcript: ``PlainView(stream=False)`` writes
nothing while changes arrive and prints ``to_text(store)`` on :meth:`PlainView.close`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from acpcli.model import (
    AGENT,
    THOUGHT,
    USER,
    Change,
    EntryUpdated,
    Message,
    NewEntry,
    Plan,
    Store,
    ToolCall,
)
from acpcli.render.transcript import (
    PREFIXES,
    LineWriter,
    content_item_lines,
    feed_block,
    plan_lines,
    stop_reason_text,
    to_text,
    tool_detail_lines,
    tool_header,
    usage_line,
)
from acpcli.text.safe import safe_text

if TYPE_CHECKING:
    from collections.abc import Iterable

#: What the ``[<name> replaced]`` / ``[<name> cleared]`` note calls a message, by kind. It differs
#: from the terminal's table (:data:`acpcli.render.tty.view._SCREEN_NOTE_NAMES`) on purpose: a pipe has
#: no styling to tell the kinds apart, so the note names the kind in full, like the transcript's
#: other bracketed tags (``[thought]``, ``[tool]``), for a reader of a log or a ``grep``.
_PIPE_NOTE_NAMES = {AGENT: "agent message", USER: "user message", THOUGHT: "thought"}


class ToolTracker:
    """What of one tool call has been shown so far, and what an update adds to it.

    Shared by the streaming views: a pipe (and a terminal's scrollback) can only add, so a
    changed tool call is shown as its new header plus whatever is new.
    """

    __slots__ = ("content", "header", "locations")

    def __init__(self) -> None:
        self.header: tuple[Any, ...] | None = None
        self.locations: list[Any] = []
        self.content: list[Any] = []

    def delta(self, call: ToolCall, *, record: bool = True) -> tuple[bool, list[Any], list[Any]]:
        """``(header_changed, new_locations, new_content)`` since the last call, and remember
        (unless ``record`` is false: a preview).

        Items are new when they extend what was shown; when the list was replaced by one
        that does not start with what was shown, all of it is new.
        """
        header = (call.title, call.kind, call.status)
        changed = header != self.header
        locations = _news(self.locations, call.locations)
        content = _news(self.content, call.content)
        if record:
            self.header = header
            self.locations = list(call.locations)
            self.content = list(call.content)
        return changed, locations, content

    def appended(self, item: Any) -> None:
        """Record one content item that was shown as it was appended."""
        self.content.append(item)


def _news(shown: list[Any], current: list[Any]) -> list[Any]:
    n = len(shown)
    if len(current) >= n and current[:n] == shown:
        return current[n:]
    return list(current)


class MessageTrace:
    """The content of one message as a view consumed it: to tell an extension from a change.

    Text runs are kept as parts (joined only when a whole-message update must be compared),
    other blocks as they are. O(1) per appended chunk.
    """

    __slots__ = ("run", "segments")

    def __init__(self) -> None:
        self.segments: list[Any] = []  # finished runs (str) and non-text blocks (dict)
        self.run: list[str] = []  # parts of the open text run

    def add(self, block: dict[str, Any]) -> None:
        """Record one block as consumed."""
        if block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str):
                self.run.append(text)
            return
        if self.run:
            self.segments.append("".join(self.run))
            self.run = []
        self.segments.append(block)

    def rest(self, content: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """Blocks to consume to reach ``content``, or None if it does not extend what was.

        O(message): for whole-message updates, which are rare while streaming.
        """
        old = self.segments + (["".join(self.run)] if self.run else [])
        new = _normalize(content)
        if len(new) < len(old):
            return None
        for i, seg in enumerate(old):
            cur = new[i]
            if isinstance(seg, str):
                if not isinstance(cur, str) or not cur.startswith(seg):
                    return None
                if i == len(old) - 1 and len(cur) > len(seg):
                    tail: list[dict[str, Any]] = [{"type": "text", "text": cur[len(seg):]}]
                    return tail + _denormalize(new[i + 1:])
                if i < len(old) - 1 and cur != seg:
                    return None
            elif seg != cur:
                return None
        return _denormalize(new[len(old):])

    def reset(self, content: list[dict[str, Any]]) -> None:
        """Forget what was consumed; ``content`` is now all of it."""
        self.segments, self.run = [], []
        for block in content:
            self.add(block)


def _normalize(content: Iterable[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    run: list[str] = []
    for block in content:
        if block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str):
                run.append(text)
            continue
        if run:
            out.append("".join(run))
            run = []
        out.append(block)
    if run:
        out.append("".join(run))
    return out


def _denormalize(segments: list[Any]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": s} if isinstance(s, str) else s for s in segments]


@dataclass(eq=False)
class _Shown:
    """Per entry: what this view wrote of it."""

    trace: MessageTrace | None = None
    tool: ToolTracker | None = None
    plan: list[str] | None = None
    writer: LineWriter | None = None  # the open writer while this message is streaming


class PlainView:
    """Streams a session to a text stream in the plain layout (see the module docstring).

    ``quiet``: only agent text (no user echo, thoughts, tool calls or plans).
    ``stream=False``: write nothing while changes arrive; :meth:`close` prints the final
    transcript of the session's store (``store=`` or the one the first change came with).
    """

    def __init__(
        self, out: TextIO, *, quiet: bool = False, stream: bool = True, store: Store | None = None
    ) -> None:
        self._out = out
        self._quiet = quiet
        self._stream = stream
        self._store = store
        self._shown: dict[int, _Shown] = {}
        self._last: int | None = None  # the entry written last (None: none, or a note)
        self._any = False  # anything written at all
        self._sep = False  # a blank line is due before the next output
        self._closed = False

    # -- the Sink protocol ------------------------------------------------------------------

    def on_change(self, session: object, change: Change) -> None:
        """Write what ``change`` adds to the transcript, then flush."""
        if self._store is None:
            store = getattr(session, "store", None)
            if isinstance(store, Store):
                self._store = store
        if not self._stream:
            return
        if isinstance(change, (NewEntry, EntryUpdated)):
            entry = change.entry
            if isinstance(entry, Message):
                self._message(change, entry)
            elif self._quiet:
                return
            elif isinstance(entry, ToolCall):
                self._tool(change, entry)
            elif isinstance(entry, Plan):
                self._plan(change.index, entry)
            self._out.flush()

    def begin_turn(self, store: Store | None = None) -> None:
        """Nothing to show while a turn runs (only the terminal view has a status line)."""

    def turn_ended(self, stop_reason: str | None) -> None:
        """End the open line; say a stop reason other than ``end_turn``."""
        if not self._stream:
            return
        self._end_open()
        self._last = None
        text = stop_reason_text(stop_reason)
        if text is not None and not self._quiet:
            self._begin(None)
            self._emit(f"[turn ended: {text}]\n")
        self._out.flush()

    def flush(self) -> None:
        """Flush the stream (plain output has no live part to commit)."""
        self._out.flush()

    def print_store(self, store: Store) -> None:
        """Write a finished transcript of ``store`` (``show``, ``export``)."""
        self._end_open()
        self._last = None
        entries = store.entries
        if self._quiet:
            entries = [e for e in entries if isinstance(e, Message) and e.kind == AGENT]
        text = to_text(entries)  # already through safe_text: written as it is
        usage = None if self._quiet else usage_line(store)
        if usage is not None:
            text += ("\n" if text else "") + safe_text(usage) + "\n"
        if text:
            self._begin(None)
            self._write(text)
        self._out.flush()

    def close(self) -> None:
        """Finish the output (and, with ``stream=False``, print the final transcript)."""
        if self._closed:
            return
        self._closed = True
        if not self._stream and self._store is not None:
            self._stream = True
            self.print_store(self._store)
            return
        self._end_open()
        self._out.flush()

    # -- output primitives -----------------------------------------------------------------

    def _emit(self, text: str) -> None:
        self._write(safe_text(text))  # agent text is shown, its control characters never obeyed

    def _write(self, text: str) -> None:
        """Write ``text``, which holds no control character but newline and tab."""
        if self._sep:
            self._out.write("\n")
            self._sep = False
        self._out.write(text)
        self._any = True

    def _end_open(self) -> None:
        """Close the line of the message being streamed, if any."""
        if self._last is not None:
            shown = self._shown.get(self._last)
            if shown is not None and shown.writer is not None:
                shown.writer.end()
                shown.writer = None

    def _begin(self, index: int | None) -> bool:
        """Make ``index`` the entry being written; True if it already was (a continuation)."""
        if index is not None and index == self._last:
            return True
        self._end_open()
        self._last = index
        self._sep = self._any
        return False

    def _state(self, index: int) -> _Shown:
        shown = self._shown.get(index)
        if shown is None:
            shown = self._shown[index] = _Shown()
        return shown

    # -- messages --------------------------------------------------------------------------

    def _message(self, change: NewEntry | EntryUpdated, message: Message) -> None:
        if self._quiet and message.kind != AGENT:
            return
        index = change.index
        shown = self._state(index)
        if isinstance(change, NewEntry) or shown.trace is None:
            shown.trace = MessageTrace()
            self._write_blocks(index, shown, message.kind, message.content)
            return
        appended = change.appended
        if appended is not None:
            self._write_blocks(index, shown, message.kind, (appended,))
            return
        rest = shown.trace.rest(message.content)
        if rest is not None:
            if rest:
                self._write_blocks(index, shown, message.kind, rest)
            return
        # the content changed under what was written: write the corrected message again
        self._begin(None)
        name = _PIPE_NOTE_NAMES.get(message.kind, f"{message.kind} message")
        content = message.content
        self._emit(f"[{name} {'replaced' if content else 'cleared'}]\n")
        self._last = index  # the corrected text follows its note directly
        shown.writer = LineWriter(self._emit, self._prefix(message.kind))
        shown.trace.reset([])
        self._write_blocks(index, shown, message.kind, content)

    def _write_blocks(self, index: int, shown: _Shown, kind: str, blocks: Iterable[dict[str, Any]]) -> None:
        if not self._begin(index) or shown.writer is None:
            shown.writer = LineWriter(self._emit, self._prefix(kind))
        writer, trace = shown.writer, shown.trace
        assert trace is not None
        for block in blocks:
            trace.add(block)
            feed_block(writer, block)

    def _prefix(self, kind: str) -> str:
        return "" if self._quiet else PREFIXES.get(kind, "")

    # -- tool calls and plans -------------------------------------------------------------------

    def _tool(self, change: NewEntry | EntryUpdated, call: ToolCall) -> None:
        shown = self._state(change.index)
        if shown.tool is None:
            shown.tool = ToolTracker()
        appended = change.appended if isinstance(change, EntryUpdated) else None
        if appended is not None:
            lines = ["  " + line if line else "" for line in content_item_lines(appended)]
            shown.tool.appended(appended)
            if not self._begin(change.index):
                lines.insert(0, tool_header(call))
            self._emit("\n".join(lines) + "\n")
            return
        header_changed, locations, content = shown.tool.delta(call)
        details = tool_detail_lines(locations, content)
        if not header_changed and not details:
            return
        continuing = self._begin(change.index)
        lines = details if continuing and not header_changed else [tool_header(call), *details]
        self._emit("\n".join(lines) + "\n")

    def _plan(self, index: int, plan: Plan) -> None:
        shown = self._state(index)
        lines = plan_lines(plan)
        if lines == shown.plan:
            return
        shown.plan = lines
        self._begin(index)
        self._emit("\n".join(lines) + "\n")
