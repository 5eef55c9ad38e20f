"""The terminal view: rich rendering with one live region at the bottom.

Layout: user prompts as ``› text`` in bold; agent text as Markdown while it streams (drawn
by :mod:`acpcli.render.markdown_lines`, which looks as rich's ``Markdown`` does at a
fraction of its cost; code in a block still streaming is highlighted once the block closes);
thoughts dim and italic, collapsed to a one-line summary once finished (unless
``show_thoughts``); tool calls with a status icon and colour, title, kind, locations and
content (diffs as coloured unified diffs, terminals as a note); plans as a checklist.
Printed pieces are separated by one blank line.

Invariants (what keeps streaming linear, see ``bench/bench_stream.py``):

* **Finished output is printed once** into the scrollback with ``console.print`` and never
  redrawn. Only the *live block* -- the entry receiving output right now -- is drawn in the
  one ``rich.live.Live`` region (``auto_refresh=False``, ``transient=False``), refreshed at
  most ``fps`` times a second (throttled by the injected clock; :meth:`TtyView.tick` lets a
  timer draw a refresh the throttle held back).
* **One print per frame.** Finished pieces are queued and printed together at the next
  refresh, because every ``console.print`` under a ``Live`` also redraws the live region.
* **A streaming message is split at blank lines outside fenced code** (:class:`BlockSplitter`):
  finished Markdown blocks go to the scrollback, only the unfinished tail stays live, so a
  frame costs O(tail), not O(message). Text is taken from ``EntryUpdated.appended`` in
  O(chunk); ``Message.text`` is never read per chunk.
* The live region is drawn by a renderable that reads the view's state when rich renders
  it, so a piece printed above the region never shows stale text below it.
* A change to an entry that already went to the scrollback adds a piece (a tool call's new
  status and new content, an updated plan, a replaced message below a ``✎`` note), printed
  above the live block, which stays at the bottom; chunks for an earlier message reopen it
  as the live block.

Agent text is passed through :mod:`acpcli.text.safe` where the renderables are built (so
rich lays out the visible stand-ins, ``^[`` for ESC), and the console is a
:class:`~acpcli.text.console.SafeConsole` (a net under everything else).

Call :meth:`TtyView.flush` before drawing anything else on the terminal (a permission
prompt, the REPL prompt): it commits the live block and stops the live region.

Between :meth:`TtyView.begin_turn` and :meth:`TtyView.turn_ended` the live region ends with
a status line (spinner, elapsed time, token usage, how to cancel), so a turn that is
thinking or running a tool visibly runs. It is never printed into the scrollback: the live
region's last frame, drawn when it stops, leaves it out.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.padding import Padding
from rich.segment import Segment
from rich.text import Text

from acpcli.history.store import (
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
    TurnEnd,
)
from acpcli.render.markdown_lines import MarkdownLines, table_starts
from acpcli.render.plain import MessageTrace, ToolTracker
from acpcli.render.transcript import (
    block_label,
    content_item_lines,
    diff_lines,
    is_markdown_output,
    location_line,
    plan_entry_text,
    stop_reason_text,
    tool_text_parts,
    turn_end_text,
    usage_line,
)
from acpcli.text.safe import safe_line, safe_text

if TYPE_CHECKING:
    from collections.abc import Iterable

    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.live import Live

#: status -> (icon, style); anything else gets a generic look
STATUS_LOOK = {
    "pending": ("○", "yellow"),
    "in_progress": ("◐", "cyan"),
    "completed": ("✓", "green"),
    "failed": ("✗", "red"),
    "cancelled": ("⊘", "magenta"),
}
_OTHER_LOOK = ("•", "magenta")
_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_UNFINISHED = frozenset(("pending", "in_progress"))

#: plan entry status -> (mark, mark style, text style)
PLAN_LOOK = {
    "pending": ("○", "", ""),
    "in_progress": ("▸", "bold yellow", "bold"),
    "completed": ("✔", "green", "dim"),
}
_PLAN_OTHER = ("?", "magenta", "")

#: tool content longer than this is cut in the terminal (export shows all of it)
MAX_TEXT_LINES = 20
MAX_DIFF_LINES = 80
_LIVE_LOCATIONS = 5  # locations a tool call still running shows (all of them once finished)
_RECENT_CHARS = 600  # how much of a collapsed thought the live region shows, at most
_RECENT_LINES = 3

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

    def close(self) -> str:
        """End of the text: return the rest ("" if none) and start over."""
        rest = self.tail().strip("\n")
        self._lines, self._partial, self._fence, self._blanks, self._fences = [], [], None, 0, []
        return rest


# -- renderables ------------------------------------------------------------------------


def _blank_line(line: list[Segment]) -> bool:
    for seg in line:
        if seg.text.strip() or (seg.style is not None and seg.style.bgcolor is not None):
            return False
    return True


class _Piece:
    """A renderable with blank lines trimmed off both ends, after an optional blank line.

    Pieces are printed one after another, so the spacing between them is decided here,
    once, whatever blank lines a renderable (Markdown) adds at its edges.
    """

    __slots__ = ("gap", "renderable")

    def __init__(self, renderable: RenderableType, gap: bool) -> None:
        self.renderable = renderable
        self.gap = gap

    def lines(self, console: Console, options: ConsoleOptions) -> list[list[Segment]]:
        """The piece's lines (the blank one first if ``gap``), without padding on the right."""
        renderable = self.renderable
        if isinstance(renderable, MarkdownLines):  # drawn already trimmed, without padding
            lines = renderable.lines(console, options)
            trim = renderable.fallback
        else:
            lines = console.render_lines(renderable, options, pad=False)
            trim = True
        start, end = 0, len(lines)
        while start < end and _blank_line(lines[start]):
            start += 1
        while end > start and _blank_line(lines[end - 1]):
            end -= 1
        if start == end:
            return []
        kept = [_rstrip(line) for line in lines[start:end]] if trim else lines[start:end]
        return [[], *kept] if self.gap else kept

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        new_line = Segment.line()
        for line in self.lines(console, options):
            yield from line
            yield new_line


