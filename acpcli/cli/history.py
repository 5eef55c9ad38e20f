"""The commands over what acpcli recorded: ``sessions`` (``rm``, ``prune``), ``show``, ``export``.

Nothing here starts an agent except ``sessions --remote`` (what the agent itself lists).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from acpcli.errors import ExitCode, UsageError
from acpcli.text.safe import clip, safe_line, shown_id

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.history.index import Index, SessionRecord
    from acpcli.history.search import Hit
    from acpcli.model import Entry, Store
    from acpcli.render.fit import Column
    from acpcli.session.inputs import Options


T = TypeVar("T")


def _live_ids() -> set[str]:
    """The sessions a host keeps live now (none when no host ever ran here: nothing is read)."""
    from acpcli.session.hostwire.address import hosts

    return {info.session_id for info in hosts()}


def _when(ts: float | None) -> str:
    if not ts:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


#: How many sessions ``acpcli sessions`` shows without --limit or --all.
DEFAULT_LIMIT = 20
STATES = ("active", "closed", "any")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: float | None = None) -> float:
    """``--since``: an age (``30m``, ``12h``, ``7d``, ``2w``, ``90s``) before ``now``, or a
    local date or date-time (``2026-11-01``, ``2026-11-01T09:30``, ``2026-11-01 09:30``);
    unix seconds."""
    from datetime import datetime

    value = text.strip()
    number, unit = value[:-1], value[-1:].lower()
    if unit in _UNITS and _DIGITS.fullmatch(number):
        # An age of more than 15 digits is older than any clock (and int() stops at 4,300).
        seconds = int(number) * _UNITS[unit] if len(number) <= 15 else 10**18
        return (time.time() if now is None else now) - seconds
    try:
        return datetime.fromisoformat(value).timestamp()  # naive: local time
    except (ValueError, OverflowError, OSError):  # OverflowError, OSError: a year the clock cannot hold
        raise UsageError(
            f"--since must be an age like 7d, 12h, 30m, 2w or a date like 2026-11-01 (got {clip(text, 40)!r})"
        ) from None


def sessions(
    *,
    agent: str | None,
    cmd: str | None,
    cwd: Path | None,
    all_sessions: bool,
    remote: bool,
    as_json: bool,
    protocol: str | None = None,
    state: str | None = None,
    since: str | None = None,
    limit: str | int | None = None,
    timeout: str | None = None,
    wide: bool = False,
) -> int:
    from acpcli.cli.streams import environment
    from acpcli.config import parse_timeout
    from acpcli.session.inputs import resolve_dir

    if state is not None and state not in STATES:
        raise UsageError(f"--state must be one of {', '.join(STATES)} (got {state!r})")
    count = parse_limit(limit, 0 if all_sessions else DEFAULT_LIMIT)
    since_ts = parse_since(since) if since is not None else None
    env = environment()
    the_cwd = resolve_dir(cwd, "--cwd") if cwd is not None else None
    seconds = parse_timeout(timeout)
    if seconds is not None and not remote:
        raise UsageError("--timeout goes with --remote: it bounds how long the agent may take to answer")
    if remote:
        if state is not None:
            raise UsageError("--state is about the local index: --remote lists what the agent keeps")
        # every session the agent lists unless --limit says otherwise (its pages are all read anyway)
        limit_remote = parse_limit(limit, 0)
        return _remote_sessions(
            env, agent, cmd, the_cwd, as_json, protocol, limit=limit_remote, since=since_ts, timeout=seconds
        )
    from acpcli.history.index import Index

    wanted_state = state or ("any" if all_sessions else "active")
    only_state = None if wanted_state == "any" else wanted_state
    more = unprompted = 0
    # Sessions never prompted (created and left) are not listed unless --all asks for every one.
    prompted = None if all_sessions else True
    shortest: dict[str, str] = {}
    rows = []
    with Index.existing() as index:
        if index is not None:
            if index.outdated:  # written by an older acpcli: migrate it once (prompt titles...)
                _migrate_quietly(index)
            from acpcli.history.records import agent_filter

            agent = agent_filter(index, agent)  # the recorded name, or the agent's display name
            filters: dict[str, Any] = {"agent": agent, "cwd": the_cwd, "state": only_state, "since": since_ts}
            rows = index.list_sessions(**filters, limit=count or None, prompted=prompted)
            if prompted:
                unprompted = index.count_sessions(**filters, prompted=False)
            if count and len(rows) == count:  # only then can there be more: one count query
                more = index.count_sessions(**filters) - unprompted - count  # (the whole count reads an index alone)
            if not as_json and not wide and env.stdout_is_terminal:
                shortest = index.unique_prefixes([rec.id for rec in rows], ID_PREFIX)
    if unprompted:
        env.note(
            f"{unprompted} {'session' if unprompted == 1 else 'sessions'} never prompted not shown — --all shows "
            f"{'it' if unprompted == 1 else 'them'}"
        )
    if more > 0:
        # No colon: a plain line on a piped stderr is written without importing rich.
        closed = "" if only_state is None else " (closed ones too)"
        env.note(
            f"{more} more {'session' if more == 1 else 'sessions'} not shown — "
            f"--limit N shows N (0 for no limit), --all shows every session{closed}"
        )
    live = _live_ids()
    if as_json:
        from acpcli.worktree import count as checkpoint_count

        for rec in rows:
            env.stdout.write(
                json.dumps(
                    {
                        "id": rec.id,
                        "live": rec.id in live,  # a host keeps its agent running (sessions --live)
                        "agent": rec.agent,
                        "title": rec.shown_title,
                        "titleSource": rec.title_source,  # "agent", "prompt" (its first line) or null
                        "cwd": rec.cwd,
                        "additionalDirectories": rec.additional_dirs,
                        "mcpServers": rec.mcp_servers,
                        "protocolVersion": rec.protocol_version,
                        "protocol": rec.protocol_choice(),  # what later commands speak: 1, 2, 2-latest
                        "created": rec.created_at,
                        "lastUsed": rec.last_used_at,
                        "state": rec.state,
                        "usage": rec.usage,  # {"used", "size", "cost"} as the agent last reported, or null
                        "checkpoints": checkpoint_count(rec.id),  # turns with a checkpoint (acpcli checkpoints ID)
                        **({"agentSessionId": rec.agent_session_id} if rec.agent_session_id else {}),
                        **({"parent": rec.parent_id} if rec.parent_id else {}),  # forked from it
                    }
                )
                + "\n"
            )
        return int(ExitCode.OK)
    if not rows:
        if agent is not None or the_cwd is not None or since_ts is not None or state is not None:
            env.note("no sessions match")
        elif not unprompted:  # (else the line above said where they are)
            env.note("no sessions recorded yet — start one with `acpcli new --agent demo`")
        return int(ExitCode.OK)
    if not env.stdout_is_terminal:
        # Pipes get one tab-separated line per session: no wrapping, easy to cut/awk.
        env.stdout.write("ID\tAGENT\tTITLE\tCWD\tPROTOCOL\tCREATED\tLAST_USED\tSTATE\tPARENT\n")
        for rec in rows:
            fields = (rec.id, rec.agent, rec.shown_title or "", rec.cwd, str(rec.protocol_version or ""),
                      _when(rec.created_at), _when(rec.last_used_at), rec.state, rec.parent_id or "")
            env.stdout.write("\t".join(safe_line(f.replace("\t", " ").replace("\n", " ")) for f in fields) + "\n")
        return int(ExitCode.OK)
    _session_lines(env, rows, shortest, live, wide=wide)
    return int(ExitCode.OK)


#: The fewest characters of a session id ``sessions`` shows on a terminal (more when a
#: shorter prefix would not be unique); ``--wide`` shows them whole.
ID_PREFIX = 8


def ago(ts: float | None, now: float | None = None) -> str:
    """How long ago ``ts`` was, as a person says it: ``just now``, ``5 min ago``, ``3 h ago``,
    ``2 d ago``, ``3 w ago``; the date beyond eight weeks."""
    if not ts:
        return "-"
    seconds = (time.time() if now is None else now) - ts
    if seconds < 60:
        return "just now"
    for size, unit, below in ((60, "min", 3600), (3600, "h", 86400), (86400, "d", 14 * 86400), (7 * 86400, "w", 56 * 86400)):
        if seconds < below:
            return f"{int(seconds // size)} {unit} ago"
    return time.strftime("%Y-%m-%d", time.localtime(ts))


def agent_shown(rec: SessionRecord) -> str:
    """The agent as a person knows it (:func:`acpcli.history.records.display_name`)."""
    from acpcli.history.records import display_name

    return display_name(rec)


def _session_lines(
    env: Environment, rows: list[SessionRecord], shortest: dict[str, str], live: set[str], *, wide: bool
) -> None:
    """``sessions`` on a terminal: one line a session, in the terminal's width -- the id's
    unique prefix, the agent, the title taking the room the rest leaves, the cwd shortened
    from the left with ``~`` for home, the last use as an age, the state when not all are
    active. ``wide``: whole ids and cwds, the protocol and both dates; as wide as it takes."""
    from dataclasses import replace

    from rich.text import Text

    from acpcli.render.fit import Column, table_lines

    home = os.path.expanduser("~")

    def tilde(path: str) -> str:
        if home == os.sep or not (path == home or path.startswith(home + os.sep)):
            return path
        return "~" + path[len(home) :]

    def parent_shown(parent: str | None) -> str:
        if not parent:
            return "-"
        return parent if wide else shortest.get(parent) or shown_id(parent)

    def state(rec: SessionRecord) -> str:
        return rec.state + (" · live" if rec.id in live else "")

    table = [
        {
            "ID": safe_line(rec.id if wide else shortest.get(rec.id, rec.id)),
            "AGENT": safe_line(agent_shown(rec)),
            "TITLE": safe_line(rec.shown_title or ""),
            "CWD": safe_line(tilde(rec.cwd)),
            "V": str(rec.protocol_version or "-"),
            "CREATED": _when(rec.created_at),
            "LAST USED": _when(rec.last_used_at) if wide else ago(rec.last_used_at),
            "STATE": safe_line(state(rec)),
            "PARENT": safe_line(parent_shown(rec.parent_id)),
        }
        for rec in rows
    ]
    # What a person reads first keeps its room longest: the title, then the id to copy; the
    # state, the cwd and a fork's parent give way first (cut, then dropped); a column
    # with nothing in it is not drawn.
    names = ["ID", "AGENT", "TITLE", "CWD"] + (["V", "CREATED", "LAST USED", "STATE"] if wide else ["LAST USED"])
    if not wide and any(row["STATE"] != "active" for row in table):
        names.append("STATE")
    names.append("PARENT")
    columns = [column for column in _session_columns() if column.name in names]
    if wide:
        columns = [Column(c.name, cap=80 if c.name == "TITLE" else None) for c in columns]  # as wide as it takes
    else:
        columns = [
            replace(c, cap=max(10, env.out.width // 6)) if c.name == "CWD" else c
            for c in columns
        ]
    for row in table:
        if row["PARENT"] == "-":
            row["PARENT"] = ""
    header, lines = table_lines(columns, table, None if wide else env.out.width)
    overflow: Literal["ignore", "ellipsis"] = "ignore" if wide else "ellipsis"  # (a narrow terminal)
    env.out.print(Text(header, style="bold"), no_wrap=True, overflow=overflow, crop=not wide)
    for text in lines:
        env.out.print(Text(text), no_wrap=True, overflow=overflow, crop=not wide)


def _session_columns() -> tuple[Column, ...]:
    """``sessions``' columns on a terminal, with how soon each gives way."""
    from acpcli.render.fit import Column

    return (
        Column("ID", rank=100, floor=0, keep=True),
        Column("AGENT", rank=60, floor=8, cap=16, soft=16),
        Column("TITLE", rank=90, floor=24),
        Column("CWD", rank=40, floor=8, left=True, soft=10),
        Column("V", rank=5),
        Column("CREATED", rank=5),
        Column("LAST USED", rank=50, floor=0),
        Column("STATE", rank=30, floor=6),
        Column("PARENT", rank=10, floor=8),
    )


