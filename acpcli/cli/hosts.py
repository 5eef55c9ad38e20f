"""``acpcli stop`` and ``acpcli sessions --live``: seeing and ending live sessions' hosts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import typer

from acpcli.cli import completers

app = typer.Typer()


@app.command(short_help="End live sessions: their background hosts and agents.")
def stop(
    session_ids: Annotated[list[str] | None, typer.Argument(metavar="SESSION_ID...", help="The live sessions to stop.", autocompletion=completers.session_ids, show_default=False)] = None,
    all_hosts: Annotated[bool, typer.Option("--all", help="Stop every live session of this ACPCLI_HOME.")] = False,
) -> None:
    """End live sessions: each one's background host and its agent (its whole process group),
    as keep-alive expiry would. The sessions stay recorded; the next prompt on one starts a
    new host.

    Examples:

    \b
      acpcli stop demo-1f2e
      acpcli stop --all
    """
    raise typer.Exit(stop_hosts(list(session_ids or []), all_hosts=all_hosts))


@app.command(short_help="Join a live session from another terminal.")
def attach(
    session_id: Annotated[str, typer.Argument(metavar="SESSION_ID", help="The live session to join.", autocompletion=completers.session_ids, show_default=False)],
    permissions: Annotated[str | None, typer.Option("--permissions", metavar="POLICY", help="Answer the permission requests of prompts sent from here: ask (default), allow, deny or read-only.", autocompletion=completers.permission_policies, show_default=False)] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="A session that is not live: start its host without asking first.")] = False,
) -> None:
    """Join a live session from another terminal: the REPL over the session's host, with the
    transcript so far, then every turn as it comes, whoever sent it; prompts typed here join
    the session's queue, and the slash commands (/mode, /model, /config, /close…) go through
    the host.

    The session should be live (see `acpcli sessions --live`): `new`, `load`, `resume` or a
    `prompt --session` with keep-alive starts its host. For a recorded session that is not,
    attach asks whether to start its host (resuming the session, else loading it, as
    `prompt --session` would), then joins it; --yes starts it without asking. Without a
    terminal, a session that is not live is one error line (exit 20). Ctrl-D leaves; the
    session stays live.

    Examples:

    \b
      acpcli attach demo-1f2e
      acpcli attach demo-1f2e --permissions read-only
    """
    raise typer.Exit(attach_to(session_id, permissions, yes=yes))


def attach_to(session_id: str, permissions: str | None, *, yes: bool = False) -> int:
    """The REPL joined to the session's running host (:func:`acpcli.repl.hosted.run_hosted`);
    a recorded session without one gets one first, once the person agrees (``yes``: at once)."""
    from acpcli.cli.streams import environment
    from acpcli.errors import ExitCode, HostLost, UsageError
    from acpcli.repl.hosted import run_hosted
    from acpcli.repl.person import AtTerminal
    from acpcli.session.context import Invocation
    from acpcli.session.hostwire import address
    from acpcli.session.inputs import lookup_or_none
    from acpcli.text.safe import safe_line

    env = environment()
    sid = _resolve(session_id)
    live = address.holder(address.lock_path(sid)) is not None
    record = None if live else lookup_or_none(sid)
    start = f"`acpcli attach {safe_line(sid)}` on a terminal" if record is not None else f"`acpcli load {safe_line(sid)}`"
    not_live = HostLost(
        f"{safe_line(sid)} is not live: no host runs it",
        hint=f"start one with {start} or `acpcli prompt --session {safe_line(sid)} …`",
    )
    if not env.interactive:
        if not live:
            raise not_live  # what a script needs to know first
        raise UsageError("attach needs a terminal (stdin and stdout); from a script, use `acpcli prompt --session ID`")
    invocation = Invocation(env=env, person=AtTerminal(env), permissions=permissions)
    if record is not None:
        if not (yes or _start_agreed(env, sid)):
            env.note("no host started")
            return int(ExitCode.OK)
        _start_host(record.id, invocation)
    from rich.markup import escape  # (here: `sessions` in a pipe imports this module, not rich)

    joined = f"[dim]attached to {escape(safe_line(sid))} with {{agent}} (host pid {{pid}}) — Ctrl-D leaves, the session stays live[/]"
    return run_hosted(env, invocation, sid, None, transcript=True, joined=joined, not_live=not_live)


def _start_agreed(env: Any, session_id: str) -> bool:
    """Ask, on the terminal, whether to start the host of ``session_id`` (not live)."""
    from acpcli.text.safe import safe_line

    try:
        answer = env.err.input(
            f"{safe_line(session_id)} is not live: no host runs it. Start one and attach? [y/N] ", markup=False, emoji=False
        )
    except EOFError:
        return False
    return str(answer).strip().lower() in ("y", "yes")


def _start_host(session_id: str, run: Any) -> None:
    """Start the recorded session's host as ``prompt --session`` would (it resumes the
    session if the agent can, else loads it), keep-alive as configured (the default when
    that is off: attach is for a live session)."""
    from acpcli.config import DEFAULT_KEEP_ALIVE
    from acpcli.config import keep_alive as configured_keep_alive
    from acpcli.host import client
    from acpcli.session.inputs import Options, lookup

    options = Options()
    inputs = options.inputs(lookup(session_id))
    seconds = configured_keep_alive(None) or DEFAULT_KEEP_ALIVE
    client.hosted_reattach("continue", session_id, options, run, agent=inputs.agent, keep_alive=seconds)


def stop_hosts(session_ids: list[str], *, all_hosts: bool) -> int:
    from acpcli.errors import ExitCode, UsageError
    from acpcli.session.hostwire import address
    from acpcli.text.safe import safe_line

    if all_hosts and session_ids:
        raise UsageError("give session ids or --all, not both")
    if not all_hosts and not session_ids:
        raise UsageError("name the live sessions to stop (see `acpcli sessions --live`), or give --all")
    if all_hosts:
        found = list(address.hosts())
        if not found:
            typer.echo("no live sessions", err=True)
    else:
        found = []
        for sid in [_resolve(sid) for sid in session_ids]:
            info = address.holder(address.lock_path(sid))
            if info is None:
                typer.echo(f"{safe_line(sid)}: not live (no host)", err=True)
            else:
                found.append(info)
    code = int(ExitCode.OK)
    unsaved: list[dict[str, object]] = []
    # every host is told first, then all are waited for: none runs a queued prompt while
    # another one is being stopped
    for info, gone in zip(found, stop_all(found, unsaved=unsaved), strict=True):
        if gone:
            typer.echo(f"stopped {safe_line(info.session_id)} (host pid {info.pid})", err=True)
        else:
            typer.echo(f"{safe_line(info.session_id)}: the host (pid {info.pid}) did not stop", err=True)
            code = int(ExitCode.FAILURE)
    return _say_unsaved(unsaved) or code


def _say_unsaved(unsaved: list[dict[str, object]]) -> int:
    """What stopped hosts could not save (they held it in memory after a storage failure):
    its line, and its exit code (0 when there is none)."""
    from acpcli.errors import HostReported

    code = 0
    for verdict in unsaved:
        exit_code = verdict.get("exit")
        hint = verdict.get("hint")
        error = HostReported(
            str(verdict.get("message")), exit_code if isinstance(exit_code, int) else 1,
            hint=hint if isinstance(hint, str) else None,
        )
        typer.echo(f"acpcli: error: {error.message}", err=True)  # as acpcli.cli.report words it
        if error.hint:
            typer.echo(f"acpcli: hint: {error.hint}", err=True)
        code = code or int(error.exit_code)
    return code


def stop_quietly(
    session_id: str, unsaved: list[dict[str, object]] | None = None, why: str = "stop"
) -> tuple[int, bool] | None:
    """Stop ``session_id``'s host, if one runs, and wait for it to be gone (see
    :func:`stop_all`): its pid and whether it is gone (None: there was no host). ``unsaved``:
    a list to add what the host could not save to; ``why``: the command that stops it."""
    from acpcli.session.hostwire import address

    info = address.holder(address.lock_path(session_id))
    if info is None:
        return None
    return info.pid, stop_all([info], why=why, unsaved=unsaved)[0]


def stop_all(
    infos: Sequence[Any], seconds: float = 10.0, *, why: str = "stop", unsaved: list[dict[str, object]] | None = None
) -> list[bool]:
    """Ask every host of ``infos`` to stop (``why``: the command that asks, which attached
    terminals are told), then wait for them all together (see :func:`_wait_gone`); whether
    each is gone. ``unsaved`` gathers what each host says it could not save."""
    from acpcli.host.client import ask_stop

    channels = [ask_stop(info.session_id, why) for info in infos]
    try:
        return _wait_all_gone(infos, channels, seconds, unsaved)
    finally:
        for channel in channels:
            if channel is not None:
                channel.close()


def _resolve(session_id: str) -> str:
    """A recorded session's full id (the index resolves unique prefixes); an id the index
    does not hold is still tried (a host may hold it)."""
    from acpcli.errors import SessionNotFound
    from acpcli.session.inputs import lookup

    try:
        return lookup(session_id).id
    except SessionNotFound:
        return session_id


def _wait_gone(info: object, seconds: float = 10.0) -> bool:
    """Wait for a host to end (its lock released and its process gone: it lets the lock go
    before it exits); SIGTERM it past half the wait, SIGKILL it (and its agent's process
    group) at the end of it."""
    return _wait_all_gone([info], [None], seconds)[0]


def _wait_all_gone(
    infos: Sequence[Any], channels: Sequence[Any], seconds: float, unsaved: list[dict[str, object]] | None = None
) -> list[bool]:
    """Wait for hosts to end, each told to stop over its ``channels`` entry (None: not
    reached). A host that answers is given ``seconds`` (its turn's cancel, its agent's
    stop), SIGTERM past half of them; one that says nothing for the host timeout
    (``ACPCLI_HOST_TIMEOUT``: stopped, hung), or is still there at the end, is killed with
    its agent's process group, so that nothing is left behind."""
    import math
    import os
    import signal
    import time

    from acpcli.processes.children import running
    from acpcli.session.hostwire import address
    from acpcli.session.hostwire.messages import ChannelClosed, host_timeout

    hosts = [info for info in infos if isinstance(info, address.HostInfo)]
    assert len(hosts) == len(infos)
    start = time.monotonic()
    silent_for = min(host_timeout(), seconds)
    done = [False] * len(hosts)
    answered = [False] * len(hosts)
    termed = [False] * len(hosts)
    killed: list[float | None] = [None] * len(hosts)
    links = list(channels)

    def gone(info: address.HostInfo) -> bool:
        return address.holder(info.lock) is None and not running(info.pid)

    while True:
        now = time.monotonic()
        for i, info in enumerate(hosts):
            if done[i] or gone(info):
                done[i] = True
                continue
            link = links[i]
            if link is not None:
                try:
                    while (message := link.receive(timeout=0)) is not None:
                        answered[i] = True  # (ready, stopping: it hears us)
                        if unsaved is not None and message.get("t") == "stored":  # what it could not save
                            unsaved.extend(v for v in message.get("verdicts") or [] if isinstance(v, dict))
                except ChannelClosed:
                    links[i] = None
                    answered[i] = True  # it took the stop and is ending
            if killed[i] is None and (now - start >= seconds or (not answered[i] and now - start >= silent_for)):
                _kill(info)
                killed[i] = now
            elif not termed[i] and now - start >= seconds / 2:
                termed[i] = True
                try:
                    os.kill(info.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        if all(done[i] or now - (killed[i] or math.inf) > 5 for i in range(len(hosts))):
            return done  # (a killed host's lock and process go at once: five seconds is plenty)
        time.sleep(0.05)


def _kill(info: object) -> None:
    """SIGKILL a host that does not end, and its agent's process group (the agent is a
    group leader: its pid is the group's id)."""
    import os
    import signal

    from acpcli.session.hostwire import address

    assert isinstance(info, address.HostInfo)
    try:
        os.kill(info.pid, signal.SIGKILL)
    except OSError:
        pass
    if info.agent_pid is not None and info.agent_pid > 1:
        try:
            os.killpg(info.agent_pid, signal.SIGKILL)
        except OSError:
            pass


def list_live(*, as_json: bool) -> int:
    """``sessions --live``: one line per live session (JSON lines with ``--json``)."""
    import json

    from acpcli.errors import ExitCode
    from acpcli.host.client import status
    from acpcli.session.hostwire import address
    from acpcli.text.safe import safe_line

    rows = []
    for info in address.hosts():
        said = status(info.session_id) or {}
        rows.append({
            "id": info.session_id,
            "live": True,
            "pid": info.pid,
            "agent": said.get("agent"),
            "agentPid": said.get("agent_pid"),
            "busy": said.get("busy"),
            "queued": said.get("queued"),
            "clients": said.get("clients"),
            "idle": said.get("idle"),
            "keepAlive": said.get("keep_alive"),
        })
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row))
        return int(ExitCode.OK)
    if not rows:
        typer.echo("no live sessions", err=True)
        return int(ExitCode.OK)
    table = [
        {
            "ID": safe_line(str(row["id"])),
            "AGENT": safe_line(str(row["agent"] or "?")),
            "HOST PID": str(row["pid"]),
            "STATE": "busy" if row["busy"] else "idle",
            "QUEUED": str(row["queued"] or 0),
            "CLIENTS": str(row["clients"] or 0),
            "IDLE": f"{row['idle']:.0f}s" if isinstance(row["idle"], (int, float)) else "?",
        }
        for row in rows
    ]
    names = ("ID", "AGENT", "HOST PID", "STATE", "QUEUED", "CLIENTS", "IDLE")
    from acpcli.cli.streams import environment

    env = environment()
    if not env.stdout_is_terminal:  # scripts: tab-separated, whole
        env.stdout.write("\t".join(names) + "\n")
        env.stdout.writelines("\t".join(line[n] for n in names) + "\n" for line in table)
        return int(ExitCode.OK)
    from rich.text import Text

    from acpcli.errors import AcpcliError
    from acpcli.history.index import Index
    from acpcli.history.records import display_name
    from acpcli.render.fit import Column, table_lines

    with Index.existing(read_only=True) as index:  # the ids and agents as `sessions` shows them
        if index is not None:
            shortest = index.unique_prefixes([str(row["id"]) for row in rows], 8)  # (as `sessions` shows them)
            for row, line in zip(rows, table, strict=True):
                line["ID"] = safe_line(shortest.get(str(row["id"]), str(row["id"])))
                try:
                    line["AGENT"] = safe_line(display_name(index.get(str(row["id"]))))
                except AcpcliError:  # a host of a session the index does not hold (yet)
                    pass
    columns = [
        Column("ID", rank=100, floor=0, keep=True), Column("AGENT", rank=80, floor=8, cap=24),
        Column("HOST PID", rank=20, floor=0), Column("STATE", rank=90, floor=0), Column("QUEUED", rank=40, floor=0),
        Column("CLIENTS", rank=30, floor=0), Column("IDLE", rank=50, floor=0),
    ]
    header, lines = table_lines(columns, table, env.out.width)
    env.out.print(Text(header, style="bold"), no_wrap=True, overflow="ellipsis")
    for text in lines:
        env.out.print(Text(text), no_wrap=True, overflow="ellipsis")
    return int(ExitCode.OK)
