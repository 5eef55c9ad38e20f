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
    from acpcli.render import View


@dataclass
class AgentChoice:
    """Which agent to run and how to record it."""

    name: str  # a configured/built-in name, or "cmd" for --cmd
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None


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
    return AgentChoice(spec.name, list(spec.argv), dict(spec.env), str(spec.cwd) if spec.cwd else None)


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
    protocol: str,
    log_file: Path | None,
    default_agent: AgentChoice | None = None,
    default_cwd: str | None = None,
    default_add_dirs: Sequence[str] = (),
    no_add_dirs: bool = False,
) -> SessionInputs:
    """Validate every input of a lifecycle command; raises before anything is started."""
    from acpcli.negotiate import parse_protocol_choice

    parse_protocol_choice(protocol)
    choice = pick_agent(agent, cmd, default=default_agent)
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
    servers, names = mcp_servers(mcp_config, mcp)
    return SessionInputs(choice, the_cwd, dirs, servers, names, protocol, log_file)


def lookup(session_id: str) -> Any:
    """The index record for an id or unique prefix (SessionNotFound otherwise).

    Read-only: looking up a bad id creates nothing, not even the database."""
    from acpcli.paths import db_path
    from acpcli.persistence import Index

    if not db_path().exists():
        raise SessionNotFound(f"no session {session_id!r} in the local index")
    with Index.open(read_only=True) as index:
        return index.get(session_id)


def recorded_agent(record: Any) -> AgentChoice:
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
    return choice


def lookup_or_none(session_id: str) -> Any:
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
    refusals: Any = None  # the run's client_side.Refusals, once an agent is linked


def _env_extra(agent: AgentChoice) -> dict[str, str]:
    from acpcli.config import expand_vars

    return {k: expand_vars(v, os.environ, f"agent {agent.name!r}: env {k}") for k, v in agent.env.items()}


def agent_label(agent: AgentChoice, features: Any) -> str:
    """The name a session is recorded and shown under: the configured name, or for ``--cmd``
    the agent's own (``agentInfo.name``), else its program's file name."""
    if agent.name != "cmd":
        return agent.name
    return features.agent_name or (Path(agent.argv[0]).name if agent.argv else "cmd")


def _record(inputs: SessionInputs, session_id: str, features: Any, title: str | None) -> Any:
    from acpcli.persistence import SessionRecord

    return SessionRecord(
        id=session_id,
        agent=agent_label(inputs.agent, features),
        argv=inputs.agent.argv,
        cwd=inputs.cwd,
        additional_dirs=inputs.additional_directories,
        mcp_servers=inputs.mcp_names,
        protocol_version=features.protocol_version,
        title=title,
        agent_info={"name": features.agent_name, "title": features.agent_title, "version": features.agent_version},
    )


def _decider(run: Run, agent: AgentChoice | None = None) -> Any:
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
    link: Any,
    command: str,
    inputs: SessionInputs,
    run: Run,
    index: Any,
    writer: Any,
    view: Any,
    session_id: str | None,
) -> Any:
    """Create, load or resume the session over ``link`` and keep the index in step.

    A session the index did not know is recorded before its replay arrives and removed
    again if the agent refuses it, so a failed command leaves nothing behind.
    """
    if command == "new":
        live = await _logged_in(
            link, run, lambda: link.new(inputs.cwd, inputs.additional_directories, inputs.mcp_servers, sink=view)
        )
        index.upsert_session(_record(inputs, live.session_id, link.features, run.title))
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
    if command == "resume" and known is not None and view is not None:
        from acpcli.cli.listing import store_from_events

        run.env.err.print("[dim]── stored locally by acpcli, not replayed by the agent ──[/]")
        view.print_store(store_from_events(index, sid))
        run.env.err.print("[dim]── resumed ──[/]")
    if command == "load":
        from acpcli.protocol import wire

        wire.require(link.features, "session/load")  # refuse before marking the log
        writer.append(sid, REPLAY_START, "{}")
    method = link.load if command == "load" else link.resume
    try:
        live = await _logged_in(
            link,
            run,
            lambda: method(
                sid, inputs.cwd, inputs.additional_directories, inputs.mcp_servers, sink=view, recorder=writer
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
        _raise_if_unknown(err, sid)
        raise
    if command == "load":
        if not run.repl:
            await link.settle(live)  # a replay may trail the response (gemini)
        writer.append(sid, REPLAY_END, "{}")
    writer.flush()
    if known is not None and list(known.additional_dirs) != list(inputs.additional_directories):
        # --add-dir / --no-add-dirs replaced the roots: remember what the agent now has.
        known.additional_dirs = list(inputs.additional_directories)
        index.upsert_session(known)
    index.touch(sid)
    if run.title:
        index.set_title(sid, run.title)
    return live


async def _logged_in(link: Any, run: Run, setup: Any) -> Any:
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


def _raise_if_unknown(err: BaseException, session_id: str) -> None:
    """A load/resume answered "not found" (-32002 Resource not found, or a message saying the
    session was not found) becomes :class:`UnknownSession` (exit 8, like an id missing from the
    local index). "Method not found" and other failures stay what they are."""
    from acpcli.errors import AuthRequired, RpcError, UnknownSession

    if not isinstance(err, RpcError) or isinstance(err, (AuthRequired, UnknownSession)):
        return
    message = err.rpc_message.lower()
    if err.code == RpcError.RESOURCE_NOT_FOUND or (
        err.code != RpcError.METHOD_NOT_FOUND and "session" in message and "not found" in message
    ):
        unknown = UnknownSession(err.code, err.rpc_message, err.data, method=err.method)
        unknown.hint = f"the agent does not know {session_id}: `acpcli sessions` lists the ones recorded here"
        raise unknown from err


def agent_stderr_log(agent: AgentChoice) -> Path:
    """Where the agent's stderr is kept (appended, one file per agent name)."""
    from acpcli.paths import ensure_dir, log_dir

    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in agent.name)
    return ensure_dir(log_dir()) / f"{safe}.stderr.log"


def link_for(agent: AgentChoice, *, protocol: str = "auto", log_file: Path | None = None, run: Run | None = None) -> Any:
    """``open_link`` for a chosen agent: its env additions, stderr log, permission policy.

    Terminal logins are offered (v1 ``auth.terminal``) by ``acpcli auth`` (``run`` is None),
    which runs them, and by sessions with a person at the keyboard, who can be sent there; a
    script would only be told to log in elsewhere, so it does not offer them.
    """
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
        choice=protocol,  # type: ignore[arg-type]
        offer=offer,
        log_file=log_file,
        stderr_log=agent_stderr_log(agent),
        decide_permission=decider,
        tap=_raw_tap(run),
        policy=decider.policy if decider is not None else None,
        refusals=decider.refusals if decider is not None else None,
    )


