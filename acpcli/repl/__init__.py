"""The interactive prompt (prompt-toolkit) around one live session.

Keys: Enter sends; Alt-Enter (or Esc then Enter) inserts a newline; Ctrl-C clears the line;
Ctrl-D leaves (the session stays resumable and the exact ``acpcli resume ID`` is printed).
During a turn, Ctrl-C sends ``session/cancel``; a second Ctrl-C within 3 seconds kills the
agent and leaves with exit code 130.

Slash commands are data (:data:`COMMANDS`); the agent's own commands (from
``available_commands_update``) are sent to it as prompts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acpcli.errors import ExitCode

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.session import AgentLink, LiveSession

@dataclass(frozen=True)
class SlashCommand:
    name: str
    help: str


COMMANDS = (
    SlashCommand("help", "show the commands and keys"),
    SlashCommand("cancel", "cancel the running turn"),
    SlashCommand("close", "close the session on the agent and leave"),
    SlashCommand("quit", "leave (the session stays resumable)"),
)


def complete_slash(text: str, agent_commands: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Completions for a line starting with ``/``: local commands, then the agent's own."""
    if not text.startswith("/") or " " in text:
        return []
    prefix = text[1:]
    out = [(f"/{c.name}", c.help) for c in COMMANDS if c.name.startswith(prefix)]
    for cmd in agent_commands:
        name = cmd.get("name")
        if isinstance(name, str) and name.startswith(prefix) and all(name != c.name for c in COMMANDS):
            out.append((f"/{name}", str(cmd.get("description") or "")))
    return out


def _history_file(cwd: str | None) -> Any:
    from acpcli.persistence import ensure_dir, history_dir

    key = hashlib.sha256((cwd or "").encode()).hexdigest()[:16]
    return ensure_dir(history_dir()) / f"{key}.history"


def permission_asker(env: Environment) -> Callable[[LiveSession, dict[str, Any]], Awaitable[dict[str, Any] | None]]:
    """An ``ask`` for :class:`~acpcli.client_side.PermissionPolicy` that shows every option."""

    async def ask(live: LiveSession, params: dict[str, Any]) -> dict[str, Any] | None:
        from prompt_toolkit import PromptSession

        if live.sink is not None and hasattr(live.sink, "flush"):
            live.sink.flush()  # commit the live region before drawing the question
        options = [o for o in params.get("options", []) if isinstance(o, dict)]
        call = params.get("toolCall") if isinstance(params.get("toolCall"), dict) else {}
        title = call.get("title") or call.get("toolCallId") or "a tool call"
        env.err.print(f"[bold yellow]permission:[/] {title} [dim]({call.get('kind') or 'other'})[/]")
        for n, option in enumerate(options, 1):
            env.err.print(f"  [bold]{n}[/] {option.get('name')} [dim]{option.get('kind')}[/]")
        session: PromptSession[str] = PromptSession()
        while True:
            try:
                answer = (await session.prompt_async(f"choose 1-{len(options)}: ")).strip()
            except (KeyboardInterrupt, EOFError):
                return None
            if answer.isdigit() and 1 <= int(answer) <= len(options):
                return {"outcome": {"outcome": "selected", "optionId": options[int(answer) - 1]["optionId"]}}

    return ask


async def run_repl(
    env: Environment,
    link: AgentLink,
    live: LiveSession,
    *,
    index: Any,
    writer: Any,
    agent: str,
) -> int:
    """The read-prompt-render loop. Returns the exit code."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer, Completion

    from acpcli.protocol import wire
    from acpcli.session import run_turn
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings

    class SlashCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Any:
            text = document.text_before_cursor
            for value, meta in complete_slash(text, live.store.available_commands or []):
                yield Completion(value, start_position=-len(text), display_meta=meta)

    keys = KeyBindings()

    @keys.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("c-c")
    def _clear(event: Any) -> None:
        event.current_buffer.reset()

    def toolbar() -> str:
        title = live.store.title or "(untitled)"
        state = live.store.state or "idle"
        return f" {agent} · {title} · {state} · Enter send, Alt-Enter newline, Ctrl-D leave "

    session: PromptSession[str] = PromptSession(
        history=FileHistory(str(_history_file(live.cwd))),
        completer=SlashCompleter(),
        key_bindings=keys,
        bottom_toolbar=toolbar,
        multiline=False,
        # The sent prompt is rendered from the session itself (the v2 echo, or the local
        # record of a v1 prompt), so the input line is erased rather than shown twice.
        erase_when_done=True,
    )
    env.err.print(f"[dim]session {live.session_id} with {link.features.display_name} — /help for commands[/]")
    code = int(ExitCode.OK)
    while True:
        if live.sink is not None and hasattr(live.sink, "flush"):
            live.sink.flush()
        try:
            text = await session.prompt_async("› ")
        except EOFError:
            break
        text = text.strip()
        if not text:
            continue
        if text in ("/quit", "/exit"):
            break
        if text == "/help":
            for c in COMMANDS:
                env.err.print(f"  /{c.name:<8} {c.help}", markup=False)
            env.err.print("  Enter sends · Alt-Enter newline · Ctrl-C cancels a turn · Ctrl-D leaves", markup=False)
            continue
        if text == "/cancel":
            env.err.print("nothing is running", markup=False)
            continue
        if text == "/close":
            if not link.features.close:
                env.err.print("this agent does not support session/close", markup=False)
                continue
            answer = await link.close(live.session_id)
            index.mark_closed(live.session_id)
            env.err.print(f"closed: the agent answered {answer}", markup=False)
            return code
        try:
            stop = await run_turn(
                link,
                live,
                [wire.text_block(text)],
                notice=lambda m: env.err.print(m, style="yellow", markup=False),
                tick=getattr(live.sink, "tick", None),
            )
        except KeyboardInterrupt:
            return int(ExitCode.INTERRUPTED)
        except Exception:
            # The agent died mid-turn (or worse): the error is reported by the CLI; say how
            # to come back, since the session may well survive on the agent's side.
            env.err.print(f"[dim]to come back later:[/] acpcli resume {live.session_id}")
            raise
        finally:
            writer.flush()
        if live.sink is not None and hasattr(live.sink, "turn_ended"):
            live.sink.turn_ended(stop or "end_turn")
        index.touch(live.session_id)
        if live.store.title:
            index.set_title(live.session_id, live.store.title)
    env.err.print(f"[dim]bye — come back with:[/] acpcli resume {live.session_id}")
    return code