def _rstrip(line: list[Segment]) -> list[Segment]:
    """Drop the padding rich adds to the right (unless it is painted: code backgrounds)."""
    while line:
        seg = line[-1]
        if seg.control or (seg.style is not None and seg.style.bgcolor is not None):
            break
        text = seg.text.rstrip()
        if text == seg.text:
            break
        if text:
            line[-1] = Segment(text, seg.style)
            break
        line.pop()
    return line


class _LiveArea:
    """What the live region shows: the view's live block as it is at render time."""

    __slots__ = ("view",)

    def __init__(self, view: TtyView) -> None:
        self.view = view

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        view = self.view
        pieces: list[_Piece] = []
        gap = view._printed
        for earlier in view._group:  # tool calls still running, started before the live block
            renderable = earlier.live()
            if renderable is not None:
                pieces.append(_Piece(renderable, gap))
                gap = True
        block = view._live_block
        hidden = 0
        if block is not None:
            renderable = block.live()
            if renderable is not None:
                pieces.append(_Piece(renderable, gap))
                gap = True
                hidden = block.hidden_lines
        for stale in view._stale.values():  # changes held back below the streaming message
            preview = stale.changes(record=False)
            if preview is not None:
                pieces.append(_Piece(preview, gap))
                gap = True
        status = view.status_text()
        if status is not None:
            pieces.append(_Piece(status, gap))
        footer = view.footer() if view.footer is not None and status is not None else None
        if footer:  # the REPL's input line during a turn, right under the status line
            pieces.append(_Piece(Group(*footer), False))
        lines = [line for piece in pieces for line in piece.lines(console, options)]
        # taller than the terminal (a long code block streaming): show its newest lines,
        # under a note (rich would keep the top and hide what is arriving); the whole
        # block goes to the scrollback when it is finished
        room = max(2, options.size.height - 1 - view._reserve)
        if len(lines) + (1 if hidden else 0) > room:
            cut = len(lines) - room + 1  # a row is left for the note
            lines = lines[cut:]
            hidden += cut
        if hidden:
            note = Text(f"⋮ {hidden} lines above", style="dim", end="")
            lines = [list(console.render(note, options)), *lines]
        new_line = Segment.line()
        for line in lines:
            yield from line
            yield new_line


def _label(block: dict[str, Any]) -> Text:
    return Text(safe_line(block_label(block)), style="dim")


def _clip(lines: list[str], limit: int) -> tuple[list[str], int]:
    if len(lines) <= limit:
        return lines, 0
    return lines[:limit], len(lines) - limit