def _migrate_quietly(index: Index) -> None:
    """Bring an index an older acpcli wrote up to this schema, then read it again; when it
    cannot be written (a full disk, read-only storage), read it as it is."""
    import sqlite3

    from acpcli.errors import ConfigError
    from acpcli.history.index import Index

    index.close()
    try:
        Index.open().close()
    except (ConfigError, sqlite3.Error, OSError):
        pass  # the read-only index reads the older schema as it is


def remove(
    ids: list[str],
    *,
    yes: bool,
    remote: bool = False,
    agent: str | None = None,
    cmd: str | None = None,
    protocol: str | None = None,
    timeout: str | None = None,
) -> int:
    """``sessions rm``: delete sessions' local records (index rows and events, the demo
    agent's state of demo sessions); with ``remote``, first on the agent's side too
    (``session/delete``, :func:`_delete_remote`). Every id is resolved (exact, or a unique
    prefix) before anything is deleted. On a terminal the sessions are listed and the person
    asked first, unless ``yes``."""
    from acpcli.config import parse_timeout
    from acpcli.errors import SessionNotFound
    from acpcli.history.index import Index

    if not ids:
        raise UsageError("sessions rm needs at least one session id")
    seconds = parse_timeout(timeout)
    if not remote and (seconds is not None or protocol is not None or cmd is not None):
        raise UsageError("--timeout, --protocol and --cmd go with `sessions rm ID --remote`: they are about the agent")
    with Index.existing(read_only=False) as index:
        if index is None:
            raise SessionNotFound(f"no session {shown_id(ids[0])!r} in the local index")
        records = {}
        for given in ids:
            rec = index.get(given)
            records[rec.id] = rec
        if remote:
            from acpcli.session.inputs import Options

            options = Options(agent=agent, cmd=cmd, protocol=protocol)
            return _delete_remote(index, list(records.values()), options, yes=yes, timeout=seconds)
        return _delete(index, list(records.values()), yes=yes)


