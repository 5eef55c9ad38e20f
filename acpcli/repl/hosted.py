"""The REPL over a live session's host: ``new``, ``load`` and ``resume`` with keep-alive on,
and ``acpcli attach ID``.

The loop is :func:`acpcli.repl.run_repl`, the same as for a session the REPL drives itself;
here its link is a :class:`~acpcli.session.hosted.HostedLink`, whose messages are read by a task
beside it. A turn another terminal sent is headed "(from another terminal)" and drawn as the
REPL draws its own (:meth:`~acpcli.repl.loop.Repl.watch_others`): the input line gives way
to the live region, its status line and the line typed ahead, and comes back when the turn
ends; one that begins while a prompt of this terminal's waits behind it is drawn in that
turn's place, in order. A host that goes away ends the REPL with one line (exit 20); one
stopped, or a session closed or deleted, from elsewhere ends it with one line too (exit 0);
Ctrl-D leaves and the session stays live for its keep-alive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
from rich.markup import escape

from acpcli.text.safe import safe_line

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.model import Store
    from acpcli.session.agent import AgentChoice
    from acpcli.session.context import Invocation
    from acpcli.session.hosted import HostedLink


def watch_host(env: Environment, link: HostedLink) -> None:
    """What the REPL shows of what only a host says: another terminal's turns, a host gone."""

    def other_turn(text: str | None) -> None:
        other = link.other
        if text is None or other is None:
            return
        if other.held is None:  # a prompt of ours waits behind it: drawn in that turn's place
            from acpcli.repl.banner import OTHER_TURN

            _above(env, OTHER_TURN, link.live.sink)
            return
        from prompt_toolkit.application.current import get_app_or_none

        app = get_app_or_none()
        if app is not None and app.is_running and app.future is not None and not app.future.done():
            from acpcli.repl.banner import OtherTurnBegan

            app.exit(exception=OtherTurnBegan())  # the loop draws it (Repl.watch_others)

    ending: list[Any] = []  # the task that ends the input line (kept: a task nobody holds may go)

    def lost(err: BaseException) -> None:  # (or closed: an EOFError)
        """The input line gives way to ``err``: now if it is up, else as soon as it is (a
        turn of this terminal's is ending first)."""
        import asyncio

        from prompt_toolkit.application.current import get_app_or_none

        def end_it() -> bool:
            app = get_app_or_none()
            if not link.in_turn and app is not None and app.is_running and app.future is not None and not app.future.done():
                app.exit(exception=err)
                return True
            return False

        async def when_it_is_up() -> None:
            while not end_it():  # noqa: ASYNC110 - prompt-toolkit says nothing when its line comes up
                await asyncio.sleep(0.05)

        if not end_it() and not ending:
            ending.append(asyncio.get_running_loop().create_task(when_it_is_up()))

    def closed() -> None:
        lost(EOFError())  # the input line ends as with Ctrl-D: nothing is left to send to

    link.on_other_turn = other_turn
    link.on_lost = lost
    link.on_closed = closed


def _above(env: Environment, markup: str, sink: Any = None) -> None:
    """One line above the input line if it is up, else where the output is; in order with
    what ``sink`` draws there (:meth:`~acpcli.repl.above.AboveInput.line`)."""
    from prompt_toolkit.application import run_in_terminal
    from prompt_toolkit.application.current import get_app_or_none

    def say() -> None:
        env.err.print(markup)

    from rich.text import Text

    from acpcli.services.permissions import note_on_screen

    if note_on_screen(sink, Text.from_markup(markup)):  # mid-turn: the view draws it, in order
        return
    line = getattr(sink, "line", None)
    if line is not None:
        line(say)
        return

    app = get_app_or_none()
    if app is not None and app.is_running:
        run_in_terminal(say, in_executor=False)
    else:
        say()


