"""The terminal view (:class:`TtyView`): rich rendering with one live region at the bottom.

Invariants (what keeps streaming linear, see ``bench/bench_stream.py``):

* **Finished output is printed once** into the scrollback with ``console.print`` and never
  redrawn. Only the *live block* -- the entry receiving output right now -- is drawn in the
  one ``rich.live.Live`` region (``auto_refresh=False``, ``transient=False``), refreshed at
  most ``fps`` times a second (throttled by the injected clock; :meth:`TtyView.tick` lets a
  timer draw a refresh the throttle held back).
* **One print per frame.** Finished pieces are queued and printed together at the next
  refresh, because every ``console.print`` under a ``Live`` also redraws the live region.
* A streaming message is split at blank lines outside fenced code
  (:mod:`acpcli.render.tty.split`): text is taken from ``EntryUpdated.appended`` in
  O(chunk); ``Message.text`` is never read per chunk.
* The live region is drawn by a renderable that reads the view's state when rich renders
  it (:mod:`acpcli.render.tty.region`).
* A change to an entry that already went to the scrollback adds a piece (a tool call's new
  status and new content, an updated plan, a replaced message below a ``✎`` note), printed
  above the live block, which stays at the bottom; chunks for an earlier message reopen it
  as the live block.

The console is a :class:`~acpcli.text.console.SafeConsole` (a net under the safe text the
blocks build).

Call :meth:`TtyView.flush` before drawing anything else on the terminal (a permission
prompt, the REPL prompt): it commits the live block and stops the live region.

Between :meth:`TtyView.begin_turn` and :meth:`TtyView.turn_ended` the live region ends with
a status line (spinner, elapsed time, token usage, how to cancel), so a turn that is
thinking or running a tool visibly runs. It is never printed into the scrollback: the live
region's last frame, drawn when it stops, leaves it out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.text import Text

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
    TurnEnd,
)
from acpcli.render.transcript import stop_reason_text, turn_end_text, usage_line
from acpcli.render.tty.blocks import _Block
from acpcli.render.tty.messages import _AgentBlock, _MessageBlock, _ThoughtBlock, _UserBlock
from acpcli.render.tty.pieces import _Piece
from acpcli.render.tty.plans import _PlanBlock
from acpcli.render.tty.region import _LiveArea
from acpcli.render.tty.tools import _ToolBlock
from acpcli.text.safe import safe_line, safe_text

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live

_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
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
        #: The turn drawn is another terminal's (an attached REPL watching it): the status
        #: line says whose it is, and that a question is waiting on that terminal, not here.
        self.watching = False

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
        cut = getattr(self._live_block, "cut", None)
        if cut is not None and self._turn_started is not None:
            cut()  # in the order it was seen: under the streamed text on the screen now
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
            from rich.control import Control
            from rich.segment import ControlType

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
        waiting = "waiting for its terminal" if self.watching else "waiting for you"
        words = waiting if state == "requires_action" else "working"
        minutes, seconds = divmod(int(elapsed), 60)
        parts = [f"{spinner} {words}", f"{minutes}m {seconds:02d}s" if minutes else f"{seconds}s"]
        usage = usage_text(getattr(store, "usage", None))
        if usage:
            parts.append(safe_line(usage))  # a cost's currency is the agent's text
        parts.append("another terminal's turn" if self.watching else "Ctrl-C cancels")
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
