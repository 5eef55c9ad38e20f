"""The interactive prompt (prompt-toolkit) around one live session.

Keys: Enter sends; Alt-Enter (or Esc then Enter) inserts a newline; Ctrl-C clears the line;
Ctrl-D leaves (the session stays resumable and the exact ``acpcli resume ID`` is printed).
During a turn, Ctrl-C sends ``session/cancel``; a second Ctrl-C within 3 seconds kills the
agent and leaves with exit code 130. The input line stays usable during a turn
(:mod:`acpcli.repl.typeahead`): Enter queues (:mod:`acpcli.repl.queue`), Alt-Enter sends now
where the agent takes it (:mod:`acpcli.repl.sendnow`).

Slash commands are data (:data:`acpcli.repl.commands.COMMANDS`), echoed into the scrollback
when run; the agent's own commands (from ``available_commands_update``) are sent to it as
prompts, ``//word`` sends ``/word`` to it, and an unknown ``/word`` is not sent. TAB completion is the pure
:func:`acpcli.repl.completion.complete`; the toolbar is :func:`acpcli.repl.toolbar.status_line`.
``@path`` in a prompt mentions a file (:mod:`acpcli.services.mentions`). A prompt the agent refuses,
or one whose mention cannot be sent, comes back on the input line: nothing typed is lost.

This module is the loop (:func:`run_repl`); its pieces live beside it: the key bindings
(:mod:`acpcli.repl.keys`), the completer (:mod:`acpcli.repl.completion`), the toolbar
(:mod:`acpcli.repl.toolbar`), the input history (:mod:`acpcli.repl.input_history`), the
questions put to the person (:mod:`acpcli.repl.asking`) and the first and last lines
(:mod:`acpcli.repl.banner`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from acpcli.errors import ExitCode
from acpcli.repl.asking import AGENT_NAMES, offer_login
from acpcli.repl.banner import come_back, print_banner
from acpcli.text.safe import safe_line

if TYPE_CHECKING:
    from acpcli.api.frontends import Conversation, LiveSession
    from acpcli.env import Environment
    from acpcli.history.index import Index, SessionRecord

__all__ = ["run_repl"]


def _record(index: Index, session_id: str) -> SessionRecord | None:
    """The session's index record, for its titles (None when it cannot be read: a busy or
    failing disk must not stop the conversation)."""
    import sqlite3

    from acpcli.errors import AcpcliError

    try:
        return index.get(session_id)
    except (AcpcliError, sqlite3.Error, OSError):
        return None


def _release_terminal(live: LiveSession) -> None:
    """Commit the view's live region (if it has one) before drawing on the terminal."""
    flush = getattr(live.sink, "flush", None)
    if flush is not None:
        flush()


def _turn_input(view: Any, queue: Any, now: Any, live: LiveSession, text: str) -> Any:
    """The input line of the coming turn (:mod:`acpcli.repl.typeahead`), for a view that
    can draw it; ``None`` otherwise (keys typed then wait in the terminal, as before)."""
    if view is None or not hasattr(view, "footer") or not hasattr(view, "redraw"):
        return None
    import os
    import signal

    from acpcli.repl.typeahead import TurnInput

    def cancel() -> str | None:
        if live.cancel_requested:
            return "cancelling already (Ctrl-C again kills the agent)"
        os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C: one way to cancel, one message
        return None

    return TurnInput(
        queue, send_now=now, cancel=cancel, changed=view.redraw, width=lambda: view.console.width, text=text,
        can_send_now=now.way is not None,
    )


@contextlib.contextmanager
def _typing_during(view: Any, typing: Any) -> Iterator[None]:
    """Let ``typing`` read the keys and the view draw it while the turn runs; the view
    draws nothing of it once the turn is over."""
    if typing is None:
        yield
        return
    from acpcli.repl.typeahead import reading

    view.footer = typing.footer
    try:
        with reading(typing):
            yield
    finally:
        view.footer = None


def _echo(env: Environment, line: str) -> None:
    """A slash command stays in the scrollback as typed (the input line is erased), so the
    output below it has a cause."""
    from rich.text import Text

    env.err.print(Text("› " + safe_line(line), style="bold"), highlight=False)


def _hint_unresolved(env: Environment, missing: Sequence[Any]) -> None:
    """One dim line naming the ``@words`` sent as text because they name no file."""
    if not missing:
        return
    names = list(dict.fromkeys(m.raw for m in missing))
    shown_names = ", ".join(safe_line(n) for n in names[:3]) + (f" (+{len(names) - 3})" if len(names) > 3 else "")
    verb = "names" if len(names) == 1 else "name"
    env.err.print(
        f"[dim]{escape(shown_names)} {verb} no file: sent as text[/]", highlight=False, soft_wrap=False, overflow="ellipsis",
        no_wrap=True,
    )