def prune(older_than: str | None, *, dry_run: bool, yes: bool) -> int:
    """``sessions prune --older-than AGE``: delete the local records of every session (active
    or closed) last used longer ago than ``AGE``; ``dry_run`` lists them and deletes nothing."""
    import time

    from acpcli.history.index import Index

    if older_than is None:
        raise UsageError("sessions prune needs --older-than AGE (e.g. 30d, 12h, 2w, or a date)")
    try:
        cutoff = parse_since(older_than, time.time())
    except UsageError as err:
        raise UsageError(err.message.replace("--since", "--older-than", 1)) from None
    with Index.existing(read_only=dry_run) as index:
        if index is None or not (records := index.list_sessions(before=cutoff)):
            return _nothing_to_prune(older_than)
        if dry_run:
            from acpcli.cli.streams import environment

            env = environment()
            for rec in records:
                env.note(_line(rec))
            env.note(f"{_count(records)} would be deleted (--dry-run: nothing deleted)")
            return int(ExitCode.OK)
        return _delete(index, records, yes=yes, skip_busy=True)


def _nothing_to_prune(older_than: str) -> int:
    from acpcli.cli.streams import environment

    environment().note(f"no session was last used longer ago than {clip(older_than, 40)}: nothing to delete")
    return int(ExitCode.OK)


