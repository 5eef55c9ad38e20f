"""What the session commands do, once their options are parsed.

Imported lazily by the command functions (it pulls in anyio, sqlite3 and the session layer),
so ``--help`` and completion never pay for it. Order of work in every command: validate all
input (agent, directories, MCP servers, session id) *before* starting an agent or writing to
the index, so a bad input costs nothing and leaves nothing behind.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acpcli.env import Environment
from acpcli.errors import AcpcliError, SessionNotFound, UsageError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from contextlib import AbstractAsyncContextManager

    from acpcli.client_side import PermissionPolicy, Refusals
    from acpcli.negotiate import AgentFeatures
    from acpcli.persistence import EventWriter, Index, SessionRecord
    from acpcli.render import View
    from acpcli.session import AgentLink, LiveSession
    from acpcli.store import Store
    from acpcli.supervise import Supervisor


@dataclass
class AgentChoice:
    """Which agent to run and how to record it."""

    name: str  # a configured/built-in name, or "cmd" for --cmd
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    protocol: str | None = None  # the configured agent's ``protocol``, if any


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
    spec = config.resolve_agent(agent, cfg)
    return AgentChoice(spec.name, list(spec.argv), dict(spec.env), str(spec.cwd) if spec.cwd else None, spec.protocol)


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
    from acpcli.negotiate import parse_protocol_choice

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
    from acpcli.paths import db_path
    from acpcli.persistence import Index

    if not db_path().exists():
        raise SessionNotFound(f"no session {session_id!r} in the local index")
    with Index.open(read_only=True) as index:
        return index.get(session_id)


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
    return choice


def lookup_or_none(session_id: str) -> SessionRecord | None:
    try:
        return lookup(session_id)
    except SessionNotFound:
        return None


def environment() -> Environment:
    """The process's streams, with logging pointed away from them (to the log file)."""
    from acpcli.env import configure_logging

    configure_logging()
    return Environment.from_process()


# -- running an agent ---------------------------------------------------------------------


@dataclass
class Run:
    """What one command run needs beyond its inputs: environment, view, REPL wish."""

    env: Environment
    repl: bool
    title: str | None = None
    permissions: str | None = None
    fs: bool = True
    terminal: bool = True
    raw: bool = False  # --raw: stdout carries the JSON-RPC frames instead of the transcript
    refusals: Refusals | None = None  # the run's client_side.Refusals, once an agent is linked
    supervisor: Supervisor | None = None  # the acpcli.supervise.Supervisor of the command, if any


def _env_extra(agent: AgentChoice) -> dict[str, str]:
    from acpcli.config import expand_vars

    return {k: expand_vars(v, os.environ, f"agent {agent.name!r}: env {k}") for k, v in agent.env.items()}


def agent_label(agent: AgentChoice, features: AgentFeatures) -> str:
    """The name a session is recorded and shown under: the configured name, or for ``--cmd``
    the agent's own (``agentInfo.name``), else its program's file name."""
    if agent.name != "cmd":
        return agent.name
    return features.agent_name or (Path(agent.argv[0]).name if agent.argv else "cmd")


def _record(inputs: SessionInputs, session_id: str, features: AgentFeatures, title: str | None) -> SessionRecord:
    from acpcli.negotiate import protocol_of
    from acpcli.persistence import SessionRecord

    return SessionRecord(
        id=session_id,
        agent=agent_label(inputs.agent, features),
        argv=inputs.agent.argv,
        cwd=inputs.cwd,
        additional_dirs=inputs.additional_directories,
        mcp_servers=inputs.mcp_names,
        protocol_version=features.protocol_version,
        protocol=protocol_of(features),
        title=title,
        agent_info={"name": features.agent_name, "title": features.agent_title, "version": features.agent_version},
    )


