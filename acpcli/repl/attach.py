"""``acpcli attach ID``: a terminal joined to a live session's host.

The screen starts with the session line and the transcript the host had stored when this
terminal joined; then every turn, whoever sent it, is drawn as it streams (a turn sent from
elsewhere is headed "from another terminal"), with the input line hidden meanwhile and what
was typed kept. Enter sends a prompt: it joins the host's queue. Permission requests of this
terminal's prompts are asked here; those of other terminals' are shown with their outcome.
Ctrl-C cancels this terminal's running turn (or clears the line); Ctrl-D leaves, and the
session stays live.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING, Any

import anyio

from acpcli.errors import ExitCode, HostLost

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.host.channel import Channel


class _Turns:
    """What the reader learns about turns, for the loop that owns the screen."""

    def __init__(self) -> None:
        self.pending = False  # a turn (ours or another's) began that the screen has not drawn
        self.wake = anyio.Event()  # set when one begins: the input line gives way
        self.ended = anyio.Event()
        self.ours = False
        self.drawing = False  # the screen is drawing a turn now
        self.stop: str | None = None
        self.failure: str | None = None  # the message of a turn that failed
        self.lost: BaseException | None = None
        #: A turn's updates, held from its start until the screen draws it (nothing is lost
        #: if it ends, or the next one starts, before then).
        self.held: list[dict[str, Any]] | None = None

    def start(self, ours: bool) -> None:
        self.ours = ours
        self.ended = anyio.Event()
        if self.held is None:
            self.held = []
        self.pending = True
        self.wake.set()

    def end(self, stop: str | None = None, failure: str | None = None) -> None:
        self.stop, self.failure = stop, failure
        self.ended.set()

    def take(self) -> list[dict[str, Any]]:
        """The screen draws the pending turn from here: what was held so far."""
        self.pending = False
        self.drawing = True
        self.wake = anyio.Event()
        held, self.held = self.held or [], None
        return held


async def attach(env: Environment, channel: Channel, session_id: str, decider: Any) -> int:
    """The attached terminal's loop (see the module docstring); returns the exit code."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.key_binding import KeyBindings
    from rich.markup import escape

    from acpcli.client_side import note_on_screen
    from acpcli.host.client import apply_event
    from acpcli.render import make_view
    from acpcli.repl.above import AboveInput
    from acpcli.safe_text import safe_line
    from acpcli.session.live import LiveSession

    await channel.send({"t": "hello", "pid": os.getpid(), "role": "attach"})
    ready = await channel.receive()
    if ready.get("t") != "ready":
        raise HostLost("the session host did not answer")
    store = _stored(session_id, ready.get("stored"))
    view = make_view(env)
    live = LiveSession(session_id, store, sink=None)
    agent = safe_line(str(ready.get("agent") or "the agent"))
    env.err.print(f"[dim]attached to {escape(safe_line(session_id))} with {escape(agent)} (host pid {ready.get('pid')}) — Ctrl-D leaves, the session stays live[/]")
    view.print_store(store)
    view.flush()
    turns = _Turns()
    if ready.get("busy"):
        turns.start(ours=False)  # joined mid-turn: the rest of it is drawn as it comes

    keys = KeyBindings()

    @keys.add("c-c")
    def _clear(event: Any) -> None:
        event.current_buffer.reset()

    @keys.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    session: PromptSession[str] = PromptSession(key_bindings=keys, erase_when_done=True, multiline=False)

    async def read() -> None:
        from acpcli.host.channel import ChannelClosed

        while True:
            try:
                message = await channel.receive()
            except ChannelClosed:
                turns.lost = HostLost(
                    "the session host went away",
                    hint="what arrived before is stored (acpcli show); `acpcli prompt --session ID …` starts a new host",
                )
                turns.end()
                turns.wake.set()  # wake the loop wherever it waits
                return
            kind = message["t"]
            if kind == "u":
                if turns.held is not None:
                    turns.held.append(message)  # drawn once the turn has the screen
                else:
                    apply_event(live, str(message.get("k")), str(message.get("p")))
            elif kind == "start":
                turns.start(ours=True)
            elif kind == "other-turn":
                turns.start(ours=False)
            elif kind in ("end", "other-end", "error"):
                stop = message.get("stop")
                failure = message.get("message")
                turns.end(stop if isinstance(stop, str) else None, failure if isinstance(failure, str) else None)
                if turns.failure and not turns.pending and turns.held is None and not turns.drawing:
                    # a turn this screen never drew (an error before it began): say it now
                    _above(env, f"error: {safe_line(turns.failure)}")
            elif kind == "queued":
                ahead = message.get("ahead") or 0
                if ahead:
                    _above(env, f"queued behind {ahead} turn{'s' if ahead != 1 else ''}")
            elif kind == "note":
                if not note_on_screen(live.sink, safe_line(str(message.get("text"))), "dim"):  # mid-turn: the view
                    _above(env, safe_line(str(message.get("text"))))
            elif kind == "ask":
                params = message.get("params")
                result = await decider(live, params) if isinstance(params, dict) else None
                await channel.send({"t": "answer", "id": message.get("id"), "result": result})

    async def watch_turn() -> None:
        """Draw a running turn; Ctrl-C cancels it when it is this terminal's."""
        if not turns.ours:
            env.err.print("[dim]── a prompt from another terminal ──[/]")
        live.sink = view
        view.begin_turn(live.store)
        for message in turns.take():
            apply_event(live, str(message.get("k")), str(message.get("p")))
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async with anyio.create_task_group() as tg:

                async def interrupts() -> None:
                    async for _ in signals:
                        # drawn by the view, in order (a line beside its live region is wiped)
                        if turns.ours:
                            if not note_on_screen(view, "cancelling…", "yellow"):
                                env.err.print("[yellow]cancelling…[/]")
                            await channel.send({"t": "cancel"})
                        else:
                            line = "this turn is another terminal's: Ctrl-C there cancels it"
                            if not note_on_screen(view, line, "dim"):
                                env.err.print(f"[dim]{line}[/]")

                tg.start_soon(interrupts)
                tick = getattr(view, "tick", None)
                while not turns.ended.is_set():
                    with anyio.move_on_after(0.1):
                        await turns.ended.wait()
                    if tick is not None:
                        tick()
                tg.cancel_scope.cancel()
        turns.drawing = False
        view.turn_ended(turns.stop)
        if turns.failure:
            env.err.print(f"[red]the turn failed:[/] {escape(safe_line(turns.failure))}")

    keep = ""
    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        while True:
            if turns.lost is not None:
                raise turns.lost
            if turns.pending:
                await watch_turn()
                continue
            above = AboveInput(view)
            live.sink = above  # what arrives between turns is drawn above the input line
            text, keep, eof = await _prompt_unless_a_turn(session, turns, keep)
            if eof:
                tg.cancel_scope.cancel()
                break
            if live.sink is above:
                live.sink = view
            above.drain()
            if text is None:
                continue  # a turn began: draw it, then ask again with what was typed
            if text.strip():
                await channel.send({"t": "prompt", "text": text.strip(), "settings": []})
    env.err.print(f"[dim]detached — the session stays live; `acpcli stop {escape(safe_line(session_id))}` ends it[/]")
    return int(ExitCode.OK)


