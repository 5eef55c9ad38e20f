"""Full-text search (``acpcli.history.search``, ``acpcli.history.indexing``): documents match what
``show`` rebuilds, queries take words literally, results are ranked and filtered, deleted
sessions leave nothing behind, and a SQLite without FTS5 gets the same matches by a scan."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from acpcli.errors import UsageError
from acpcli.history import housekeeping, indexing, search
from acpcli.history.index import MIGRATIONS, Index
from acpcli.history.records import REPLAY_END, REPLAY_START, TURN_START, rebuild
from acpcli.model import Message, Plan, Store, ToolCall
from tests.helpers.records import rec


def _chunk(kind: str, text: str, **extra: Any) -> tuple[str, str]:
    update = {"sessionUpdate": kind, "content": {"type": "text", "text": text}, **extra}
    return kind, json.dumps(update)


def _store(index: Index, sid: str, events: list[tuple[str, str]], **kw: Any) -> None:
    try:
        index.get(sid)
    except Exception:
        index.upsert_session(rec(sid, **kw))
    with index.writer() as writer:
        for kind, payload in events:
            writer.append(sid, kind, payload)


def _turn(user: str, *answer: str) -> list[tuple[str, str]]:
    return [
        (TURN_START, "{}"),
        _chunk("user_message_chunk", user),
        *(_chunk("agent_message_chunk", a) for a in answer),
    ]


@pytest.fixture
def index(tmp_path: Path) -> Index:
    with Index.open(tmp_path / "acpcli.db") as ix:
        yield ix


def _docs(index: Index, sid: str) -> list[tuple[str, str]]:
    rows = index.conn.execute("SELECT kind, text FROM search_docs WHERE session_id = ? ORDER BY id", (sid,))
    return [tuple(r) for r in rows]


def _fts_ok(index: Index) -> None:
    index.conn.execute("INSERT INTO search_fts (search_fts) VALUES ('integrity-check')")


def _ids(found: list[tuple[Any, search.Hit]]) -> list[str]:
    return [r.id for r, _ in found]


# -- documents and queries ---------------------------------------------------------------------


def test_documents_are_messages_with_text_and_tool_titles() -> None:
    user, agent, thought = Message("user"), Message("agent"), Message("thought")
    user.set_content([{"type": "text", "text": "find \x02the\x03 bug"}])
    agent.set_content([{"type": "text", "text": "fixed"}, {"type": "image", "data": "x"}])
    thought.set_content([{"type": "text", "text": "hmm"}])
    blank = Message("agent")
    blank.set_content([{"type": "text", "text": "  \n"}])
    image_only = Message("user")
    image_only.set_content([{"type": "image", "data": "x"}])
    tool, untitled = ToolCall("t1", title="Edit README.md"), ToolCall("t2")
    docs = search.documents([user, agent, thought, blank, image_only, tool, untitled, Plan()])
    # the snippet marks a stored text could forge are blanked
    assert docs == [("user", "find  the  bug"), ("agent", "fixed"), ("thought", "hmm"), ("tool", "Edit README.md")]


@pytest.mark.parametrize(
    ("text", "words", "query"),
    [
        ("flaky test", ["flaky", "test"], '"flaky" AND "test"'),
        ('"retry"  back*', ["retry", "back*"], '"retry" AND "back"*'),
        ("NOT OR AND", ["NOT", "OR", "AND"], '"NOT" AND "OR" AND "AND"'),  # operators are words
        ('say "hi" - now', ["say", "hi", "now"], '"say" AND "hi" AND "now"'),  # a bare dash is no word
        ('a"b 2-1 x_y', ['a"b', "2-1", "x_y"], '"a b" AND "2 1" AND "x y"'),  # runs of letters and digits
        ("*", None, None),
    ],
)
def test_query_words_are_taken_literally(text: str, words: list[str] | None, query: str | None) -> None:
    if words is None:
        with pytest.raises(UsageError, match="nothing to search for"):
            search.terms(text)
        return
    assert search.terms(text) == words
    assert search.fts_query(words) == query


def test_empty_query_is_a_usage_error() -> None:
    for text in ("", "   ", '"" -- ***'):
        with pytest.raises(UsageError):
            search.terms(text)


# -- the index ------------------------------------------------------------------------------------


def test_every_planted_word_is_found_and_ranked(index: Index) -> None:
    now = time.time()
    for i in range(30):
        _store(index, f"s{i:02}", _turn(f"question {i} about plain things", "an ordinary answer"))
        index.touch(f"s{i:02}", now - 1000 + i)
    # planted: one word per session, in a prompt, an answer, a thought and a tool title
    _store(index, "s03", _turn("where is quetzal", "no idea"))
    _store(index, "s07", [*_turn("hello", "the quetzal lives in forests, quetzal quetzal")])
    _store(index, "s11", [_chunk("agent_thought_chunk", "thinking of quetzal")])
    _store(index, "s13", [("tool_call", json.dumps({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read quetzal.txt"}))])
    assert indexing.catch_up(index) == 30
    assert search.stale(index.conn) == []
    found = index.search(["quetzal"])
    assert set(_ids(found)) == {"s03", "s07", "s13"}  # thoughts are opt-in
    assert _ids(found)[0] == "s07"  # three occurrences rank first
    assert set(_ids(index.search(["quetzal"], kinds=search.KINDS))) == {"s03", "s07", "s11", "s13"}
    hit = {r.id: h for r, h in found}["s03"]
    assert hit.kind == "user" and hit.matches == 1
    assert f"{search.HIT_START}quetzal{search.HIT_END}" in hit.snippet
    # every word must be in one message; prefixes; case and accents do not matter
    assert _ids(index.search(["QUETZAL", "where"])) == ["s03"]
    assert set(_ids(index.search(["quetz*"]))) == {"s03", "s07", "s13"}
    _store(index, "s20", _turn("Crème brûlée recipe"))
    indexing.catch_up(index)
    assert _ids(index.search(["creme", "brulee"])) == ["s20"]
    assert index.search(["quetzal", "penguin"]) == []
    _fts_ok(index)


def test_ties_are_newest_first_and_filters_and_limit_apply(index: Index, tmp_path: Path) -> None:
    now = time.time()
    for i, (agent, cwd) in enumerate([("demo", "/a"), ("codex", "/a"), ("demo", "/b"), ("claude", "/b")]):
        _store(index, f"t{i}", _turn("the same words here"), agent=agent, cwd=cwd)
        index.touch(f"t{i}", now - 86400 * (4 - i))  # t3 newest
    indexing.catch_up(index)
    assert _ids(index.search(["same", "words"])) == ["t3", "t2", "t1", "t0"]
    assert _ids(index.search(["same"], agent="demo")) == ["t2", "t0"]
    assert _ids(index.search(["same"], cwd="/b")) == ["t3", "t2"]
    assert _ids(index.search(["same"], since=now - 86400 * 2.5)) == ["t3", "t2"]
    assert _ids(index.search(["same"], limit=2)) == ["t3", "t2"]
    assert len(index.search(["same"], limit=None)) == 4


def test_deleted_sessions_leave_no_search_entries(index: Index) -> None:
    for sid in ("keep", "rm1", "rm2"):
        _store(index, sid, _turn(f"marmot in {sid}", "marmot answer"))
    indexing.catch_up(index)
    index.delete("rm1")
    housekeeping.delete_local(index, [index.get("rm2")])
    assert _ids(index.search(["marmot"])) == ["keep"]
    (left,) = index.conn.execute("SELECT count(*) FROM search_docs WHERE session_id != 'keep'").fetchone()
    assert left == 0
    # nothing of them left in the FTS index either: every term it holds comes from "keep"
    index.conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, search_fts, row)")
    terms = {t for (t,) in index.conn.execute("SELECT term FROM temp.vocab")}
    assert "rm1" not in terms and "rm2" not in terms and "keep" in terms
    _fts_ok(index)


def test_documents_follow_the_rebuilt_transcript_not_the_raw_replays(index: Index) -> None:
    # acpcli recorded two turns; a later load replayed them (glued, as codex does) plus a turn
    # made by another client: the transcript, and so the documents, hold each message once.
    events = [*_turn("first ibex", "answer one"), *_turn("second ibex", "answer two")]
    replay = [
        (REPLAY_START, "{}"),
        _chunk("user_message_chunk", "first ibex second ibex"),
        _chunk("agent_message_chunk", "answer one answer two"),
        _chunk("user_message_chunk", "third ibex elsewhere"),
        _chunk("agent_message_chunk", "answer three"),
        (REPLAY_END, "{}"),
    ]
    _store(index, "r", events + replay)
    indexing.catch_up(index)
    assert _docs(index, "r") == search.documents(rebuild(index, "r").entries)
    assert [t for k, t in _docs(index, "r") if k == "user"] == ["first ibex", "second ibex", "third ibex elsewhere"]
    assert index.search(["ibex"])[0][1].matches == 3
    # a second load replays it all again: still each message once
    _store(index, "r", replay)
    assert search.stale(index.conn) == [("r", index.last_seq("r"))]
    indexing.catch_up(index)
    assert index.search(["ibex"])[0][1].matches == 3


# -- kept in step after a turn -----------------------------------------------------------------


class _Live:
    """The parts of a SessionFeed that turn_indexed reads."""

    def __init__(self, sid: str, store: Store, turn_seq: int | None, first: int) -> None:
        self.session_id, self.store, self.turn_seq, self.turn_first_entry = sid, store, turn_seq, first


def _live_turn(index: Index, sid: str, store: Store, events: list[tuple[str, str]]) -> _Live:
    """Store one turn's events and apply them to ``store`` as a live session would."""
    first = len(store.entries)
    store.turn_boundary()
    seq = None
    with index.writer() as writer:
        for kind, payload in events:
            got = writer.append(sid, kind, payload)
            if kind == TURN_START:
                seq = got
            else:
                store.apply(json.loads(payload))
    return _Live(sid, store, seq, first)