def _count(records: list[SessionRecord]) -> str:
    return f"{len(records)} {'session' if len(records) == 1 else 'sessions'}"


def _line(rec: SessionRecord) -> str:
    return f"  {shown_id(rec.id)}  {_when(rec.last_used_at)}  {rec.agent}  {rec.shown_title or '(untitled)'}"


def _confirmed(env: Environment, records: list[SessionRecord], question: str) -> bool:
    """On a terminal: list ``records`` and ask ``question`` (``{these}`` names them); True to
    go on. Not on a terminal: True (a script asked for it)."""
    if not env.interactive:
        return True
    for rec in records:
        env.note(_line(rec))
    these = "this session" if len(records) == 1 else f"these {_count(records)}"
    answer = env.err.input(question.format(these=these) + " [y/N] ", markup=False, emoji=False)
    if answer.strip().lower() not in ("y", "yes"):
        env.note("nothing deleted")
        return False
    return True


def _delete(index: Index, records: list[SessionRecord], *, yes: bool, skip_busy: bool = False) -> int:
    """Ask first on a terminal (unless ``yes``), then delete (:mod:`acpcli.history.housekeeping`;
    a session with a turn running in another acpcli: SessionBusy, or with ``skip_busy`` kept)."""
    from acpcli.cli.streams import environment
    from acpcli.history.housekeeping import delete_local

    env = environment()
    if not (yes or _confirmed(env, records, "Delete the local records of {these}?")):
        return int(ExitCode.OK)
    _stop_idle_hosts(env, records)
    deleted = repaired_search(
        env,
        index,
        lambda: delete_local(index, records, skip_busy=skip_busy),
        then="dropped (derived data: the next `acpcli search` makes it again)",
    )
    _drop_checkpoints(env, deleted)
    env.note(f"deleted {_count(deleted)}")
    if len(deleted) < len(records):
        env.note(f"kept {_count(records[len(deleted):])} with a turn running in another acpcli")
    return int(ExitCode.OK)


def _delete_remote(
    index: Index, records: list[SessionRecord], options: Options, *, yes: bool, timeout: float | None
) -> int:
    """``sessions rm ID… --remote``: each session deleted on the agent's side
    (``session/delete``, to the agent that runs it), then its local record; one line for each
    side. Refused before anything is deleted when a turn runs on one in another acpcli
    (SessionBusy). An agent that does not advertise the method, or fails, stops the command
    there (CapabilityMissing, exit 6, or its error): that session's local record is kept (the
    user asked for both; `sessions rm ID` alone deletes it), while those already deleted on
    their agent's side are deleted here too."""
    from acpcli.cli.streams import environment
    from acpcli.errors import AcpcliError, Interrupted, SessionBusy
    from acpcli.history.housekeeping import delete_local
    from acpcli.history.lock import SessionLock, holder_text
    from acpcli.session.remote import delete_remote

    env = environment()
    if not (yes or _confirmed(env, records, "Delete {these} on the agent's side and here?")):
        return int(ExitCode.OK)
    _stop_idle_hosts(env, records)
    for rec in records:  # nothing is sent while a turn runs on one of them
        lock = SessionLock(rec.id)
        if not lock.try_acquire():
            raise SessionBusy(f"session {rec.id} was not deleted: {holder_text(lock.holder())} is running a turn on it")
        lock.release()
    done: list[SessionRecord] = []
    try:
        for rec in records:
            try:
                name = delete_remote(rec, options, timeout=timeout)
            except AcpcliError as err:  # CapabilityMissing (exit 6), the agent's error, ...
                if not isinstance(err, Interrupted):
                    err.message += f" (the local record of {shown_id(rec.id)} is kept)"
                raise
            env.note(f"agent side: {safe_line(name)} deleted {shown_id(rec.id)} (session/delete)")
            done.append(rec)
    finally:
        if done:
            deleted = repaired_search(
                env, index, lambda: delete_local(index, done),
                then="dropped (derived data: the next `acpcli search` makes it again)",
            )
            _drop_checkpoints(env, deleted)
            for rec in deleted:
                env.note(f"local record: deleted {shown_id(rec.id)}")
    return int(ExitCode.OK)


