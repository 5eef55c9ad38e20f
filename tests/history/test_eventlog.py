"""The event log (acpcli.history.eventlog): its page format, EventWriter, and reading pages back
(directly and through the Index methods that delegate to it)."""

from __future__ import annotations

import json
import sqlite3
import struct

import pytest

from acpcli.errors import SessionNotFound
from acpcli.history import eventlog
from acpcli.history.eventlog import EventWriter
from acpcli.history.index import Index
from tests.helpers.records import rec

# -- the page format -----------------------------------------------------------------------


def test_a_page_row_is_the_documented_format(index: Index) -> None:
    index.upsert_session(rec("s"))
    times = iter([1.5, 2.25, 1e9 + 0.125])
    with index.writer(batch_size=1000, flush_interval=3600, clock=lambda: next(times)) as w:
        for kind, payload in (("plan", '{"a": 1}'), ("ü", ""), ("k", '"x"')):
            w.append("s", kind, payload)
    rows = index.conn.execute(
        "SELECT session_id, first_seq, count, kinds, sizes, payloads, received_at FROM event_pages"
    ).fetchall()
    assert rows == [
        ("s", 1, 3, '["plan", "\\u00fc", "k"]', "[8, 0, 3]", '{"a": 1}"x"', struct.pack("<3d", 1.5, 2.25, 1e9 + 0.125))
    ]


def test_write_pages_cuts_at_a_new_session_a_gap_and_the_page_limit(index: Index) -> None:
    index.upsert_session(rec("a"))
    index.upsert_session(rec("b"))
    rows = [("a", q, float(q), "k", f'"a{q}"') for q in range(1, 6)]
    rows += [("b", 1, 10.0, "k", '"b1"'), ("b", 2, 20.0, "k", '"b2"'), ("b", 4, 40.0, "k", '"b4"')]
    conn = index.conn
    conn.execute("BEGIN")
    eventlog.write_pages(conn, iter(rows), per_page=2)
    conn.execute("COMMIT")
    pages = conn.execute("SELECT session_id, first_seq, count FROM event_pages ORDER BY session_id, first_seq")
    assert pages.fetchall() == [("a", 1, 2), ("a", 3, 2), ("a", 5, 1), ("b", 1, 2), ("b", 4, 1)]
    for sid in "ab":
        mine = [r for r in rows if r[0] == sid]
        assert list(eventlog.events_raw(conn, sid)) == [(q, k, p) for _, q, _, k, p in mine]
        assert eventlog.event_times(conn, sid) == [t for _, _, t, _, _ in mine]
        assert eventlog.event_count(conn, sid) == len(mine)
    assert list(eventlog.events(conn, "b")) == [("k", "b1"), ("k", "b2"), ("k", "b4")]
    assert list(eventlog.events_raw(conn, "nobody")) == [] and eventlog.event_count(conn, "nobody") == 0


# -- writing and reading through the index ------------------------------------------------------


def test_events_come_back_in_order_with_the_raw_text(index: Index) -> None:
    index.upsert_session(rec("s"))
    texts = [
        json.dumps({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"t{i}"}})
        for i in range(1234)
    ]
    texts.append('{ "sessionUpdate" : "plan",  "entries": [] }')  # odd spacing survives
    with index.writer(batch_size=100) as w:
        seqs = [w.append("s", json.loads(t)["sessionUpdate"], t) for t in texts]
    assert seqs == list(range(1, len(texts) + 1))
    assert [p for _, _, p in index.events_raw("s")] == texts
    events = list(index.events("s"))
    assert events[0] == ("agent_message_chunk", json.loads(texts[0]))
    assert events[-1] == ("plan", {"sessionUpdate": "plan", "entries": []})
    assert index.event_count("s") == len(texts)


def test_events_are_append_only(index: Index) -> None:
    index.upsert_session(rec("s"))
    with index.writer() as w:
        w.append("s", "k", "{}")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        index.conn.execute("UPDATE event_pages SET payloads = '[]'")


def test_append_to_an_unknown_session(index: Index) -> None:
    with index.writer() as w, pytest.raises(SessionNotFound, match="ghost"):
        w.append("ghost", "k", "{}")