def _raw_tap(run: Run | None) -> Any:
    if run is None or not run.raw:
        return None
    from acpcli.wiretap import StreamTap

    return StreamTap(run.env.stdout)


def _link(inputs: SessionInputs, run: Run) -> Any:
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

    async def main() -> int:
        from acpcli.persistence import Index
        from acpcli.render import make_view

        index = Index.open()
        writer = index.writer()
        view = make_view(run.env, final_only=not run.repl) if (command != "resume" or run.repl) else None
        try:
            async with _link(inputs, run) as link:
                live = await attach(link, command, inputs, run, index, writer, view, session_id)
                if run.repl:
                    from acpcli.repl import run_repl

                    return await run_repl(
                        run.env, link, live, index=index, writer=writer, agent=agent_label(inputs.agent, link.features),
                        export=_exporter(live.session_id),
                    )
                if view is not None:
                    view.close()
                    view = None
                if command == "new":
                    run.env.stdout.write(live.session_id + "\n")
                    run.env.stdout.flush()
                if live.store.title:
                    index.set_title(live.session_id, live.store.title)
                return int(ExitCode.OK)
        finally:
            if view is not None:
                view.close()
            writer.close()
            index.close()

    with _auth_hinted(inputs.agent):
        return anyio.run(main)


def run_close(record: Any, inputs: SessionInputs, run: Run) -> int:
    """Make the session active (resume if supported), then ``session/close``."""
    import anyio

    from acpcli.errors import CapabilityMissing, ExitCode

    async def main() -> int:
        import json

        from acpcli.persistence import Index
        from acpcli.protocol import wire

        async with _link(inputs, run) as link:
            try:
                wire.require(link.features, "session/close")
                if link.features.resume:
                    await link.resume(record.id, inputs.cwd, inputs.additional_directories, inputs.mcp_servers)
                answer = await link.close(record.id)
            finally:
                with Index.open() as index:
                    index.mark_closed(record.id)
        run.env.err.print(f"closed {record.id}: the agent answered {json.dumps(answer)}", markup=False, highlight=False)
        return int(ExitCode.OK)

    try:
        return anyio.run(main)
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
    import anyio

    from acpcli.errors import CapabilityMissing, ExitCode, TurnEnded

    async def main() -> int:
        from acpcli.mentions import build_prompt
        from acpcli.persistence import Index
        from acpcli.render import make_view
        from acpcli.session import run_turn

        index = Index.open()
        writer = index.writer()
        view: View
        if run.raw:
            from acpcli.render import Collector

            view = Collector()  # stdout carries the frames; nothing else may write there
        else:
            view = make_view(run.env, format=output_format, quiet=quiet)
        try:
            async with _link(inputs, run) as link:
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
                    raise KeyboardInterrupt  # our Ctrl-C cancelled it: exit 130, as shells expect
                if stop != "end_turn":
                    ended = TurnEnded(stop)
                    if stop == "cancelled" and run.refusals is not None and run.refusals.count:
                        ended.hint = refused_hint(run.refusals)
                    raise ended
                return int(ExitCode.OK)
        finally:
            view.close()
            writer.close()
            index.close()

    with _auth_hinted(inputs.agent):
        return anyio.run(main)


def refused_hint(refusals: Any) -> str:
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