async def run_repl(env: Environment, conversation: Conversation, *, banner: bool = True) -> int:
    """The read-prompt-render loop. Returns the exit code.

    ``banner``: start with the session line (an interactive load/resume has printed it
    already, before its replay). While the input line waits, the session's changes are
    drawn above it as they arrive (:class:`acpcli.repl.above.AboveInput`).

    ``conversation`` (:class:`~acpcli.session.conversation.Conversation`) holds the session's
    own :class:`~acpcli.session.link.AgentLink`, or a :class:`~acpcli.host.remote.HostedLink`
    (``conversation.hosted``) when the session lives in a host: then each turn goes through the
    host's queue (:meth:`~acpcli.host.remote.HostedLink.turn`), the host does the bookkeeping,
    and other terminals' turns are drawn as they come."""
    from itertools import islice

    from prompt_toolkit import PromptSession
    from rich.text import Text

    from acpcli import notices
    from acpcli.api.frontends import NO_ANSWER, Withdrawn, said_anything
    from acpcli.errors import (
        AuthRequired,
        HostLost,
        Interrupted,
        RpcError,
        SessionBusy,
        UsageError,
        leaf_error,
    )
    from acpcli.repl import commands
    from acpcli.repl.above import AboveInput
    from acpcli.repl.asking import TOOLBARS
    from acpcli.repl.completion import Inputs, ReplCompleter
    from acpcli.repl.input_history import history
    from acpcli.repl.keys import key_bindings
    from acpcli.repl.queue import queue_lines
    from acpcli.repl.sendnow import SendNow
    from acpcli.repl.toolbar import bottom_toolbar
    from acpcli.services import mentions
    from acpcli.services.permissions import note_on_screen

    ctx = commands.Context(env, conversation)
    link, live = conversation.link, conversation.live
    local = [(c.name, c.help) for c in commands.COMMANDS]

    def roots() -> list[str]:
        return [live.cwd or ".", *live.additional_directories]

    def inputs() -> Inputs:  # what TAB may offer besides the local commands, as it is now
        return Inputs(
            agent_commands=live.store.available_commands or [],
            choices=ctx.choices(),
            login_methods=ctx.login_methods(),
            mention=lambda word: mentions.complete_mention(word, live.cwd or ".", roots()),
        )

    services = getattr(link, "services", None)
    policy = getattr(services, "policy", None)  # the run's --permissions, resolved
    hosted = conversation.hosted
    refusals = getattr(services, "refusals", None)
    if refusals is not None:  # refusals and policy answers go into the view's scrollback, in order
        refusals.screen = lambda line: note_on_screen(live.sink, line)

    def notice(line: str) -> None:
        """A line during a turn ("cancelling…"): drawn by the view, else on stderr."""
        if not note_on_screen(live.sink, line, "yellow"):
            env.err.print(line, style="yellow", markup=False)

    record = [_record(conversation.index, live.session_id)]  # its titles, read again after each turn
    toolbar = bottom_toolbar(conversation.agent, live, ctx.choices, lambda: record[0], policy)

    session: PromptSession[str] = PromptSession(
        history=history(live.cwd),
        completer=ReplCompleter(local, inputs),
        complete_while_typing=False,
        key_bindings=key_bindings(),
        bottom_toolbar=toolbar,
        multiline=False,
        # the lines after the first (Alt-Enter) start under the first one's text, not under "›"
        prompt_continuation=lambda width, line_number, is_soft_wrap: " " * width,
        # The sent prompt is rendered from the session itself (the v2 echo, or the local
        # record of a v1 prompt), so the input line is erased rather than shown twice.
        erase_when_done=True,
    )
    TOOLBARS[live.session_id] = toolbar  # the permission picker shows it too
    AGENT_NAMES[live.session_id] = link.features.display_name
    if banner:
        print_banner(env, live.session_id, link.features.display_name)
    code = int(ExitCode.OK)
    keep = ""  # a line that could not be sent comes back for editing: nothing typed is lost
    typed = ""  # typed during the last turn and not queued: the next input line starts with it
    queue = ctx.queue

    def build(line: str) -> list[dict[str, Any]]:
        # Not strict: `@dataclass` in pasted code names no file and is sent as text.
        return mentions.build_prompt(line, live.cwd or ".", roots(), link.features, strict=False)

    now = SendNow(conversation, queue, build)

    def message() -> str:
        return queue_lines(queue, env.err.width) + "› "

    while True:
        sent = now.take_pending()  # a prompt sent during the last turn: its turn goes on
        text = "" if sent is not None or keep else (queue.next() or "")
        if text:
            session.history.append_string(text)  # Up at the idle line recalls it too
        if sent is None and not text:
            _release_terminal(live)
            view_now, above = live.sink, None
            if view_now is not None:
                above = AboveInput(view_now)
                live.sink = above  # updates while the line waits are drawn above it
            try:
                text = await session.prompt_async(message, default=keep or typed)
            except EOFError:
                break
            finally:
                if above is not None:
                    if live.sink is above:  # (a command may have replaced the view meanwhile)
                        live.sink = view_now
                    above.drain()
            keep = typed = ""
            if not text.strip() and queue.held:
                queue.release()  # Enter on an empty line: send what the cancel held
                continue
        text = text.strip()
        if not text and sent is None:
            continue
        kind, said = ("agent", text) if sent is not None else commands.classify(text, commands.agent_command_names(ctx))
        if kind == "unknown":
            _echo(env, text)
            ctx.say(said, style="yellow")  # wrapped at words, as every line of ours
            keep = text  # back on the line for fixing: a typo is not sent, nor lost
            continue
        text = said  # `//word` is sent as `/word`
        local_command = commands.lookup(text) if kind == "local" else None
        if local_command is not None and local_command[0].name == "now" and local_command[1].strip():
            text, local_command = local_command[1].strip(), None  # at idle, `/now TEXT` is TEXT
        if local_command is not None:
            _echo(env, text)
            leave = await commands.run(ctx, *local_command)
            if leave is None:
                continue
            if local_command[0].name == "close":
                return leave  # closed: there is nothing to come back to
            code = leave
            break
        try:
            blocks = build(text) if sent is None else []
        except UsageError as err:
            env.err.print(Text.assemble(("not sent: ", "red"), err.message))
            keep = text
            continue
        _hint_unresolved(env, mentions.unresolved(text, live.cwd or "."))
        view = live.sink
        typing = _turn_input(view, queue, now, live, typed)
        if typing is not None:
            typed = ""  # on the turn's input line now
        if view is not None:
            view.begin_turn(live.store)
        shown_before = notices.set_sink(None)

        def warning(line: str, previous: Callable[[str], None] | None = shown_before) -> None:
            if not note_on_screen(live.sink, f"acpcli: warning: {line}", "yellow") and previous is not None:
                previous(line)

        notices.set_sink(warning)  # the agent's warnings during the turn go into the scrollback too
        try:
            with _typing_during(view, typing):
                stop = await conversation.turn(text, blocks, notice=notice, tick=getattr(view, "tick", None), sent=sent)
        except BaseException as caught:  # run_turn's task group wraps what it raises
            failure = leaf_error(caught)
            conversation.title_from_prompt()  # a failed first prompt still titles the session
            record[0] = _record(conversation.index, live.session_id)
            if view is not None and live.sink is view:
                view.turn_ended(None)  # the turn is over, whatever ended it: no status line
            if isinstance(failure, (SessionBusy, Withdrawn)):
                # Another acpcli's turn on this session (--no-wait, or Ctrl-C while waiting for
                # it): nothing was sent; the line comes back for sending again.
                env.err.print(Text.assemble(("not sent: ", "red"), failure.message))
                keep = text
                continue
            if isinstance(failure, (KeyboardInterrupt, Interrupted)):
                return int(ExitCode.INTERRUPTED)
            if not isinstance(failure, RpcError):
                # The agent died mid-turn (or worse): the error is reported by the CLI; say
                # how to come back, since the session may well survive on the agent's side.
                if isinstance(failure, HostLost):
                    raise failure from None  # one line, as `prompt` says it
                env.err.print(f"[dim]to come back later:[/] {escape(come_back(link.features, live.session_id))}")
                raise
            # The agent refused this prompt but is still there: say so, keep the line, stay.
            keep = text
            if isinstance(failure, AuthRequired):
                if await offer_login(env, link, failure):
                    env.err.print("[dim]press Enter to send the prompt again[/]")
            else:
                env.err.print(Text.assemble(("the agent answered an error: ", "red"), failure.message))
            continue
        finally:
            notices.set_sink(shown_before)
            conversation.flush()
            if typing is not None:
                typed = typing.text  # carried to the next line, whatever ended the turn
                if keep and typed:  # both a line to fix and one typed ahead: neither is lost
                    queue.items.insert(0, typed)
                    typed = ""
            if live.interrupted or live.cancel_requested:
                queue.hold()  # cancelled: what is queued waits for the person
        if view is not None and live.sink is view:
            view.turn_ended(stop or "end_turn")
        if (stop or "end_turn") == "end_turn" and not said_anything(islice(live.store.entries, live.turn_first_entry, None)):
            env.err.print(NO_ANSWER, style="dim", markup=False)
        conversation.after_turn()  # (the host does a hosted turn's bookkeeping)
        record[0] = _record(conversation.index, live.session_id)
        for said in live.take_warnings():  # the context nearly full: one line, once
            env.err.print(f"warning: {said}", style="yellow", markup=False, highlight=False)
    if queue:
        env.err.print(f"[yellow]{len(queue)} queued prompt{'s' if len(queue) != 1 else ''} not sent[/]")
    if hosted:
        env.err.print(f"[dim]{escape(link.goodbye())}[/]")  # type: ignore[attr-defined]
        return code
    env.err.print(f"[dim]bye — come back with:[/] {escape(come_back(link.features, live.session_id))}")
    return code
