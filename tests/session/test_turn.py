"""acpcli.session.turn: one turn as a command runs it (Ctrl-C, a time limit, a lost output,
the session's writer lock) and the bookkeeping after it."""

from __future__ import annotations

import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acpcli.errors import Interrupted, SessionBusy
from acpcli.history.eventlog import EventWriter
from acpcli.history.index import Index
from acpcli.history.lock import SessionLock
from acpcli.history.records import TURN_END, TURN_START
from acpcli.model import Store
from acpcli.session.attach import attach
from acpcli.session.context import Invocation
from acpcli.session.feed import SessionFeed
from acpcli.session.inputs import Options
from acpcli.session.link import AgentLink
from acpcli.session.turn import (
    Withdrawn,
    after_turn,
    claim,
    collect_late,
    late_updates_possible,
    run_turn,
    title_from_prompt,
)
from tests.helpers.records import rec
from tests.session.demo_peer import QUIET, Frames, demo_link, text

pytestmark = pytest.mark.anyio

Decider = Callable[[SessionFeed, dict[str, Any]], Awaitable[dict[str, Any]]]


def ignore(line: str) -> None:
    pass


def only(err: BaseException) -> BaseException:
    """The one error inside task-group wrappers (an exception group of one), else ``err``."""
    while (inner := getattr(err, "exceptions", None)) and len(inner) == 1:
        err = inner[0]
    return err


async def press_ctrl_c(times: int = 1) -> None:
    """SIGINT to this process, as Ctrl-C sends it, once the turn listens for it (never to
    Python's default handler, which would stop the test run)."""
    while signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        await anyio.lowlevel.checkpoint()
    for _ in range(times):
        os.kill(os.getpid(), signal.SIGINT)


async def allow(live: SessionFeed, params: dict[str, Any]) -> dict[str, Any]:
    option = next(o for o in params["options"] if o["kind"] == "allow_once")
    return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}


async def never(live: SessionFeed, params: dict[str, Any]) -> dict[str, Any]:
    """A permission question nobody answers (until the turn withdraws it)."""
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


async def started(link: AgentLink, run: Invocation, index: Index, writer: EventWriter, workdir: Path) -> SessionFeed:
    """A new session, recorded, its writer lock let go (as the REPL holds it between turns)."""
    live = await attach(link, "new", Options(agent="demo", cwd=workdir).inputs(), run, index, writer, None, None)
    assert live.lock is not None
    live.lock.release()
    return live


def events(index: Index, writer: EventWriter, sid: str) -> list[tuple[str, Any]]:
    writer.flush()
    return list(index.events(sid))


