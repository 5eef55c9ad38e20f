"""``/race AGENT…``: the prompt typed next goes to a race of those agents instead of this
session's agent (``acpcli race`` with the terminal, its board and questions included), each
candidate starting from this conversation when it has one."""

from __future__ import annotations

from typing import Any

USAGE = "usage: /race AGENT… (the same agent twice runs twice); then type the prompt they race on"


async def race_command(ctx: Any, arg: str) -> int | None:
    """Read the next prompt, race it, come back to this session's prompt (``ctx``: the
    slash command's :class:`~acpcli.repl.commands.Context`)."""
    import anyio.to_thread

    agents = arg.split()
    if not agents:
        ctx.say(USAGE)
        return None
    text = await _next_prompt(agents)
    if text is None or not text.strip():
        ctx.say("no prompt: nothing was raced")
        return None
    from acpcli.processes import python_module_argv

    argv = [*python_module_argv("acpcli"), "race"]
    for agent in agents:
        argv += ["--agent", agent]
    live = ctx.live
    if live.cwd:
        argv += ["--cwd", live.cwd]
    if live.store.entries:  # the candidates start from this conversation
        argv += ["--session", live.session_id]
    argv.append(text)
    import signal

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the race's (it cancels it)
    try:
        code = await anyio.to_thread.run_sync(_attached, argv)
    finally:
        signal.signal(signal.SIGINT, previous)
    if code == 130:
        ctx.say("the race was cancelled: nothing of it is left", style="yellow")
    return None


async def _next_prompt(agents: list[str]) -> str | None:
    from prompt_toolkit import PromptSession

    from acpcli.text.safe import safe_line

    shown = safe_line(", ".join(agents))[:60]
    try:
        answer: str = await PromptSession().prompt_async(f"race {shown} › ")
    except (KeyboardInterrupt, EOFError):
        return None
    return answer


def _attached(argv: list[str]) -> int:
    """Run ``argv`` on this terminal and wait (its Ctrl-C back to the default: it is the
    race's, while the REPL ignores it)."""
    import subprocess

    return subprocess.Popen(argv, preexec_fn=_default_sigint).wait()


def _default_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
