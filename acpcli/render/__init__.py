"""Views: how a session's changes reach stdout, picked once from the environment.

:func:`make_view` returns one of

* :class:`~acpcli.render.tty.TtyView` -- stdout is a terminal: rich Markdown, a live region;
* :class:`~acpcli.render.plain.PlainView` -- stdout is a file or pipe: plain text, flushed
  per chunk;
* :class:`~acpcli.render.jsonl.JsonlView` -- ``--format jsonl``: one JSON event per line;
* :class:`FinalView` -- ``--format markdown``: the Markdown transcript at the end.

The CLI picks :class:`SilentView` itself for ``--raw``, where stdout carries the JSON-RPC frames.

With ``final_only`` every view shows nothing while changes arrive and prints the finished
transcript of the session's store on ``close()`` -- what ``load`` wants when a replay
interleaves messages (streamed, they would show as alternating fragments).

Every view has the same methods (:class:`View`): ``on_change(session, change)`` (the
session's ``Sink``), ``turn_ended(stop_reason)``, ``flush()`` (commit the live part before
something else draws on the terminal), ``print_store(store)`` (a finished transcript, for
``show``) and ``close()`` (always call it, also on errors and Ctrl-C: it finishes the
output and releases the terminal). Views write to stdout only; diagnostics go to stderr
elsewhere. A ``BrokenPipeError`` from the stream is left to the CLI.

This module is on the CLI's import path: it imports no rich, no view module, at import time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.model import Change, Store

FORMATS = ("text", "markdown", "jsonl")


class View(Protocol):
    """What the CLI drives; every view implements it."""

    def on_change(self, session: object, change: Change) -> None: ...

    def begin_turn(self, store: Store | None = None) -> None: ...

    def turn_ended(self, stop_reason: str | None) -> None: ...

    def flush(self) -> None: ...

    def print_store(self, store: Store) -> None: ...

    def close(self) -> None: ...


def make_view(
    env: Environment,
    *,
    format: str = "text",
    quiet: bool = False,
    show_thoughts: bool = False,
    final_only: bool = False,
) -> View:
    """The view for ``env``'s stdout and the chosen ``format``.

    ``text``: a terminal gets :class:`TtyView`, anything else :class:`PlainView`.
    ``quiet``: agent text only (``text`` format). ``show_thoughts``: thoughts in full on a
    terminal instead of a one-line summary. ``final_only``: the finished transcript at
    ``close()`` instead of streaming (``load``). Raises ``UsageError`` for an unknown format.
    """
    if format == "jsonl":
        from acpcli.render.jsonl import JsonlView

        return JsonlView(env.stdout, final_only=final_only)
    if format == "markdown":
        return FinalView(env.stdout, markdown=True)
    if format != "text":
        from acpcli.errors import UsageError

        raise UsageError(f"unknown output format {format!r}", hint=f"use one of: {', '.join(FORMATS)}")
    if env.stdout_is_terminal:
        from acpcli.render.tty import TtyView

        # stderr on the terminal too: its lines during a turn are drawn by the view, in order
        notes = env.err.is_terminal
        return TtyView(env.out, show_thoughts=show_thoughts, quiet=quiet, final_only=final_only, notes=notes)
    from acpcli.render.plain import PlainView

    return PlainView(env.stdout, quiet=quiet, stream=not final_only)


class FinalView:
    """Shows nothing while the session runs; writes the finished transcript on close.

    Markdown (:func:`~acpcli.render.transcript.to_markdown`) or plain text
    (:func:`~acpcli.render.transcript.to_text`) of the store the changes came from.
    """

    def __init__(self, out: Any, *, markdown: bool = True, store: Store | None = None, title: str | None = None) -> None:
        self._out = out
        self._markdown = markdown
        self._store = store
        self._title = title
        self._closed = False

    def on_change(self, session: object, change: Change) -> None:
        """Remember the session's store; print nothing yet."""
        if self._store is None:
            self._store = getattr(session, "store", None)

    def begin_turn(self, store: Store | None = None) -> None:
        """Nothing to show while a turn runs (only the terminal view has a status line)."""

    def turn_ended(self, stop_reason: str | None) -> None:
        """Nothing to do: the transcript is written at close."""

    def flush(self) -> None:
        """Nothing is live."""

    def print_store(self, store: Store) -> None:
        """Write the transcript of ``store`` now."""
        from acpcli.render import transcript

        text = transcript.to_markdown(store, title=self._title) if self._markdown else transcript.to_text(store)
        self._out.write(text)
        self._out.flush()

    def close(self) -> None:
        """Write the transcript of the session's store (once)."""
        if self._closed:
            return
        self._closed = True
        if self._store is not None:
            self.print_store(self._store)


class SilentView:
    """The view for ``--raw``: writes nothing, because stdout carries the JSON-RPC frames.

    It keeps what it was given (each change, each turn's stop reason, whether it was closed) so
    a caller can see what went past; a change is a small record pointing into the store.
    """

    def __init__(self) -> None:
        self.changes: list[Any] = []
        self.stop_reasons: list[str | None] = []
        self.closed = False

    def on_change(self, session: object, change: Change) -> None:
        self.changes.append(change)

    def begin_turn(self, store: Store | None = None) -> None:
        """Nothing to show while a turn runs (only the terminal view has a status line)."""

    def turn_ended(self, stop_reason: str | None) -> None:
        self.stop_reasons.append(stop_reason)

    def flush(self) -> None:
        pass

    def print_store(self, store: Store) -> None:
        pass

    def close(self) -> None:
        self.closed = True