#: What the input line "returns" when a turn takes the screen (never typed: not a str's value).
_A_TURN: Any = object()


async def _prompt_unless_a_turn(session: Any, turns: _Turns, keep: str) -> tuple[str | None, str, bool]:
    """The input line until Enter (the text), Ctrl-D (``eof``), or a turn beginning (None:
    what was typed is returned as the new ``keep``, to come back afterwards)."""
    text: str | None = None
    eof = False
    async with anyio.create_task_group() as inner:

        async def ask() -> None:
            nonlocal text, eof
            try:
                answer = await session.prompt_async("› ", default=keep)
            except EOFError:
                eof = True
            else:
                text = None if answer is _A_TURN else answer
            inner.cancel_scope.cancel()

        async def interrupted_by_a_turn() -> None:
            nonlocal keep
            await turns.wake.wait()
            app = session.app
            for _ in range(200):  # the line may be still starting: exit it once it runs
                future = getattr(app, "future", None)
                if app.is_running and future is not None and not future.done():
                    keep = session.default_buffer.text
                    app.exit(result=_A_TURN)  # erased like an answered line (erase_when_done)
                    return
                await anyio.sleep(0.01)
            inner.cancel_scope.cancel()

        inner.start_soon(ask)
        inner.start_soon(interrupted_by_a_turn)
    return text, ("" if text is not None else keep), eof


def _above(env: Environment, text: str) -> None:
    """One dim line, above the input line if it is up."""
    from prompt_toolkit.application import run_in_terminal
    from prompt_toolkit.application.current import get_app_or_none
    from rich.markup import escape

    def say() -> None:
        env.err.print(f"[dim]{escape(text)}[/]")

    app = get_app_or_none()
    if app is not None and app.is_running:
        run_in_terminal(say, in_executor=False)
    else:
        say()


def _stored(session_id: str, upto: Any) -> Any:
    """The transcript the host had stored when this terminal joined."""
    from acpcli.persistence import Index
    from acpcli.session.records import rebuild
    from acpcli.store import Store

    if not isinstance(upto, int) or upto <= 0:
        return Store()
    with Index.open(read_only=True) as index:
        return rebuild(index, session_id, upto=upto)