def _decider(run: Run, agent: AgentChoice | None = None) -> PermissionPolicy:
    """The run's permission policy: ``--permissions``, else the ``permissions`` config key (the
    agent's, then the top-level one), else ``ask`` on a terminal and ``deny`` in scripts. Each
    refusal by the policy is one line on stderr (:class:`~acpcli.client_side.Refusals`)."""
    from acpcli.client_side import Refusals, permission_decider

    ask = None
    if run.repl:
        from acpcli.repl import permission_asker

        ask = permission_asker(run.env)
    policy = run.permissions
    if policy is None and agent is not None:
        from acpcli.config import configured_permissions
        from acpcli.errors import ConfigError

        try:
            policy = configured_permissions(agent.name if agent.name != "cmd" else None, agent.argv)
        except ConfigError as err:
            # A broken config must not stop a --cmd run that needs none of it; the default
            # (ask on a terminal, deny in scripts) is never looser than what it could have said.
            _stderr_line(run.env, f"acpcli: warning: the permissions config key is not used: {err}")
    if run.refusals is None:
        run.refusals = Refusals(lambda line: _stderr_line(run.env, line))
    return permission_decider(run.env, policy, ask, run.refusals)


def _stderr_line(env: Environment, line: str) -> None:
    env.stderr.write(line + "\n")
    env.stderr.flush()


#: Event-log markers around a load's replay: a replay is the whole conversation, so a
#: transcript rebuilt from the log starts again at the last replay that completed.
REPLAY_START = "acpcli/replay-start"
REPLAY_END = "acpcli/replay-end"
REPLAY_ABORT = "acpcli/replay-abort"


async def attach(
    link: AgentLink,
    command: str,
    inputs: SessionInputs,
    run: Run,
    index: Index,
    writer: EventWriter,
    view: View | None,
    session_id: str | None,
) -> LiveSession:
    """Create, load or resume the session over ``link`` and keep the index in step.

    A session the index did not know is recorded before its replay arrives and removed
    again if the agent refuses it, so a failed command leaves nothing behind.
    """
    if command == "new":
        live = await _logged_in(
            link, run, lambda: link.new(inputs.cwd, inputs.additional_directories, inputs.mcp_servers, sink=view)
        )
        index.upsert_session(_record(inputs, live.session_id, link.features, run.title))
        if inputs.mcp_refs:
            index.set_mcp_refs(live.session_id, inputs.mcp_refs)
        live.recorder = writer
        return live
    assert session_id is not None
    try:
        known = index.get(session_id)
    except SessionNotFound:
        known = None
    sid = known.id if known is not None else session_id
    if known is None:  # created elsewhere: record it from now on
        index.upsert_session(_record(inputs, sid, link.features, run.title))
    if command == "resume" and known is not None and view is not None and not run.repl:
        from acpcli.cli.listing import store_from_events

        run.env.err.print("[dim]── stored locally by acpcli, not replayed by the agent ──[/]")
        view.print_store(store_from_events(index, sid))
        run.env.err.print("[dim]── resumed ──[/]")
    if command == "load":
        from acpcli import capabilities

        capabilities.require(link.features, "session/load")  # refuse before marking the log
        writer.append(sid, REPLAY_START, "{}")
    method = link.load if command == "load" else link.resume
    wire_id = known.wire_id if known is not None else sid
    fresh = False
    try:
        live = await _logged_in(
            link,
            run,
            lambda: method(
                wire_id, inputs.cwd, inputs.additional_directories, inputs.mcp_servers, sink=view, recorder=writer,
                local_id=sid,
            ),
        )
    except BaseException as err:
        if known is None:
            writer.flush()
            index.delete(sid)
        else:
            if command == "load":
                writer.append(sid, REPLAY_ABORT, "{}")
            writer.flush()
        from acpcli.cli import forgotten

        if known is None or not forgotten.agent_forgot(err) or forgotten.had_turns(index, sid):
            _raise_if_unknown(err, sid, known, link.features.display_name)
            raise
        # Never prompted: nothing to lose. A fresh agent session stands in under the same id.
        live = await _logged_in(link, run, lambda: forgotten.stand_in(link, known, inputs, run, index, writer, view))
        fresh = True
    if command == "load" and not fresh:
        await link.settle(live)  # a replay may trail the response (gemini)
        writer.append(sid, REPLAY_END, "{}")
    writer.flush()
    if known is not None and inputs.mcp_refs is not None:
        # --mcp / --mcp-config / --no-mcp replaced the session's MCP servers: remember them.
        index.set_mcp_refs(sid, inputs.mcp_refs or None)
        known.mcp_servers = list(inputs.mcp_names)
        index.upsert_session(known)
    if known is not None and list(known.additional_dirs) != list(inputs.additional_directories):
        # --add-dir / --no-add-dirs replaced the roots: remember what the agent now has.
        known.additional_dirs = list(inputs.additional_directories)
        index.upsert_session(known)
    _record_protocol(index, known, link.features)
    index.touch(sid)
    if run.title:
        index.set_title(sid, run.title)
    return live