def _drop_checkpoints(env: Environment, records: list[SessionRecord]) -> None:
    """The checkpoint stores of deleted sessions go with them (one line each that could not)."""
    from acpcli.errors import CheckpointError
    from acpcli.session.carried import sent as drop_carried
    from acpcli.worktree import remove_checkpoints

    for rec in records:
        drop_carried(rec.id)  # (a rewound conversation's transcript not sent yet)
        try:
            remove_checkpoints(rec.id)
        except CheckpointError as err:
            env.note(f"acpcli: warning: the checkpoints of {shown_id(rec.id)} were kept: {err}", style="yellow")


def _stop_idle_hosts(env: Environment, records: list[SessionRecord]) -> None:
    """A session about to be deleted is not kept live: its host is stopped first (its agent
    with it), when it is idle. A host running a turn holds the session's writer lock, so the
    delete refuses that session (exit 18) and the turn goes on."""
    live = _live_ids() & {rec.id for rec in records}
    if not live:
        return
    from acpcli.cli.hosts import stop_quietly
    from acpcli.host.client import status

    for session_id in sorted(live):
        said = status(session_id)
        if said is not None and not said.get("busy"):
            stopped = stop_quietly(session_id, why="rm")
            if stopped is not None:
                env.note(f"stopped the live session's host (pid {stopped[0]}) of {shown_id(session_id)}")


def repaired_search(
    env: Environment, index: Index, action: Callable[[], T], *, then: str = "it is made again from the stored sessions"
) -> T:
    """``action()``; if it fails on a damaged search index, that index is dropped (it is
    derived from the event log: nothing is lost; the next search makes it again), said in one
    line, and ``action()`` runs again. Damage elsewhere is raised (the CLI says it in one line)."""
    import sqlite3

    from acpcli.history.damage import is_damage

    try:
        return action()
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise
        problem = index.search_damage()
        if problem is None:
            raise
    env.note(
        f"warning — the search index in {index.path} is damaged ({problem}): {then}",
        style="yellow",
    )
    index.discard_search_index()
    return action()


def _remote_sessions(
    env: Environment,
    agent: str | None,
    cmd: str | None,
    cwd: str | None,
    as_json: bool,
    protocol: str | None = None,
    *,
    limit: int = 0,
    since: float | None = None,
    timeout: float | None = None,
) -> int:
    """``sessions --remote``: the agent's ``session/list``, as it orders it; ``since`` keeps
    the sessions it says were updated since then (those without ``updatedAt`` too), ``limit``
    shows at most that many (0: all)."""
    from acpcli.session.remote import list_remote

    shown = 0
    for info in list_remote(agent, cmd, cwd, protocol, timeout=timeout):
        if since is not None and _updated_before(info.get("updatedAt"), since):
            continue
        if limit and shown == limit:
            env.note("more sessions not shown — --limit N shows N (0 for no limit)")
            break
        shown += 1
        if as_json:
            env.stdout.write(json.dumps(info) + "\n")
        else:
            fields = (info.get("sessionId"), info.get("title") or "", info.get("cwd") or "", info.get("updatedAt") or "")
            env.stdout.write("\t".join(safe_line(str(f)) for f in fields) + "\n")
    return int(ExitCode.OK)


def _updated_before(updated: object, since: float) -> bool:
    """Whether an agent's ``updatedAt`` (ISO 8601) is before ``since``; an absent or
    unreadable one is not (the session is listed)."""
    from datetime import datetime

    if not isinstance(updated, str):
        return False
    try:
        return datetime.fromisoformat(updated.replace("Z", "+00:00")).timestamp() < since
    except ValueError:
        return False


