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
:func:`acpcli.repl.completion.complete`; the toolbar is :func:`acpcli.repl.status.status_line`.
``@path`` in a prompt mentions a file (:mod:`acpcli.services.mentions`). A prompt the agent refuses,
or one whose mention cannot be sent, comes back on the input line: nothing typed is lost.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from acpcli.errors import ExitCode
from acpcli.text.safe import safe_line, shown_id

if TYPE_CHECKING:
    from acpcli.api.frontends import Conversation, ConversationLink, LiveSession
    from acpcli.env import Environment
    from acpcli.history.index import Index, SessionRecord
    from acpcli.wire.negotiate import AgentFeatures


def _history_file(cwd: str | None) -> Any:
    import os

    from acpcli.paths import create_private, ensure_dir, history_dir

    key = hashlib.sha256((cwd or "").encode()).hexdigest()[:16]
    path = ensure_dir(history_dir()) / f"{key}.history"
    try:
        os.close(create_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND))  # 0600: what was typed
    except OSError:
        pass  # prompt_toolkit reports an unwritable history itself
    return path


#: The toolbar of the REPL driving each session: the permission picker shows it too.
_TOOLBARS: dict[str, Callable[[], str]] = {}
#: The agent of the REPL driving each session, named by the forms it asks for (elicitation).
AGENT_NAMES: dict[str, str] = {}


def print_banner(env: Environment, session_id: str, display_name: str) -> None:
    """The line the REPL starts with: which session, which agent, where help is."""
    from acpcli.render.fit import wrap

    line = f"session {shown_id(session_id)} with {safe_line(display_name)} — /help for commands"
    env.err.print("\n".join(wrap(line, env.err.width, 2)), style="dim", markup=False, highlight=False)


def _record(index: Index, session_id: str) -> SessionRecord | None:
    """The session's index record, for its titles (None when it cannot be read: a busy or
    failing disk must not stop the conversation)."""
    import sqlite3

    from acpcli.errors import AcpcliError

    try:
        return index.get(session_id)
    except (AcpcliError, sqlite3.Error, OSError):
        return None


def come_back(features: AgentFeatures, session_id: str) -> str:
    """The command that reopens ``session_id`` with this agent: ``resume`` when it offers
    that, else ``load`` (gemini); for an agent with neither, ``show`` (the transcript)."""
    shown = shown_id(session_id)  # a unique prefix reopens it as well as the whole id
    if features.resume:
        return f"acpcli resume {shown}"
    if features.load:
        return f"acpcli load {shown}"
    # Neither: the agent cannot reopen it, but what was said stays readable.
    return f"acpcli show {shown} ({features.display_name} can neither resume nor load a session)"


def _history(cwd: str | None) -> Any:
    """The REPL's input history file; in memory when the home cannot be written (a full or
    read-only disk must not stop the session: typing goes on, history is just not kept)."""
    from prompt_toolkit.history import FileHistory, InMemoryHistory

    try:
        path = _history_file(cwd)
    except OSError:
        return InMemoryHistory()

    class TolerantHistory(FileHistory):
        def store_string(self, string: str) -> None:
            try:
                super().store_string(string)
            except OSError:
                pass

    return TolerantHistory(str(path))


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