def _record_protocol(index: Index, known: SessionRecord | None, features: AgentFeatures) -> None:
    """A recorded session continued over another protocol (``--protocol``) speaks that one
    from now on: record it, so the next command does not fall back to the old one."""
    from acpcli.negotiate import protocol_of

    if known is None:
        return
    spoken = protocol_of(features)
    if known.protocol != spoken or known.protocol_version != features.protocol_version:
        known.protocol, known.protocol_version = spoken, features.protocol_version
        index.upsert_session(known)


async def _logged_in(link: AgentLink, run: Run, setup: Callable[[], Awaitable[LiveSession]]) -> LiveSession:
    """Run a session setup; when the agent answers ``auth_required`` on a terminal, offer its
    login methods and try once more after a login (scripts get exit 10 and the hint)."""
    from acpcli.errors import AuthRequired

    try:
        return await setup()
    except AuthRequired as err:
        if not run.repl:
            raise
        from acpcli.repl import offer_login

        if not await offer_login(run.env, link, err):
            raise
    return await setup()


@contextmanager
def _auth_hinted(agent: AgentChoice) -> Iterator[None]:
    """An ``auth_required`` error leaves with how to log in outside a session."""
    from acpcli.errors import AuthRequired, leaf_error

    try:
        yield
    except BaseException as err:
        leaf = leaf_error(err)
        if isinstance(leaf, AuthRequired) and not leaf.hint:
            leaf.hint = f"log in with `acpcli auth {agent_arg(agent)}`, then run this again"
        raise


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
    return f"--cmd {shlex.quote(shlex.join(agent.argv))}"


def _raise_if_unknown(
    err: BaseException, session_id: str, known: SessionRecord | None = None, agent_name: str = "the agent"
) -> None:
    """A load/resume answered "not found" (-32002 Resource not found, or an error whose message
    or data says the session was not found / its identifier is invalid, see
    :func:`acpcli.cli.forgotten.agent_forgot`) becomes :class:`UnknownSession` (exit 8, like an
    id missing from the local index), with a hint that is true: ``known`` is the index record
    (None: the session is not recorded here). Other failures stay what they are."""
    from acpcli.cli import forgotten
    from acpcli.errors import RpcError, UnknownSession

    if not isinstance(err, RpcError) or isinstance(err, UnknownSession) or not forgotten.agent_forgot(err):
        return
    unknown = UnknownSession(err.code, err.rpc_message, err.data, method=err.method)
    if known is not None:
        unknown.hint = forgotten.lost_hint(known, agent_name)
    else:
        unknown.hint = (
            f"{agent_name} does not know {session_id}, and it is not recorded here either: "
            "check the id (`acpcli sessions --remote` asks the agent)"
        )
    raise unknown from err


