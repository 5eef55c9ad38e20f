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


def recorded_agent(record: SessionRecord, *, private: bool | None = None) -> AgentChoice:
    """The agent a recorded session ran with: its argv, plus the env and cwd additions of the
    configured agent of that name when it still launches the same command.

    The recorded command line is run again only from an index that is the user's own and
    nobody else may write (``private``; default: :func:`acpcli.paths.private_state`): it is
    then a command line the user gave. From a shared one (``ACPCLI_ALLOW_SHARED_HOME``) the
    agent is named again from the config, the built-ins or the registry by its recorded
    name (:func:`named_again`), and a session of a ``--cmd`` agent needs ``--cmd`` again."""
    from acpcli import config
    from acpcli.paths import private_state

    if not (private_state() if private is None else private):
        return named_again(record)
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


def named_again(record: SessionRecord) -> AgentChoice:
    """The agent of a session recorded in a shared index, by its recorded name alone: the
    configured or built-in agent of that name, else the registry's (installed or cached,
    never fetched); never the command line the index holds. Not known by that name: a
    :class:`UsageError` asking for ``--agent`` or ``--cmd``."""
    from acpcli import config
    from acpcli.paths import db_path
    from acpcli.text.safe import shown_id

    spec = config.load_config().agents.get(record.agent)  # a broken config is an error here
    if spec is not None:
        return AgentChoice(spec.name, list(spec.argv), dict(spec.env), str(spec.cwd) if spec.cwd else None, spec.protocol)
    launch = _cached_registry_launch(record.agent)
    if launch is not None:
        return AgentChoice(record.agent, launch[0], dict(launch[1]))
    raise UsageError(
        f"session {shown_id(record.id)} was made by agent {record.agent!r}, which is not a configured, "
        f"built-in or registry agent; the command line recorded for it in the shared session index "
        f"{db_path()} is not run",
        hint="name the agent again: --agent NAME or --cmd 'COMMAND'",
    )


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
    the agent's own (``agentInfo.name``), else the name it started under (:func:`starting_name`:
    the agent a launcher script starts, not the interpreter), else its program's file name."""
    if agent.name != "cmd":
        return agent.name
    if features.agent_name:
        return features.agent_name
    started = starting_name(agent)
    return started if started != "the agent" else Path(agent.argv[0]).name if agent.argv else "cmd"


#: Programs that run an agent rather than being one: its name is in the words after them.
_RUNNERS = frozenset({"env", "sh", "bash", "node", "npx", "uvx", "uv", "bun", "bunx", "deno", "pnpm", "yarn", "exec"})


#: What a launcher script's name ends with: the agent it starts is named by the word after it.
_SCRIPTS = frozenset({".py", ".js", ".mjs", ".cjs", ".ts", ".sh", ".rb", ".pl"})


def starting_name(agent: AgentChoice) -> str:
    """What to call ``agent`` while it starts (its ``agentInfo`` is not known yet): the
    configured name, else the program of its ``--cmd`` line with the words after it up to the
    first option; a script followed by a word launches the agent that word names
    (``python3 …/launch.py codex --home D`` -> ``codex``; ``npx -y @scope/agent`` -> ``@scope/agent``;
    ``python3 -m pkg.agent --delay 0`` -> ``pkg.agent``)."""
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
    program = Path(words[0]).name if "/" in words[0] and not words[0].startswith("@") else words[0]
    after: list[str] = []
    for word in words[1:3]:
        if word.startswith("-") or "/" in word:
            break  # an option's value, a file: they say nothing of the agent
        after.append(word)
    if Path(program).suffix in _SCRIPTS and after and not any(c in after[0] for c in "/=\\ "):
        return after[0]  # a launcher: the agent it starts
    return " ".join([program, *after])


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
