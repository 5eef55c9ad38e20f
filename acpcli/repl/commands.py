"""The REPL's own slash commands, as data: a name, a line of help, an async handler.

A handler gets the :class:`Context` and the text after the command name, prints what it has
to say on the error console (stdout carries only the conversation) and returns ``None`` to
stay in the REPL or an exit code to leave it. Anything else starting with ``/`` is sent to
the agent (its own commands, from ``available_commands_update``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from acpcli.errors import AcpcliError, ExitCode
from acpcli.protocol import settings
from acpcli.safe_text import safe_text, shown_id

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.negotiate import AgentFeatures
    from acpcli.persistence import EventWriter, Index
    from acpcli.session.link import AgentLink
    from acpcli.session.live import LiveSession


@dataclass
class Context:
    """What a slash command may use."""

    env: Environment
    link: AgentLink
    live: LiveSession
    index: Index
    writer: EventWriter
    agent: str
    #: ``export(path, format)`` writes this session's stored transcript (given by the CLI,
    #: which owns the event log's reading); ``None`` when unavailable.
    export: Callable[[str, str], None] | None = None

    def say(self, text: str, style: str | None = None) -> None:
        # Lines quote the agent (titles, setting names, command names): shown, never obeyed.
        self.env.err.print(safe_text(text), style=style, markup=False, highlight=False)

    def choices(self) -> list[settings.Choice]:
        return self.live.settings()

    def login_methods(self) -> list[tuple[str, str]]:
        from acpcli.protocol import wire

        return [(m.id, m.name or m.id) for m in wire.login_methods(self.link.features.auth_methods)]


Handler = Callable[[Context, str], Awaitable["int | None"]]


@dataclass(frozen=True)
class SlashCommand:
    name: str
    help: str
    handler: Handler
    usage: str = ""


async def _help(ctx: Context, arg: str) -> int | None:
    for c in COMMANDS:
        ctx.say(f"  /{c.name + (' ' + c.usage if c.usage else ''):<22} {c.help}")
    agent_commands = ctx.live.store.available_commands or []
    if agent_commands:
        ctx.say(f"  the agent's own: {', '.join('/' + str(c.get('name')) for c in agent_commands)}")
    ctx.say("  @path mentions a file (TAB completes) · Enter sends · Alt-Enter newline")
    ctx.say("  Ctrl-C cancels a turn · Ctrl-D leaves")
    return None


async def _quit(ctx: Context, arg: str) -> int | None:
    return int(ExitCode.OK)


async def _close(ctx: Context, arg: str) -> int | None:
    if not ctx.link.features.close:
        ctx.say("this agent does not support session/close")
        return None
    from acpcli.session.run import closed_line

    answer = await ctx.link.close(ctx.live.session_id)
    ctx.index.mark_closed(ctx.live.session_id)
    ctx.say(closed_line(ctx.live.session_id, answer))
    return int(ExitCode.OK)


async def _sessions(ctx: Context, arg: str) -> int | None:
    import time

    records = ctx.index.list_sessions(agent=ctx.agent, cwd=ctx.live.cwd, limit=20)
    if not records:
        ctx.say("no sessions recorded here")
    for rec in records:
        mark = "*" if rec.id == ctx.live.session_id else " "
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(rec.last_used_at))
        ctx.say(f"  {mark} {shown_id(rec.id)}  {when}  {rec.state:<6}  {rec.shown_title or '(untitled)'}")
    ctx.say("  " + _come_back_hint(ctx.link.features))
    return None


def _come_back_hint(features: AgentFeatures) -> str:
    """How to reopen a listed session, naming only what this agent supports."""
    if features.resume and features.load:
        return "come back to one with: acpcli resume ID (or acpcli load ID to see it replayed)"
    if features.resume:
        return "come back to one with: acpcli resume ID"
    if features.load:
        return "come back to one with: acpcli load ID"
    return f"{features.display_name} can neither resume nor load a session"


def _show_setting(ctx: Context, choice: settings.Choice) -> None:
    ctx.say(f"{choice.name} ({choice.key}): {choice.current}")
    if choice.kind == "boolean":
        ctx.say(f"  /config {choice.key} on|off")
        return
    for value, name, description in choice.values:
        mark = "*" if name == choice.current or value == choice.current else " "
        label = name if name == value else f"{value} ({name})"
        ctx.say(f"  {mark} {label}" + (f" — {description}" if description else ""))


async def _set(ctx: Context, key: str, value_text: str) -> None:
    if value_text:
        now = await ctx.link.set_by_name(ctx.live, key, value_text)
        ctx.say(f"{now.name}: {now.current}")
    else:
        _show_setting(ctx, ctx.link.find_setting(ctx.live, key))


async def _mode(ctx: Context, arg: str) -> int | None:
    await _set(ctx, settings.MODE, arg.strip())
    return None


async def _model(ctx: Context, arg: str) -> int | None:
    await _set(ctx, settings.MODEL, arg.strip())
    return None


async def _config(ctx: Context, arg: str) -> int | None:
    key, _, value = arg.strip().partition(" ")
    if key:
        await _set(ctx, key, value.strip())
        return None
    found = ctx.choices()
    if not found:
        ctx.say("the agent offers no settings for this session")
    for choice in found:
        ctx.say(f"  {choice.key:<16} {choice.current:<20} {choice.name}")
    if found:
        ctx.say("  /config NAME shows the values; /config NAME VALUE sets one")
    return None


async def _login(ctx: Context, arg: str) -> int | None:
    from acpcli.protocol import wire

    methods = wire.login_methods(ctx.link.features.auth_methods)
    if not methods:
        ctx.say(f"{ctx.link.features.display_name} offers no login methods")
        return None
    wanted = arg.strip()
    if not wanted and len(methods) == 1 and methods[0].type == "agent":
        wanted = methods[0].id
    if not wanted:
        for method in methods:
            note = "" if method.type == "agent" else f"  [{method.type}: run `acpcli auth` for this agent outside the REPL]"
            ctx.say(f"  {method.id}  {method.label}{note}")
        ctx.say("  /login METHOD logs in with one of them")
        return None
    await ctx.link.login(wanted)
    ctx.say(f"logged in with {wanted}")
    return None


async def _logout(ctx: Context, arg: str) -> int | None:
    await ctx.link.logout()
    ctx.say("logged out")
    return None


async def _export(ctx: Context, arg: str) -> int | None:
    if ctx.export is None:
        ctx.say("export is not available here")
        return None
    path = arg.strip()
    if not path:
        ctx.say("usage: /export FILE (.md markdown, .jsonl, anything else plain text)")
        return None
    import os

    path = os.path.expanduser(path)
    fmt = "markdown" if path.endswith((".md", ".markdown")) else "jsonl" if path.endswith(".jsonl") else "text"
    ctx.writer.flush()
    ctx.export(path, fmt)
    ctx.say(f"wrote {fmt} transcript to {path}")
    return None


async def _thoughts(ctx: Context, arg: str) -> int | None:
    sink = ctx.live.sink
    if sink is None or not hasattr(sink, "show_thoughts"):
        ctx.say("thoughts are shown in full already in this output")
        return None
    sink.show_thoughts = not sink.show_thoughts
    ctx.say("thoughts: shown in full" if sink.show_thoughts else "thoughts: one summary line each")
    return None


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "show the commands and keys", _help),
    SlashCommand("mode", "show or set the agent's mode", _mode, "[MODE]"),
    SlashCommand("model", "show or set the model", _model, "[MODEL]"),
    SlashCommand("config", "list the session's settings, or set one", _config, "[NAME [VALUE]]"),
    SlashCommand("thoughts", "toggle showing thoughts in full", _thoughts),
    SlashCommand("export", "write this session's transcript to a file", _export, "FILE"),
    SlashCommand("sessions", "list this agent's sessions here", _sessions),
    SlashCommand("login", "log in to the agent", _login, "[METHOD]"),
    SlashCommand("logout", "log out of the agent", _logout),
    SlashCommand("close", "close the session on the agent and leave", _close),
    SlashCommand("quit", "leave (the session stays resumable)", _quit),
)

ALIASES = {"exit": "quit"}


def lookup(line: str) -> tuple[SlashCommand, str] | None:
    """The local command a line invokes, and its argument text; ``None`` for anything else
    (a prompt, or one of the agent's own commands)."""
    if not line.startswith("/"):
        return None
    name, _, rest = line[1:].partition(" ")
    name = ALIASES.get(name, name)
    for command in COMMANDS:
        if command.name == name:
            return command, rest
    return None


async def run(ctx: Context, command: SlashCommand, arg: str) -> int | None:
    """Run a command; an error is said in one line and the REPL goes on."""
    try:
        return await command.handler(ctx, arg)
    except AcpcliError as err:
        ctx.say(f"/{command.name}: {err.message}", style="red")
        if err.hint:
            ctx.say(f"  hint: {err.hint}", style="dim")
        return None