def agent_stderr_log(agent: AgentChoice) -> Path | None:
    """Where the agent's stderr is kept (appended, one file per agent name)."""
    from acpcli.paths import ensure_dir, log_dir

    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in agent.name)
    try:
        return ensure_dir(log_dir()) / f"{safe}.stderr.log"
    except OSError:
        return None  # a read-only home: the agent's stderr is still drained, just not kept


def link_for(
    agent: AgentChoice, *, protocol: str | None = None, log_file: Path | None = None, run: Run | None = None
) -> AbstractAsyncContextManager[AgentLink]:
    """``open_link`` for a chosen agent: its env additions, stderr log, permission policy.

    Terminal logins are offered (v1 ``auth.terminal``) by ``acpcli auth`` (``run`` is None),
    which runs them, and by sessions with a person at the keyboard, who can be sent there; a
    script would only be told to log in elsewhere, so it does not offer them.
    """
    from acpcli.config import step_timeout
    from acpcli.negotiate import ClientOffer
    from acpcli.session import open_link

    offer = ClientOffer()
    decider = None
    if run is not None:
        offer = ClientOffer(
            read_text_file=run.fs, write_text_file=run.fs, terminal=run.terminal, auth_terminal=run.env.stdin_isatty
        )
        decider = _decider(run, agent)
    return open_link(
        agent.argv,
        env_extra=_env_extra(agent),
        choice=protocol or agent.protocol or "auto",  # type: ignore[arg-type]  # validated by the caller / config
        offer=offer,
        log_file=log_file,
        stderr_log=agent_stderr_log(agent),
        decide_permission=decider,
        tap=_raw_tap(run, log_file),
        policy=decider.policy if decider is not None else None,
        refusals=decider.refusals if decider is not None else None,
        step_timeout=step_timeout(),
    )


def _raw_tap(run: Run | None, log_file: Path | None = None) -> Any:
    if run is None:
        return None
    supervisor = run.supervisor
    if not run.raw:
        if supervisor is None or log_file is None:
            return None
        # --log-file under a supervisor: a write failure stops the command (exit 17) rather
        # than breaking the connection mid-frame.
        from acpcli.supervise import GuardedTap
        from acpcli.wiretap import WireTap

        return GuardedTap(WireTap(log_file), f"the wire log {log_file}", supervisor)
    from acpcli.wiretap import StreamTap

    tap = StreamTap(run.env.stdout)
    if supervisor is None:
        return tap
    from acpcli.supervise import GuardedTap

    return GuardedTap(tap, "the frames to standard output", supervisor)


def _link(inputs: SessionInputs, run: Run) -> AbstractAsyncContextManager[AgentLink]:
    return link_for(inputs.agent, protocol=inputs.protocol, log_file=inputs.log_file, run=run)


def _exporter(session_id: str) -> Any:
    """``/export``: the stored transcript of the REPL's session, like ``acpcli export``."""

    def export(path: str, output_format: str) -> None:
        from acpcli.cli.listing import export

        try:
            export(session_id, output_format, Path(path))
        except OSError as err:
            raise UsageError(f"cannot write {path}: {err.strerror or err}") from None

    return export


