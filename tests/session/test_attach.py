"""acpcli.session.attach: new, load and resume over a link, the local index kept in step
(recorded before the replay, rolled back on refusal, the replay bracketed in the event log)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acpcli.errors import AuthRequired, CapabilityMissing, RpcError, SessionNotFound, UnknownSession
from acpcli.history.eventlog import EventWriter
from acpcli.history.index import Index
from acpcli.history.lock import SessionLock
from acpcli.history.records import REPLAY_END, REPLAY_START, TURN_END, TURN_START
from acpcli.session.attach import attach, logged_in, raise_if_unknown
from acpcli.session.context import Invocation
from acpcli.session.inputs import Options, SessionInputs
from acpcli.session.link import AgentLink
from acpcli.session.turn import after_turn
from tests.helpers.records import rec
from tests.session.demo_peer import QUIET, Frames, demo_link, quiet_env, stderr_of, text

pytestmark = pytest.mark.anyio

#: An id the demo agent never gave (its ids are ``demo-`` and 32 hex digits).
STRANGER = "demo-" + "0" * 32


def kinds(index: Index, writer: EventWriter, sid: str) -> list[str]:
    writer.flush()
    return [kind for kind, _ in index.events(sid)]


async def new_with_a_turn(
    inputs: SessionInputs, run: Invocation, index: Index, writer: EventWriter, *flags: str
) -> str:
    """One launch of the demo agent: a new session, recorded, with one turn; its id."""
    async with demo_link(*flags) as link:
        live = await attach(link, "new", inputs, run, index, writer, None, None)
        assert await link.prompt(live, [text(QUIET)]) == "end_turn"
        writer.flush()
        after_turn(index, live)
        assert live.lock is not None
        live.lock.release()
        return live.session_id


# -- new --------------------------------------------------------------------------------------


async def test_new_records_the_session_and_holds_its_lock(run: Invocation, index: Index, writer: EventWriter, workdir: Path) -> None:
    inputs = Options(agent="demo", cwd=workdir).inputs()
    run.title = "my title"
    async with demo_link("--protocol", "1") as link:
        live = await attach(link, "new", inputs, run, index, writer, None, None)
        record = index.get(live.session_id)
        assert (record.agent, record.cwd, record.argv) == ("demo", str(workdir), inputs.agent.argv)
        assert (record.protocol, record.protocol_version) == ("1", 1)
        assert record.agent_info is not None and record.agent_info["name"] == "acpcli-demo-agent"
        assert (record.title, record.titled_by_user) == ("my title", True)
        assert live.recorder is writer
        # The writer lock is held from before the session is listed: another acpcli waits.
        assert live.lock is not None and live.lock.held
        assert not SessionLock(live.session_id).try_acquire()
        live.lock.release()


async def test_new_remembers_the_mcp_references_given(run: Invocation, index: Index, writer: EventWriter, workdir: Path) -> None:
    inputs = Options(agent="demo", cwd=workdir, no_mcp=True).inputs()
    async with demo_link() as link:
        live = await attach(link, "new", inputs, run, index, writer, None, None)
        assert live.lock is not None
        live.lock.release()
    assert index.get(live.session_id).mcp_refs == {"config": None, "names": []}


async def test_a_cmd_agent_is_recorded_under_its_own_name(run: Invocation, index: Index, writer: EventWriter, workdir: Path) -> None:
    inputs = Options(cmd="whatever --acp", cwd=workdir).inputs()
    async with demo_link() as link:
        live = await attach(link, "new", inputs, run, index, writer, None, None)
        assert live.lock is not None
        live.lock.release()
    assert index.get(live.session_id).agent == "acpcli-demo-agent"  # agentInfo.name, not "cmd"


# -- load -------------------------------------------------------------------------------------


async def test_load_brackets_the_replay_in_the_event_log(run: Invocation, index: Index, writer: EventWriter, workdir: Path) -> None:
    inputs = Options(agent="demo", cwd=workdir).inputs()
    sid = await new_with_a_turn(inputs, run, index, writer)
    before = kinds(index, writer, sid)
    assert before[0] == TURN_START and before[-1] == TURN_END
    async with demo_link() as link:
        live = await attach(link, "load", inputs, run, index, writer, None, sid)
        assert live.session_id == sid
    after = kinds(index, writer, sid)
    assert after[: len(before)] == before
    replay = after[len(before):]
    assert replay[0] == REPLAY_START and replay[-1] == REPLAY_END
    assert "user_message_chunk" in replay and "agent_message_chunk" in replay
    assert REPLAY_START not in replay[1:-1] and REPLAY_END not in replay[1:-1]


async def test_load_of_an_id_nobody_knows_leaves_nothing_behind(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    inputs = Options(agent="demo", cwd=workdir).inputs()
    async with demo_link() as link:
        with pytest.raises(UnknownSession) as err:
            await attach(link, "load", inputs, run, index, writer, None, STRANGER)
        assert STRANGER not in link.sessions  # the view made for the replay is forgotten
    assert err.value.exit_code == 8
    assert "not recorded here either" in (err.value.hint or "")
    with pytest.raises(SessionNotFound):
        index.get(STRANGER)  # recorded before the replay, removed again
    assert kinds(index, writer, STRANGER) == []


async def test_an_agents_session_made_elsewhere_is_recorded_from_now_on(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    inputs = Options(agent="demo", cwd=workdir).inputs()
    sid = await new_with_a_turn(inputs, run, index, writer)
    index.delete(sid)  # as if another client had made it
    async with demo_link() as link:
        await attach(link, "resume", inputs, run, index, writer, None, sid)
    record = index.get(sid)
    assert (record.agent, record.cwd, record.protocol) == ("demo", str(workdir), "2")


async def test_load_without_the_capability_sends_nothing_and_marks_nothing(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    inputs = Options(agent="demo", cwd=workdir).inputs()
    sid = await new_with_a_turn(inputs, run, index, writer)
    before = kinds(index, writer, sid)
    tap = Frames()
    async with demo_link("--without", "load", tap=tap) as link:
        with pytest.raises(CapabilityMissing, match="does not support session/load"):
            await attach(link, "load", inputs, run, index, writer, None, sid)
    assert tap.methods == ["initialize"]
    assert kinds(index, writer, sid) == before  # no replay-start without a replay


async def test_load_without_the_capability_of_an_unrecorded_id_leaves_no_record(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    inputs = Options(agent="demo", cwd=workdir).inputs()
    async with demo_link("--without", "load") as link:
        with pytest.raises(CapabilityMissing):
            await attach(link, "load", inputs, run, index, writer, None, STRANGER)
    with pytest.raises(SessionNotFound):
        index.get(STRANGER)


async def test_a_load_refused_for_a_recorded_session_is_marked_aborted_and_kept(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path, tmp_path: Path
) -> None:
    inputs = Options(agent="demo", cwd=workdir).inputs()
    sid = await new_with_a_turn(inputs, run, index, writer)
    before = kinds(index, writer, sid)
    # A launch of the agent that keeps its sessions elsewhere: it no longer has this one.
    async with demo_link("--state-dir", str(tmp_path / "amnesia")) as link:
        with pytest.raises(UnknownSession) as err:
            await attach(link, "load", inputs, run, index, writer, None, sid)
    hint = err.value.hint or ""
    assert "no longer has session" in hint and f"acpcli show {sid}" in hint
    assert kinds(index, writer, sid) == before  # it replayed nothing: nothing of it is stored
    assert index.get(sid).id == sid  # the transcript is still recorded here


# -- what a reattach updates ------------------------------------------------------------------


async def test_resume_with_other_roots_records_them(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path, tmp_path: Path
) -> None:
    sid = await new_with_a_turn(Options(agent="demo", cwd=workdir).inputs(), run, index, writer)
    extra = tmp_path / "extra"
    extra.mkdir()
    inputs, record = Options(add_dir=[extra]).inputs(index.get(sid)), index.get(sid)
    assert record.additional_dirs == []
    async with demo_link() as link:
        live = await attach(link, "resume", inputs, run, index, writer, None, sid)
        assert live.additional_directories == [str(extra)]
    assert index.get(sid).additional_dirs == [str(extra)]


async def test_a_closed_session_continued_is_reopened_and_says_so(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    inputs = Options(agent="demo", cwd=workdir).inputs()
    sid = await new_with_a_turn(inputs, run, index, writer)
    index.mark_closed(sid)
    async with demo_link() as link:
        await attach(link, "resume", inputs, run, index, writer, None, sid)
    assert index.get(sid).state == "active"
    assert f"acpcli: {sid} was closed: reopened" in stderr_of(run)


async def test_a_session_continued_over_another_protocol_records_it(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    inputs = Options(agent="demo", cwd=workdir).inputs()
    sid = await new_with_a_turn(inputs, run, index, writer)
    assert index.get(sid).protocol == "2"
    async with demo_link("--protocol", "1") as link:
        await attach(link, "load", inputs, run, index, writer, None, sid)
    record = index.get(sid)
    assert (record.protocol, record.protocol_version) == ("1", 1)


# -- logins and "not found" -------------------------------------------------------------------


class LoggingIn:
    """A person who logs in with the first method offered when asked."""

    def __init__(self) -> None:
        self.offers: list[BaseException] = []

    def starting(self, name: str | None) -> None:
        pass

    async def offer_login(self, link: AgentLink, err: BaseException) -> bool:
        self.offers.append(err)
        method = link.features.auth_methods[0]
        await link.login(method.get("id") or method["methodId"])
        return True


async def test_auth_required_in_a_script_is_raised(workdir: Path, index: Index, writer: EventWriter) -> None:
    run = Invocation(env=quiet_env())
    inputs = Options(agent="demo", cwd=workdir).inputs()
    async with demo_link("--require-auth", "--forget-auth") as link:
        with pytest.raises(AuthRequired):
            await attach(link, "new", inputs, run, index, writer, None, None)
    assert index.list_sessions() == []


async def test_auth_required_on_a_terminal_offers_a_login_and_tries_again(
    workdir: Path, index: Index, writer: EventWriter
) -> None:
    person = LoggingIn()
    run = Invocation(env=quiet_env(), person=person)  # type: ignore[arg-type]
    inputs = Options(agent="demo", cwd=workdir).inputs()
    async with demo_link("--require-auth", "--forget-auth") as link:
        live = await attach(link, "new", inputs, run, index, writer, None, None)
        assert live.lock is not None
        live.lock.release()
    assert [type(e) for e in person.offers] == [AuthRequired]
    assert index.get(live.session_id).agent == "demo"


async def test_logged_in_tries_once_more_only() -> None:
    person = LoggingIn()
    run = Invocation(env=quiet_env(), person=person)  # type: ignore[arg-type]
    calls = 0

    async def setup() -> Any:
        nonlocal calls
        calls += 1
        raise AuthRequired(-32000, "Authentication required")

    class Link:
        class features:
            auth_methods = ({"id": "m"},)

        async def login(self, method_id: str) -> None:
            pass

    with pytest.raises(AuthRequired):
        await logged_in(Link(), run, setup)  # type: ignore[arg-type]
    assert calls == 2 and len(person.offers) == 1


def test_raise_if_unknown_turns_not_found_into_exit_8_with_a_true_hint() -> None:
    err = RpcError(RpcError.RESOURCE_NOT_FOUND, "Resource not found", method="session/load")
    with pytest.raises(UnknownSession) as raised:
        raise_if_unknown(err, "s-1", rec("s-1"), "Demo")
    assert raised.value.__cause__ is err and raised.value.method == "session/load"
    assert (raised.value.hint or "").startswith("Demo no longer has session s-1")
    with pytest.raises(UnknownSession) as unrecorded:
        raise_if_unknown(err, "s-2")
    assert "sessions --remote" in (unrecorded.value.hint or "")


def test_raise_if_unknown_leaves_other_failures_alone() -> None:
    raise_if_unknown(RpcError(RpcError.INVALID_PARAMS, "bad cwd"), "s-1")
    raise_if_unknown(OSError("pipe"), "s-1")
    already = UnknownSession(RpcError.RESOURCE_NOT_FOUND, "gone")
    raise_if_unknown(already, "s-1")  # not wrapped twice


# -- loading again: what the record holds already is not stored again -------------------------


def _stored(index: Index, writer: EventWriter, sid: str) -> tuple[int, int]:
    """How many events the session's log holds, and their bytes."""
    writer.flush()
    events = list(index.events_raw(sid))
    return len(events), sum(len(payload) for _seq, _kind, payload in events)


