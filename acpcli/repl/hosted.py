"""The REPL over a live session's host: ``new``, ``load`` and ``resume`` with keep-alive on,
and ``acpcli attach ID``.

The loop is :func:`acpcli.repl.run_repl`, the same as for a session the REPL drives itself;
here its link is a :class:`~acpcli.host.remote.HostedLink`, whose messages are read by a task
beside it. A turn another terminal sent is headed "(from another terminal)" and drawn as it
streams (above the input line when it is up); a host that goes away ends the REPL with one
line (exit 20); Ctrl-D leaves and the session stays live for its keep-alive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
from rich.markup import escape

from acpcli.text.safe import safe_line

if TYPE_CHECKING:
    from acpcli.api.frontends import AgentChoice, Invocation
    from acpcli.env import Environment
    from acpcli.history.store import Store
    from acpcli.host.remote import HostedLink


def watch_host(env: Environment, link: HostedLink) -> None:
    """What the REPL shows of what only a host says: another terminal's turns, a host gone."""

    def other_turn(text: str | None) -> None:
        if text is None:
            return
        _above(env, "[dim]── (from another terminal) ──[/]", link.live.sink)

    def lost(err: BaseException) -> None:  # (or closed: an EOFError)
        from prompt_toolkit.application.current import get_app_or_none

        app = get_app_or_none()
        if app is not None and app.is_running and app.future is not None and not app.future.done():
            app.exit(exception=err)  # the input line gives way to the error

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
) -> int:
    """The REPL on ``session_id``, whose host runs: the session line, the transcript the
    host had stored (``transcript``), then the conversation. ``joined``: the line to start
    with instead of the session line (attach: which agent and host; ``{agent}`` and ``{pid}``
    filled in); ``not_live``: what to raise when no host runs the session."""
    from acpcli.api.frontends import decider_for
    from acpcli.host import address
    from acpcli.host.channel import connect
    from acpcli.host.remote import LOST_HINT, HostedLink, join

    decider = decider_for(run, agent)

    async def main() -> int:
        from acpcli.api.frontends import Conversation, exporter
        from acpcli.errors import HostLost
        from acpcli.history.guarded import open_index
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
        )
        link.services = _Policy(decider.policy)
        watch_host(env, link)
        if joined is not None:
            env.err.print(joined.format(agent=escape(safe_line(ready.agent)), pid=ready.host_pid))
        else:
            print_banner(env, session_id, link.features.display_name)
        from acpcli.render import make_view

        view = make_view(env)
        if transcript:
            view.print_store(store)
            view.flush()
        link.live.sink = view
        if ready.busy:  # joined mid-turn: the rest of it comes as it streams
            env.err.print("[dim]── (from another terminal) ──[/]")
        index = open_index()
        writer = index.writer()
        code = 0
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(link.serve)
                try:
                    conversation = Conversation(link, link.live, index, writer, ready.agent, exporter(session_id))
                    code = await run_repl(env, conversation, banner=False)
                finally:
                    await link.leave()
                    tg.cancel_scope.cancel()
        finally:
            writer.close()
            index.close()
        return code

    return anyio.run(main)


class _Policy:
    """What the toolbar reads of a link's services: the run's permission policy."""

    def __init__(self, policy: str | None) -> None:
        self.policy = policy


def _empty() -> Store:
    from acpcli.history.store import Store

    return Store()


def _stored(session_id: str, upto: Any) -> Store:
    """The transcript the host had stored when this terminal joined."""
    from acpcli.history.index import Index
    from acpcli.history.records import rebuild

    if not isinstance(upto, int) or upto == 0:
        return _empty()
    with Index.open(read_only=True) as index:
        return rebuild(index, session_id, upto=upto if upto > 0 else None)