def test_writer_buffers_until_batch_size(index: Index) -> None:
    index.upsert_session(rec("s"))
    other = Index()  # a second connection sees only what was committed
    w = index.writer(batch_size=3, flush_interval=3600)
    w.append("s", "k", "{}")
    w.append("s", "k", "{}")
    assert w.pending == 2
    assert other.event_count("s") == 0
    w.append("s", "k", "{}")  # third row: the batch is written
    assert w.pending == 0
    assert other.event_count("s") == 3
    w.append("s", "k", "{}")
    w.flush()
    assert other.event_count("s") == 4
    w.close()
    other.close()


def test_writer_flushes_when_the_oldest_row_is_due(index: Index) -> None:
    now = [1000.0]
    index.upsert_session(rec("s"))
    other = Index()
    w = index.writer(batch_size=1000, flush_interval=0.1, clock=lambda: now[0])
    w.append("s", "k", "{}")
    assert not w.flush_if_due()
    now[0] += 0.05
    w.append("s", "k", "{}")
    assert other.event_count("s") == 0
    now[0] += 0.06  # the first row is now 0.11 s old
    assert w.flush_if_due()
    assert other.event_count("s") == 2
    w.append("s", "k", "{}")
    now[0] += 0.2
    w.append("s", "k", "{}")  # append itself notices the age
    assert w.pending == 0 and other.event_count("s") == 4
    w.close()
    assert other.event_times("s") == pytest.approx([1000.0, 1000.05, 1000.11, 1000.31])  # the given clock
    other.close()


def test_close_and_context_exit_flush(index: Index) -> None:
    index.upsert_session(rec("s"))
    other = Index()
    with index.writer(batch_size=1000, flush_interval=3600) as w:
        w.append("s", "k", "{}")
    assert other.event_count("s") == 1
    with pytest.raises(ValueError):
        w.append("s", "k", "{}")
    w2 = index.writer(batch_size=1000, flush_interval=3600)
    w2.append("s", "k", "{}")
    index.close()  # closing the index closes (flushes) its writers
    assert other.event_count("s") == 2
    other.close()


def test_reading_flushes_this_index_writers(index: Index) -> None:
    index.upsert_session(rec("s"))
    w = index.writer(batch_size=1000, flush_interval=3600)
    w.append("s", "k", '{"a": 1}')
    assert list(index.events("s")) == [("k", {"a": 1})]
    w.close()


def test_seq_continues_across_writers_and_processes(index: Index) -> None:
    index.upsert_session(rec("s"))
    with index.writer() as w:
        w.append("s", "k", "1")
    with Index() as later, later.writer() as w:
        assert w.append("s", "k", "2") == 2


def test_two_writers_on_one_session_renumber_instead_of_colliding(index: Index) -> None:
    index.upsert_session(rec("s"))
    other = Index()
    a = index.writer(batch_size=1000, flush_interval=3600)
    b = other.writer(batch_size=1000, flush_interval=3600)
    a.append("s", "k", '"a1"')
    b.append("s", "k", '"b1"')  # both numbered this seq 1
    b.append("s", "k", '"b2"')
    a.flush()
    b.flush()  # b's rows move to 2 and 3
    a.append("s", "k", '"a2"')  # a learns the new end at its next flush
    a.close()
    b.close()
    other.close()
    rows = list(index.events_raw("s"))
    assert [seq for seq, _, _ in rows] == [1, 2, 3, 4]
    assert [p for _, _, p in rows] == ['"a1"', '"b1"', '"b2"', '"a2"']


def test_a_batch_is_one_page_per_session(index: Index) -> None:
    index.upsert_session(rec("a"))
    index.upsert_session(rec("b"))
    with index.writer(batch_size=10, flush_interval=3600) as w:
        seqs = [w.append("ab"[i % 3 == 0], "k", f'"{i}"') for i in range(25)]
    # 25 events in batches of 10, 10, 5: each batch holds both sessions
    assert index.conn.execute("SELECT count(*) FROM event_pages").fetchone() == (6,)
    assert seqs[:4] == [1, 1, 2, 2]  # per session
    mine = {sid: [json.loads(p) for _, _, p in index.events_raw(sid)] for sid in "ab"}
    assert mine["b"] == [str(i) for i in range(25) if i % 3 == 0]
    assert mine["a"] == [str(i) for i in range(25) if i % 3 != 0]
    assert index.event_count("a") + index.event_count("b") == 25


