"""Draw updates that arrive while the input line waits above it, as they arrive.

Between turns an agent may still talk: a late replay (gemini answers ``session/load``
first), v2 background work, a title or command-list change. While the REPL waits for
input, :class:`AboveInput` stands in for the session's view. Changes are gathered while
they keep coming (a burst ends after :data:`QUIET` seconds without one, or after
:data:`MAX_HOLD` seconds at most), then the entries they touched are printed finished, in
order, inside prompt-toolkit's ``run_in_terminal``: it takes the input line and the
toolbar off the screen, lets the view print, and draws the input line again below with
whatever the person had typed, cursor included.

Printing finished entries rather than streaming them keeps the scrollback simple: no live
region is drawn and overwritten while the prompt owns the bottom of the screen, and a
message whose chunks arrive in one burst is printed once. (An entry that changes again in
a later burst is printed again, whole: rare between turns.)
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acpcli.model import Change

#: A burst of updates ends after this many quiet seconds.
QUIET = 0.1
#: ... or is drawn anyway once its first change is this old (a long stream between turns).
MAX_HOLD = 1.0


class _Entries:
    """The part of a store ``print_store`` reads: the entries to print."""

    def __init__(self, entries: list[Any]) -> None:
        self.entries = entries


class AboveInput:
    """The view stand-in while the input line is up (a :class:`~acpcli.session.Sink`)."""

    def __init__(self, view: Any) -> None:
        self.view = view
        self._touched: dict[int, Any] = {}  # entry index -> the session it belongs to
        self._first = 0.0
        self._handle: Any = None

    # -- the Sink protocol ------------------------------------------------------------------

    def on_change(self, session: object, change: Change) -> None:
        """Note what changed; draw it above the input line once the burst is over. A change
        of the session rather than of an entry (title, commands, settings) only shows in the
        toolbar: it is redrawn."""
        index = getattr(change, "index", None)
        if not isinstance(index, int):
            self._redraw_toolbar()
            return
        self._touched[index] = session
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (cannot happen inside the REPL): draw now
            self.drain()
            return
        now = time.monotonic()
        if self._handle is None:
            self._first = now
        else:
            self._handle.cancel()
        wait = QUIET if now - self._first < MAX_HOLD else 0.0
        self._handle = loop.call_later(wait, self._draw)

    def begin_turn(self, store: Any = None) -> None:
        self.drain()
        self.view.begin_turn(store)

    def turn_ended(self, stop_reason: str | None) -> None:
        self.drain()
        self.view.turn_ended(stop_reason)

    def flush(self) -> None:
        self.drain()
        self.view.flush()

    def note(self, text: str, style: str | None = None) -> bool:
        """The input line owns the bottom of the screen: the caller prints the line itself."""
        return False

    def hold(self) -> bool:
        """(A question between turns: the view has nothing live to keep above it.)"""
        return False

    def __getattr__(self, name: str) -> Any:  # tick, show_thoughts, print_store: the view's
        return getattr(self.view, name)

    def line(self, draw: Any) -> None:
        """Have ``draw()`` print a line of its own after the changes noted so far and before
        those still to come (a note between two updates stays between them)."""
        touched, self._touched = self._touched, {}
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

        def both() -> None:
            self._print(touched)
            draw()

        from prompt_toolkit.application import run_in_terminal
        from prompt_toolkit.application.current import get_app_or_none

        app = get_app_or_none()
        if app is not None and app.is_running:
            run_in_terminal(both, in_executor=False)
        else:
            both()

    # -- drawing ----------------------------------------------------------------------------

    def drain(self) -> None:
        """Print what changed since the last drain (call it with the terminal to ourselves)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        touched, self._touched = self._touched, {}
        self._print(touched)

    def _print(self, touched: dict[int, Any]) -> None:
        entries = []
        for index in sorted(touched):
            store_entries = touched[index].store.entries
            if index < len(store_entries):
                entries.append(store_entries[index])
        if entries:
            self.view.print_store(_Entries(entries))
            self.view.flush()

    @staticmethod
    def _redraw_toolbar() -> None:
        from prompt_toolkit.application.current import get_app_or_none

        app = get_app_or_none()
        if app is not None and app.is_running:
            app.invalidate()

    def _draw(self) -> None:
        from prompt_toolkit.application import run_in_terminal
        from prompt_toolkit.application.current import get_app_or_none

        self._handle = None
        app = get_app_or_none()
        if app is None or not app.is_running:
            self.drain()
            return
        # in_executor=False: the view prints on this thread, between two redraws of the prompt
        run_in_terminal(self.drain, in_executor=False)