def run_lifecycle(command: str, inputs: SessionInputs, run: Run, session_id: str | None = None) -> int:
    """``new``, ``load`` or ``resume``: start the agent, set the session up, record it,
    then hand over to the REPL or print what a script needs (``new``: the id; ``load``:
    the replayed transcript; ``resume``: nothing)."""
    import anyio

    from acpcli.errors import ExitCode
    from acpcli.supervise import Supervisor

    supervisor = run.supervisor = Supervisor()

    async def main() -> int:
        from acpcli.cli import interactive
        from acpcli.render import make_view
        from acpcli.safestore import open_index, verdict

        def storage_failed(message: str) -> None:
            if run.repl:  # a person is watching: say it now, the session goes on
                run.env.note(f"acpcli: warning: {message}; this session goes on unsaved", style="yellow")

        index = open_index(on_failure=storage_failed)
        writer = supervisor.writer = index.writer()
        reattach = run.repl and command in ("load", "resume")  # the REPL draws the replay whole
        if reattach:
            view = interactive.held_view(run.env)
        else:
            view = make_view(run.env, final_only=not run.repl) if (command != "resume" or run.repl) else None
        try:
            async with _link(inputs, run) as link:
                supervisor.link = link
                if reattach:
                    assert session_id is not None
                    interactive.check_capability(link.features, command)  # before anything is shown
                    local = _local_store(index, session_id) if command == "resume" else None
                    interactive.banner(run.env, session_id, link.features.display_name)
                live = await attach(link, command, inputs, run, index, writer, view, session_id)
                if run.repl:
                    from acpcli.repl import run_repl

                    if reattach:
                        view = await interactive.show_replay(run.env, link, live, command, view, local)
                    return await run_repl(
                        run.env, link, live, index=index, writer=writer, agent=agent_label(inputs.agent, link.features),
                        export=_exporter(live.session_id), banner=not reattach,
                    )
                if view is not None:
                    view.close()
                    view = None
                if command == "new":
                    from acpcli.safe_text import safe_line

                    run.env.stdout.write(safe_line(live.session_id) + "\n")  # the agent chose it
                    run.env.stdout.flush()
                if live.store.title:
                    index.set_title(live.session_id, live.store.title)
                return int(ExitCode.OK)
        finally:
            supervisor.link = None
            try:
                if view is not None:
                    view.close()
            finally:
                writer.close()
                index.close()
                verdict(index)

    with _auth_hinted(inputs.agent):
        return anyio.run(supervisor.run, main)


def _local_store(index: Index, session_id: str) -> Store | None:
    """The transcript acpcli recorded for ``session_id`` (``None`` for a session it does not know)."""
    from acpcli.cli.listing import store_from_events

    try:
        known = index.get(session_id)
    except SessionNotFound:
        return None
    return store_from_events(index, known.id)


def run_close(record: SessionRecord, inputs: SessionInputs, run: Run) -> int:
    """Make the session active (resume if supported), then ``session/close``."""
    import anyio

    from acpcli.errors import CapabilityMissing, ExitCode

    async def main() -> int:
        import json

        from acpcli import capabilities
        from acpcli.cli import forgotten
        from acpcli.persistence import Index

        async with _link(inputs, run) as link:
            try:
                capabilities.require(link.features, "session/close")
                try:
                    if link.features.resume:
                        await link.resume(
                            record.wire_id, inputs.cwd, inputs.additional_directories, inputs.mcp_servers,
                            local_id=record.id,
                        )
                    answer = await link.close(record.id)
                except BaseException as err:
                    if not forgotten.agent_forgot(err):
                        raise
                    with Index.open(read_only=True) as reader:
                        turns = forgotten.had_turns(reader, record.id)
                    if turns:
                        _raise_if_unknown(err, record.id, record, link.features.display_name)
                        raise
                    # Never prompted: the agent holds nothing of it, so there is nothing to close there.
                    run.env.err.print(
                        f"closed {record.id}: {link.features.display_name} no longer knew it "
                        "(it never had a turn), so it is closed here only",
                        markup=False,
                        highlight=False,
                    )
                    return int(ExitCode.OK)
            finally:
                with Index.open() as index:
                    index.mark_closed(record.id)
        said = f" (the agent answered {json.dumps(answer)})" if answer else ""  # {} says nothing
        run.env.err.print(f"closed {record.id}{said}", markup=False, highlight=False)
        return int(ExitCode.OK)

    from acpcli.supervise import Supervisor

    try:
        return anyio.run(Supervisor().run, main)  # SIGTERM/SIGHUP: stop the agent, exit 143/129
    except CapabilityMissing as err:
        err.message += " (marked closed locally)"
        raise


