"""acpcli.session.forgotten: a session the agent no longer knows. Never prompted: a fresh agent
session stands in under the same id (its settings set again) and the id keeps working; with
turns: not replaced, and the error's hint is true."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acpcli.errors import AuthRequired, ProtocolError, RpcError, UnknownSession
from acpcli.history.eventlog import EventWriter
from acpcli.history.index import Index
from acpcli.history.records import REPLAY_ABORT, REPLAY_END, REPLAY_START, SETTING
from acpcli.session.attach import attach
from acpcli.session.context import Invocation
from acpcli.session.forgotten import agent_forgot, lost_hint
from acpcli.session.inputs import Options
from acpcli.session.turn import run_turn
from tests.helpers.records import rec
from tests.session.demo_peer import QUIET, Frames, demo_link, stderr_of, text

pytestmark = pytest.mark.anyio


# -- what "forgot" is -------------------------------------------------------------------------


def test_resource_not_found_means_the_agent_forgot() -> None:
    assert agent_forgot(RpcError(RpcError.RESOURCE_NOT_FOUND, "Resource not found"))


@pytest.mark.parametrize(
    "data",
    [
        {"details": "Invalid session identifier abc"},
        {"details": "No previous sessions found for this project."},
        "Invalid session identifier",
    ],
)
def test_geminis_internal_error_saying_so_means_the_agent_forgot(data: object) -> None:
    assert agent_forgot(RpcError(RpcError.INTERNAL_ERROR, "Internal error", data))


@pytest.mark.parametrize(
    "err",
    [
        RpcError(RpcError.INTERNAL_ERROR, "Internal error", {"details": "disk full"}),
        RpcError(RpcError.INVALID_PARAMS, "Invalid session identifier"),  # the words count for -32603 only
        AuthRequired(RpcError.RESOURCE_NOT_FOUND, "Authentication required"),
        ProtocolError("session/load", "the answer is not an object", code=RpcError.RESOURCE_NOT_FOUND),
        OSError("Resource not found"),
    ],
)
def test_other_failures_are_not_forgetting(err: BaseException) -> None:
    assert not agent_forgot(err)


def test_the_lost_hint_says_where_the_transcript_is_and_how_to_go_on() -> None:
    hint = lost_hint(rec("s-1"), "Demo")
    assert hint.startswith("Demo no longer has session s-1; ")
    assert "`acpcli show s-1`" in hint and "continue in a new session" in hint


# -- a never-prompted session -----------------------------------------------------------------


async def made_elsewhere(run: Invocation, index: Index, writer: EventWriter, workdir: Path, *settings: tuple[str, str]) -> str:
    """A recorded session never prompted (its settings changed), made by a demo agent that
    keeps its sessions elsewhere: the agent of the next launch does not know it."""
    async with demo_link("--state-dir", str(workdir.parent / "first-launch")) as link:
        live = await attach(link, "new", Options(agent="demo", cwd=workdir).inputs(), run, index, writer, None, None)
        for key, value in settings:
            await link.set_by_name(live, key, value)
        assert live.lock is not None
        live.lock.release()
    writer.flush()
    return live.session_id


async def test_a_fresh_session_stands_in_for_a_never_prompted_one(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    sid = await made_elsewhere(run, index, writer, workdir)
    inputs = Options().inputs(index.get(sid))
    async with demo_link() as link:
        live = await attach(link, "load", inputs, run, index, writer, None, sid)
        assert live.session_id == sid  # the id `new` printed keeps working
        fresh = live.wire_id
        assert fresh is not None and fresh != sid and fresh in link.sessions
        assert await run_turn(link, live, [text(QUIET)], notice=lambda line: None) == "end_turn"
    assert index.get(sid).agent_session_id == fresh
    said = stderr_of(run)
    assert f"no longer knows session {sid} ({sid} never had a turn): started a fresh agent session" in said
    assert f"({fresh}); {sid} keeps working" in said
    writer.flush()
    kinds = [kind for kind, _ in index.events(sid)]
    # the refused load replayed nothing: nothing of it is stored (no bracket), nor of the fresh one
    assert not {REPLAY_START, REPLAY_ABORT, REPLAY_END} & set(kinds), kinds
    # The next launch reaches the stand-in through the recorded mapping.
    tap = Frames()
    async with demo_link(tap=tap) as link:
        again = await attach(link, "load", Options().inputs(index.get(sid)), run, index, writer, None, sid)
        assert (again.session_id, again.wire_id) == (sid, fresh)
    assert said == stderr_of(run)  # no second stand-in


async def test_the_stand_in_gets_the_settings_changed_since(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    sid = await made_elsewhere(run, index, writer, workdir, ("model", "demo-smart"), ("effort", "high"))
    writer.append(sid, SETTING, json.dumps({"key": "colour", "value": "blue"}))  # no longer offered
    writer.flush()
    async with demo_link() as link:
        live = await attach(link, "resume", Options().inputs(index.get(sid)), run, index, writer, None, sid)
        current = {choice.key: choice.current for choice in live.settings()}
    assert (current["model"], current["effort"]) == ("Demo Smart", "High")
    assert "acpcli: could not set colour again: " in stderr_of(run)


async def test_a_fork_never_prompted_is_made_fresh_by_an_agent_that_cannot_fork(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    parent = await made_elsewhere(run, index, writer, workdir)
    child = await made_elsewhere(run, index, writer, workdir)
    index.set_parent(child, parent)
    tap = Frames()
    async with demo_link(tap=tap) as link:
        assert not link.features.fork
        await attach(link, "load", Options().inputs(index.get(child)), run, index, writer, None, child)
    assert "session/fork" not in tap.methods and tap.methods.count("session/new") == 1
    assert "started a fresh agent session" in stderr_of(run)


async def test_a_session_with_turns_is_not_replaced(run: Invocation, index: Index, writer: EventWriter, workdir: Path) -> None:
    async with demo_link("--state-dir", str(workdir.parent / "first-launch")) as link:
        live = await attach(link, "new", Options(agent="demo", cwd=workdir).inputs(), run, index, writer, None, None)
        await run_turn(link, live, [text(QUIET)], notice=lambda line: None)
    sid = live.session_id
    tap = Frames()
    async with demo_link(tap=tap) as link:
        with pytest.raises(UnknownSession) as err:
            await attach(link, "resume", Options().inputs(index.get(sid)), run, index, writer, None, sid)
    assert err.value.hint == lost_hint(index.get(sid), link.features.display_name)
    assert "session/new" not in tap.methods
    assert index.get(sid).agent_session_id is None