def test_a_turn_adds_its_messages_without_reading_the_log(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store()
    index.upsert_session(rec("live"))
    commands = ("available_commands_update", json.dumps({"sessionUpdate": "available_commands_update", "availableCommands": []}))
    live = _live_turn(index, "live", store, [commands, *_turn("first okapi", "one")])
    indexing.turn_indexed(index, live)  # documents were empty: a rebuild
    assert search.indexed_seq(index.conn, "live") == index.last_seq("live")
    usage = ("usage_update", json.dumps({"sessionUpdate": "usage_update", "used": 1, "size": 2}))
    live = _live_turn(index, "live", store, [usage, *_turn("second okapi", "two")])

    rebuilt: list[object] = []  # turn_indexed logs and swallows errors: record, do not raise
    monkeypatch.setattr(indexing, "reindex", lambda *args: rebuilt.append(args))
    indexing.turn_indexed(index, live)
    monkeypatch.undo()
    assert rebuilt == []  # the turn's entries were added from the live store
    assert search.indexed_seq(index.conn, "live") == index.last_seq("live")
    assert _docs(index, "live") == search.documents(rebuild(index, "live").entries)
    assert index.search(["okapi"])[0][1].matches == 2


def test_a_turn_after_text_the_documents_lack_reindexes_the_session(index: Index) -> None:
    store = Store()
    index.upsert_session(rec("gap"))
    live = _live_turn(index, "gap", store, _turn("first narwhal", "one"))
    indexing.turn_indexed(index, live)
    # stored by someone else between the turns (a load's replay, another process): not in store
    _store(index, "gap", [(REPLAY_START, "{}"), *_turn("other narwhal")[1:], (REPLAY_END, "{}")])
    live = _live_turn(index, "gap", store, _turn("third narwhal", "three"))
    indexing.turn_indexed(index, live)
    assert _docs(index, "gap") == search.documents(rebuild(index, "gap").entries)
    assert search.indexed_seq(index.conn, "gap") == index.last_seq("gap")


def test_a_failed_turn_indexing_leaves_the_session_to_the_next_search(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store()
    index.upsert_session(rec("f"))
    live = _live_turn(index, "f", store, _turn("walrus"))

    def broken(*_: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(search, "replace", broken)
    monkeypatch.setattr(search, "extend", broken)
    indexing.turn_indexed(index, live)  # logged, not raised
    monkeypatch.undo()
    assert search.stale(index.conn) == [("f", index.last_seq("f"))]
    indexing.catch_up(index)
    assert _ids(index.search(["walrus"])) == ["f"]


# -- migration and the scan without FTS5 -------------------------------------------------------


def test_migration_from_schema_6_indexes_old_sessions_on_the_first_search(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with Index.open(path) as index:
        _store(index, "old1", _turn("legacy lemur"))
        _store(index, "old2", _turn("legacy loris"))
    # made as an acpcli before search left it: schema 6, no search tables
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in (
        "DROP TABLE search_fts", "DROP TABLE search_docs", "ALTER TABLE sessions DROP COLUMN search_seq",
        "ALTER TABLE sessions DROP COLUMN title_source", "ALTER TABLE sessions DROP COLUMN usage", "ALTER TABLE sessions DROP COLUMN parent_id",
        "PRAGMA user_version = 6",
    ):
        conn.execute(statement)
    conn.close()
    assert len(MIGRATIONS) > 6
    with Index.open(path) as index:  # migration 7
        assert search.has_fts(index.conn)
        assert [sid for sid, _ in search.stale(index.conn)] == ["old1", "old2"]  # least recent first
        seen: list[tuple[int, int]] = []
        assert indexing.catch_up(index, lambda done, total: seen.append((done, total))) == 2
        assert seen == [(1, 2), (2, 2)]
        assert _ids(index.search(["legacy", "lemur"])) == ["old1"]
        assert indexing.catch_up(index) == 0
        _fts_ok(index)


def test_without_fts5_a_scan_finds_the_same_sessions(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    for sid, text in (("a", "the 100% quokka"), ("b", "quokkas are here"), ("c", "nothing 100 percent")):
        _store(index, sid, _turn(text))
    indexing.catch_up(index)
    queries = (("quokka",), ("quokka*",), ("QUOKKA", "the"), ("100%",), ("percent", "100"))
    with_fts = {q: set(_ids(index.search(q))) for q in queries}
    assert with_fts == {
        ("quokka",): {"a"}, ("quokka*",): {"a", "b"}, ("QUOKKA", "the"): {"a"}, ("100%",): {"a", "c"},
        ("percent", "100"): {"c"},
    }
    # a database made where SQLite had no FTS5: no search_fts, and none can be made
    index.conn.execute("DROP TABLE search_fts")
    monkeypatch.setattr(search, "ensure_fts", lambda conn: False)
    _store(index, "d", _turn("late quokka"))  # stored and indexed while FTS5 is missing
    indexing.catch_up(index)
    assert not search.has_fts(index.conn)
    with_fts[("quokka",)] |= {"d"}
    with_fts[("quokka*",)] |= {"d"}
    assert {q: set(_ids(index.search(q))) for q in queries} == with_fts
    found = index.search(["QUOKKA"])
    assert found[0][1].score is None and _ids(found) == ["d", "a"]  # newest first
    assert f"{search.HIT_START}quokka{search.HIT_END}" in found[0][1].snippet
    assert set(_ids(index.search(["100%"]))) == {"a", "c"}  # "100" as a word, as FTS5 reads it
    assert found[0][1].snippet == f"late {search.HIT_START}quokka{search.HIT_END}"
    # FTS5 back (another Python): the index is made and filled from the documents
    monkeypatch.undo()
    indexing.catch_up(index)
    assert search.has_fts(index.conn)
    assert {q: set(_ids(index.search(q))) for q in queries} == with_fts
    _fts_ok(index)


def test_words_too_common_to_rank_list_the_newest_sessions_first(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    now = time.time()
    for i in range(12):
        agent = "codex" if i % 3 == 0 else "demo"
        _store(index, f"c{i:02}", _turn(f"common gnu {i}", "gnu again", "and a thought-free answer"), agent=agent)
        index.touch(f"c{i:02}", now - 1000 + i)  # c11 used last
    indexing.catch_up(index)
    ranked = {r.id: h.matches for r, h in index.search(["gnu"], limit=None)}
    monkeypatch.setattr(search, "RANKED_UP_TO", 5)  # 24 matching messages: too many to rank
    monkeypatch.setattr(search, "_WINDOW", 3)  # read a few at a time
    found = index.search(["gnu"], limit=4)
    assert _ids(found) == ["c11", "c10", "c09", "c08"]
    assert all(not h.ranked and h.score is None for _, h in found)
    assert {r.id: h.matches for r, h in found} == {sid: ranked[sid] for sid in _ids(found)} == dict.fromkeys(_ids(found), 2)
    assert f"{search.HIT_START}gnu{search.HIT_END}" in found[0][1].snippet
    assert {r.id: h.matches for r, h in index.search(["gnu"], limit=None)} == ranked  # every session, read to the end
    assert _ids(index.search(["gnu"], agent="codex", limit=2)) == ["c09", "c06"]
    assert _ids(index.search(["gnu", "common"], limit=2)) == ["c11", "c10"]


# -- the index's own methods for its documents (no caller outside acpcli.history touches SQL) ----


def test_the_index_writes_and_reads_a_sessions_documents(index: Index) -> None:
    _store(index, "a", _turn("first ibis", "one"))
    _store(index, "b", _turn("second ibis"))
    assert index.stale_sessions() == [("a", index.last_seq("a")), ("b", index.last_seq("b"))]
    assert index.indexed_seq("a") == 0

    index.replace_documents("a", [("user", "first ibis"), ("agent", "one")], 2)
    assert _docs(index, "a") == [("user", "first ibis"), ("agent", "one")]
    assert index.indexed_seq("a") == 2
    index.add_documents("a", [("agent", "two")], index.last_seq("a"))
    assert _docs(index, "a") == [("user", "first ibis"), ("agent", "one"), ("agent", "two")]
    assert index.stale_sessions() == [("b", index.last_seq("b"))]  # "a" reflects its whole log
    index.replace_documents("a", [("user", "only ibis")], index.last_seq("a"))  # replaced, not added
    assert _docs(index, "a") == [("user", "only ibis")]
    assert index.indexed_seq("nobody") == 0
    if index.has_fts():
        _fts_ok(index)  # the FTS5 index says what the documents say
    assert _ids(index.search(["ibis"])) == ["a"]  # "b" is not indexed yet


def test_a_discarded_search_index_is_made_again_empty_and_every_session_is_stale(index: Index) -> None:
    _store(index, "a", _turn("quokka", "yes"))
    indexing.catch_up(index)
    assert index.stale_sessions() == [] and index.search_damage() is None
    fts = index.has_fts()
    index.discard_search_index()
    assert _docs(index, "a") == [] and index.indexed_seq("a") == 0
    assert index.stale_sessions() == [("a", index.last_seq("a"))]
    assert index.has_fts() == fts and index.ensure_fts() == fts
    assert index.search_damage() is None
    indexing.catch_up(index)
    assert _ids(index.search(["quokka"])) == ["a"]


def test_ensure_fts_makes_a_missing_fts5_index_from_the_documents(index: Index) -> None:
    if not index.has_fts():
        pytest.skip("this SQLite has no FTS5")
    _store(index, "a", _turn("axolotl"))
    indexing.catch_up(index)
    index.conn.execute("DROP TABLE search_fts")
    assert not index.has_fts()
    assert index.ensure_fts() is True and index.has_fts()
    _fts_ok(index)
    assert _ids(index.search(["axolotl"])) == ["a"]