def run_hosted(
    env: Environment,
    run: Invocation,
    session_id: str,
    agent: AgentChoice | None,
    *,
    transcript: bool,
    joined: str | None = None,
    not_live: BaseException | None = None,
    resumed: bool = False,
) -> int:
    """The REPL on ``session_id``, whose host runs: the session line, the transcript the
    host had stored (``transcript``), then the conversation. ``joined``: the line to start
    with instead of the session line (attach: which agent and host; ``{agent}`` and ``{pid}``
    filled in); ``not_live``: what to raise when no host runs the session; ``resumed``: the
    transcript is the one acpcli stored (a ``resume``: the agent replays nothing), marked so
    as without a host."""
    from acpcli.host.client import grant_of
    from acpcli.session.hosted import HostedLink
    from acpcli.session.hostwire import address
    from acpcli.session.hostwire.channel import LOST_HINT, connect, join
    from acpcli.session.policy import decider_for

    decider = decider_for(run, agent)

    async def main() -> int:
        from acpcli.errors import HostLost
        from acpcli.history.guarded import open_index
        from acpcli.render.export import exporter
        from acpcli.repl import run_repl
        from acpcli.repl.banner import print_banner

        try:
            channel = await connect(str(address.socket_path(session_id)))
        except OSError:
            raise not_live or HostLost("the session host went away", hint=LOST_HINT) from None
        ready = await join(channel, session_id)
        store = _stored(session_id, ready.stored) if transcript else _empty()
        from acpcli.repl.person import AtTerminal

        link = HostedLink(
            channel, ready, store, decide=decider, elicit=AtTerminal(env).elicit,
            say=lambda line: _above(env, f"[dim]{escape(safe_line(line))}[/]", link.live.sink),
            grant=grant_of(decider, run),  # this terminal's policy, for each turn it sends
            redraw=_redraw,
        )
        link.services = _Policy(decider.policy)
        watch_host(env, link)
        if joined is not None:
            # wrapped at words (stderr's console leaves lines to the terminal, which cuts anywhere)
            env.err.print(joined.format(agent=escape(safe_line(ready.agent)), pid=ready.host_pid), soft_wrap=False)
        else:
            print_banner(env, session_id, link.features.display_name)
        from acpcli.render import make_view

        view = make_view(env)
        if transcript:
            marked = resumed and bool(store.entries)
            if marked:
                env.err.print("[dim]── stored locally by acpcli, not replayed by the agent ──[/]")
            shown: Any = store
            if link.other is not None:  # joined mid-turn: that turn is drawn as it goes on, whole
                link.other.first_entry = _running_turn(store)
                shown = _Before(store, link.other.first_entry)
            view.print_store(shown)
            view.flush()
            if marked:
                env.err.print("[dim]── resumed ──[/]")
        link.live.sink = view
        index = open_index()  # read (the session's records); the host writes
        code = 0
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(link.serve)
                try:
                    conversation = link.conversation(index, ready.agent, exporter(session_id))
                    person = run.person
                    first = getattr(person, "first_prompt", None)
                    if first:
                        person.first_prompt = None  # type: ignore[union-attr]
                    code = await run_repl(env, conversation, banner=False, first=first)
                finally:
                    await link.leave()
                    tg.cancel_scope.cancel()
        finally:
            index.close()
        return code

    return anyio.run(main)


def _running_turn(store: Store) -> int:
    """Where the turn still running begins in ``store`` (its prompt, after the last turn's
    end); the end of the store when it cannot be told."""
    from acpcli.model import USER, Message, TurnEnd

    entries = store.entries
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if isinstance(entry, TurnEnd):
            break
        if isinstance(entry, Message) and entry.kind == USER:
            return index
    return len(entries)


class _Before:
    """The part of ``store`` before entry ``end`` (what ``print_store`` reads)."""

    def __init__(self, store: Store, end: int) -> None:
        self.entries = store.entries[:end]
        self.usage = store.usage


class _Policy:
    """What the toolbar reads of a link's services: the run's permission policy."""

    def __init__(self, policy: str | None) -> None:
        self.policy = policy


def _empty() -> Store:
    from acpcli.model import Store

    return Store()


def _stored(session_id: str, upto: Any) -> Store:
    """The transcript the host had stored when this terminal joined."""
    from acpcli.history.index import Index
    from acpcli.history.records import rebuild

    if not isinstance(upto, int) or upto == 0:
        return _empty()
    with Index.open(read_only=True) as index:
        return rebuild(index, session_id, upto=upto if upto > 0 else None)


def _redraw() -> None:
    """The toolbar reads the hosted link's mirror: draw it again."""
    from prompt_toolkit.application.current import get_app_or_none

    app = get_app_or_none()
    if app is not None and app.is_running:
        app.invalidate()