def show(session_id: str, grep: str | None = None, *, pager: bool = True) -> int:
    """Print the stored transcript of a session (rich on a terminal, plain text otherwise);
    ``grep``: only the messages and tool calls holding every one of its words, each under
    the prompt it belongs to. On a terminal, with ``pager``, a transcript longer than the
    screen goes through :func:`paged`."""
    from acpcli.cli.streams import environment
    from acpcli.history.records import stored
    from acpcli.render import make_view

    env = environment()
    words = search_terms(grep) if grep is not None else None
    record, store = stored(session_id)
    if record.parent_id:
        env.note(f"{shown_id(record.id)} is a fork of {shown_id(record.parent_id)}: its transcript starts with the parent's")
    if grep is not None and words is not None:
        total = len(store.entries)
        store.entries, shown = _matching(store.entries, words)
        store.usage = None  # the matches alone: the session's usage line is not one of them
        env.note(
            f"{shown} of {total} entries of {shown_id(record.id)} match {clip(grep, 80)!r}"
            if shown
            else f"nothing in {shown_id(record.id)} matches {clip(grep, 80)!r}"
        )
    if pager and env.stdout_is_terminal and env.interactive:
        paged(env, store)
        return int(ExitCode.OK)
    view = make_view(env, final_only=True)
    try:
        view.print_store(store)
    finally:
        view.close()
    return int(ExitCode.OK)


def _matching(entries: list[Entry], words: list[str]) -> tuple[list[Entry], int]:
    """The entries holding every word, each match after the prompt it belongs to (the user
    message before it, once, even when it does not match itself); and how many matched."""
    from acpcli.history.search import documents, matches
    from acpcli.model import USER, Message

    kept: list[Entry] = []
    prompt: Entry | None = None
    prompt_kept = False
    count = 0
    for entry in entries:
        is_prompt = isinstance(entry, Message) and entry.kind == USER
        if is_prompt:
            prompt, prompt_kept = entry, False
        if not any(matches(text, words) for _, text in documents([entry])):
            continue
        count += 1
        if prompt is not None and not prompt_kept:
            kept.append(prompt)
            prompt_kept = True
        if not is_prompt:
            kept.append(entry)
    return kept, count


_SYSTEMS: dict[str, Literal["standard", "256", "truecolor"]] = {"standard": "standard", "256": "256", "truecolor": "truecolor"}


def paged(env: Environment, store: Store) -> None:
    """The finished transcript of ``store`` as the terminal shows it: through a pager
    (``$PAGER``, else ``less -R``) when it is longer than the screen, printed as it is
    otherwise (or when there is no pager to run). Ctrl-C belongs to the pager while it runs."""
    import io
    import shlex
    import shutil
    import signal
    import subprocess

    from acpcli.env import Environment
    from acpcli.render import make_view
    from acpcli.text.console import SafeConsole

    real = env.out
    buffer = io.StringIO()
    console = SafeConsole(
        file=buffer, force_terminal=True, width=real.width, height=real.height, highlight=False, soft_wrap=False,
        color_system=_SYSTEMS.get(real.color_system or ""),
    )
    drawn = Environment(stdin=env.stdin, stdout=buffer, stderr=env.stderr, _out=console)
    view = make_view(drawn, final_only=True)
    try:
        view.print_store(store)
    finally:
        view.close()
    text = buffer.getvalue()
    command = shlex.split(os.environ.get("PAGER") or "") or (["less", "-R"] if shutil.which("less") else [])
    if text.count("\n") < real.height or not command or command == ["cat"]:
        env.stdout.write(text)
        env.stdout.flush()
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        pager = subprocess.Popen(command, stdin=subprocess.PIPE, env={**os.environ, "LESS": os.environ.get("LESS", "-R")})
    except OSError:  # a $PAGER that does not run: the transcript all the same
        signal.signal(signal.SIGINT, previous)
        env.stdout.write(text)
        env.stdout.flush()
        return
    try:
        assert pager.stdin is not None
        try:
            pager.stdin.write(text.encode("utf-8", "replace"))
            pager.stdin.close()
        except BrokenPipeError:  # the person left the pager before the end: their choice
            pass
        pager.wait()
    finally:
        signal.signal(signal.SIGINT, previous)


def search_terms(text: str) -> list[str]:
    from acpcli.history.search import terms

    return terms(text)


#: A ``--limit`` above this means "no limit" (nothing holds more sessions; SQLite's integers
#: stop at 2**63 - 1, and Python's int() at 4,300 digits).
MAX_LIMIT = 10**9
_DIGITS = re.compile(r"[0-9]+")