def prompt_text(text: Sequence[str] | None, file: Path | None, env: Environment) -> str:
    """The prompt from arguments, ``-f FILE`` (``-`` for stdin), or a piped stdin."""
    if text and file is not None:
        raise UsageError("give the prompt as arguments or with -f, not both")
    if text:
        result = " ".join(text)
    elif file is not None:
        if str(file) == "-":
            result = read_stdin_text(env)
        else:
            try:
                data = Path(file).read_bytes()
            except OSError as err:
                raise UsageError(f"cannot read prompt file {file}: {err.strerror or err}") from None
            result = prompt_from_bytes(data, f"prompt file {file}")
    elif not env.stdin_isatty:
        result = read_stdin_text(env)
    else:
        raise UsageError("no prompt: pass TEXT, -f FILE, or pipe it on stdin")
    if not result.strip():
        raise UsageError("the prompt is empty")
    return result


def prompt_from_bytes(data: bytes, where: str) -> str:
    """A prompt's bytes as text: UTF-8 without NUL bytes, else a usage error naming ``where``.

    The one check for ``-f FILE`` and standard input alike, so a binary file piped in is
    refused exactly as the same file given with ``-f``.
    """
    nul = data.find(b"\0")
    if nul >= 0:
        raise UsageError(f"cannot read {where}: binary data, not text (a NUL byte at offset {nul})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(
            f"cannot read {where}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})"
        ) from None


def read_stdin_text(env: Environment) -> str:
    """Standard input as a prompt, checked like a prompt file (:func:`prompt_from_bytes`)."""
    raw = getattr(env.stdin, "buffer", None)
    try:
        data = raw.read() if raw is not None else env.stdin.read().encode("utf-8", "surrogateescape")
    except UnicodeError:  # a text stream that could not decode what it read
        raise UsageError("cannot read the prompt from standard input: not UTF-8 text") from None
    except OSError as err:
        raise UsageError(f"cannot read the prompt from standard input: {err.strerror or err}") from None
    return prompt_from_bytes(data, "the prompt from standard input")


def wanted_settings(mode: str | None, model: str | None, pairs: Sequence[str] | None) -> list[tuple[str, str]]:
    """``--mode``, ``--model`` and ``--set NAME=VALUE`` as (setting, value) pairs, in that
    order; a malformed ``--set`` is a usage error before anything starts."""
    wanted = [(key, value) for key, value in (("mode", mode), ("model", model)) if value is not None]
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UsageError(f"--set wants NAME=VALUE, got {pair!r}")
        wanted.append((key.strip(), value.strip()))
    return wanted


