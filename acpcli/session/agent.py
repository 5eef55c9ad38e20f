"""Which agent runs a session, and how it is launched.

The chosen or recorded agent, its environment additions, the name it is recorded and shown
under, and how to name it again in a hint.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from acpcli.errors import AcpcliError, UsageError

if TYPE_CHECKING:
    from acpcli.history.index import SessionRecord
    from acpcli.wire.negotiate import AgentFeatures


@dataclass
class AgentChoice:
    """Which agent to run and how to record it."""

    name: str  # a configured/built-in name, or "cmd" for --cmd
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    protocol: str | None = None  # the configured agent's ``protocol``, if any


def pick_agent(agent: str | None, cmd: str | None, *, default: AgentChoice | None = None) -> AgentChoice:
    """``--agent NAME`` or ``--cmd 'ARGV'`` (not both); else ``default``; else an error."""
    from acpcli import config

    if agent and cmd:
        raise UsageError("give either --agent or --cmd, not both")
    if cmd is not None:
        spec = config.agent_from_cmd(cmd)
        return AgentChoice("cmd", list(spec.argv), dict(spec.env))
    if agent is None and default is not None:
        return default
    cfg = config.load_config()
    if agent is None:
        agent = getattr(cfg, "default_agent", None)
        if not agent:
            names = ", ".join(sorted(cfg.agents))
            raise UsageError(
                "no agent chosen: pass --agent NAME or --cmd 'COMMAND'",
                hint=f"known agents: {names} (try --agent demo)",
            )
    try:
        spec = config.resolve_agent(agent, cfg)
    except UsageError as unknown:
        return registry_agent(agent, unknown, typo=bool(config.did_you_mean(agent, cfg.agents)))
    return AgentChoice(spec.name, list(spec.argv), dict(spec.env), str(spec.cwd) if spec.cwd else None, spec.protocol)


def registry_agent(name: str, unknown: UsageError, *, typo: bool = False) -> AgentChoice:
    """The ACP registry's agent ``name``: its installed binary; else, from the registry (the
    cached copy first; fetched when it does not list it), through npx or uvx, else its binary
    installed now (saying what is downloaded from where). Not listed: ``unknown`` (the registry's
    trouble, if any, in its hint -- unless ``typo``: ``unknown`` names a known agent close to
    ``name``, and one line says all). Listed but not runnable here: :class:`AgentStartError`."""
    from acpcli import notices
    from acpcli.agents import install, registry
    from acpcli.errors import AgentStartError, RegistryError

    copy = install.installed(name)
    if copy is not None:  # installed earlier: no registry needed
        return AgentChoice(name, copy.argv(), dict(copy.env))
    try:
        entry = registry.find(name)
    except RegistryError as exc:
        # `--agent cladue` offline: "did you mean 'claude'?" is the answer, not the registry
        unknown.hint = None if typo else f"nor could the agent registry be read: {exc}"
        raise unknown from None
    if entry is None:
        raise unknown
    how = registry.launch(entry)
    if how.how == "binary" and how.found is None and registry.platform_key() in entry.binary:
        target = entry.binary[registry.platform_key()]
        notices.warn("registry-install", f"installing registry agent {entry.id!r} {entry.version}: downloading {target.archive}")
        copy = install.install(entry)
        return AgentChoice(entry.id, copy.argv(), dict(copy.env))
    if how.found is None:
        raise AgentStartError(
            registry.not_runnable(entry, how),
            hint="install npx (Node.js) or uvx (uv), or configure the agent under [agents.NAME]",
        )
    return AgentChoice(entry.id, how.argv, how.env)


def _cached_registry_launch(name: str) -> tuple[list[str], dict[str, str]] | None:
    """How the cached ACP registry's agent ``name`` runs here (argv, env); never fetches."""
    from acpcli.agents import install, registry

    try:
        installed = install.installed(name)
        if installed is not None:
            return installed.argv(), dict(installed.env)
        copy = registry.cached()
        entry = copy.agents.get(name) if copy is not None else None
        if entry is None:
            return None
        how = registry.launch(entry)
    except Exception:  # noqa: BLE001 - an unreadable cache is no reason to stop a session
        return None
    return (how.argv, how.env) if how.found else None