def parse_limit(limit: str | int | None, default: int) -> int:
    """``--limit``: a number of 0 (no limit) or more, in ASCII digits; ``default`` when not
    given. A number above :data:`MAX_LIMIT` (however many digits) is no limit, 0."""
    if limit is None:
        return default
    if isinstance(limit, str):
        digits = limit.strip()
        if not _DIGITS.fullmatch(digits):
            raise UsageError(f"--limit must be a number: 0 (no limit) or more (got {clip(limit, 40)!r})")
        digits = digits.lstrip("0") or "0"
        limit = int(digits) if len(digits) <= len(str(MAX_LIMIT)) else MAX_LIMIT + 1
    if limit < 0:
        raise UsageError(f"--limit must be 0 (no limit) or more (got {limit})")
    return 0 if limit > MAX_LIMIT else limit


#: How many sessions ``acpcli search`` shows without --limit.
SEARCH_LIMIT = 20
#: Reindexing at least this many sessions before a search shows a progress bar (on a terminal).
_PROGRESS_FROM = 20
_KIND_LABELS = {"user": "you", "agent": "agent", "thought": "thought", "tool": "tool"}


def search(
    text: str,
    *,
    agent: str | None,
    cwd: Path | None,
    since: str | None,
    limit: str | int | None,
    thoughts: bool,
    as_json: bool,
) -> int:
    """``acpcli search TEXT``: the sessions whose messages hold every word, best match first."""
    from acpcli.cli.streams import environment
    from acpcli.history.index import Index
    from acpcli.history.search import DEFAULT_KINDS, KINDS, RANKED_UP_TO
    from acpcli.session.inputs import resolve_dir

    words = search_terms(text)
    count = parse_limit(limit, SEARCH_LIMIT)
    since_ts = parse_since(since) if since is not None else None
    the_cwd = resolve_dir(cwd, "--cwd") if cwd is not None else None
    env = environment()
    with Index.existing(read_only=False) as index:
        if index is None:
            env.note("no sessions recorded yet — start one with `acpcli new --agent demo`")
            return int(ExitCode.OK)

        def searched() -> list[tuple[SessionRecord, Hit]]:
            from acpcli.history.records import agent_filter

            late = _catch_up(env, index)
            hits = index.search(
                words, kinds=KINDS if thoughts else DEFAULT_KINDS, agent=agent_filter(index, agent), cwd=the_cwd,
                since=since_ts,
                limit=count + 1 if count else None,
            )
            if late:
                env.note(late, style="yellow")
            return hits

        found = repaired_search(env, index, searched)
        has_fts_now = index.has_fts()
        shortest = index.unique_prefixes([rec.id for rec, _ in found], ID_PREFIX) if found else {}
        if not has_fts_now:
            env.note(
                "warning — this Python's SQLite has no FTS5: searching by a slower scan, newest first",
                style="yellow",
            )
    if found and not found[0][1].ranked and has_fts_now:
        env.note(
            f"these words are in more than {RANKED_UP_TO:,} messages, too many to rank: the most recently "
            "used sessions come first (more words narrow it)"
        )
    more = bool(count) and len(found) > count
    found = found[:count] if count else found
    if as_json:
        _search_json(env, found)
    elif found:
        _search_lines(env, found, shortest)
    if not found:
        env.note(f"no session matches {clip(text, 80)!r}")
    elif more:
        env.note("more sessions match — --limit N shows N (0 for all), --agent, --cwd, --since narrow it")
    return int(ExitCode.OK)