def diff_text(item: dict[str, Any], max_lines: int = MAX_DIFF_LINES) -> Text:
    """A ``diff`` content item as a coloured unified diff."""
    lines, more = _clip(diff_lines(item), max_lines)
    text = Text()
    for i, line in enumerate(lines):
        if i:
            text.append("\n")
        if line.startswith(("--- ", "+++ ")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        text.append(safe_line(line), style=style)
    if more:
        text.append(f"\n… {more} more lines", style="dim")
    return text


def _content_item(item: dict[str, Any]) -> Text | list[Text | MarkdownLines]:
    itype = item.get("type")
    if itype == "diff":
        return diff_text(item)
    if itype == "terminal":
        return Text(f"▸ terminal {safe_line(str(item.get('terminalId', '?')))} (its output is shown by the agent)", style="dim")
    block = item.get("content") if itype == "content" else None
    raw = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
    if isinstance(raw, str) and ("<system-reminder>" in raw or is_markdown_output(raw)):
        return _text_pieces(raw)
    lines, more = _clip(content_item_lines(item), MAX_TEXT_LINES)
    text = Text(safe_text("\n".join(lines)))
    if more:
        text.append(f"\n… {more} more lines", style="dim")
    return text


def _text_pieces(raw: str) -> list[Text | MarkdownLines]:
    """Tool output drawn as Markdown where it is (claude's fenced ```` ```console ```` blocks),
    its ``<system-reminder>`` blocks folded to one dim line each (after the Markdown, when
    they sit inside its code: claude puts them inside the fence); at most
    :data:`MAX_TEXT_LINES` lines of it, as for plain output."""
    parts = tool_text_parts(raw)
    text_only = "".join(part for folded, part in parts if not folded)
    if is_markdown_output(text_only):  # one Markdown piece, the folded notes under it
        parts = [(False, text_only), *((True, part) for folded, part in parts if folded)]
    pieces: list[Text | MarkdownLines] = []
    room = MAX_TEXT_LINES
    more = 0
    for folded, part in parts:
        if folded:
            if room > 0:
                pieces.append(Text(safe_line(part), style="dim"))
                room -= 1
            else:
                more += 1
            continue
        if not part.strip():
            continue
        lines = part.strip("\n").split("\n")
        shown, cut = lines[: max(0, room)], max(0, len(lines) - max(0, room))
        more += cut
        room -= len(shown)
        if shown:
            text = safe_text("\n".join(shown))
            pieces.append(MarkdownLines(text) if is_markdown_output(part) else Text(text))
    if more:
        pieces.append(Text(f"… {more} more lines", style="dim"))
    return pieces


def _drawn_lines(drawn: Text | list[Text | MarkdownLines]) -> int:
    """About how many lines an item takes (a Markdown piece: its source lines)."""
    if isinstance(drawn, Text):
        return drawn.plain.count("\n") + 1
    return sum((p.plain if isinstance(p, Text) else p.text).count("\n") + 1 for p in drawn)


#: The most characters of a tool call's title a header shows (the agent's text: a 1 MB title
#: is cut with "…", not echoed whole; the record keeps it whole).
MAX_TITLE_CHARS = 400


def tool_header_text(call: ToolCall) -> Text:
    """``✓ title  kind  completed`` with the status icon and colour."""
    icon, style = STATUS_LOOK.get(call.status, _OTHER_LOOK)
    title = call.title or call.tool_call_id
    if len(title) > MAX_TITLE_CHARS:
        title = title[: MAX_TITLE_CHARS - 1] + "…"
    title = safe_line(title)
    status = safe_line(call.status.replace("_", " "))
    return Text.assemble((icon, style), " ", (title, "bold"), "  ", (safe_line(call.kind), "dim"), "  ", (status, style))


class _ItemCache:
    """Rendered tool content items by identity (store items are never mutated), with how
    many lines each holds."""

    __slots__ = ("_items", "_totals", "_totals_of")

    def __init__(self) -> None:
        self._items: dict[int, tuple[dict[str, Any], Text | list[Text | MarkdownLines], int]] = {}
        # running line totals of the content list last asked about (a tool call's content
        # only grows by appends, or is replaced by a new list)
        self._totals_of: list[dict[str, Any]] | None = None
        self._totals: list[int] = [0]

    def _entry(self, item: dict[str, Any]) -> tuple[dict[str, Any], Text | list[Text | MarkdownLines], int]:
        hit = self._items.get(id(item))
        if hit is not None and hit[0] is item:
            return hit
        drawn = _content_item(item)
        hit = self._items[id(item)] = (item, drawn, _drawn_lines(drawn))
        return hit

    def get(self, item: dict[str, Any]) -> Text | list[Text | MarkdownLines]:
        return self._entry(item)[1]

    def newest(self, items: list[dict[str, Any]], room: int, first: int = 0) -> tuple[list[dict[str, Any]], int]:
        """Of ``items[first:]``, the last ones that fill ``room`` lines, and how many lines
        the others hold: what a live region shows of output streamed in thousands of items,
        in time for what it shows (and for the items new since the last call)."""
        start, used = len(items), 0
        while start > first and used < room:
            start -= 1
            used += self._entry(items[start])[2]
        if start == first:
            return items[first:], 0
        if self._totals_of is not items or len(self._totals) > len(items) + 1:
            self._totals_of, self._totals = items, [0]
        totals = self._totals
        for item in items[len(totals) - 1 :]:
            totals.append(totals[-1] + self._entry(item)[2])
        return items[start:], totals[start] - totals[first]


def tool_renderable(
    call: ToolCall,
    locations: Iterable[dict[str, Any]] | None = None,
    content: Iterable[dict[str, Any]] | None = None,
    cache: _ItemCache | None = None,
    skipped: int = 0,
    most_locations: int | None = None,
) -> RenderableType:
    """A tool call: header, then locations and content (all of them by default), the
    content after a note of the ``skipped`` lines before it; at most ``most_locations``
    locations, then how many more there are."""
    parts: list[RenderableType] = [tool_header_text(call)]
    places = list(call.locations if locations is None else locations)
    more = 0 if most_locations is None else max(0, len(places) - most_locations)
    for loc in places[: len(places) - more]:
        parts.append(Text("  → " + safe_line(location_line(loc)), style="dim"))
    if more:
        parts.append(Text(f"  → … {more} more", style="dim"))
    if skipped:
        parts.append(Text(f"  ⋮ {skipped} earlier lines", style="dim"))
    get = cache.get if cache is not None else _content_item
    run: list[Text] = []  # texts in a row: one text, as rich lays out each renderable of a group at a cost of its own
    for item in call.content if content is None else content:
        drawn = get(item)
        for piece in [drawn] if isinstance(drawn, Text) else drawn:
            if isinstance(piece, Text):
                run.append(piece)
                continue
            if run:
                parts.append(Padding(Text("\n").join(run), (0, 0, 0, 2)))
                run = []
            parts.append(Padding(piece, (0, 0, 0, 2)))
    if run:
        parts.append(Padding(Text("\n").join(run), (0, 0, 0, 2)))
    return Group(*parts)


def plan_renderable(plan: Plan, *, updated: bool = False) -> Text:
    """A plan as a checklist."""
    text = Text("Plan", style="bold")
    if updated:
        text.append(" (updated)", style="dim")
    if plan.plan_type != "items":
        text.append(f" ({safe_line(plan.plan_type)})", style="dim")
        return text
    if not plan.entries:
        text.append(" (empty)", style="dim")
    for entry in plan.entries:
        status = entry.get("status")
        mark, mark_style, text_style = PLAN_LOOK.get(status, _PLAN_OTHER) if isinstance(status, str) else _PLAN_OTHER
        text.append("\n  ")
        text.append(mark, style=mark_style)
        text.append(" ")
        text.append(safe_line(plan_entry_text(entry)), style=text_style)
    return text


# -- blocks: one per entry, holding what the view showed of it --------------------------------


class _Block:
    #: lines of the live block left out of :meth:`live`'s renderable (a long code block)
    hidden_lines = 0

    def live(self) -> RenderableType | None:
        """What the live region shows while this block is live."""
        return None

    def finish(self) -> list[RenderableType]:
        """The block is no longer live: what to print for good."""
        return []


class _MessageBlock(_Block):
    """Shared by agent, thought and user messages: what was consumed, for replacements."""

    def __init__(self, view: TtyView) -> None:
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

    def __init__(self, view: TtyView) -> None:
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


class _ThoughtBlock(_MessageBlock):
    """A thought: live while it streams, then one summary line (or all of it, if asked)."""

    def __init__(self, view: TtyView, show: bool) -> None:
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


def thought_summary(text: str) -> Text:
    """``✻ Thought · N words: first line…`` on one line."""
    words = len(text.split())
    first = safe_line(next((line.strip() for line in text.split("\n") if line.strip()), ""))
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


class _ToolBlock(_Block):
    """A tool call: live while it is the latest entry and unfinished. In the live region it
    shows as much of its content as the terminal has rows (output streamed in thousands of
    items would cost every frame all of them); the scrollback gets all of it."""

    def __init__(self, call: ToolCall, console: Console) -> None:
        self.call = call
        self.tracker = ToolTracker()
        self.cache = _ItemCache()
        self.console = console

    def unfinished(self) -> bool:
        return self.call.status in _UNFINISHED

    def _room(self) -> int:
        # the terminal's rows less the header, the locations, the note of what is left out,
        # the status line and the live region's own last row
        return max(1, self.console.height - 5 - min(len(self.call.locations), _LIVE_LOCATIONS))

    def live(self) -> RenderableType | None:
        shown, skipped = self.cache.newest(self.call.content, self._room())
        return tool_renderable(self.call, content=shown, cache=self.cache, skipped=skipped, most_locations=_LIVE_LOCATIONS)

    def finish(self) -> list[RenderableType]:
        self.tracker.delta(self.call)  # all of it is shown now
        return [tool_renderable(self.call, cache=self.cache)]

    def changes(self, *, record: bool = True) -> RenderableType | None:
        """After it was printed: its new status and what content is new, if anything."""
        header_changed, locations, content = self.tracker.delta(self.call, record=record)
        if not header_changed and not locations and not content:
            return None
        if record:  # for the scrollback: all of it
            return tool_renderable(self.call, locations, content, self.cache)
        everything = self.call.content  # (what is new is its end, or all of it)
        shown, skipped = self.cache.newest(everything, self._room(), len(everything) - len(content))
        return tool_renderable(self.call, locations, shown, self.cache, skipped, _LIVE_LOCATIONS)


class _PlanBlock(_Block):
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.shown: tuple[str, list[Any]] | None = None

    def _state(self) -> tuple[str, list[Any]]:
        return (self.plan.plan_type, [dict(e) for e in self.plan.entries])

    def live(self) -> RenderableType | None:
        return plan_renderable(self.plan)

    def finish(self) -> list[RenderableType]:
        self.shown = self._state()
        return [plan_renderable(self.plan)]

    def changes(self, *, record: bool = True) -> RenderableType | None:
        """After it was printed: the plan again, if it changed."""
        state = self._state()
        if state == self.shown:
            return None
        if record:
            self.shown = state
        return plan_renderable(self.plan, updated=True)


_STOP_STYLE = {"cancelled": "yellow", "refusal": "bold red", "max_tokens": "bold yellow", "max_turn_requests": "bold yellow"}
#: What the ``✎ <name> replaced`` / ``✎ <name> cleared`` note calls a message, by kind: the words
#: of the screen, where the agent's text is "the message" and the user's is drawn as the prompt
#: (``›``). The plain view names kinds in full instead
#: (:data:`acpcli.render.plain._PIPE_NOTE_NAMES`): a pipe has no styling to tell them apart.
_SCREEN_NOTE_NAMES = {AGENT: "message", THOUGHT: "thought", USER: "prompt"}


class TtyView:
    """Renders a session on a terminal console (see the module docstring).

    ``show_thoughts``: print thoughts in full instead of a summary line. ``quiet``: agent
    text only. ``fps``: live refreshes per second at most. ``clock``: seconds, monotonic
    (injected by tests). ``final_only``: show nothing while changes arrive; :meth:`close`
    prints the session's store finished (for a ``load`` whose replay interleaves messages,
    which streamed would show as alternating fragments).
    """

    def __init__(
        self,
        console: Console,
        *,
        show_thoughts: bool = False,
        quiet: bool = False,
        fps: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        store: Store | None = None,
        final_only: bool = False,
        notes: bool = False,
    ) -> None:
        self.console = console
        self._final_only = final_only
        self._notes = notes and not final_only
        self._closed = False
        self._show_thoughts = show_thoughts
        self._quiet = quiet
        self._interval = 1.0 / fps if fps > 0 else float("inf")
        self._clock = clock
        self._store = store
        self._blocks: dict[int, _Block] = {}
        self._live_block: _Block | None = None
        self._live: Live | None = None
        self._printed = False  # something is in the scrollback: pieces get a blank line first
        self._last_refresh = float("-inf")
        self._due = False  # a refresh was skipped by the throttle
        # pieces for the scrollback, printed together at the next refresh: printing redraws
        # the live region, so one print per frame rather than one per finished paragraph
        self._queue: list[_Piece] = []
        # tool calls and plans already printed that changed while a message streams: shown
        # below it in the live region and printed after it, so the message is not cut
        self._stale: dict[int, _ToolBlock | _PlanBlock] = {}
        # tool calls started in a row before the live block (itself a tool call), kept live
        # until they finish, so that each goes to the scrollback once, in its final state, in
        # the order they started (parallel calls; one finished early waits for those before it)
        self._group: list[_ToolBlock] = []
        self._turn_started: float | None = None  # a turn runs: the live region shows a status line
        self._paused = False  # flushed mid-turn (a question is on screen): no status until a change
        #: Lines drawn under the status line while a turn runs (the REPL's input line and
        #: queue, :mod:`acpcli.repl.typeahead`); never printed into the scrollback.
        self.footer: Callable[[], list[Text]] | None = None
        self._noted = False  # the last piece for the scrollback is a note: the next note needs no gap
        # held (a question is drawn below the live area's last frame): nothing is drawn until
        # release(); the number of rows that frame left on the screen
        self._held: int | None = None
        self._reserve = 0  # rows the held frame leaves free below it (for the question)

    @property
    def show_thoughts(self) -> bool:
        """Whether thoughts starting from now are printed in full (the REPL's ``/thoughts``)."""
        return self._show_thoughts

    @show_thoughts.setter
    def show_thoughts(self, value: bool) -> None:
        self._show_thoughts = value

    # -- the Sink protocol ------------------------------------------------------------------

    def on_change(self, session: object, change: Change) -> None:
        """Show what ``change`` changed."""
        if self._store is None:
            store = getattr(session, "store", None)
            if isinstance(store, Store):
                self._store = store
        if self._final_only:
            return
        self._paused = False
        if isinstance(change, NewEntry):
            self._new(change.index, change.entry)
        elif isinstance(change, EntryUpdated):
            self._updated(change)
        else:
            return
        self._touch()

    def begin_turn(self, store: Store | None = None) -> None:
        """A turn starts: the status line shows until :meth:`turn_ended` (with the token
        usage of ``store``, the session's, when given)."""
        if store is not None:
            self._store = store
        if self._final_only or self._quiet:
            return
        self._turn_started = self._clock()
        self._paused = False
        self._start_live()
        self._refresh()

    def turn_ended(self, stop_reason: str | None) -> None:
        """Commit the live block, stop the live region; say a stop reason other than end_turn."""
        self._turn_started = None
        self.flush()
        if self._final_only:
            return
        text = stop_reason_text(stop_reason)
        if text is not None:
            style = _STOP_STYLE.get(stop_reason or "", "bold yellow")
            self._print(Text(f"■ Turn ended: {text}", style=style))
            self._drain()

    def tick(self) -> None:
        """Draw a refresh the throttle held back, once its time has come.

        Call it from a timer (any rate: the throttle still holds) so that the end of a
        burst of chunks shows even when nothing else arrives for a while.
        """
        due = self._due or (self._turn_started is not None and not self._paused)  # the spinner turns
        if due and self._clock() - self._last_refresh >= self._interval:
            self._refresh()

    def redraw(self) -> None:
        """Draw the live region now (a key was typed into the footer): a turn paused by a
        question that is gone shows its status line again."""
        if self._turn_started is None or self._final_only or self._quiet:
            return
        self._paused = False
        self._due = True
        self._refresh()

    def flush(self) -> None:
        """Commit the live block to the scrollback and stop the live region (mid-turn: until
        the next change, so a question drawn below is left alone)."""
        self._held = None  # (a frame held for a question stays where it is)
        self._commit()
        self._drain()
        self._due = False
        self._paused = self._turn_started is not None
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()

    def note(self, text: str | Text, style: str | None = None) -> bool:
        """Show one line that is not the session's (a refusal, ``cancelling…``, a slash
        command's answer) in the scrollback, in order: above the live area, which stays live
        (a line written beside the live region would be wiped by its next redraw, and would
        leave part of its last frame behind). False when this view takes no notes (built
        without ``notes``: stderr is not this terminal): the caller writes the line itself."""
        if not self._notes or self._closed:
            return False
        line = text if isinstance(text, Text) else Text(safe_text(text), style=style or "")
        self._queue.append(_Piece(line, self._printed and not self._noted))
        self._printed = True
        self._noted = True
        if self._held is None:
            self._refresh()
        return True

    def hold(self, reserve: int = 0) -> bool:
        """Stop drawing, leaving the live area's last frame (the tool call being asked about)
        on the screen without committing it, so that a question of ``reserve`` rows can be
        drawn below it (the frame is cut to leave them: a frame pushed off the top of the
        screen could not be taken off it again). Until :meth:`release` changes are recorded
        and not drawn. False (and nothing done) when this view takes no notes: the caller
        then :meth:`flush`es it."""
        if not self._notes or self._closed:
            return False
        if self._held is not None:
            return True
        self._drain()
        self._paused = self._turn_started is not None  # the frame left behind has no status line
        rows = 0
        live = self._live
        if live is not None:
            self._live = None
            self._reserve = reserve
            try:
                live.refresh()  # the frame without the status line, cut to leave the rows
                shape = getattr(live._live_render, "_shape", None)  # (width, height) of that frame
                rows = shape[1] if shape else 0
                live.stop()  # (draws it again, and moves below it)
            finally:
                self._reserve = 0
        self._held = rows
        return True

    def release(self, rows_below: int = 0) -> None:
        """The question is answered and erased: take the held frame (and ``rows_below`` rows
        printed under it since, the question's own line) off the screen; the live block is
        drawn again, as it is now, by the next refresh."""
        held, self._held = self._held, None
        if held is None:
            return
        rows = held + rows_below
        if rows and self.console.is_terminal:
            from rich.control import Control, ControlType

            self.console.control(
                Control(ControlType.CARRIAGE_RETURN, (ControlType.ERASE_IN_LINE, 2),
                        *(((ControlType.CURSOR_UP, 1), (ControlType.ERASE_IN_LINE, 2)) * rows))
            )
        self._paused = False
        if self._live_block is not None or self._queue or self._turn_started is not None:
            self._refresh()

    def print_store(self, store: Store) -> None:
        """Print every entry of ``store`` in its final state (``show``)."""
        self.flush()
        for entry in store.entries:
            if isinstance(entry, TurnEnd):
                marker = turn_end_text(entry)  # a cancelled or failed turn says so
                if marker is not None and not self._quiet:
                    style = "bold red" if entry.error else _STOP_STYLE.get(entry.stop_reason or "", "bold yellow")
                    self._print(Text(marker, style=style))
                continue
            block = self._block_for(entry)
            if block is None:
                continue
            if isinstance(block, _MessageBlock):
                block.feed(entry.content)  # type: ignore[union-attr]
            for piece in block.finish():
                self._print(piece)
        usage = None if self._quiet else usage_line(store)
        if usage is not None:
            self._print(Text(safe_line(usage), style="dim"))  # a cost's currency is the agent's text
        self._drain()

    def close(self) -> None:
        """Commit everything and release the terminal (``final_only``: print the store)."""
        self._turn_started = None  # a turn that ended in an error leaves no status line behind
        self.flush()
        if self._final_only and not self._closed and self._store is not None:
            self.print_store(self._store)
        self._closed = True

    # -- output ------------------------------------------------------------------------------

    def _print(self, renderable: RenderableType) -> None:
        """Queue a piece for the scrollback; it is printed at the next refresh (or flush)."""
        self._queue.append(_Piece(renderable, self._printed))
        self._printed = True
        self._noted = False

    def _drain(self) -> None:
        """Print the queued pieces, in one ``console.print`` (which also redraws the live region)."""
        if self._queue and self._held is None:
            pieces, self._queue = self._queue, []
            self.console.print(pieces[0] if len(pieces) == 1 else Group(*pieces))

    def _commit(self) -> None:
        """The live block is finished: print it for good (it leaves the live region first)."""
        group, self._group = self._group, []
        for earlier in group:
            for piece in earlier.finish():
                self._print(piece)
        block = self._live_block
        self._live_block = None
        if block is not None:
            for piece in block.finish():
                self._print(piece)
        stale, self._stale = self._stale, {}
        for index in sorted(stale):
            changed = stale[index].changes()
            if changed is not None:
                self._print(changed)

    def _set_live(self, block: _Block) -> None:
        self._live_block = block
        self._start_live()

    def status_text(self) -> Text | None:
        """The status line of a running turn (``None`` outside a turn)."""
        if self._turn_started is None or self._paused:
            return None
        from acpcli.render.usage import usage_text

        elapsed = max(0.0, self._clock() - self._turn_started)
        spinner = _SPINNER[int(elapsed * 10) % len(_SPINNER)]
        store = self._store
        state = getattr(store, "state", None)
        words = "waiting for you" if state == "requires_action" else "working"
        minutes, seconds = divmod(int(elapsed), 60)
        parts = [f"{spinner} {words}", f"{minutes}m {seconds:02d}s" if minutes else f"{seconds}s"]
        usage = usage_text(getattr(store, "usage", None))
        if usage:
            parts.append(safe_line(usage))  # a cost's currency is the agent's text
        parts.append("Ctrl-C cancels")
        return Text(" · ".join(parts), style="dim")

    def _start_live(self) -> None:
        if self._live is None:
            from rich.live import Live

            self._live = Live(
                _LiveArea(self),
                console=self.console,
                auto_refresh=False,
                transient=False,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()

    def _touch(self) -> None:
        """Something changed: refresh now, or later if the last refresh is too recent."""
        if self._clock() - self._last_refresh >= self._interval:
            self._refresh()
        else:
            self._due = True

    def _refresh(self) -> None:
        """Print the queued pieces and redraw the live region (printing redraws it too)."""
        if self._held is not None:  # a question is on the screen: drawn after it
            self._due = True
            return
        self._due = False
        self._last_refresh = self._clock()
        if self._turn_started is not None and not self._paused:
            self._start_live()
        if self._queue:
            self._drain()
        elif self._live is not None:
            self._live.refresh()

    # -- changes -----------------------------------------------------------------------------

    def _block_for(self, entry: Any) -> _Block | None:
        if isinstance(entry, Message):
            if entry.kind == AGENT:
                return _AgentBlock(self)
            if self._quiet:
                return None
            if entry.kind == THOUGHT:
                return _ThoughtBlock(self, self._show_thoughts)
            return _UserBlock(self)
        if self._quiet:
            return None
        if isinstance(entry, ToolCall):
            return _ToolBlock(entry, self.console)
        if isinstance(entry, Plan):
            return _PlanBlock(entry)
        return None

    def _settle(self) -> None:
        """Print the tool calls of the live group that have finished, oldest first, up to the
        first still running (which keeps the later ones live: the scrollback keeps the order
        in which they started)."""
        live = self._live_block
        blocks: list[_ToolBlock] = [*self._group, *([live] if isinstance(live, _ToolBlock) else [])]
        done = 0
        while done < len(blocks) and not blocks[done].unfinished():
            done += 1
        if not done:
            return
        for block in blocks[:done]:
            for piece in block.finish():
                self._print(piece)
        if done > len(self._group):
            self._group = []
            self._live_block = None
        else:
            self._group = self._group[done:]

    def _new(self, index: int, entry: Any) -> None:
        block = self._block_for(entry)
        if block is None:
            return
        self._blocks[index] = block
        live = self._live_block
        if isinstance(block, _ToolBlock) and isinstance(live, _ToolBlock) and (live.unfinished() or self._group):
            # another tool call while one runs: both stay live, each printed once finished
            self._group.append(live)
            self._set_live(block)
            self._settle()
            return
        self._commit()
        if isinstance(block, _ToolBlock) and not block.unfinished():
            for piece in block.finish():
                self._print(piece)
            return
        if isinstance(block, _MessageBlock):
            block.feed(entry.content)  # finished Markdown blocks are queued for the scrollback
        self._set_live(block)

    def _updated(self, change: EntryUpdated) -> None:
        block = self._blocks.get(change.index)
        if block is None:
            self._new(change.index, change.entry)
            return
        if isinstance(block, _MessageBlock):
            self._message_updated(block, change)
        elif block is self._live_block or block in self._group:  # redrawn by the refresh
            if isinstance(block, _ToolBlock) and not block.unfinished():
                self._settle()
        elif isinstance(block, (_ToolBlock, _PlanBlock)):
            if isinstance(self._live_block, _MessageBlock):
                self._stale[change.index] = block
            else:
                piece = block.changes()
                if piece is not None:
                    self._print(piece)

    def _reopen(self, block: _MessageBlock) -> None:
        """Make a message the live block again (chunks for it after other output)."""
        if block is not self._live_block:
            self._commit()
            block.reopen()
            self._set_live(block)

    def _message_updated(self, block: _MessageBlock, change: EntryUpdated) -> None:
        message: Message = change.entry  # type: ignore[assignment]
        if change.appended is not None:
            self._reopen(block)
            block.feed((change.appended,))
            return
        content = message.content
        rest = block.trace.rest(content)
        if rest is not None:  # the update extends what was shown (or repeats it)
            if rest:
                self._reopen(block)
                block.feed(rest)
            return
        # the content changed under what was shown: say so and show the new content
        if block is self._live_block:
            self._live_block = None  # its unfinished tail is dropped, not committed
        else:
            self._commit()
        name = _SCREEN_NOTE_NAMES.get(message.kind, "message")
        self._print(Text(f"✎ {name} {'replaced' if content else 'cleared'}", style="dim"))
        block.trace.reset([])
        block.reopen()
        self._set_live(block)
        block.feed(content)
