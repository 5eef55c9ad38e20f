"""What ``acpcli auth`` does: list, pick and run an agent's login method, or log out.

Protocol-driven methods (type ``agent``) are sent as ``authenticate`` (v1) / ``auth/login``
(v2). A ``terminal`` method is never sent: the spec has the client run the agent's own
command line plus the method's ``args`` and ``env`` in the person's terminal, and take exit
status 0 as success. That runs after the ACP connection is closed, so the login program has
the terminal to itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from acpcli.errors import CapabilityMissing, ExitCode, Interrupted, LoginFailed, UsageError
from acpcli.protocol.wire import LoginMethod
from acpcli.text.safe import safe_line

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.session.agent import AgentChoice


def _list(env: Environment, methods: list[LoginMethod]) -> None:
    from rich.markup import escape

    for method in methods:
        mid, kind, name, desc = method.id, method.type, method.name, method.description
        if env.stdout_is_terminal:
            line = f"[bold]{escape(mid)}[/]  {escape(name)} [dim]({escape(kind)})[/]" + (f" — {escape(desc)}" if desc else "")
            env.out.print(line, highlight=False)
        else:
            fields = (safe_line(str(x).replace("\t", " ").replace("\n", " ")) for x in (mid, kind, name, desc))
            env.stdout.write("\t".join(fields) + "\n")  # the agent named them: shown, never obeyed
    env.stdout.flush()


async def _pick(env: Environment, methods: list[LoginMethod], wanted: str | None, agent: str) -> LoginMethod:
    known = ", ".join(m.id for m in methods)
    if wanted is not None:
        for method in methods:
            if method.id == wanted:
                return method
        raise UsageError(f"{agent} has no login method {wanted!r}", hint=f"choose one of: {known}")
    if len(methods) == 1:
        return methods[0]
    if not env.stdin_isatty:
        raise UsageError(f"{agent} offers several login methods: pass --method ID", hint=f"one of: {known}")
    from acpcli.repl.asking import choose

    picked = await choose(f"log in with 1-{len(methods)}:", [f"{m.label} ({m.id}, {m.type})" for m in methods])
    if picked is None:
        raise Interrupted("no login method chosen")  # dismissed (Ctrl-C): exit 130
    return methods[picked]


def _terminal_login(env: Environment, choice: AgentChoice, method: LoginMethod, agent_env: dict[str, str]) -> int:
    """Run the agent's login program in this terminal; 0 means logged in."""
    import shlex
    import subprocess

    args = [a for a in method.raw.get("args") or [] if isinstance(a, str)]
    extra = {k: v for k, v in (method.raw.get("env") or {}).items() if isinstance(k, str) and isinstance(v, str)}
    argv = [*choice.argv, *args]
    env.err.print(f"running the agent's login: {shlex.join(argv)}", style="dim", markup=False, highlight=False)
    try:
        done = subprocess.run(argv, env={**os.environ, **agent_env, **extra}, cwd=choice.cwd or None, check=False)
    except OSError as err:
        raise LoginFailed(f"cannot run the login command {argv[0]}: {err.strerror or err}") from None
    if done.returncode != 0:
        raise LoginFailed(f"the login command exited with status {done.returncode}")
    return int(ExitCode.OK)


def run_auth(
    agent_name: str | None,
    cmd: str | None,
    method_id: str | None,
    *,
    list_only: bool,
    logout: bool,
    protocol: str | None,
    log_file: Path | None,
    timeout: str | None = None,
) -> int:
    """``acpcli auth``; see the command's help."""
    import anyio

    from acpcli.cli.streams import environment
    from acpcli.config import parse_timeout
    from acpcli.protocol import wire
    from acpcli.session.agent import env_extra, pick_agent
    from acpcli.session.launch import link_for
    from acpcli.wire.negotiate import parse_protocol_choice

    if protocol is not None:
        parse_protocol_choice(protocol)
    seconds = parse_timeout(timeout)
    if sum((list_only, logout, method_id is not None)) > 1:
        raise UsageError("give only one of --list, --logout and --method")
    choice = pick_agent(agent_name, cmd)
    env = environment()
    agent_env = env_extra(choice)

    elicit = None
    if env.interactive:  # a login may send you to a page (a link, elicitation): shown, never opened
        from acpcli.repl.person import AtTerminal

        elicit = AtTerminal(env).elicit

    async def main() -> LoginMethod | None:
        async with link_for(choice, protocol=protocol, log_file=log_file, timeout=seconds, elicit=elicit) as link:
            features = link.features
            name = features.display_name
            methods = wire.login_methods(features.auth_methods)
            if list_only:
                if not methods:
                    env.err.print(f"{name} advertises no login methods", markup=False, highlight=False)
                _list(env, methods)
                return None
            if logout:
                await link.logout()
                env.err.print(f"logged out of {name}", markup=False, highlight=False)
                return None
            if not methods:
                raise CapabilityMissing(
                    f"{name} advertises no login methods",
                    hint="it may need none, or its own login tool (see the agent's documentation)",
                )
            method = await _pick(env, methods, method_id, name)
            if method.type == "terminal":
                return method  # run once the connection is closed
            if method.type != "agent":
                raise CapabilityMissing(f"{method.id!r} is a {method.type} login, which acpcli does not know how to run")
            await link.login(method.id)
            env.err.print(f"logged in to {name} with {method.name or method.id}", markup=False, highlight=False)
            return None

    terminal = anyio.run(main)
    if terminal is None:
        return int(ExitCode.OK)
    return _terminal_login(env, choice, terminal, agent_env)
