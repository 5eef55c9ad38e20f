"""The REPL's own slash commands, as data: a name, a line of help, an async handler.

A handler gets the :class:`Context` and the text after the command name, prints what it has
to say on the error console (stdout carries only the conversation) and returns ``None`` to
stay in the REPL or an exit code to leave it.

A line starting with ``/`` is sorted by :func:`classify`: one of these commands; one of the
agent's own (from ``available_commands_update``), sent to it as a prompt; ``//word …``, sent
to the agent as ``/word …`` (how to reach an agent command one of ours shadows: ``//help``);
or an unknown ``/word``, which is not sent (a typo must not become a prompt). A line whose
first word holds another ``/`` (``/etc/hosts is empty?``) is a prompt, not a command.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acpcli.errors import AcpcliError, ExitCode
from acpcli.protocol import settings
from acpcli.repl.queue import PromptQueue, one_line
from acpcli.text.safe import safe_line, safe_text, shown_id

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.history.index import Index
    from acpcli.session.conversation import Conversation
    from acpcli.session.feed import SessionFeed
    from acpcli.wire.negotiate import AgentFeatures


@dataclass
class Context:
    """What a slash command may use: the terminal and the conversation (its ``export``, the
    stored transcript written by the CLI, which owns the event log's reading; ``None`` when
    unavailable)."""

    env: Environment
    conversation: Conversation
    #: The prompts typed during a turn, waiting for it to end (:mod:`acpcli.repl.queue`).
    queue: PromptQueue = field(default_factory=PromptQueue)
    #: The command running was typed during a turn and waited in the queue: a question it
    #: asks pops up by itself (keys typed meanwhile are not its own, see :mod:`acpcli.repl.picker`).
    queued: bool = False

    @property
    def live(self) -> SessionFeed:
        """The conversation's live session (its store, its view)."""
        return self.conversation.live

    @property
    def index(self) -> Index:
        """The index the conversation is recorded in."""
        return self.conversation.index

    def say(self, text: str, style: str | None = None, hang: int | None = None, keep: str = "") -> None:
        """Print ``text`` wrapped at words to the terminal's width, each line after its first
        under a hanging indent of ``hang`` columns (default: two more than the text's own).
        ``keep``: a character that joins what must stay on one line, shown as a space."""
        from acpcli.render.fit import wrap

        # Lines quote the agent (titles, setting names, command names): shown, never obeyed.
        text = safe_text(text)
        indent = len(text) - len(text.lstrip(" ")) + 2 if hang is None else hang
        lines = wrap(text, self.env.err.width, min(indent, self.env.err.width // 2))
        shown = "\n".join(lines)
        shown = shown.replace(keep, " ") if keep else shown
        # Drawn by the session's view when it takes notes: the agent may be streaming meanwhile
        # (gemini answers /mode with a message), and a line beside its live region is wiped.
        from acpcli.services.permissions import note_on_screen

        if not note_on_screen(self.live.sink, shown, style):
            self.env.err.print(shown, style=style, markup=False, highlight=False)

    def choices(self) -> list[settings.Choice]:
        return self.conversation.settings()

    def login_methods(self) -> list[tuple[str, str]]:
        from acpcli.protocol import wire

        return [(m.id, m.name or m.id) for m in wire.login_methods(self.conversation.features.auth_methods)]


Handler = Callable[[Context, str], Awaitable["int | None"]]


@dataclass(frozen=True)
class SlashCommand:
    name: str
    help: str
    handler: Handler
    usage: str = ""


async def _help(ctx: Context, arg: str) -> int | None:
    for c in COMMANDS:
        ctx.say(f"  /{c.name + (' ' + c.usage if c.usage else ''):<22} {c.help}", hang=26)
    names = agent_command_names(ctx)
    own = [n for n in names if not _shadowed(n)]
    shadowed = [n for n in names if _shadowed(n)]
    if own:
        prefix = "  the agent's own: "
        # a command's name is not broken across lines, spaces and all ("/extensions list")
        listed = ", ".join("/" + safe_line(n).replace(" ", "\u00a0") for n in own)
        ctx.say(prefix + listed, hang=len(prefix), keep="\u00a0")
    if shadowed:
        ctx.say(f"  the agent's {', '.join('/' + n for n in shadowed)}: type {', '.join('//' + n for n in shadowed)}", hang=4)
    ctx.say("  //WORD sends /WORD to the agent as typed · an unknown /WORD is not sent", hang=4)
    ctx.say("  @path mentions a file (TAB completes) · Enter sends · Alt-Enter newline")
    ctx.say("  during a turn: Enter queues · Up edits the last queued · Alt-Enter sends now (if the agent takes it)")
    ctx.say("  Ctrl-C cancels a turn · Ctrl-D leaves")
    return None


async def _cancel(ctx: Context, arg: str) -> int | None:
    # A turn in progress is cancelled where the line is read during it; here none runs.
    ctx.say("no turn is running")
    return None


async def _queue(ctx: Context, arg: str) -> int | None:
    from acpcli.repl.typeahead import queue_command

    if arg.strip():
        ctx.say(queue_command(ctx.queue, arg))
        return None
    if not ctx.queue:
        ctx.say("the queue is empty (during a turn, Enter queues the line)")
        return None
    for number, item in enumerate(ctx.queue.items, 1):
        ctx.say(f"  {number}. {one_line(item, max(30, ctx.env.err.width) - 8)}")
    ctx.say("  /queue drop N removes one · /queue clear removes all · during a turn, Up edits the last")
    return None


async def _now(ctx: Context, arg: str) -> int | None:
    # `/now TEXT` at idle is sent as TEXT by the REPL loop; here only a bare `/now` arrives.
    ctx.say("usage: /now TEXT (during a turn: into the running turn, where the agent takes it)")
    return None


async def _quit(ctx: Context, arg: str) -> int | None:
    return int(ExitCode.OK)


async def _close(ctx: Context, arg: str) -> int | None:
    if not ctx.conversation.features.close:
        ctx.say("this agent does not support session/close")
        return None
    from acpcli.session.outcome import closed_line

    answer = await ctx.conversation.close()
    ctx.say(closed_line(ctx.live.session_id, answer))
    return int(ExitCode.OK)


async def _sessions(ctx: Context, arg: str) -> int | None:
    import time

    records = ctx.index.list_sessions(agent=ctx.conversation.agent, cwd=ctx.live.cwd, limit=20)
    if not records:
        ctx.say("no sessions recorded here")
    from acpcli.render.fit import pad, shorten

    # One line a session, as `acpcli sessions` has it: the id's unique prefix (commands take
    # it), and the title in the room left.
    prefixes = ctx.index.unique_prefixes([rec.id for rec in records])
    id_width = max((len(safe_line(p)) for p in prefixes.values()), default=0)
    for rec in records:
        mark = "*" if rec.id == ctx.live.session_id else " "
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(rec.last_used_at))
        head = f"  {mark} {pad(safe_line(prefixes[rec.id]), id_width)}  {when}  {rec.state:<6}  "
        title = safe_line(rec.shown_title or "(untitled)")
        ctx.say(head + shorten(title, max(10, ctx.env.err.width - len(head))))
    ctx.say("  " + _come_back_hint(ctx.conversation.features))
    return None


def _come_back_hint(features: AgentFeatures, sid: str = "ID", lead: str = "come back to one with") -> str:
    """How to reopen a listed session (``sid``), naming only what this agent supports."""
    if features.resume and features.load:
        return f"{lead}: acpcli resume {sid} (or acpcli load {sid} to see it replayed)"
    if features.resume:
        return f"{lead}: acpcli resume {sid}"
    if features.load:
        return f"{lead}: acpcli load {sid}"
    return f"{features.display_name} can neither resume nor load a session"


def _show_setting(ctx: Context, choice: settings.Choice) -> None:
    ctx.say(f"{choice.name} ({choice.key}): {choice.current}")
    if choice.kind == "boolean":  # (a list of values is picked from: _pick_setting)
        ctx.say(f"  /config {choice.key} true|false (or on|off)")


async def _pick_setting(ctx: Context, choice: settings.Choice) -> str | None:
    """The value the person picks for ``choice`` among those the agent advertised (the
    current one marked ``*`` and highlighted); None when dismissed or the current one is
    picked."""
    from acpcli.repl.asking import TOOLBARS, choose
    from acpcli.repl.picker import GRACE

    values = choice.values
    current = [i for i, (value, name, _) in enumerate(values) if choice.current in (value, name)]
    labels = [
        f"{'*' if i in current else ' '} {name if name == value else f'{value} ({name})'}"
        + (f" — {' '.join(description.split())}" if description.strip() else "")  # (one row: a wrapped one too)
        for i, (value, name, description) in enumerate(values)
    ]
    picked = await choose(
        f"choose 1-{len(values)}: {choice.name} (Esc keeps {choice.current})", labels,
        default=current[0] if current else 0, toolbar=TOOLBARS.get(ctx.live.session_id), erase=True,
        grace=GRACE if ctx.queued else 0.0,
    )
    if picked is None or picked in current:
        ctx.say(f"{choice.name}: {choice.current} (unchanged)")
        return None
    return values[picked][0]


async def _set(ctx: Context, key: str, value_text: str) -> None:
    if value_text:
        now = await ctx.conversation.set(key, value_text)
        ctx.say(f"{now.name}: {now.current}")
        return
    shown = ctx.conversation.find_setting(key)
    if shown.values:  # a list the agent advertised: picked with the keys (Esc: as it was)
        picked = await _pick_setting(ctx, shown)
        if picked is not None:
            now = await ctx.conversation.set(key, picked)
            ctx.say(f"{now.name}: {now.current}")
    else:
        _show_setting(ctx, shown)
    if shown.category == settings.MODEL:  # the spec: model_config options belong near the model
        for related in ctx.choices():
            if related.category == settings.MODEL_CONFIG:
                ctx.say(f"  {related.name} ({related.key}): {related.current} — /config {related.key} VALUE")


async def _mode(ctx: Context, arg: str) -> int | None:
    await _set(ctx, settings.MODE, arg.strip())
    return None


async def _model(ctx: Context, arg: str) -> int | None:
    await _set(ctx, settings.MODEL, arg.strip())
    return None


async def _config(ctx: Context, arg: str) -> int | None:
    key, _, value = arg.strip().partition(" ")
    if "=" in key and not value.strip():  # NAME=VALUE, as --set takes it on the command line
        key, _, value = key.partition("=")
    if key:
        await _set(ctx, key, value.strip())
        return None
    found = ctx.choices()
    if not found:
        ctx.say("the agent offers no settings for this session")
    from acpcli.render.fit import cells, pad, shorten

    # Columns as wide as their longest cell (name and value at most a third of the line
    # each, cut at a word), then the category, the names wrapped under their column.
    third = max(12, ctx.env.err.width // 3)
    keys = [shorten(safe_line(c.key), third) for c in found]
    values = [shorten(safe_line(str(c.current)), third) for c in found]
    categories = [safe_line(_category(c)) for c in found]
    key_width = max((cells(k) for k in keys), default=0)
    value_width = max((cells(v) for v in values), default=0)
    category_width = max((cells(c) for c in categories), default=0)
    for choice, key, value, category in zip(found, keys, values, categories, strict=True):
        head = f"  {pad(key, key_width)}  {pad(value, value_width)}  {pad(category, category_width)}  "
        ctx.say(head + choice.name, hang=cells(head))
    if found:
        ctx.say("  /config NAME picks one of its values; /config NAME VALUE (or NAME=VALUE) sets one")
    return None


def _category(choice: settings.Choice) -> str:
    """An option's category (``-`` without one); the older v1 ``modes``/``models`` states say so."""
    if choice.kind in ("modes", "models"):
        return f"{choice.category} (v1 {choice.kind})"
    return choice.category or "-"


async def _fork(ctx: Context, arg: str) -> int | None:
    from acpcli.session.attach import fork_recorded
    from acpcli.session.context import Invocation

    forked = await fork_recorded(ctx.conversation, Invocation(env=ctx.env))  # the capability message first, nothing sent
    ctx.say(f"forked {shown_id(ctx.live.session_id)} as {shown_id(forked.session_id)}, with the conversation so far; this prompt stays on {shown_id(ctx.live.session_id)}")
    ctx.say("  " + _come_back_hint(ctx.conversation.features, shown_id(forked.session_id), lead="continue the fork with"))
    return None


async def _login(ctx: Context, arg: str) -> int | None:
    from acpcli.protocol import wire

    methods = wire.login_methods(ctx.conversation.features.auth_methods)
    if not methods:
        ctx.say(f"{ctx.conversation.features.display_name} offers no login methods")
        return None
    wanted = arg.strip()
    if not wanted and len(methods) == 1 and methods[0].type == "agent":
        wanted = methods[0].id
    if not wanted:
        from acpcli.render.fit import cells, pad

        id_width = max(cells(safe_line(method.id)) for method in methods)
        id_width = id_width if id_width <= ctx.env.err.width // 3 else 0
        for method in methods:
            note = "" if method.type == "agent" else f"  [{method.type}: run `acpcli auth` for this agent outside the REPL]"
            ctx.say(f"  {pad(safe_line(method.id), id_width)}  {method.label}{note}", hang=2 + id_width + 2 if id_width else 4)
        ctx.say("  /login METHOD logs in with one of them")
        return None
    await ctx.conversation.login(wanted)
    ctx.say(f"logged in with {wanted}")
    return None


async def _logout(ctx: Context, arg: str) -> int | None:
    await ctx.conversation.logout()
    ctx.say("logged out")
    return None


async def _export(ctx: Context, arg: str) -> int | None:
    export = ctx.conversation.export
    if export is None:
        ctx.say("export is not available here")
        return None
    path = arg.strip()
    if not path:
        ctx.say("usage: /export FILE (.md markdown, .jsonl, anything else plain text)")
        return None
    import os

    path = os.path.expanduser(path)
    fmt = "markdown" if path.endswith((".md", ".markdown")) else "jsonl" if path.endswith(".jsonl") else "text"
    ctx.conversation.flush()
    export(path, fmt)
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


def _checkpoints(ctx: Context) -> Any:
    """This session's checkpoint store (:class:`acpcli.worktree.Checkpoints`)."""
    from acpcli.worktree import Checkpoints

    live = ctx.live
    return Checkpoints(live.session_id, [live.cwd or ".", *live.additional_directories])


def _turn_number(ctx: Context, arg: str, usage: str) -> int | None:
    """The turn an argument names (None after saying the usage line)."""
    word = arg.strip().split()[0] if arg.strip() else ""
    if word.isdigit():
        return int(word)
    ctx.say(usage)
    return None


async def _diff(ctx: Context, arg: str) -> int | None:
    import anyio.to_thread

    from acpcli.errors import CheckpointError

    turn = None
    if arg.strip():
        turn = _turn_number(ctx, arg, "usage: /diff [TURN] (default: the last turn)")
        if turn is None:
            return None
    try:
        text = await anyio.to_thread.run_sync(lambda: _checkpoints(ctx).diff(turn))
    except CheckpointError as err:
        ctx.say(str(err), style="yellow")
        return None
    if not text.strip():
        ctx.say("that turn changed no file")
        return None
    _print_diff(ctx, text)
    return None


def _print_diff(ctx: Context, text: str) -> None:
    """A unified diff on the terminal: its lines made safe, coloured as ``git diff`` colours them."""
    from rich.text import Text

    from acpcli.text.safe import safe_line

    for line in text.splitlines():
        shown = safe_line(line)
        style = (
            "bold" if line.startswith(("diff ", "--- ", "+++ ", "index "))
            else "cyan" if line.startswith("@@")
            else "green" if line.startswith("+")
            else "red" if line.startswith("-")
            else None
        )
        ctx.env.out.print(Text(shown, style=style or ""), soft_wrap=True)


async def _rewind_files(ctx: Context, turn: int | None, force: bool) -> int | None:
    """The session's files back to before ``turn`` (None: before the last turn)."""
    import anyio.to_thread

    from acpcli.errors import CheckpointError, RewindRefused
    from acpcli.text.safe import safe_line

    def rewind() -> Any:
        store = _checkpoints(ctx)
        to = turn if turn is not None else store.latest()
        if not to:
            from acpcli.errors import NoCheckpoint

            raise NoCheckpoint("no turn of this session changed files yet: nothing to undo")
        return to, store.rewind(to, force=force)

    try:
        to, plan = await anyio.to_thread.run_sync(rewind)
    except RewindRefused as refused:
        ctx.say(str(refused), style="yellow")
        ctx.say("changed by hand since the last checkpoint; add `force` to overwrite them (/undo still puts them back after)")
        return None
    except CheckpointError as err:
        ctx.say(str(err), style="yellow")
        return None
    if not plan.changes:
        ctx.say(f"the files are as they were before turn {to}: nothing to do")
        return None
    for change in plan.changes:
        what = {"M": "written back", "A": "brought back", "D": "removed"}.get(change.status, change.status)
        ctx.say(f"  {what}: {safe_line(str(change.path))}")
    from acpcli.env import program

    ctx.say(
        f"files as before turn {to} ({len(plan.changes)} changed); "
        f"`{program()} rewind {ctx.live.session_id} --undo --files` puts them back"
    )
    return None


async def _undo(ctx: Context, arg: str) -> int | None:
    return await _rewind_files(ctx, None, arg.strip() == "force")


async def _rewind(ctx: Context, arg: str) -> int | None:
    if not arg.strip():  # a picker of the turns, then files, conversation or both
        from acpcli.repl.asking import TOOLBARS
        from acpcli.repl.rewinding import Tools, pick_and_rewind

        tools = Tools(_checkpoints(ctx), TOOLBARS.get(ctx.live.session_id), _print_diff, _rewind_files, _come_back_hint)
        return await pick_and_rewind(ctx, tools)
    turn = _turn_number(ctx, arg, "usage: /rewind TURN [force]: the files back to before TURN (/diff N shows what it did)")
    if turn is None:
        return None
    return await _rewind_files(ctx, turn, arg.split()[1:] == ["force"])


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "show the commands and keys", _help),
    SlashCommand("mode", "pick or set the agent's mode", _mode, "[MODE]"),
    SlashCommand("model", "pick or set the model", _model, "[MODEL]"),
    SlashCommand("config", "list the session's settings, or pick or set one", _config, "[NAME [VALUE]]"),
    SlashCommand("thoughts", "toggle showing thoughts in full", _thoughts),
    SlashCommand("export", "write this session's transcript to a file", _export, "FILE"),
    SlashCommand("diff", "what a turn did to the files (default: the last turn)", _diff, "[TURN]"),
    SlashCommand("undo", "put the files back as they were before the last turn", _undo),
    SlashCommand("rewind", "go back before a turn: pick it, then files, conversation or both (TURN: its files)", _rewind, "[TURN]"),
    SlashCommand("sessions", "list this agent's sessions here", _sessions),
    SlashCommand("fork", "fork this session: a new one with the conversation so far", _fork),
    SlashCommand("login", "log in to the agent", _login, "[METHOD]"),
    SlashCommand("logout", "log out of the agent", _logout),
    SlashCommand("cancel", "cancel the running turn (as Ctrl-C does)", _cancel),
    SlashCommand("queue", "list the prompts queued during a turn, or drop them", _queue, "[clear | drop N]"),
    SlashCommand("now", "send TEXT into the running turn (agents that take it)", _now, "TEXT"),
    SlashCommand("close", "close the session on the agent and leave", _close),
    SlashCommand("quit", "leave (the session stays resumable)", _quit),
)

