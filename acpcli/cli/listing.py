"""Read-only commands over local state: ``sessions``, ``show``, ``agents``.

None of them starts an agent except ``sessions --remote`` (which must).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from acpcli.errors import ExitCode, UsageError
from acpcli.safe_text import safe_line


def _when(ts: float | None) -> str:
    if not ts:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def store_from_events(index: Any, session_id: str) -> Any:
    """Rebuild a session's transcript from its event log through the store."""
    from acpcli.cli.ops import REPLAY_ABORT, REPLAY_END, REPLAY_START
    from acpcli.replay_merge import merge_replay
    from acpcli.session import SETTING, TURN_START
    from acpcli.store import Store

    store = Store()
    pending: Store | None = None  # a replay in progress
    for kind, update in index.events(session_id):
        if kind == REPLAY_START:
            pending = Store()
        elif kind == REPLAY_END:
            if pending is not None:
                # What acpcli recorded stays the record; the replay only adds what it lacks.
                store, pending = merge_replay(store, pending), None
        elif kind == REPLAY_ABORT:
            pending = None
        elif kind == TURN_START:
            (pending or store).turn_boundary()  # each prompt acpcli sent is its own message
        elif kind == SETTING:
            continue
        elif isinstance(update, dict):  # anything else is junk: skipped
            if "jsonrpc" in update:  # stored as the whole frame it arrived in
                params = update.get("params")
                update = params.get("update") if isinstance(params, dict) else None
                if not isinstance(update, dict):
                    continue
            # turn boundaries are implied by the recorded user messages
            (pending or store).apply(update)
    return store


def sessions(
    *,
    agent: str | None,
    cmd: str | None,
    cwd: Path | None,
    all_states: bool,
    remote: bool,
    as_json: bool,
    protocol: str | None = None,
) -> int:
    from acpcli.cli.ops import environment, resolve_dir

    env = environment()
    the_cwd = resolve_dir(cwd, "--cwd") if cwd is not None else None
    if remote:
        return _remote_sessions(env, agent, cmd, the_cwd, as_json, protocol)
    from acpcli.paths import db_path
    from acpcli.persistence import Index

    if not db_path().exists():
        rows = []
    else:
        with Index.open(read_only=True) as index:
            rows = index.list_sessions(agent=agent, cwd=the_cwd, state=None if all_states else "active")
    if as_json:
        for rec in rows:
            env.stdout.write(
                json.dumps(
                    {
                        "id": rec.id,
                        "agent": rec.agent,
                        "title": rec.title,
                        "cwd": rec.cwd,
                        "additionalDirectories": rec.additional_dirs,
                        "mcpServers": rec.mcp_servers,
                        "protocolVersion": rec.protocol_version,
                        "protocol": rec.protocol_choice(),  # what later commands speak: 1, 2, 2-latest
                        "created": rec.created_at,
                        "lastUsed": rec.last_used_at,
                        "state": rec.state,
                        **({"agentSessionId": rec.agent_session_id} if rec.agent_session_id else {}),
                    }
                )
                + "\n"
            )
        return int(ExitCode.OK)
    if not rows:
        env.note("no sessions recorded yet — start one with `acpcli new --agent demo`")
        return int(ExitCode.OK)
    if not env.stdout_is_terminal:
        # Pipes get one tab-separated line per session: no wrapping, easy to cut/awk.
        env.stdout.write("ID\tAGENT\tTITLE\tCWD\tPROTOCOL\tCREATED\tLAST_USED\tSTATE\n")
        for rec in rows:
            fields = (rec.id, rec.agent, rec.title or "", rec.cwd, str(rec.protocol_version or ""),
                      _when(rec.created_at), _when(rec.last_used_at), rec.state)
            env.stdout.write("\t".join(safe_line(f.replace("\t", " ").replace("\n", " ")) for f in fields) + "\n")
        return int(ExitCode.OK)
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("ID", "AGENT", "TITLE", "CWD", "V", "CREATED", "LAST USED", "STATE"):
        table.add_column(column, overflow="fold" if column in ("ID", "CWD") else "ellipsis")
    home = os.path.expanduser("~")
    for rec in rows:
        shown_cwd = "~" + rec.cwd[len(home) :] if rec.cwd.startswith(home + os.sep) else rec.cwd
        # Text, not str: a str cell is read as rich markup, and an agent's "[/b]" would crash it.
        table.add_row(
            *(Text(safe_line(value)) for value in (rec.id, rec.agent, rec.title or "", shown_cwd)),
            str(rec.protocol_version or "-"),
            _when(rec.created_at),
            _when(rec.last_used_at),
            Text(safe_line(rec.state)),
        )
    env.out.print(table)
    return int(ExitCode.OK)