def _catch_up(env: Environment, index: Index) -> str | None:
    """Index what sessions stored since their last indexing; a progress bar on a terminal
    when there is much to do (the first search after upgrading, over a large history). An
    index that cannot be written (a full disk, read-only) is searched as far as it is indexed;
    so is one whose event log is damaged: the warning to say after the search is returned."""
    import sqlite3

    from acpcli.history.guarded import storage_reason
    from acpcli.history.indexing import catch_up

    todo = 0
    try:
        todo = len(index.stale_sessions())
        if todo < _PROGRESS_FROM or not env.err.is_terminal:
            catch_up(index)
            return None
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        columns = (TextColumn("indexing sessions for search"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, console=env.err, transient=True) as bar:
            task = bar.add_task("index", total=todo)
            catch_up(index, lambda done, _total: bar.update(task, completed=done))
    except sqlite3.Error as exc:
        from acpcli.history.damage import is_damage

        if is_damage(exc):
            if index.search_damage() is not None:
                raise  # the search index itself: made again (repaired_search)
            # the event log or the session list is damaged: search what is indexed (said
            # once the search has read: if it cannot, its error is the one line)
            return (
                f"warning — could not bring the search index up to date: {index.path} is damaged ({exc}); "
                "the results may miss some sessions (`acpcli doctor` says what is damaged)"
            )
        reason = storage_reason(exc) or str(exc)
        env.note(
            f"warning — could not index {todo or 'some'} sessions for search ({reason}): the results may miss them",
            style="yellow",
        )
        return None
    env.note(f"indexed {todo} sessions for search")
    return None


_SPACES = re.compile(r"\s+")


def _snippet_parts(snippet: str) -> list[tuple[str, bool]]:
    """A snippet cut at its match marks: ``(text, is_match)`` pieces, each one line and safe."""
    from acpcli.history.search import HIT_END, HIT_START

    parts: list[tuple[str, bool]] = []
    for i, piece in enumerate(snippet.split(HIT_START)):
        if i == 0:
            parts.append((piece, False))
            continue
        hit, _, rest = piece.partition(HIT_END)
        parts.extend(((hit, True), (rest, False)))
    return [(safe_line(_SPACES.sub(" ", t)), m) for t, m in parts if t]


def _search_json(env: Environment, found: list[tuple[SessionRecord, Hit]]) -> None:
    for rec, hit in found:
        parts = _snippet_parts(hit.snippet)
        plain, spans, at = "", [], 0
        for piece, is_match in parts:
            if is_match:
                spans.append([at, at + len(piece)])
            plain += piece
            at += len(piece)
        env.stdout.write(
            json.dumps(
                {
                    "id": rec.id,
                    "agent": rec.agent,
                    "title": rec.shown_title,
                    "titleSource": rec.title_source,
                    "cwd": rec.cwd,
                    "lastUsed": rec.last_used_at,
                    "state": rec.state,
                    "kind": hit.kind,  # of the best matching message: user, agent, thought, tool
                    "snippet": plain,
                    "highlights": spans,  # [start, end) of each matched word in snippet
                    "matches": hit.matches,  # messages of the session that match
                    "score": hit.score,  # FTS5 bm25 (lower is better); null without FTS5
                }
            )
            + "\n"
        )


def _search_lines(env: Environment, found: list[tuple[SessionRecord, Hit]], shortest: dict[str, str]) -> None:
    """Pipes: a tab-separated line a session, whole. A terminal: a line a session as
    ``sessions`` draws it (the id's unique prefix, the title first, the agent's display
    name, the last use as an age), then the matching words in their message."""
    if not env.stdout_is_terminal:
        # Pipes: one tab-separated line per session, the snippet plain.
        env.stdout.write("ID\tAGENT\tLAST_USED\tTITLE\tKIND\tMATCHES\tSNIPPET\n")
        for rec, hit in found:
            snippet = "".join(piece for piece, _ in _snippet_parts(hit.snippet))
            fields = (rec.id, rec.agent, _when(rec.last_used_at), rec.shown_title or "", hit.kind, str(hit.matches), snippet)
            env.stdout.write("\t".join(safe_line(f.replace("\t", " ").replace("\n", " ")) for f in fields) + "\n")
        return
    from rich.text import Text

    from acpcli.render.fit import cells, shorten

    for rec, hit in found:
        head = Text()
        ident = safe_line(shortest.get(rec.id, rec.id))
        head.append(ident, style="bold")
        matched = f" · {hit.matches} matches" if hit.matches > 1 else ""
        about = f"  {safe_line(agent_shown(rec))} · {ago(rec.last_used_at)}{matched}"
        if rec.shown_title:  # the title gives way to what is said of it down to 20 cells, then it
            room = max(20, env.out.width - cells(ident) - cells(about) - 2)
            head.append("  " + shorten(safe_line(rec.shown_title), room))
        head.append(about, style="dim")
        body = Text("  ")
        body.append(f"{_KIND_LABELS.get(hit.kind, hit.kind)}: ", style="cyan")
        for piece, is_match in _snippet_parts(hit.snippet):
            body.append(piece, style="bold yellow" if is_match else None)
        env.out.print(head, no_wrap=True, overflow="ellipsis")  # one line a session; the title gives way
        env.out.print(body)


def export(session_id: str, output_format: str, output: Path | None) -> int:
    """Write a stored transcript as markdown, jsonl or plain text (to ``output`` or stdout)."""
    from acpcli.cli.streams import environment
    from acpcli.history.records import stored
    from acpcli.render import FORMATS
    from acpcli.render.export import write_transcript

    if output_format not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)} (got {output_format!r})")
    env = environment()
    record, store = stored(session_id)  # an unknown id is refused before a file is created
    stream = open(output, "w", encoding="utf-8") if output is not None else env.stdout  # noqa: SIM115
    try:
        write_transcript(store, output_format, stream, session_id=record.id, title=record.title, record=record)
    finally:
        if output is not None:
            stream.close()
    return int(ExitCode.OK)