ODD_TEXTS = ["", "line\nbreak", "tab\tand \r\n", "ünï 😀 中文", '{"a": "b"}\n', "\\", "x" * 70000, '"']


def test_any_payload_and_kind_text_comes_back_as_it_was(index: Index) -> None:
    index.upsert_session(rec("s"))
    kinds = ["agent_message_chunk", "new\nline", "", "ü", "acpcli/replay-start", "[", '"', "\ud800"]
    with index.writer(batch_size=3) as w:
        for i, text in enumerate(ODD_TEXTS):
            w.append("s", kinds[i % len(kinds)], text)
    rows = list(index.events_raw("s"))
    assert [p for _, _, p in rows] == ODD_TEXTS
    assert [k for _, k, _ in rows] == [kinds[i % len(kinds)] for i in range(len(ODD_TEXTS))]
    assert [q for q, _, _ in rows] == list(range(1, len(ODD_TEXTS) + 1))


def test_a_failed_flush_keeps_the_events_and_their_numbers(index: Index) -> None:
    index.upsert_session(rec("s"))
    other = Index()
    a = index.writer(batch_size=1000, flush_interval=3600)
    b = other.writer(batch_size=1000, flush_interval=3600)
    a.append("s", "k", '"a1"')
    b.append("s", "k", '"b1"')
    a.flush()  # b's event must now move to seq 2 ...
    index.conn.execute(
        "CREATE TEMP TRIGGER no_pages BEFORE INSERT ON event_pages BEGIN SELECT RAISE(ABORT, 'disk full'); END"
    )
    other.conn.execute(
        "CREATE TEMP TRIGGER no_pages BEFORE INSERT ON event_pages BEGIN SELECT RAISE(ABORT, 'disk full'); END"
    )
    with pytest.raises(sqlite3.DatabaseError, match="disk full"):
        b.flush()  # ... but its write fails: nothing is lost, nothing half-renumbered
    assert b.pending == 1
    other.conn.execute("DROP TRIGGER no_pages")
    index.conn.execute("DROP TRIGGER no_pages")
    assert b.append("s", "k", '"b2"') == 2  # numbered as if nothing was written yet
    b.close()
    a.close()
    other.close()
    assert [(q, p) for q, _, p in index.events_raw("s")] == [(1, '"a1"'), (2, '"b1"'), (3, '"b2"')]


def test_batch_size_must_be_positive(index: Index) -> None:
    with pytest.raises(ValueError):
        EventWriter(index, batch_size=0)


# -- what cannot be read -------------------------------------------------------------------


def test_unreadable_events_are_skipped_and_said_once_with_their_seqs(index: Index) -> None:
    from acpcli import notices

    index.upsert_session(rec("s"))
    with index.writer(batch_size=3, flush_interval=3600) as w:
        for n in range(1, 10):
            w.append("s", "k", json.dumps({"n": n}))  # pages of seqs 1-3, 4-6, 7-9
    conn = index.conn
    conn.execute("DROP TRIGGER event_pages_are_append_only")
    conn.execute("UPDATE event_pages SET payloads = 'x' || substr(payloads, 2) WHERE first_seq = 4")
    conn.execute("UPDATE event_pages SET sizes = '[1, -1]' WHERE first_seq = 7")
    said: list[str] = []
    notices.reset()
    previous = notices.set_sink(said.append)
    try:
        assert [p["n"] for _, p in index.events("s")] == [1, 2, 3, 5, 6]
    finally:
        notices.set_sink(previous)
    (line,) = said
    assert "4 stored events of session s could not be read (seq 4, 7-9)" in line
    unreadable = eventlog.Unreadable("s")
    # raw: 7 cuts apart (its one-character payload is not JSON: events() skips it), 8 does not
    assert [seq for seq, _, _ in eventlog.events_raw(conn, "s", unreadable=unreadable)] == [1, 2, 3, 4, 5, 6, 7]
    assert unreadable.seqs() == "8-9" and unreadable.count() == 2