async def _load(index: Index, writer: EventWriter, run: Invocation, inputs: SessionInputs, sid: str, *flags: str) -> None:
    async with demo_link(*flags) as link:
        live = await attach(link, "load", inputs, run, index, writer, None, sid)
        assert live.recorder is writer  # the replay's own recorder is done with
    writer.flush()


async def _other_clients_turn(sid: str, workdir: Path, prompt: str) -> None:
    """A turn the agent holds and this record does not (another client's, nothing stored here)."""
    from acpcli.session.turn import run_turn

    async with demo_link() as link:
        live = await link.load(sid, str(workdir), [], [], sink=None, recorder=None, local_id=sid)
        live.checkpoints = False
        assert await run_turn(link, live, [text(prompt)], notice=lambda line: None, interrupts=False) == "end_turn"


async def test_a_load_that_repeats_the_last_replay_stores_nothing(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    from acpcli.history.records import rebuild

    inputs = Options(agent="demo", cwd=workdir).inputs()
    sid = await new_with_a_turn(inputs, run, index, writer)
    await _load(index, writer, run, inputs, sid)  # the first replay is stored whole
    first = kinds(index, writer, sid)
    assert first.count(REPLAY_START) == 1 and first[-1] == REPLAY_END
    stored, transcript = _stored(index, writer, sid), rebuild(index, sid).transcript()
    for _ in range(4):
        await _load(index, writer, run, inputs, sid)
        assert _stored(index, writer, sid) == stored
        assert rebuild(index, sid).transcript() == transcript


async def test_a_replay_with_more_stores_only_what_is_new(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    import json

    from acpcli.history.records import rebuild

    inputs = Options(agent="demo", cwd=workdir).inputs()
    sid = await new_with_a_turn(inputs, run, index, writer)
    await _load(index, writer, run, inputs, sid)
    before = list(index.events_raw(sid))
    replay_start = next(seq for seq, kind, _ in before if kind == REPLAY_START)
    first_replay = len(before) - replay_start - 1  # its events, between its brackets
    await _other_clients_turn(sid, workdir, "other client no-permission")
    await _load(index, writer, run, inputs, sid)  # the agent has a turn more than the record
    added = list(index.events_raw(sid))[len(before):]
    (_, kind, mark), *own, (_, end, _) = added
    assert (kind, end) == (REPLAY_START, REPLAY_END)
    assert json.loads(mark) == {"base": replay_start, "same": first_replay}, mark  # all of it, then the new turn
    # the new turn, not the conversation the record holds already
    assert any("other client" in payload for _, _, payload in own)
    assert not any(QUIET in payload for _, _, payload in own), own
    shown = rebuild(index, sid).transcript()
    users = [entry for entry in shown if entry.get("kind") == "user" and "other client" in json.dumps(entry)]
    assert len(users) == 1, shown  # the other client's turn is in the record, once
    # ... and loading it again stores nothing: the last replay, read through its base
    stored = _stored(index, writer, sid)
    await _load(index, writer, run, inputs, sid)
    assert _stored(index, writer, sid) == stored and rebuild(index, sid).transcript() == shown


async def test_a_replay_that_differs_is_stored_from_where_it_differs(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    from acpcli.history.records import rebuild

    inputs = Options(agent="demo", cwd=workdir).inputs()
    sid = await new_with_a_turn(inputs, run, index, writer)
    await _load(index, writer, run, inputs, sid)
    transcript, stored = rebuild(index, sid).transcript(), _stored(index, writer, sid)
    await _load(index, writer, run, inputs, sid, "--replay", "whole")  # the same turns, said otherwise
    assert kinds(index, writer, sid).count(REPLAY_START) == 2 and _stored(index, writer, sid) != stored
    assert rebuild(index, sid).transcript() == transcript  # the record is what it was
    stored = _stored(index, writer, sid)
    await _load(index, writer, run, inputs, sid, "--replay", "whole")
    assert _stored(index, writer, sid) == stored