def permission_asker(env: Environment) -> Callable[[LiveSession, dict[str, Any]], Awaitable[dict[str, Any] | None]]:
    """An ``ask`` for :class:`~acpcli.services.permissions.PermissionPolicy` that shows every option.

    What the agent wrote (the title, option names) is shown on one line each, cut to the
    terminal's width with "…": a 1 MB title is not echoed whole."""
    from rich.text import Text

    from acpcli.render.fit import shorten
    from acpcli.services.permissions import note_on_screen, release_screen, shown

    async def ask(live: LiveSession, params: dict[str, Any]) -> dict[str, Any] | None:
        # A terminal view keeps the call asked about live, drawn above the question, and takes
        # it off the screen afterwards: the call is printed once, in its final state. Other
        # views commit what they show first (`prompt --format jsonl` on a terminal asks too,
        # and its stream must not be cut mid-message).
        options = [o for o in params.get("options", []) if isinstance(o, dict)]
        sink = live.sink
        hold = getattr(sink, "hold", None)
        # (the question's line, the picker's, its options and the toolbar, with a row to spare)
        held = bool(hold(min(len(options), 8) + 5)) if hold is not None else False
        if not held:
            release_screen(live)
        raw_call = params.get("toolCall")
        call: dict[str, Any] = raw_call if isinstance(raw_call, dict) else {}
        title = call.get("title") or call.get("toolCallId") or "a tool call"
        width = max(40, env.err.width)
        kind = shown(str(call.get("kind") or "other"), 30)
        question = Text.assemble(
            ("permission:", "bold yellow"), " ", shorten(safe_line(str(title)), width - len(kind) - 16), " ", (f"({kind})", "dim")
        )
        env.err.print(question)
        labels = [  # (the picker shortens them to its width, at a word)
            f"{shorten(safe_line(str(option.get('name'))), width - 30)}  ({shown(str(option.get('kind')), 20)})"
            for option in options
        ]
        try:
            picked = await choose(
                f"choose 1-{len(options)}:", labels, default=narrowest_allow(options),
                toolbar=_TOOLBARS.get(live.session_id), erase=True,
            )
        finally:
            if held:  # the question's line goes too: it is said again below, with the answer
                sink.release(max(1, -(-question.cell_len // max(1, env.err.width))))  # type: ignore[union-attr]

        def say(line: Text) -> None:
            if not (held and note_on_screen(live.sink, line)):
                env.err.print(line)

        if held:
            say(question)
        # The picker is erased when done: say what happened, so no option looks chosen
        # after a dismissal and the choice stays on record after a pick.
        if picked is None:
            say(Text.assemble("  ", ("dismissed:", "yellow"), " no option chosen; the turn is cancelled"))
            return None
        say(Text.assemble("  ", ("chose:", "dim"), " ", labels[picked]))
        return {"outcome": {"outcome": "selected", "optionId": options[picked]["optionId"]}}

    return ask


def narrowest_allow(options: Sequence[dict[str, Any]]) -> int:
    """The option a permission question highlights: the narrowest allow (``allow_once``,
    else another allow), else the first. Never an "always" when a "once" is offered."""
    kinds = [option.get("kind") for option in options]
    for wanted in ("allow_once", "allow_always"):
        if wanted in kinds:
            return kinds.index(wanted)
    return 0


async def choose(
    question: str,
    labels: Sequence[str],
    *,
    default: int = 0,
    toolbar: Callable[[], str] | None = None,
    erase: bool = False,
) -> int | None:
    """Let the person pick one of ``labels`` (:mod:`acpcli.repl.picker`: arrow keys, its
    number, or typing to filter, then Enter); the 0-based index, or ``None`` when the question
    is dismissed (Ctrl-C, Ctrl-D, Escape). ``default`` is highlighted first; ``toolbar`` (the
    REPL's) stays at the bottom. ``erase``: take the list off the screen when done (the
    caller then says what was chosen)."""
    from acpcli.repl.picker import pick

    if not labels:
        return None
    try:
        # The labels quote the agent (permission option names): shown, never obeyed.
        return await pick(
            safe_line(question), [safe_line(label) for label in labels], default=default, toolbar=toolbar, erase=erase
        )
    except (KeyboardInterrupt, EOFError):
        return None


async def offer_login(env: Environment, link: ConversationLink, err: BaseException) -> bool:
    """The agent answered ``auth_required``: explain, list its login methods, let the person
    pick one and log in. True when logged in (the caller retries what failed)."""
    from acpcli.errors import RpcError
    from acpcli.protocol import wire
    from acpcli.render.fit import wrap

    def say(text: str, style: str, hang: int) -> None:  # wrapped at words, under a hanging indent
        env.err.print("\n".join(wrap(safe_line(text), env.err.width, hang)), style=style, markup=False, highlight=False)

    say(f"{link.features.display_name} asks you to log in ({err})", "bold yellow", 2)
    methods = wire.login_methods(link.features.auth_methods)
    usable = [m for m in methods if m.type == "agent"]
    for method in methods:
        if method not in usable:
            say(f"  {method.id}: a {method.type} login — run `acpcli auth` for this agent in a terminal", "dim", 4)
    if not usable:
        if not methods:
            env.err.print("  it lists no login methods: log in with the agent's own tools, then try again")
        return False
    while True:
        picked = await choose(f"log in with 1-{len(usable)} (Ctrl-C: not now):", [m.label for m in usable])
        if picked is None:
            return False
        method_id = usable[picked].id
        try:
            await link.login(method_id)
        except RpcError as failure:  # refused: ask again; anything else (the agent died) ends it
            env.err.print(f"[red]login failed:[/] {escape(failure.message)}", highlight=False)
            continue
        env.err.print(f"[green]logged in[/] with {escape(method_id)}", highlight=False)
        return True


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
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.key_binding import KeyBindings
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
    from acpcli.repl.completion import Inputs, complete
    from acpcli.repl.queue import queue_lines
    from acpcli.repl.sendnow import SendNow
    from acpcli.repl.status import shown_title, status_line
    from acpcli.services import mentions
    from acpcli.services.permissions import note_on_screen

    ctx = commands.Context(env, conversation)
    link, live = conversation.link, conversation.live
    local = [(c.name, c.help) for c in commands.COMMANDS]

    def roots() -> list[str]:
        return [live.cwd or ".", *live.additional_directories]

    class ReplCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Any:
            inputs = Inputs(
                agent_commands=live.store.available_commands or [],
                choices=ctx.choices(),
                login_methods=ctx.login_methods(),
                mention=lambda word: mentions.complete_mention(word, live.cwd or ".", roots()),
            )
            for offer in complete(document.text_before_cursor, local, inputs):
                yield Completion(
                    offer.text, start_position=-offer.replace, display=safe_line(offer.text), display_meta=safe_line(offer.meta)
                )

    keys = KeyBindings()

    @keys.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("c-c")
    def _clear(event: Any) -> None:
        event.current_buffer.reset()

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

    def toolbar() -> str:
        from prompt_toolkit.application.current import get_app

        from acpcli.render.fit import shorten

        title = shown_title(live.store.title, record[0], live.first_prompt)
        line = safe_line(status_line(
            conversation.agent, title, live.store.state, ctx.choices(), live.store.usage,
            waiting=bool(live.pending_permissions), policy=policy,
        ))
        # One row, cut at a word (never inside a number like 23.7k/200k), not at the edge.
        return shorten(line, get_app().output.get_size().columns)

    session: PromptSession[str] = PromptSession(
        history=_history(live.cwd),
        completer=ReplCompleter(),
        complete_while_typing=False,
        key_bindings=keys,
        bottom_toolbar=toolbar,
        multiline=False,
        # the lines after the first (Alt-Enter) start under the first one's text, not under "›"
        prompt_continuation=lambda width, line_number, is_soft_wrap: " " * width,
        # The sent prompt is rendered from the session itself (the v2 echo, or the local
        # record of a v1 prompt), so the input line is erased rather than shown twice.
        erase_when_done=True,
    )
    _TOOLBARS[live.session_id] = toolbar  # the permission picker shows it too
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