def recorded_agent(record: SessionRecord) -> AgentChoice:
    """The agent a recorded session ran with: its argv, plus the env and cwd additions of the
    configured agent of that name when it still launches the same command."""
    from acpcli import config

    choice = AgentChoice(record.agent, list(record.argv))
    try:
        spec = config.load_config().agents.get(record.agent)
    except AcpcliError:
        return choice  # a broken config must not stop a session that needs none of it
    if spec is not None and list(spec.argv) == choice.argv:
        choice.env = dict(spec.env)
        choice.cwd = str(spec.cwd) if spec.cwd else None
        choice.protocol = spec.protocol
    elif spec is None and (launch := _cached_registry_launch(record.agent)) and launch[0] == choice.argv:
        choice.env = dict(launch[1])  # a registry agent: its entry's env again
    return choice


def agent_arg(agent: AgentChoice) -> str:
    """What to type to run ``agent`` again: its name while that name still runs this very
    command line (a configured or built-in agent), else ``--cmd '…'``."""
    import shlex

    from acpcli import config

    if agent.name != "cmd":
        try:
            spec = config.load_config().agents.get(agent.name)
        except AcpcliError:
            spec = None
        if spec is not None and list(spec.argv) == list(agent.argv):
            return agent.name
        if spec is None and (launch := _cached_registry_launch(agent.name)) and launch[0] == list(agent.argv):
            return agent.name  # a registry agent that still runs this way
    return f"--cmd {shlex.quote(shlex.join(agent.argv))}"


def agent_label(agent: AgentChoice, features: AgentFeatures) -> str:
    """The name a session is recorded and shown under: the configured name, or for ``--cmd``
    the agent's own (``agentInfo.name``), else its program's file name."""
    if agent.name != "cmd":
        return agent.name
    return features.agent_name or (Path(agent.argv[0]).name if agent.argv else "cmd")


#: Programs that run an agent rather than being one: its name is in the words after them.
_RUNNERS = frozenset({"env", "sh", "bash", "node", "npx", "uvx", "uv", "bun", "bunx", "deno", "pnpm", "yarn", "exec"})


def starting_name(agent: AgentChoice) -> str:
    """What to call ``agent`` while it starts (its ``agentInfo`` is not known yet): the
    configured name, else the program of its ``--cmd`` line with the words after it
    (``python3 …/launch.py claude`` -> ``launch.py claude``; ``npx -y @scope/agent`` -> ``@scope/agent``)."""
    if agent.name != "cmd":
        return agent.name
    words = list(agent.argv)
    while words and (
        Path(words[0]).name in _RUNNERS
        or Path(words[0]).name.startswith("python")
        or words[0].startswith("-")
        or "=" in words[0]
    ):
        words.pop(0)
    if not words or " " in words[0]:  # nothing left, or a shell's script (`sh -c '…'`)
        return "the agent"
    shown = [Path(words[0]).name if "/" in words[0] and not words[0].startswith("@") else words[0]]
    shown += [word for word in words[1:3] if not word.startswith("-")]
    return " ".join(shown)


def env_extra(agent: AgentChoice) -> dict[str, str]:
    from acpcli.config import expand_vars

    return {k: expand_vars(v, os.environ, f"agent {agent.name!r}: env {k}") for k, v in agent.env.items()}


def agent_stderr_log(agent: AgentChoice) -> Path | None:
    """Where the agent's stderr is kept (appended, one file per agent name)."""
    from acpcli.paths import ensure_dir, log_dir

    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in agent.name)
    try:
        return ensure_dir(log_dir()) / f"{safe}.stderr.log"
    except OSError:
        return None  # a read-only home: the agent's stderr is still drained, just not kept
