"""What a session command works on, validated before anything starts.

Which session (an id, a prefix, ``--last``), which agent, which directories, MCP servers and
protocol.

Order of work: every input (agent, directories, MCP servers, session id) is checked *before*
an agent is started or the index written, so a bad input costs nothing and leaves nothing
behind.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acpcli.errors import AcpcliError, SessionNotFound, UsageError
from acpcli.session.agent import AgentChoice, agent_arg, pick_agent, recorded_agent
from acpcli.text.safe import shown_id

if TYPE_CHECKING:
    from acpcli.history.index import SessionRecord
    from acpcli.session.context import Lifecycle


@dataclass
class SessionInputs:
    """Validated inputs of a lifecycle command."""

    agent: AgentChoice
    cwd: str
    additional_directories: list[str]
    mcp_servers: list[dict[str, Any]]
    mcp_names: list[str]
    protocol: str = "auto"
    log_file: Path | None = None
    #: Where the MCP servers came from when given on this command line ({} for --no-mcp);
    #: None: not given (load/resume then resolve the session's recorded references again).
    mcp_refs: dict[str, Any] | None = None


def resolve_dir(path: str | os.PathLike[str], option: str) -> str:
    """An absolute, normalized directory path; a missing one is a usage error."""
    absolute = os.path.abspath(os.path.expanduser(os.fspath(path)))
    if not os.path.isdir(absolute):
        what = "does not exist" if not os.path.exists(absolute) else "is not a directory"
        raise UsageError(f"{option} {os.fspath(path)}: {what}")
    return absolute


def mcp_servers(mcp_config: Path | None, names: Sequence[str] | None) -> tuple[list[dict[str, Any]], list[str]]:
    """ACP-shaped MCP servers from ``--mcp-config`` and ``--mcp NAME``, plus their names."""
    if mcp_config is None and not names:
        return [], []
    from acpcli import config

    from_file = config.load_mcp_file(mcp_config) if mcp_config is not None else {}
    cfg = config.load_config()
    merged = config.merge_mcp(from_file, cfg.mcp_servers, list(names or []))
    servers = config.to_acp_servers(merged)
    return servers, list(merged)


def session_inputs(
    *,
    agent: str | None,
    cmd: str | None,
    cwd: Path | None,
    add_dir: Sequence[Path] | None,
    mcp_config: Path | None,
    mcp: Sequence[str] | None,
    protocol: str | None,
    log_file: Path | None,
    default_agent: AgentChoice | None = None,
    default_cwd: str | None = None,
    default_add_dirs: Sequence[str] = (),
    no_add_dirs: bool = False,
    record: SessionRecord | None = None,
    no_mcp: bool = False,
) -> SessionInputs:
    """Validate every input of a lifecycle command; raises before anything is started.

    ``record`` is the index record of the session the command continues, if any: its
    protocol is spoken again unless ``--protocol`` or the agent's config says otherwise
    (see :func:`choose_protocol`)."""
    from acpcli.wire.negotiate import parse_protocol_choice

    if protocol is not None:
        parse_protocol_choice(protocol)
    choice = pick_agent(agent, cmd, default=default_agent)
    protocol = choose_protocol(protocol, choice, record)
    if cwd is not None:
        the_cwd = resolve_dir(cwd, "--cwd")
    elif default_cwd is not None:
        the_cwd = default_cwd
    elif choice.cwd is not None:
        the_cwd = resolve_dir(choice.cwd, f"the cwd of agent {choice.name!r}")
    else:
        the_cwd = os.getcwd()
    if no_add_dirs and add_dir:
        raise UsageError("give either --add-dir or --no-add-dirs, not both")
    if add_dir:
        dirs = [resolve_dir(d, "--add-dir") for d in add_dir]
    elif no_add_dirs:
        dirs = []
    else:
        dirs = list(default_add_dirs)
    if no_mcp and (mcp_config is not None or mcp):
        raise UsageError("give either --mcp/--mcp-config or --no-mcp, not both")
    servers, names = mcp_servers(mcp_config, mcp)
    refs: dict[str, Any] | None = None
    if no_mcp:
        refs = {"config": None, "names": []}
    elif mcp_config is not None or mcp:
        config_path = os.path.abspath(os.path.expanduser(os.fspath(mcp_config))) if mcp_config is not None else None
        refs = {"config": config_path, "names": list(mcp or [])}
    return SessionInputs(choice, the_cwd, dirs, servers, names, protocol, log_file, mcp_refs=refs)


def recorded_mcp(inputs: SessionInputs, record: SessionRecord | None) -> None:
    """load/resume/close/prompt --session: without --mcp, --mcp-config or --no-mcp, send the
    MCP servers the session was set up with again, resolved from their recorded references
    now (the config file and the config's servers as they are today; no secret is stored)."""
    refs = record.mcp_refs if record is not None else None
    if inputs.mcp_refs is not None or not refs:
        return
    config_path = refs.get("config")
    try:
        inputs.mcp_servers, inputs.mcp_names = mcp_servers(
            Path(config_path) if config_path else None, refs.get("names") or []
        )
    except AcpcliError as err:
        if not err.hint:
            err.hint = "the session's MCP servers could not be resolved again; --no-mcp goes on without them"
        raise


def choose_protocol(given: str | None, agent: AgentChoice, record: SessionRecord | None = None) -> str:
    """The protocol choice a command speaks: ``--protocol``, else the agent's configured
    ``protocol``, else the one the continued session was recorded with (only when the agent
    is launched by the same command line it was recorded with: another agent may not speak
    it), else ``auto``."""
    if given is not None:
        return given
    if agent.protocol is not None:
        return agent.protocol
    if record is not None and list(record.argv) == list(agent.argv):
        recorded = record.protocol_choice()
        if recorded is not None:
            return str(recorded)
    return "auto"


def lookup(session_id: str) -> SessionRecord:
    """The index record for an id or unique prefix (SessionNotFound otherwise).

    Read-only: looking up a bad id creates nothing, not even the database."""
    from acpcli.history.index import Index

    with Index.existing() as index:
        if index is None:
            raise SessionNotFound(f"no session {shown_id(session_id)!r} in the local index")
        return index.get(session_id)


def lookup_or_none(session_id: str) -> SessionRecord | None:
    try:
        return lookup(session_id)
    except SessionNotFound:
        return None


def last_session(agent: AgentChoice, cwd: str) -> str:
    """The most recently used active session of this agent (same name *and* command line,
    so two different ``--cmd`` agents are not confused; a ``--cmd`` agent by its command
    line alone, since it was recorded under the agent's own name) in ``cwd``, for ``--last``."""
    from acpcli.history.index import Index

    rows = []
    with Index.existing() as index:
        if index is not None:
            rows = [
                rec
                for rec in index.list_sessions(agent=None if agent.name == "cmd" else agent.name, cwd=cwd, state="active")
                if list(rec.argv) == list(agent.argv)
            ]
    if not rows:
        raise SessionNotFound(
            f"no earlier session of `{agent_arg(agent)}` in {cwd}", hint="drop --last to start a new session"
        )
    return rows[0].id


def last_session_here(cwd: str | os.PathLike[str] | None) -> str | None:
    """``--last`` with no agent named and no ``default_agent`` configured: the most recently
    used active session in ``cwd`` (default: here), whatever its agent; None when there is a
    default agent to follow instead (then :func:`last_session` decides)."""
    from acpcli import config
    from acpcli.history.index import Index

    try:
        if config.load_config().default_agent:
            return None
    except AcpcliError:
        pass  # an unreadable config names no default agent
    where = resolve_dir(cwd or os.getcwd(), "--cwd")
    rows = []
    with Index.existing() as index:
        if index is not None:
            rows = index.list_sessions(cwd=where, state="active", limit=1)
    if not rows:
        raise SessionNotFound(f"no earlier session in {where}", hint="drop --last to start a new session")
    return rows[0].id


@dataclass
class Options:
    """The session options of a command line, as given (nothing checked yet)."""

    agent: str | None = None
    cmd: str | None = None
    cwd: Path | None = None
    add_dir: Sequence[Path] | None = None
    no_add_dirs: bool = False
    mcp_config: Path | None = None
    mcp: Sequence[str] | None = None
    no_mcp: bool = False
    protocol: str | None = None
    log_file: Path | None = None

    def inputs(self, record: SessionRecord | None = None) -> SessionInputs:
        """:func:`session_inputs` for these options; a recorded session (``record``) gives
        the agent, cwd and roots unless the options say otherwise, and its MCP servers are
        resolved again when none are given."""
        inputs = session_inputs(
            agent=self.agent, cmd=self.cmd, cwd=self.cwd, add_dir=self.add_dir, mcp_config=self.mcp_config,
            mcp=self.mcp, protocol=self.protocol, log_file=self.log_file,
            # named only when it is the one to run: a --cmd given is not checked against it
            default_agent=recorded_agent(record) if record is not None and self.agent is None and self.cmd is None else None,
            default_cwd=record.cwd if record is not None else None,
            default_add_dirs=list(record.additional_dirs) if record is not None else (),
            no_add_dirs=self.no_add_dirs, record=record, no_mcp=self.no_mcp,
        )
        if record is not None:
            recorded_mcp(inputs, record)
        return inputs


def for_reattach(command: Lifecycle, session_id: str, options: Options) -> tuple[SessionInputs, SessionRecord | None]:
    """``load``/``resume ID``: the inputs, and the index record when the id is recorded here
    (a session made by another client needs ``--agent``/``--cmd``, and is recorded from then on)."""
    record = lookup_or_none(session_id)
    if record is not None:
        if options.cwd is not None and resolve_dir(options.cwd, "--cwd") != record.cwd:
            raise UsageError(
                f"session {shown_id(record.id)} belongs to {record.cwd}; --cwd {options.cwd} differs",
                hint="the agent restores a session in its own working directory; drop --cwd, "
                "or start a new session there",
            )
    elif options.agent is None and options.cmd is None:
        # Exit 8 like show, close and prompt --session: the id is unknown here.
        raise SessionNotFound(
            f"session {shown_id(session_id)!r} is not in the local index; say which agent holds it",
            hint=f"acpcli {command} {shown_id(session_id)} --agent NAME (or --cmd 'COMMAND') [--cwd DIR]",
        )
    return options.inputs(record), record


def refuse_unadvertised(
    record: SessionRecord, options: Options, method: str, *, again: str = " (--cmd or --agent asks it again)"
) -> None:
    """Refuse ``method`` (``session/resume``, ``session/close``, ``session/fork``) at once,
    before an agent starts, when the session's agent did not advertise it as the session was
    recorded (gemini: no resume, no close), and that agent is the one to run (no ``--agent``,
    ``--cmd`` or ``--protocol``: those ask the agent again, as ``again`` says). The error is
    the one the agent's own ``initialize`` answer would give
    (:func:`acpcli.wire.capabilities.require`, exit 6). Nothing is refused for a record that
    does not say (recorded before acpcli kept it)."""
    if options.agent is not None or options.cmd is not None or options.protocol is not None:
        return
    info = record.agent_info or {}
    advertised = info.get("advertised")
    if not isinstance(advertised, dict):
        return
    from acpcli.errors import CapabilityMissing
    from acpcli.wire import capabilities
    from acpcli.wire.negotiate import AgentFeatures

    def text(key: str) -> str | None:
        value = info.get(key)
        return value if isinstance(value, str) else None

    features = AgentFeatures(
        protocol_version=record.protocol_version or 1, reading="v1" if record.protocol_version == 1 else "v2-draft",
        agent_name=text("name"),
        agent_title=text("title"), agent_version=text("version"),
        load_via="session/load" if advertised.get("load") is True else None,
        resume=advertised.get("resume") is True, close=advertised.get("close") is True,
        fork=advertised.get("fork") is True,
    )
    try:
        capabilities.require(features, method)
    except CapabilityMissing as err:
        err.message = err.message.replace("it does not advertise", "it did not advertise", 1)
        err.message += " when this session was recorded" + again
        raise


def for_prompt(options: Options, session: str | None, last: bool) -> tuple[SessionInputs, SessionRecord | None]:
    """``prompt``: the inputs, and the record of the session it continues (``--session`` or
    ``--last``), or None for a new session."""
    if session and last:
        raise UsageError("give either --session or --last, not both")
    record = None
    if last and options.agent is None and options.cmd is None:
        # No agent named: the last session here, whatever agent it was made with.
        session = last_session_here(options.cwd)
        last = session is None
    if session is not None:
        record = lookup(session)
    inputs = options.inputs(record)
    if last:
        record = lookup(last_session(inputs.agent, inputs.cwd))
        if not options.add_dir:
            inputs.additional_directories = list(record.additional_dirs)
        inputs.protocol = choose_protocol(options.protocol, inputs.agent, record)
        recorded_mcp(inputs, record)
    return inputs, record
