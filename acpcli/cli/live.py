"""``acpcli stop`` and ``acpcli sessions --live``: seeing and ending live sessions' hosts."""

from __future__ import annotations

from typing import Annotated

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
) -> None:
    """Join a live session from another terminal: the REPL over the session's host, with the
    transcript so far, then every turn as it comes, whoever sent it; prompts typed here join
    the session's queue, and the slash commands (/mode, /model, /config, /close…) go through
    the host.

    The session must be live (see `acpcli sessions --live`): `new`, `load`, `resume` or a
    `prompt --session` with keep-alive starts its host. Ctrl-D leaves; the session stays live.

    Examples:

    \b
      acpcli attach demo-1f2e
      acpcli attach demo-1f2e --permissions read-only
    """
    raise typer.Exit(attach_to(session_id, permissions))


def attach_to(session_id: str, permissions: str | None) -> int:
    """The REPL joined to the session's running host (:func:`acpcli.repl.hosted.run_hosted`)."""
    from acpcli.api.frontends import Invocation
    from acpcli.cli.streams import environment
    from acpcli.errors import HostLost, UsageError
    from acpcli.repl.hosted import run_hosted
    from acpcli.repl.person import AtTerminal
    from acpcli.text.safe import safe_line

    env = environment()
    if not env.interactive:
        raise UsageError("attach needs a terminal (stdin and stdout); from a script, use `acpcli prompt --session ID`")
    sid = _resolve(session_id)
    not_live = HostLost(
        f"{safe_line(sid)} is not live: no host runs it",
        hint=f"start one with `acpcli load {safe_line(sid)}` or `acpcli prompt --session {safe_line(sid)} …`",
    )
    from rich.markup import escape  # (here: `sessions` in a pipe imports this module, not rich)

    joined = f"[dim]attached to {escape(safe_line(sid))} with {{agent}} (host pid {{pid}}) — Ctrl-D leaves, the session stays live[/]"
    invocation = Invocation(env=env, person=AtTerminal(env), permissions=permissions)
    return run_hosted(env, invocation, sid, None, transcript=True, joined=joined, not_live=not_live)


def stop_hosts(session_ids: list[str], *, all_hosts: bool) -> int:
    from acpcli.errors import ExitCode, UsageError
    from acpcli.host import address
    from acpcli.text.safe import safe_line

    if all_hosts and session_ids:
        raise UsageError("give session ids or --all, not both")
    if not all_hosts and not session_ids:
        raise UsageError("name the live sessions to stop (see `acpcli sessions --live`), or give --all")
    if all_hosts:
        ids = [info.session_id for info in address.hosts()]
        if not ids:
            typer.echo("no live sessions", err=True)
    else:
        ids = [_resolve(sid) for sid in session_ids]
    code = int(ExitCode.OK)
    for sid in ids:
        unsaved: list[dict[str, object]] = []
        stopped = stop_quietly(sid, unsaved)
        if stopped is None:
            typer.echo(f"{safe_line(sid)}: not live (no host)", err=True)
            continue
        pid, gone = stopped
        if not gone:
            typer.echo(f"{safe_line(sid)}: the host (pid {pid}) did not stop", err=True)
            return int(ExitCode.FAILURE)
        typer.echo(f"stopped {safe_line(sid)} (host pid {pid})", err=True)
        code = _say_unsaved(unsaved) or code
    return code


def _say_unsaved(unsaved: list[dict[str, object]]) -> int:
    """What a stopped host could not save (it held it in memory after a storage failure):
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
    """Stop ``session_id``'s host, if one runs, and wait for it to be gone (SIGTERM past half
    the wait): its pid and whether it is gone (None: there was no host). ``unsaved``: a list
    to add what the host could not save to (:func:`acpcli.host.client.stop_host`)."""
    from acpcli.host import address
    from acpcli.host.client import stop_host

    info = address.holder(address.lock_path(session_id))
    if info is None:
        return None
    stop_host(session_id, why, unsaved)
    return info.pid, _wait_gone(info)


def _resolve(session_id: str) -> str:
    """A recorded session's full id (the index resolves unique prefixes); an id the index
    does not hold is still tried (a host may hold it)."""
    from acpcli.api.frontends import lookup
    from acpcli.errors import SessionNotFound

    try:
        return lookup(session_id).id
    except SessionNotFound:
        return session_id


def _wait_gone(info: object, seconds: float = 10.0) -> bool:
    """Wait for a host to end (its lock released and its process gone: it lets the lock go
    before it exits); SIGTERM it past half the wait."""
    import os
    import signal
    import time

    from acpcli.host import address
    from acpcli.processes.children import running

    assert isinstance(info, address.HostInfo)
    deadline = time.monotonic() + seconds
    termed = False

    def gone() -> bool:
        return address.holder(info.lock) is None and not running(info.pid)

    while time.monotonic() < deadline:
        if gone():
            return True
        if not termed and time.monotonic() > deadline - seconds / 2:
            termed = True
            try:
                os.kill(info.pid, signal.SIGTERM)
            except ProcessLookupError:
                return True
        time.sleep(0.05)
    return gone()


def list_live(*, as_json: bool) -> int:
    """``sessions --live``: one line per live session (JSON lines with ``--json``)."""
    import json

    from acpcli.errors import ExitCode
    from acpcli.host import address
    from acpcli.host.client import status
    from acpcli.text.safe import safe_line

    rows = []
    for info in address.hosts():
        said = status(info.session_id) or {}
        rows.append({
            "id": info.session_id,
            "live": True,
            "pid": info.pid,
            "agent": said.get("agent"),
            "agent_pid": said.get("agent_pid"),
            "busy": said.get("busy"),
            "queued": said.get("queued"),
            "clients": said.get("clients"),
            "idle": said.get("idle"),
            "keep_alive": said.get("keep_alive"),
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
