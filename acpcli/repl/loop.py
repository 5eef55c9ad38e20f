"""The REPL's loop (:class:`Repl`), which :func:`acpcli.repl.run_repl` builds and runs.

Its state is the loop's own: the line that comes back for fixing (``keep``), what was typed
during the last turn (``typed``), the session's index record (``record``), the exit code, the
prompt queue and "send now". One method a step: :meth:`Repl.next_line` (the queue, a prompt
sent during the last turn, or the idle input line with :class:`~acpcli.repl.above.AboveInput`
above it), :meth:`Repl.command` (a local slash command), :meth:`Repl.turn` (one prompt turn,
its failure and the bookkeeping after it) and :meth:`Repl.goodbye` (the last lines).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

from prompt_toolkit import PromptSession
from rich.markup import escape
from rich.text import Text

from acpcli import notices
from acpcli.errors import (
    AuthRequired,
    ExitCode,
    HostLost,
    Interrupted,
    RpcError,
    SessionBusy,
    UsageError,
    leaf_error,
)
from acpcli.repl import commands
from acpcli.repl.above import AboveInput
from acpcli.repl.asking import AGENT_NAMES, TOOLBARS, offer_login
from acpcli.repl.banner import OTHER_TURN, OtherTurnBegan, come_back, print_banner
from acpcli.repl.completion import Inputs, ReplCompleter
from acpcli.repl.input_history import history
from acpcli.repl.keys import key_bindings
from acpcli.repl.queue import queue_lines
from acpcli.repl.sendnow import SendNow
from acpcli.repl.toolbar import bottom_toolbar
from acpcli.services import mentions
from acpcli.services.permissions import note_on_screen
from acpcli.session.outcome import NO_ANSWER, said_anything
from acpcli.session.turn import Withdrawn
from acpcli.text.safe import safe_line

if TYPE_CHECKING:
    import asyncio

    from acpcli.env import Environment
    from acpcli.history.index import Index, SessionRecord
    from acpcli.session.conversation import Conversation
    from acpcli.session.feed import SessionFeed

__all__ = ["Repl"]


def _record(index: Index, session_id: str) -> SessionRecord | None:
    """The session's index record, for its titles (None when it cannot be read: a busy or
    failing disk must not stop the conversation)."""
    import sqlite3

    from acpcli.errors import AcpcliError

    try:
        return index.get(session_id)
    except (AcpcliError, sqlite3.Error, OSError):
        return None


def _release_terminal(live: SessionFeed) -> None:
    """Commit the view's live region (if it has one) before drawing on the terminal."""
    flush = getattr(live.sink, "flush", None)
    if flush is not None:
        flush()


def _turn_input(view: Any, queue: Any, now: Any, live: SessionFeed, text: str) -> Any:
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