def run_prompt(
    inputs: SessionInputs,
    run: Run,
    text: str,
    *,
    session_id: str | None,
    output_format: str,
    quiet: bool,
    settings: Sequence[tuple[str, str]] = (),
) -> int:
    """One turn: a new session (or ``--session``: resume if supported, else load without
    printing the replay), the prompt, the streamed answer; the exit code follows the stop
    reason."""
    import sys

    import anyio

    from acpcli.errors import CapabilityMissing, ExitCode, Interrupted, TurnEnded
    from acpcli.supervise import Supervisor, output_error

    supervisor = run.supervisor = Supervisor()
    try:
        supervisor.stdout_fd = run.env.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        pass  # not a real file (tests), nothing to watch

    async def main() -> int:
        from acpcli.mentions import build_prompt
        from acpcli.render import make_view
        from acpcli.safestore import open_index, verdict
        from acpcli.session import run_turn

        index = open_index()
        writer = supervisor.writer = index.writer()
        view: View
        if run.raw:
            from acpcli.render import Collector

            view = Collector()  # stdout carries the frames; nothing else may write there
        else:
            view = make_view(run.env, format=output_format, quiet=quiet)
        try:
            async with _link(inputs, run) as link:
                supervisor.link = link
                if session_id is None:
                    command = "new"
                elif link.features.resume:
                    command = "resume"
                elif link.features.load:
                    command = "load"
                else:
                    raise CapabilityMissing(
                        f"{link.features.display_name} can neither resume nor load a session",
                        hint="drop --session to start a new one",
                    )
                # Mentions are checked before the session is touched: a bad one costs nothing.
                blocks = build_prompt(
                    text, inputs.cwd, [inputs.cwd, *inputs.additional_directories], link.features, strict=False
                )
                # A load's replay is context, not output: attach without a view first.
                live = await attach(link, command, inputs, run, index, writer, None, session_id)
                if command == "new":  # first, so a bad --set below still names the session
                    run.env.note(f"session {live.session_id}", style="dim")
                for key, value in settings:  # before the turn, so the prompt runs with them
                    await link.set_by_name(live, key, value)
                live.sink = view
                view.begin_turn(live.store)
                stop = await run_turn(
                    link,
                    live,
                    blocks,
                    notice=lambda m: run.env.note(m, style="yellow"),
                    tick=getattr(view, "tick", None),
                )
                view.turn_ended(stop)
                writer.flush()
                index.touch(live.session_id)
                if live.store.title:
                    index.set_title(live.session_id, live.store.title)
                if stop == "cancelled" and live.interrupted:
                    raise Interrupted()  # our Ctrl-C cancelled it: exit 130, as shells expect
                if stop != "end_turn":
                    ended = TurnEnded(stop)
                    if stop == "cancelled" and run.refusals is not None and run.refusals.count:
                        ended.hint = refused_hint(run.refusals)
                    raise ended
                return int(ExitCode.OK)
        finally:
            supervisor.link = None
            failing = sys.exc_info()[1]
            try:
                view.close()
            except BrokenPipeError:
                raise
            except OSError as err:
                if failing is None:
                    raise output_error(_stdout_name(run), err) from None
            finally:
                writer.close()
                index.close()
                verdict(index)

    with _auth_hinted(inputs.agent):
        return anyio.run(supervisor.run, main)


def _stdout_name(run: Run) -> str:
    name = getattr(run.env.stdout, "name", None)
    return name if isinstance(name, str) and not name.startswith("<") else "standard output"


def refused_hint(refusals: Refusals) -> str:
    """The hint for a turn the agent cancelled after the policy refused something."""
    from acpcli.client_side import CHANGE_POLICY

    n = refusals.count
    what = "a request" if n == 1 else f"{n} requests"
    return f"acpcli refused {what} of the agent (see above), which may be why it stopped: {CHANGE_POLICY}"


def last_session(agent: AgentChoice, cwd: str) -> str:
    """The most recently used active session of this agent (same name *and* command line,
    so two different ``--cmd`` agents are not confused; a ``--cmd`` agent by its command
    line alone, since it was recorded under the agent's own name) in ``cwd``, for ``--last``."""
    from acpcli.paths import db_path
    from acpcli.persistence import Index

    rows = []
    if db_path().exists():
        with Index.open(read_only=True) as index:
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
    from acpcli.paths import db_path
    from acpcli.persistence import Index

    try:
        if config.load_config().default_agent:
            return None
    except AcpcliError:
        pass  # an unreadable config names no default agent
    where = resolve_dir(cwd or os.getcwd(), "--cwd")
    rows = []
    if db_path().exists():
        with Index.open(read_only=True) as index:
            rows = index.list_sessions(cwd=where, state="active", limit=1)
    if not rows:
        raise SessionNotFound(f"no earlier session in {where}", hint="drop --last to start a new session")
    return rows[0].id


def close_output(stream: Any, name: str) -> None:
    """Close the ``-o FILE`` stream; a failed last flush (a full disk) is
    :class:`~acpcli.errors.OutputError` unless another error is already on its way out."""
    import sys

    from acpcli.supervise import output_error

    failing = sys.exc_info()[1]
    try:
        stream.close()
    except OSError as err:
        if failing is None:
            raise output_error(name, err) from None