ALIASES = {"exit": "quit"}


def agent_command_names(ctx: Context) -> list[str]:
    """The names of the agent's own commands (``available_commands_update``), in its order."""
    names = []
    for command in ctx.live.store.available_commands or []:
        name = command.get("name") if isinstance(command, dict) else None
        if isinstance(name, str) and name:
            names.append(name)
    return names


def _shadowed(name: str) -> bool:
    return name in ALIASES or any(c.name == name for c in COMMANDS)


def command_word(line: str) -> str | None:
    """The command name of a line shaped like a command (``/word`` then a space or the end,
    the word without ``/``), else ``None`` (a prompt: ``/etc/hosts``, ``/ x``, plain text)."""
    if not line.startswith("/"):
        return None
    name = line[1:].split(None, 1)[0] if line[1:].strip() else ""
    if not name or "/" in name or not line[1:].startswith(name):
        return None
    return name


def classify(line: str, agent_names: list[str]) -> tuple[str, str]:
    """How the REPL treats ``line``: ``("local", line)`` one of ours (:func:`lookup`),
    ``("agent", text)`` a prompt, ``text`` what to send (``//word`` loses one ``/``), or
    ``("unknown", message)`` a ``/word`` nobody knows, with the nearest name suggested."""
    if line.startswith("//") and command_word(line[1:]) is not None:
        return "agent", line[1:]
    name = command_word(line)
    if name is None:
        return "agent", line
    if lookup(line) is not None:
        return "local", line
    if name in agent_names:
        return "agent", line
    import difflib

    known = [c.name for c in COMMANDS] + list(ALIASES) + [n for n in agent_names if not _shadowed(n)]
    near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    suggestion = f": did you mean /{near[0]}?" if near else ": /help lists the commands"
    return "unknown", f"unknown command /{name}{suggestion} (//{name} sends it to the agent as typed)"


def lookup(line: str) -> tuple[SlashCommand, str] | None:
    """The local command a line invokes, and its argument text; ``None`` for anything else
    (a prompt, or one of the agent's own commands)."""
    word = command_word(line)
    if word is None:
        return None
    rest = line[1 + len(word) :]
    rest = rest[1:] if rest[:1] in (" ", "\t", "\n") else rest
    name = ALIASES.get(word, word)
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