class Repl:
    """The read-prompt-render loop over one conversation (see :func:`acpcli.repl.run_repl`):
    built with its input line, completer and toolbar, then :meth:`run` once."""

    def __init__(self, env: Environment, conversation: Conversation, *, banner: bool = True) -> None:
        self.env, self.conversation, self.banner = env, conversation, banner
        self.ctx = ctx = commands.Context(env, conversation)
        self.link, self.live = link, live = conversation.link, conversation.live
        local = [(c.name, c.help) for c in commands.COMMANDS]

        services = getattr(link, "services", None)
        policy = getattr(services, "policy", None)  # the run's --permissions, resolved
        refusals = getattr(services, "refusals", None)
        if refusals is not None:  # refusals and policy answers go into the view's scrollback, in order
            refusals.screen = lambda line: note_on_screen(live.sink, line)

        self.record = _record(conversation.index, live.session_id)  # its titles, read again after each turn
        # The agent as `sessions` and the banner name it: the configured name, or for a --cmd
        # agent (recorded under its agentInfo.name) its own title (``Gemini CLI``, not ``gemini-cli``)
        features = link.features
        shown = features.agent_title if features.agent_title and conversation.agent == features.agent_name else None
        toolbar = bottom_toolbar(shown or conversation.agent, live, ctx.choices, lambda: self.record, policy)

        #: The input line.
        self.prompt_session: PromptSession[str] = PromptSession(
            history=history(live.cwd),
            completer=ReplCompleter(local, self.inputs),
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
        self.code = int(ExitCode.OK)
        self.keep = ""  # a line that could not be sent comes back for editing: nothing typed is lost
        self.typed = ""  # typed during the last turn and not queued: the next input line starts with it
        self.queue = ctx.queue
        self.now = SendNow(conversation, self.queue, self.build)

    def roots(self) -> list[str]:
        return [self.live.cwd or ".", *self.live.additional_directories]

    def inputs(self) -> Inputs:  # what TAB may offer besides the local commands, as it is now
        return Inputs(
            agent_commands=self.live.store.available_commands or [],
            choices=self.ctx.choices(),
            login_methods=self.ctx.login_methods(),
            mention=lambda word: mentions.complete_mention(word, self.live.cwd or ".", self.roots()),
        )

    def notice(self, line: str) -> None:
        """A line during a turn ("cancelling…"): drawn by the view, else on stderr."""
        if not note_on_screen(self.live.sink, line, "yellow"):
            self.env.err.print(line, style="yellow", markup=False)

    def build(self, line: str) -> list[dict[str, Any]]:
        return self.conversation.blocks(line)  # its mentions resolved where the agent runs

    def message(self) -> str:
        return queue_lines(self.queue, self.env.err.width) + "› "

    async def run(self) -> int:
        """The loop. Returns the exit code."""
        env = self.env
        if self.banner:
            print_banner(env, self.live.session_id, self.link.features.display_name)
        while True:
            line = await self.next_line()
            if line is None:  # Ctrl-D
                break
            text, sent = line
            if not text and sent is None:
                continue
            kind, said = ("agent", text) if sent is not None else commands.classify(text, commands.agent_command_names(self.ctx))
            if kind == "unknown":
                _echo(env, text)
                self.ctx.say(said, style="yellow")  # wrapped at words, as every line of ours
                self.keep = text  # back on the line for fixing: a typo is not sent, nor lost
                continue
            text = said  # `//word` is sent as `/word`
            local_command = commands.lookup(text) if kind == "local" else None
            if local_command is not None and local_command[0].name == "now" and local_command[1].strip():
                text, local_command = local_command[1].strip(), None  # at idle, `/now TEXT` is TEXT
            if local_command is not None:
                leave = await self.command(text, *local_command)
                if leave is None:
                    continue
                if local_command[0].name == "close":
                    return leave  # closed: there is nothing to come back to
                self.code = leave
                break
            leave = await self.turn(text, sent)
            if leave is not None:
                return leave
        return self.goodbye()

    async def next_line(self) -> tuple[str, asyncio.Task[Any] | None] | None:
        """The next thing to send, stripped, and the prompt sent during the last turn (whose
        turn goes on) if there is one: from the queue, or the idle input line, with the
        session's changes drawn above it while it waits. ``None`` at Ctrl-D; an empty line
        (and no prompt sent) when there is nothing to do."""
        queue = self.queue
        await self.watch_others()  # another terminal's turn under way: drawn first, as ours are
        sent = self.now.take_pending()  # a prompt sent during the last turn: its turn goes on
        text = "" if sent is not None or self.keep else (queue.next() or "")
        self.ctx.queued = bool(text)  # (typed during a turn: what it asks pops up by itself)
        if text:
            self.prompt_session.history.append_string(text)  # Up at the idle line recalls it too
        if sent is None and not text:
            live = self.live
            _release_terminal(live)
            view_now, above = live.sink, None
            if view_now is not None:
                above = AboveInput(view_now)
                live.sink = above  # updates while the line waits are drawn above it
            try:
                text = await self.prompt_session.prompt_async(self.message, default=self.keep or self.typed)
            except EOFError:
                return None
            except OtherTurnBegan:  # (hosted) the line gives way to it; what was typed waits
                self.typed, self.keep = self.prompt_session.default_buffer.text, ""
                return "", None
            finally:
                if above is not None:
                    if live.sink is above:  # (a command may have replaced the view meanwhile)
                        live.sink = view_now
                    above.drain()
            self.keep = self.typed = ""
            if not text.strip() and queue.held:
                queue.release()  # Enter on an empty line: send what the cancel held
                return "", None
        return text.strip(), sent

    async def watch_others(self) -> None:
        """Draw the turns other terminals send (through the session's host) while this one
        has none under way, as a turn of ours is drawn: a header, the live region with its
        status line, the line typed ahead (Enter queues for when the turn ends); back when
        none is running."""
        conversation, live = self.conversation, self.live
        while conversation.other_turn is not None:
            _release_terminal(live)
            self.env.err.print(OTHER_TURN)
            view = live.sink
            typing = _turn_input(view, self.queue, self.now, live, self.typed)
            if typing is not None:
                self.typed = ""  # on the turn's input line now
            watching = hasattr(view, "watching")
            if watching:
                view.watching = True  # type: ignore[union-attr]  # its status line says whose turn it is
            if view is not None:
                view.begin_turn(live.store)
            stop: str | None = None
            try:
                with _typing_during(view, typing):
                    stop = await conversation.watch(notice=self.notice, tick=getattr(view, "tick", None))
            finally:
                if typing is not None:
                    self.typed = typing.text  # carried to the next line, whatever ended the turn
                if view is not None and live.sink is view:
                    view.turn_ended(stop)
                if watching:
                    view.watching = False  # type: ignore[union-attr]

    async def command(self, text: str, slash: commands.SlashCommand, arg: str) -> int | None:
        """Run a local slash command, echoed first; its exit code when the REPL should end."""
        _echo(self.env, text)
        return await commands.run(self.ctx, slash, arg)

    async def turn(self, text: str, sent: asyncio.Task[Any] | None) -> int | None:
        """One prompt turn (``sent``: the prompt sent during the last turn, whose answer it
        waits for), its failure and the bookkeeping after it. An exit code when the REPL ends
        (Ctrl-C); ``None`` to go on; what cannot be survived is raised."""
        env, conversation, live, queue = self.env, self.conversation, self.live, self.queue
        try:
            blocks = self.build(text) if sent is None else []
        except UsageError as err:
            env.err.print(Text.assemble(("not sent: ", "red"), err.message), soft_wrap=False)
            self.keep = text
            return None
        _hint_unresolved(env, mentions.unresolved(text, live.cwd or "."))
        view = live.sink
        typing = _turn_input(view, queue, self.now, live, self.typed)
        if typing is not None:
            self.typed = ""  # on the turn's input line now
        if view is not None:
            view.begin_turn(live.store)
        shown_before = notices.set_sink(None)

        def warning(line: str, previous: Callable[[str], None] | None = shown_before) -> None:
            if not note_on_screen(live.sink, f"acpcli: warning: {line}", "yellow") and previous is not None:
                previous(line)

        notices.set_sink(warning)  # the agent's warnings during the turn go into the scrollback too
        stop: str | None = None
        try:
            with _typing_during(view, typing):
                stop = await conversation.turn(text, blocks, notice=self.notice, tick=getattr(view, "tick", None), sent=sent)
        except BaseException as caught:  # run_turn's task group wraps what it raises
            failure = leaf_error(caught)
            conversation.title_from_prompt()  # a failed first prompt still titles the session
            self.record = _record(conversation.index, live.session_id)
            if view is not None and live.sink is view:
                view.turn_ended(None)  # the turn is over, whatever ended it: no status line
            if isinstance(failure, (SessionBusy, Withdrawn, UsageError)):
                # Another acpcli's turn on this session (--no-wait, or Ctrl-C while waiting for
                # it), or a mention the session's host refused: nothing was sent; the line
                # comes back for sending again.
                env.err.print(Text.assemble(("not sent: ", "red"), failure.message), soft_wrap=False)
                self.keep = text
                return None
            if isinstance(failure, (KeyboardInterrupt, Interrupted)):
                return int(ExitCode.INTERRUPTED)
            if not isinstance(failure, RpcError):
                # The agent died mid-turn (or worse): the error is reported by the CLI; say
                # how to come back, since the session may well survive on the agent's side.
                if isinstance(failure, HostLost):
                    raise failure from None  # one line, as `prompt` says it
                command = come_back(self.link.features, live.session_id)
                self._say_dim(f"to come back later: {command}", command)
                raise
            # The agent refused this prompt but is still there: say so, keep the line, stay.
            self.keep = text
            if isinstance(failure, AuthRequired):
                if await offer_login(env, self.link, failure):
                    env.err.print("[dim]press Enter to send the prompt again[/]")
            else:
                env.err.print(Text.assemble(("the agent answered an error: ", "red"), failure.message), soft_wrap=False)
            return None
        finally:
            notices.set_sink(shown_before)
            conversation.flush()
            if typing is not None:
                self.typed = typing.text  # carried to the next line, whatever ended the turn
                if self.keep and self.typed:  # both a line to fix and one typed ahead: neither is lost
                    queue.items.insert(0, self.typed)
                    self.typed = ""
            if live.interrupted or live.cancel_requested or stop == "cancelled":
                # cancelled (Ctrl-C, /cancel, a dismissed question: here or, hosted, by the
                # host for us): what is queued waits for the person
                queue.hold()
        if view is not None and live.sink is view:
            view.turn_ended(stop or "end_turn")
        if (stop or "end_turn") == "end_turn" and not said_anything(islice(live.store.entries, live.turn_first_entry, None)):
            env.err.print(NO_ANSWER, style="dim", markup=False)
        conversation.after_turn()  # (the host does a hosted turn's bookkeeping)
        self.record = _record(conversation.index, live.session_id)
        for said in live.take_warnings():  # the context nearly full: one line, once
            env.err.print(f"warning: {said}", style="yellow", markup=False, highlight=False)
        return None

    def goodbye(self) -> int:
        """The last lines (what stays queued, how to come back); the exit code."""
        env, link, queue = self.env, self.link, self.queue
        if queue:
            env.err.print(f"[yellow]{len(queue)} queued prompt{'s' if len(queue) != 1 else ''} not sent[/]")
        said, commands_in_it = self.conversation.goodbye(come_back(link.features, self.live.session_id))
        self._say_dim(said, *commands_in_it)
        return self.code

    def _say_dim(self, text: str, *commands: str) -> None:
        """``text``, dim, wrapped at words as every line of ours (a terminal would cut it
        anywhere, an id in two); each of ``commands`` (to copy) stays on one line."""
        for command in commands:
            text = text.replace(command, command.replace(" ", _JOINED))
        self.ctx.say(text, style="dim", hang=2, keep=_JOINED)


#: Joins the words of a command while a line is wrapped (shown as a space).
_JOINED = "\u00a0"