# -- one turn ---------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["1", "2"])
async def test_a_turn_is_bracketed_by_turn_records(
    protocol: str, run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    notices: list[str] = []
    async with demo_link("--protocol", protocol) as link:
        live = await started(link, run, index, writer, workdir)
        stop = await run_turn(link, live, [text(QUIET)], notice=notices.append)
    assert stop == "end_turn" and notices == []
    kinds = [kind for kind, _ in events(index, writer, live.session_id)]
    start, end = kinds.index(TURN_START), kinds.index(TURN_END)
    assert start < end and "agent_message_chunk" in kinds[start:end]
    assert dict(events(index, writer, live.session_id))[TURN_END] == {"stopReason": "end_turn", "error": None}


async def test_the_turn_takes_the_free_lock_and_lets_it_go(run: Invocation, index: Index, writer: EventWriter, workdir: Path) -> None:
    held_during: list[bool] = []

    async def check(live: SessionFeed, params: dict[str, Any]) -> dict[str, Any]:
        held_during.append(live.lock is not None and live.lock.held)
        return await allow(live, params)

    async with demo_link(decide_permission=check) as link:
        live = await started(link, run, index, writer, workdir)
        assert live.lock is not None and not live.lock.held
        await run_turn(link, live, [text("hello")], notice=ignore)
        assert held_during == [True] and not live.lock.held
        # A caller holding it already (``prompt``) keeps it.
        assert live.lock.try_acquire()
        await run_turn(link, live, [text("hello")], notice=ignore)
        assert held_during == [True, True] and live.lock.held
        live.lock.release()


async def test_a_busy_session_with_no_wait_sends_nothing(run: Invocation, index: Index, writer: EventWriter, workdir: Path) -> None:
    tap = Frames()
    async with demo_link(tap=tap) as link:
        live = await started(link, run, index, writer, workdir)
        other = SessionLock(live.session_id)  # another acpcli's turn
        assert other.try_acquire()
        live.lock_wait = False
        with pytest.raises(SessionBusy):
            await run_turn(link, live, [text(QUIET)], notice=ignore)
        other.release()
    assert "session/prompt" not in tap.methods
    assert TURN_START not in [kind for kind, _ in events(index, writer, live.session_id)]


async def test_ctrl_c_cancels_the_turn_and_waits_for_the_agent(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    async def interrupt(live: SessionFeed, params: dict[str, Any]) -> dict[str, Any]:
        await press_ctrl_c()  # the person presses Ctrl-C while asked
        return await never(live, params)

    notices: list[str] = []
    tap = Frames()
    async with demo_link(decide_permission=interrupt, tap=tap) as link:
        live = await started(link, run, index, writer, workdir)
        stop = await run_turn(link, live, [text("hello")], notice=notices.append)
        assert stop == "cancelled"  # the agent's own answer to the cancel
        assert live.interrupted and live.cancel_requested
        assert notices == ["cancelling… (press Ctrl-C again to kill the agent)"]
        assert tap.methods.count("session/cancel") == 1
        # The session goes on.
        assert await run_turn(link, live, [text(QUIET)], notice=notices.append) == "end_turn"


async def test_ctrl_c_twice_gives_up_the_turn(run: Invocation, index: Index, writer: EventWriter, workdir: Path) -> None:
    async def interrupt_twice(live: SessionFeed, params: dict[str, Any]) -> dict[str, Any]:
        await press_ctrl_c(times=2)
        return await never(live, params)

    notices: list[str] = []
    async with demo_link(decide_permission=interrupt_twice) as link:
        live = await started(link, run, index, writer, workdir)
        with pytest.raises(BaseException) as err:
            await run_turn(link, live, [text("hello")], notice=notices.append, double_interrupt_seconds=3600)
        assert isinstance(only(err.value), Interrupted)
    assert notices[-1] == "interrupted again: killing the agent"
    assert not live.turn_active
    turn_end = [payload for kind, payload in events(index, writer, live.session_id) if kind == TURN_END]
    assert turn_end == [{"stopReason": "cancelled", "error": None}]  # abandoned, recorded as cancelled


async def test_without_interrupts_ctrl_c_is_left_to_the_program(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    # interrupts=False (the Python API): run_turn installs no SIGINT handler of its own.
    seen: list[object] = []

    async def look(live: SessionFeed, params: dict[str, Any]) -> dict[str, Any]:
        seen.append(signal.getsignal(signal.SIGINT))
        return await allow(live, params)

    async with demo_link(decide_permission=look) as link:
        live = await started(link, run, index, writer, workdir)
        before = signal.getsignal(signal.SIGINT)
        assert await run_turn(link, live, [text("hello")], notice=ignore, interrupts=False) == "end_turn"
        assert seen == [before]
        await run_turn(link, live, [text("hello")], notice=ignore)
        assert seen[1] != before  # with interrupts, the turn listens for Ctrl-C


async def test_a_turn_past_its_limit_is_cancelled(run: Invocation, index: Index, writer: EventWriter, workdir: Path) -> None:
    tap = Frames()
    async with demo_link(decide_permission=never, tap=tap) as link:
        live = await started(link, run, index, writer, workdir)
        stop = await run_turn(link, live, [text("hello")], notice=ignore, limit=0.2)
        assert (stop, live.timed_out) == ("cancelled", "cancelled")  # the agent ended it on the cancel
        assert "session/cancel" in tap.methods and not live.interrupted
        live.timed_out = "stale"
        assert await run_turn(link, live, [text(QUIET)], notice=ignore) == "end_turn"
        assert live.timed_out is None  # each turn starts afresh


async def test_a_lost_output_ends_the_turn_with_its_error(run: Invocation, index: Index, writer: EventWriter, workdir: Path) -> None:
    async def lose_output(live: SessionFeed, params: dict[str, Any]) -> dict[str, Any]:
        live.output_error = BrokenPipeError("stdout closed")
        live.output_lost.set()
        return await never(live, params)

    async with demo_link(decide_permission=lose_output) as link:
        live = await started(link, run, index, writer, workdir)
        with pytest.raises(BaseException) as err:
            await run_turn(link, live, [text("hello")], notice=ignore)
    assert isinstance(only(err.value), BrokenPipeError)


async def test_tick_is_called_while_the_turn_runs(run: Invocation, index: Index, writer: EventWriter, workdir: Path) -> None:
    ticked = anyio.Event()

    async def after_a_tick(live: SessionFeed, params: dict[str, Any]) -> dict[str, Any]:
        await ticked.wait()  # the turn pauses here: only the ticker can go on
        return await allow(live, params)

    async with demo_link(decide_permission=after_a_tick) as link:
        live = await started(link, run, index, writer, workdir)
        assert await run_turn(link, live, [text("hello")], notice=ignore, tick=ticked.set) == "end_turn"


# -- the lock ---------------------------------------------------------------------------------


async def test_claim_a_free_lock_at_once() -> None:
    lock = SessionLock("s-1")
    notices: list[str] = []
    await claim(lock, wait=True, notice=notices.append)
    assert lock.held and notices == []
    await claim(lock, wait=True, notice=notices.append)  # held already: nothing to do
    lock.release()


async def test_claim_without_wait_is_session_busy() -> None:
    other = SessionLock("s-1")
    assert other.try_acquire()
    lock = SessionLock("s-1")
    with pytest.raises(SessionBusy, match=f"pid {os.getpid()}"):
        await claim(lock, wait=False, notice=ignore)
    assert not lock.held
    other.release()


async def test_claim_waits_for_the_holder_and_says_so_once() -> None:
    other = SessionLock("s-1")
    assert other.try_acquire()
    lock = SessionLock("s-1")
    notices: list[str] = []

    def waiting(line: str) -> None:
        notices.append(line)
        other.release()  # the other acpcli's turn ends

    await claim(lock, wait=True, notice=waiting)
    assert lock.held and len(notices) == 1
    assert notices[0].startswith(f"acpcli: waiting for another acpcli (pid {os.getpid()})")
    lock.release()


async def test_ctrl_c_while_waiting_withdraws_the_prompt() -> None:
    other = SessionLock("s-1")
    assert other.try_acquire()
    lock = SessionLock("s-1")
    with pytest.raises(Withdrawn, match="nothing was sent"):
        await claim(lock, wait=True, notice=lambda line: os.kill(os.getpid(), signal.SIGINT))
    assert not lock.held and other.held
    assert isinstance(Withdrawn("x"), Interrupted)  # exit 130 for a command
    other.release()


# -- after the turn ---------------------------------------------------------------------------


async def test_after_turn_titles_the_session_by_its_first_prompt_once(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    async with demo_link() as link:
        live = await started(link, run, index, writer, workdir)
        await run_turn(link, live, [text("first line no-permission\nsecond line")], notice=ignore)
        writer.flush()
        after_turn(index, live)
        record = index.get(live.session_id)
        assert record.prompt_title == "first line no-permission"
        assert live.first_prompt == ""  # one UPDATE per session and process
        await run_turn(link, live, [text("another no-permission")], notice=ignore)
        writer.flush()
        after_turn(index, live)
    record = index.get(live.session_id)
    assert record.prompt_title == "first line no-permission"
    assert record.title == live.store.title  # the agent's own title, when it gave one
    assert record.usage == live.store.usage and record.usage is not None
    assert [hit.session_id for _, hit in index.search(["another"])] == [live.session_id]


def test_title_from_prompt_waits_for_a_prompt(index: Index) -> None:
    index.upsert_session(rec("s-1"))
    live = SessionFeed(session_id="s-1", store=Store())
    title_from_prompt(index, live)  # nothing sent yet: nothing to title by
    assert index.get("s-1").prompt_title is None
    live.first_prompt = "fix the build"
    title_from_prompt(index, live)
    assert index.get("s-1").prompt_title == "fix the build"


async def test_after_turn_touches_the_session(run: Invocation, index: Index, writer: EventWriter, workdir: Path) -> None:
    async with demo_link() as link:
        live = await started(link, run, index, writer, workdir)
        index.touch(live.session_id, when=1.0)
        await run_turn(link, live, [text(QUIET)], notice=ignore)
        after_turn(index, live)
    assert index.get(live.session_id).last_used_at > 1.0


# -- updates after the turn -------------------------------------------------------------------


@pytest.mark.parametrize(("protocol", "stop", "possible"), [("1", "end_turn", True), ("1", "cancelled", False), ("2", "end_turn", False)])
async def test_late_updates_are_possible_after_a_v1_turn_that_ended(
    protocol: str, stop: str, possible: bool, run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    async with demo_link("--protocol", protocol) as link:
        live = await started(link, run, index, writer, workdir)
        assert late_updates_possible(link, live, stop) is possible
        live.output_error = BrokenPipeError()
        live.output_lost.set()
        assert not late_updates_possible(link, live, stop)  # nobody would see them


async def test_collect_late_counts_what_comes_until_it_is_quiet(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    async with demo_link("--protocol", "1") as link:
        live = await started(link, run, index, writer, workdir)
        await run_turn(link, live, [text(QUIET)], notice=ignore)

        async def background_report() -> None:  # a subagent reporting after the turn
            for n in range(3):
                live.feed({"sessionUpdate": "agent_message_chunk", "content": text(f"late {n}")})
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as tg:
            tg.start_soon(background_report)
            came = await collect_late(link, live, "end_turn", quiet=1.0, limit=30)
        assert came == 3
        assert await collect_late(link, live, "end_turn", quiet=0.05) == 0
        assert await collect_late(link, live, "cancelled", quiet=30, limit=30) == 0  # nothing can follow


async def test_collect_late_stops_at_its_limit_however_much_comes(
    run: Invocation, index: Index, writer: EventWriter, workdir: Path
) -> None:
    async with demo_link("--protocol", "1") as link:
        live = await started(link, run, index, writer, workdir)
        async with anyio.create_task_group() as tg:

            async def chatter() -> None:
                while True:
                    live.feed({"sessionUpdate": "agent_message_chunk", "content": text(".")})
                    await anyio.sleep(0.01)

            tg.start_soon(chatter)
            came = await collect_late(link, live, "end_turn", quiet=10, limit=0.3)
            tg.cancel_scope.cancel()
        assert came > 0

