"""A session that is active on this connection: its record, its translator, its running turn.

Invariants:

- Every update goes through :meth:`ActiveSession.emit`, which appends the canonical form to the
  history *before* sending the translated form, so what was sent is what a later
  ``session/load`` replays.
- The record is touched by two threads (the dispatcher sets the settings, a turn appends to the
  history and saves): :attr:`ActiveSession.lock` guards appends, settings changes and saves, so a
  save never writes a half-changed record and two saves never race on the file.
"""

from __future__ import annotations

import threading
from typing import Any

from acpcli.demo_agent.rpc import CancelToken, Peer
from acpcli.demo_agent.storage import SessionRecord, SessionStore, now_iso
from acpcli.demo_agent.translate import Translator


class ActiveSession:
    """An active session: the stored record, how to reach the client, and the running turn.

    ``token``/``thread`` are set while a turn runs (``busy``); the turn clears them itself.
    """

    def __init__(self, record: SessionRecord, peer: Peer, store: SessionStore, translator: Translator) -> None:
        self.record = record
        self.peer = peer
        self.store = store
        self.translator = translator
        self.token: CancelToken | None = None
        self.thread: threading.Thread | None = None
        self.lock = threading.RLock()

    @property
    def session_id(self) -> str:
        return self.record.sessionId

    @property
    def busy(self) -> bool:
        return self.token is not None

    def emit(self, update: dict[str, Any]) -> None:
        """Record ``update`` in the history, then send it."""
        with self.lock:
            self.record.history.append(update)
        self.send(update)

    def send(self, update: dict[str, Any]) -> None:
        """Send ``update`` (translated for the connection's version) without recording it."""
        for wire in self.translator.translate(update):
            self.peer.notify("session/update", {"sessionId": self.session_id, "update": wire})

    def save(self, *, touch: bool = True) -> None:
        """Write the record; ``touch`` bumps ``updatedAt`` (activity, as session/list sorts by)."""
        with self.lock:
            if touch:
                self.record.updatedAt = now_iso()
            self.store.save(self.record)

    def cancel(self) -> bool:
        """Cancel the running turn, if any. Returns whether there was one."""
        token = self.token
        if token is None:
            return False
        token.cancel()
        return True

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the running turn's thread to finish."""
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
