"""Draw updates that arrive while the input line waits above it, as they arrive.

Between turns an agent may still talk: a late replay (gemini answers ``session/load``
first), v2 background work, a title or command-list change. While the REPL waits for
input, :class:`AboveInput` stands in for the session's view: each change is handed to the
view inside prompt-toolkit's ``run_in_terminal``, which takes the input line (and the
toolbar) off the screen, lets the view print, and draws the input line again below with
whatever the person had typed, cursor included. Changes arriving together are drawn
together (one ``run_in_terminal`` per burst), and the view's live region is committed
each time, so nothing is left for the next redraw of the prompt to overwrite.
"""

from __future__ import annotations

from typing import Any

#: How long a burst of updates is gathered before it is drawn (seconds).
BURST = 0.05


class AboveInput:
    """The view stand-in while the input line is up (a :class:`~acpcli.session.Sink`)."""

    def __init__(self, view: Any) -> None:
        self.view = view
        self._pending: list[tuple[Any, Any]] = []
        self._scheduled = False

    # -- the Sink protocol ------------------------------------------------------------------

    def on_change(self, session: Any, change: Any) -> None:
        """Queue the change; draw the queue above the input line shortly."""
        self._pending.append((session, change))
        if self._scheduled:
            return
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (cannot happen inside the REPL): draw now
            self.drain()
            return
        self._scheduled = True
        loop.call_later(BURST, self._draw)

    def begin_turn(self, store: Any = None) -> None:
        self.drain()
        self.view.begin_turn(store)

    def turn_ended(self, stop_reason: str | None) -> None:
        self.drain()
        self.view.turn_ended(stop_reason)

    def flush(self) -> None:
        self.drain()
        self.view.flush()

    def __getattr__(self, name: str) -> Any:  # tick, show_thoughts, print_store: the view's
        return getattr(self.view, name)

    # -- drawing ----------------------------------------------------------------------------

    def drain(self) -> None:
        """Hand every queued change to the view and commit what it drew (no prompt involved)."""
        self._scheduled = False
        pending, self._pending = self._pending, []
        for session, change in pending:
            self.view.on_change(session, change)
        if pending:
            self.view.flush()

    def _draw(self) -> None:
        from prompt_toolkit.application import run_in_terminal
        from prompt_toolkit.application.current import get_app_or_none

        app = get_app_or_none()
        if app is None or not app.is_running:
            self.drain()
            return
        # in_executor=False: the view draws on this thread, between two redraws of the prompt
        run_in_terminal(self.drain, in_executor=False)
