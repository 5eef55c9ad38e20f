"""A load's replay stored where it differs from the last one (``records.ReplayWriter``), and
read back through the replays it repeats (``records.rebuild``): with the event log alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from acpcli.history import eventlog
from acpcli.history.index import Index
from acpcli.history.records import (
    REPLAY_ABORT,
    REPLAY_END,
    REPLAY_START,
    TURN_END,
    TURN_START,
    ReplayWriter,
    rebuild,
)
from tests.helpers.records import rec


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    with Index.open(tmp_path / "acpcli.db") as ix:
        ix.upsert_session(rec("s"))
        yield ix


def _say(kind: str, text: str) -> tuple[str, str]:
    update = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    frame = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}}
    return kind, json.dumps(frame)


def _turns(*pairs: tuple[str, str]) -> list[tuple[str, str]]:
    """A replay: each (prompt, answer) as the agent replays it, in chunks."""
    events: list[tuple[str, str]] = []
    for prompt, answer in pairs:
        events.append(_say("user_message_chunk", prompt))
        events += [_say("agent_message_chunk", word + " ") for word in answer.split()]
    return events


def _log(index: Index) -> list[tuple[int, str, str]]:
    return list(index.events_raw("s"))


def _load(index: Index, replay: list[tuple[str, str]], *, fail: bool = False) -> None:
    """One load, its replay through a ReplayWriter as a link feeds it."""
    with index.writer() as writer:
        recorder = ReplayWriter(writer, index, "s")
        for kind, payload in replay:
            recorder.append("s", kind, payload)
        recorder.abort() if fail else recorder.end()


def _full(index: Index, replay: list[tuple[str, str]]) -> None:
    """The same replay as acpcli stored every one before: whole, bracketed."""
    with index.writer() as writer:
        for kind, payload in [(REPLAY_START, "{}"), *replay, (REPLAY_END, "{}")]:
            writer.append("s", kind, payload)


def _record(index: Index, prompt: str, answer: str) -> None:
    """A turn acpcli ran and recorded itself."""
    with index.writer() as writer:
        writer.append("s", TURN_START, "{}")
        for kind, payload in _turns((prompt, answer)):
            writer.append("s", kind, payload)
        writer.append("s", TURN_END, json.dumps({"stopReason": "end_turn", "error": None}))


def _same_as_full(tmp_path: Path, index: Index, history: list[tuple[str, list[tuple[str, str]]]]) -> None:
    """``index``'s rebuilt transcript is what storing every replay whole would give."""
    with Index.open(tmp_path / "full.db") as full:
        full.upsert_session(rec("s"))
        for what, events in history:
            if what == "turn":
                _record(full, *[json.loads(p)["params"]["update"]["content"]["text"] for _, p in events[:1]], "ok")
            else:
                _full(full, events)
        assert rebuild(index, "s").transcript() == rebuild(full, "s").transcript()


def test_the_same_replay_again_stores_nothing(index: Index) -> None:
    replay = _turns(("one", "the first answer"), ("two", "the second answer"))
    _load(index, replay)
    stored = _log(index)
    assert [kind for _, kind, _ in stored] == [REPLAY_START, *[k for k, _ in replay], REPLAY_END]
    transcript = rebuild(index, "s").transcript()
    for _ in range(3):
        _load(index, replay)
        assert _log(index) == stored
        assert rebuild(index, "s").transcript() == transcript


def test_a_chain_of_replays_each_adding_or_changing_a_little_reads_back_whole(index: Index, tmp_path: Path) -> None:
    a = _turns(("one", "first"), ("two", "second"))
    b = _turns(("one", "first"), ("two", "second"), ("three", "third"))  # one more turn
    c = _turns(("one", "first"), ("two", "second, said otherwise"), ("three", "third"))  # differs inside
    d = _turns(("one", "first"))  # fewer (the agent compacted its history)
    history = []
    for replay in (a, b, b, c, c, d, d, c):
        before = len(_log(index))
        _load(index, replay)
        added = _log(index)[before:]
        history.append(("load", replay))
        if replay is b and history.count(("load", b)) == 1:
            start = json.loads(added[0][2])
            assert start["same"] == len(a) and len(added) == 2 + len(b) - len(a)  # the new turn alone
    assert sum(1 for _, kind, _ in _log(index) if kind == REPLAY_START) == 5  # a, b, c, d, c: no repeats
    # the record: the first replay is the record (no prompt of acpcli's), the others add to it
    _same_as_full(tmp_path, index, history)


def test_turns_of_acpcli_between_loads(index: Index, tmp_path: Path) -> None:
    history: list[tuple[str, list[tuple[str, str]]]] = []
    _record(index, "mine", "ok")
    history.append(("turn", _turns(("mine", "ok"))))
    for replay in (
        _turns(("mine", "ok")),
        _turns(("mine", "ok"), ("theirs", "from another client")),
        _turns(("mine", "ok"), ("theirs", "from another client")),
    ):
        _load(index, replay)
        history.append(("load", replay))
    _record(index, "again", "ok")
    history.append(("turn", _turns(("again", "ok"))))
    replay = _turns(("mine", "ok"), ("theirs", "from another client"), ("again", "ok"), ("later", "more"))
    _load(index, replay)
    history.append(("load", replay))
    texts = json.dumps(rebuild(index, "s").transcript())
    assert texts.count("from another client") == 1 and texts.count("more ") == 1, texts
    _same_as_full(tmp_path, index, history)


def test_an_aborted_load_stores_what_differed_and_is_not_merged(index: Index) -> None:
    a = _turns(("one", "first"))
    _load(index, a)
    stored, transcript = _log(index), rebuild(index, "s").transcript()
    _load(index, a[:1], fail=True)  # the same so far: nothing stored
    assert _log(index) == stored
    _load(index, _turns(("other", "else")), fail=True)
    assert [kind for _, kind, _ in _log(index)][-1] == REPLAY_ABORT
    assert rebuild(index, "s").transcript() == transcript
    _load(index, a)  # compared with the last replay that ended: nothing new
    assert _log(index)[-1][1] == REPLAY_ABORT


def test_events_between_and_replay_marks_read_only_what_they_name(index: Index) -> None:
    with index.writer(batch_size=3) as writer:  # pages of three
        for n in range(1, 11):
            writer.append("s", REPLAY_START if n in (4, 9) else "x", json.dumps({"n": n}))
    assert [seq for seq, _, _ in index.events_between("s", 3, 7)] == [3, 4, 5, 6, 7]
    assert [json.loads(p)["n"] for _, _, p in index.events_between("s", 10, 12)] == [10]
    assert [(seq, kind) for seq, kind, _ in index.replay_marks("s")] == [(4, REPLAY_START), (9, REPLAY_START)]
    assert eventlog.replay_marks(index.conn, "nobody") == []