def _remote_sessions(
    env: Any, agent: str | None, cmd: str | None, cwd: str | None, as_json: bool, protocol: str | None = None
) -> int:
    import anyio

    from acpcli.cli.ops import link_for, pick_agent

    if agent is None and cmd is None:
        raise UsageError("--remote asks an agent: pass --agent NAME or --cmd 'COMMAND'")
    if protocol is not None:
        from acpcli.negotiate import parse_protocol_choice

        parse_protocol_choice(protocol)
    choice = pick_agent(agent, cmd)

    async def main() -> list[dict[str, Any]]:
        async with link_for(choice, protocol=protocol) as link:
            return [info async for info in link.list_remote(cwd)]

    from acpcli.supervise import Supervisor

    infos = anyio.run(Supervisor().run, main)  # SIGTERM/SIGHUP: stop the agent, exit 143/129
    _save_titles(infos)
    for info in infos:
        if as_json:
            env.stdout.write(json.dumps(info) + "\n")
        else:
            fields = (info.get("sessionId"), info.get("title") or "", info.get("cwd") or "", info.get("updatedAt") or "")
            env.stdout.write("\t".join(safe_line(str(f)) for f in fields) + "\n")
    return int(ExitCode.OK)


def _save_titles(infos: list[dict[str, Any]]) -> None:
    """Titles the agent's list gives are saved to the sessions recorded here (best effort:
    a listing must not fail because the index is busy or read-only)."""
    import sqlite3

    from acpcli.cli.forgotten import titles_from_list
    from acpcli.errors import AcpcliError
    from acpcli.paths import db_path
    from acpcli.persistence import Index

    if not db_path().exists() or not any(isinstance(i, dict) and i.get("title") for i in infos):
        return
    try:
        with Index.open() as index:
            titles_from_list(index, [i for i in infos if isinstance(i, dict)])
    except (AcpcliError, sqlite3.Error):
        pass


def _stored(session_id: str) -> tuple[Any, Any]:
    """The index record and the rebuilt store of a session, read-only."""
    from acpcli.errors import SessionNotFound
    from acpcli.paths import db_path
    from acpcli.persistence import Index

    if not db_path().exists():
        raise SessionNotFound(f"no session {session_id!r} in the local index")
    with Index.open(read_only=True) as index:
        record = index.get(session_id)
        return record, store_from_events(index, record.id)


def show(session_id: str) -> int:
    """Print the stored transcript of a session (rich on a terminal, plain text otherwise)."""
    from acpcli.cli.ops import environment
    from acpcli.render import make_view

    env = environment()
    _record, store = _stored(session_id)
    view = make_view(env, final_only=True)
    try:
        view.print_store(store)
    finally:
        view.close()
    return int(ExitCode.OK)


def export(session_id: str, output_format: str, output: Path | None) -> int:
    """Write a stored transcript as markdown, jsonl or plain text."""
    from acpcli.cli.ops import environment
    from acpcli.render import FORMATS

    if output_format not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)} (got {output_format!r})")
    env = environment()
    record, store = _stored(session_id)
    stream = open(output, "w", encoding="utf-8") if output is not None else env.stdout  # noqa: SIM115
    try:
        if output_format == "jsonl":
            from acpcli.render.jsonl import JsonlView

            view = JsonlView(stream, session_id=record.id, final_only=True)
            view.print_store(store)
            view.close()
        else:
            from acpcli.render.transcript import to_markdown, to_text

            text = to_markdown(store, title=record.title) if output_format == "markdown" else to_text(store)
            stream.write(text)
        stream.flush()
    finally:
        if output is not None:
            stream.close()
    return int(ExitCode.OK)


def agents(as_json: bool) -> int:
    """List built-in and configured agents and whether each command is on PATH."""
    from acpcli.cli.ops import environment
    from acpcli.config import find_executable, load_config

    env = environment()
    cfg = load_config()
    rows = []
    for name, spec in sorted(cfg.agents.items()):
        found = find_executable(spec)
        rows.append((name, spec, found))
    if as_json:
        for name, spec, found in rows:
            env.stdout.write(
                json.dumps(
                    {
                        "name": name,
                        "argv": spec.argv,
                        "builtin": spec.builtin,
                        "description": spec.description,
                        "found": found,
                    }
                )
                + "\n"
            )
        return int(ExitCode.OK)
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("NAME", "COMMAND", "FOUND", "SOURCE", "DESCRIPTION"):
        table.add_column(column)
    for name, spec, found in rows:
        table.add_row(
            name,
            " ".join(spec.argv),
            found or "not on PATH",
            "built-in" if spec.builtin else "config",
            spec.description,
        )
    env.out.print(table)
    return int(ExitCode.OK)
