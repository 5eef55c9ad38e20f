"""The listing behind ``acpcli sessions``: filters and counts in SQL, the indexes that keep a
page of the newest sessions cheap, and the migration that adds them."""

from __future__ import annotations

import pytest

from acpcli.cli.history import parse_since
from acpcli.errors import SessionNotFound, UsageError
from acpcli.history import index as index_db
from acpcli.history.index import MIGRATIONS, Index
from tests.helpers.records import rec


def ids(records: list[index_db.SessionRecord]) -> list[str]:
    return [r.id for r in records]


def fill(index: Index) -> None:
    index.upsert_session(rec("old", agent="codex", last_used_at=100.0, cwd="/a"))
    index.upsert_session(rec("mid", agent="demo", last_used_at=200.0, cwd="/a", state="closed"))
    index.upsert_session(rec("new", agent="demo", last_used_at=300.0, cwd="/b"))


def test_since_filters_on_last_use_and_counts_agree(index: Index) -> None:
    fill(index)
    assert ids(index.list_sessions(since=200.0)) == ["new", "mid"]
    assert ids(index.list_sessions(since=200.0, state="active")) == ["new"]
    assert ids(index.list_sessions(since=301.0)) == []
    for filters in ({}, {"agent": "demo"}, {"cwd": "/a"}, {"state": "active"}, {"since": 150.0},
                    {"agent": "demo", "state": "closed", "since": 0.0}):
        assert index.count_sessions(**filters) == len(index.list_sessions(**filters))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("where", "index_name"),
    [("state = 'active'", "sessions_by_state"), ("agent = 'demo'", "sessions_by_agent"),
     ("cwd = '/a'", "sessions_by_cwd"), ("1", "sessions_by_last_used")],
)
def test_each_filter_reads_its_index(index: Index, where: str, index_name: str) -> None:
    fill(index)
    for sql in (f"SELECT id FROM sessions WHERE {where} ORDER BY last_used_at DESC, rowid DESC LIMIT 20",
                f"SELECT count(*) FROM sessions WHERE {where}"):
        plan = " ".join(row[-1] for row in index.conn.execute("EXPLAIN QUERY PLAN " + sql))
        if where == "1" and "count" in sql:
            continue  # a bare count reads the smallest index, whichever it is
        assert index_name in plan, plan


def _old_database(monkeypatch: pytest.MonkeyPatch) -> None:
    """A database made by an acpcli before the listing indexes (schema 4), with a session."""
    with monkeypatch.context() as m:
        m.setattr(index_db, "MIGRATIONS", MIGRATIONS[:4])
        with Index() as old:
            fill(old)


def test_an_old_database_reads_read_only_and_migrates_on_first_write(monkeypatch: pytest.MonkeyPatch) -> None:
    _old_database(monkeypatch)
    with Index.open(read_only=True) as ro:
        assert ids(ro.list_sessions(state="active", limit=1)) == ["new"]
        assert ro.count_sessions(state="active") == 2
        assert ro.conn.execute("PRAGMA user_version").fetchone() == (4,)
    with Index() as rw:
        rw.touch("old", when=400.0)
        names = {r[0] for r in rw.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"sessions_by_state", "sessions_by_agent", "sessions_by_cwd"} <= names
        assert rw.conn.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
        assert ids(rw.list_sessions(agent="codex")) == ["old"]


def test_parse_since() -> None:
    now = 1_000_000.0
    assert parse_since("7d", now) == now - 7 * 86400
    assert parse_since("12h", now) == now - 12 * 3600
    assert parse_since("30m", now) == now - 1800
    assert parse_since("2w", now) == now - 14 * 86400
    from datetime import datetime

    assert parse_since("2026-11-01") == datetime(2026, 11, 1).timestamp()
    assert parse_since("2026-11-01T09:30") == datetime(2026, 11, 1, 9, 30).timestamp()
    for bad in ("", "7", "d", "yesterday", "-3d", "2026-13-01"):
        with pytest.raises(UsageError, match="--since"):
            parse_since(bad, now)


# -- titles ------------------------------------------------------------------------------------


def test_prompt_title_is_the_first_nonblank_line_trimmed() -> None:
    assert index_db.prompt_title("\n   \n  Fix\tthe  bug \nmore") == "Fix the bug"
    assert index_db.prompt_title(" \n ") is None
    long = index_db.prompt_title("word " * 40)
    assert long is not None and len(long) == index_db.PROMPT_TITLE_CHARS and long.endswith("…")


def test_the_first_prompt_title_stays_and_the_agents_title_wins(index: Index) -> None:
    index.upsert_session(rec("s"))
    assert (index.get("s").shown_title, index.get("s").title_source) == (None, None)
    index.set_prompt_title("s", "first\nsecond line")
    index.set_prompt_title("s", "a later prompt")
    got = index.get("s")
    assert (got.prompt_title, got.shown_title, got.title_source) == ("first", "first", "prompt")
    index.set_title("s", "Agent title")
    got = index.get("s")
    assert (got.shown_title, got.title_source) == ("Agent title", "agent")
    index.upsert_session(rec("s", title="Agent title"))  # upsert leaves the prompt title alone
    assert index.get("s").prompt_title == "first"


def test_the_titles_migration_fills_in_untitled_sessions_from_their_events(monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    chunk = {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Plain update\nrest"}}
    frame = {"jsonrpc": "2.0", "method": "session/update",
             "params": {"sessionId": "x", "update": {**chunk, "content": {"type": "text", "text": "In a frame"}}}}
    with monkeypatch.context() as m:
        m.setattr(index_db, "MIGRATIONS", MIGRATIONS[:5])
        with Index() as old:
            for sid, title in (("plain", None), ("framed", None), ("titled", "Agent's"), ("silent", None)):
                old.upsert_session(rec(sid, title=title))
            with old.writer() as w:
                w.append("plain", "turn_start", "{}")
                w.append("plain", "agent_message_chunk", json.dumps({"sessionUpdate": "agent_message_chunk"}))
                w.append("plain", "user_message_chunk", json.dumps(chunk))
                w.append("plain", "user_message_chunk", json.dumps({**chunk, "content": {"type": "text", "text": "2nd"}}))
                w.append("framed", "user_message_chunk", json.dumps(frame))
                w.append("titled", "user_message_chunk", json.dumps(chunk))
                w.append("silent", "agent_message_chunk", json.dumps({"sessionUpdate": "agent_message_chunk"}))
    with Index.open(read_only=True) as ro:  # not migrated by a reader: no prompt titles yet
        assert ro.get("plain").prompt_title is None
    with Index() as index:
        got = {sid: (index.get(sid).shown_title, index.get(sid).title_source)
               for sid in ("plain", "framed", "titled", "silent")}
    assert got == {"plain": ("Plain update", "prompt"), "framed": ("In a frame", "prompt"),
                   "titled": ("Agent's", "agent"), "silent": (None, None)}


def test_a_title_the_user_gave_is_never_replaced_by_the_agents(index: Index) -> None:
    index.upsert_session(rec("u"))
    index.set_title("u", "Agent title")
    index.set_title("u", "Mine", by_user=True)
    index.set_title("u", "A later agent title")  # session_info_update, session/list: ignored
    got = index.get("u")
    assert (got.shown_title, got.title_source, got.titled_by_user) == ("Mine", "user", True)
    index.upsert_session(got)  # what attach does with a known record: the user's title stays
    assert index.get("u").title_source == "user"
    with pytest.raises(SessionNotFound):
        index.set_title("nope", "x")
