"""One prompt turn as a command runs it, and the bookkeeping after it.

Ctrl-C and a lost output are wired in; the bookkeeping is the same for ``acpcli prompt`` and
the REPL.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from acpcli.errors import Interrupted
from acpcli.history.indexing import turn_indexed
from acpcli.session.control import DOUBLE_PRESS, TurnControl

log = logging.getLogger("acpcli.session.turn")

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from acpcli.history.index import Index
    from acpcli.history.lock import SessionLock
    from acpcli.session.control import Act
    from acpcli.session.feed import SessionFeed
    from acpcli.session.link import AgentLink


async def run_turn(
    link: AgentLink,
    live: SessionFeed,
    blocks: Sequence[dict[str, Any]],
    *,
    notice: Callable[[str], None],
    tick: Callable[[], None] | None = None,
    double_interrupt_seconds: float = DOUBLE_PRESS,
    limit: float | None = None,
    sent: Any = None,
    interrupts: bool = True,
    control: TurnControl | None = None,
    checkpoint_after: bool = True,
) -> str:
    """One turn with Ctrl-C wired in (:class:`~acpcli.session.control.TurnControl`): the first
    SIGINT sends ``session/cancel`` and the turn waits for the agent to confirm; a second
    within ``double_interrupt_seconds`` kills the agent's process group and raises
    :class:`~acpcli.errors.Interrupted` (exit 130 at the CLI).

    ``notice`` receives the one-line status messages ("cancelling…") for the caller to show;
    ``tick`` (if given) is called about ten times a second while the turn runs, so a view
    can redraw its live part even when the stream pauses.

    ``limit`` (seconds, ``--timeout``; None or 0: none) bounds the turn: when it has passed,
    ``session/cancel`` is sent and the agent has :data:`~acpcli.session.control.CANCEL_GRACE`
    seconds to end the turn; if it does not, its process group is killed and the turn is abandoned (stop reason
    ``cancelled``). Either way :attr:`~acpcli.session.feed.SessionFeed.timed_out` says so to
    the caller, who stores what arrived and reports the timeout.

    Checkpoints of the session's files (:mod:`acpcli.session.checkpointing`): one before the
    session's first turn, one after each turn the agent ended (never failing the turn).

    One writer per session: when ``live.lock`` is set and not held (the REPL, between turns),
    the turn takes it first (:func:`claim`: waiting for another acpcli's turn to end, saying so
    through ``notice``) and lets it go once the turn's events are flushed; a caller that holds
    it already (``prompt``) keeps it.

    ``sent``: the answer of a prompt sent during the previous turn, which this turn waits
    for instead of sending ``blocks`` (:meth:`~acpcli.session.link.AgentLink.prompt`).

    ``interrupts=False`` (the Python API: a library leaves SIGINT to its program): no Ctrl-C
    handling at all, here or while waiting for the lock.

    ``control``: the turn's :class:`~acpcli.session.control.TurnControl` when the caller
    holds it (the host: a client's ``--timeout`` cancels its turn with a grace,
    :meth:`~acpcli.session.control.TurnControl.cancelled`); else one is made from ``limit``
    and ``double_interrupt_seconds``. ``checkpoint_after=False``: the caller takes the
    checkpoint after the turn itself (the host: once the turn's client has its answer).
    """
    lock = live.lock
    took = lock is not None and not lock.held
    if lock is not None and took:
        if interrupts:
            await claim(lock, wait=live.lock_wait, notice=notice)
        else:
            from acpcli.history.lock import waiting_line

            await lock.acquire(wait=live.lock_wait, on_wait=lambda pid: notice(waiting_line(lock.session_id, pid)))
    try:
        from acpcli.session import checkpointing

        await checkpointing.before_turn(live, notice)  # the files before the session's first turn
        live.turn_active = True
        live.timed_out = None
        try:
            if control is None:
                control = TurnControl(limit, double_press=double_interrupt_seconds)
            stop = await _turn_tasks(link, live, blocks, notice, tick, control, sent, interrupts)
        finally:
            live.turn_active = False
        if checkpoint_after:
            await checkpointing.after_turn(live, prompt_text(blocks), notice)  # what the turn did to them
        return stop
    finally:
        if lock is not None and took:
            try:
                if live.recorder is not None:
                    live.recorder.flush()  # the turn's events are in before the next writer's
            finally:
                lock.release()


def prompt_text(blocks: Sequence[dict[str, Any]]) -> str:
    """The text of a prompt's blocks (its checkpoint is labelled with the first line)."""
    return "\n".join(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))


class Withdrawn(Interrupted):
    """Ctrl-C while waiting for another acpcli's turn on the session: nothing was sent
    (exit 130 for a command; the REPL keeps the line and goes on)."""


async def claim(lock: SessionLock, *, wait: bool, notice: Callable[[str], None]) -> None:
    """Take a session's writer lock (:mod:`acpcli.history.lock`) before writing to it.

    Free: at once. Held by another acpcli: one line through ``notice`` ("waiting for another
    acpcli (pid N) to finish its turn…"), then wait for it; ``wait=False``: raise
    :class:`~acpcli.errors.SessionBusy` instead. Ctrl-C while waiting raises :class:`Withdrawn`.
    """
    import signal

    from acpcli.history.lock import waiting_line

    if lock.held or lock.try_acquire():
        return
    if not wait:
        await lock.acquire(wait=False)  # SessionBusy, naming the holder
        return
    withdrawn = False
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                nonlocal withdrawn
                async for _ in signals:
                    withdrawn = True
                    tg.cancel_scope.cancel()
                    return

            tg.start_soon(watch)
            await lock.acquire(on_wait=lambda pid: notice(waiting_line(lock.session_id, pid)))
            tg.cancel_scope.cancel()
    if withdrawn:
        lock.release()
        raise Withdrawn(f"interrupted while waiting for session {lock.session_id}: nothing was sent")


class Driver:
    """A turn's :class:`~acpcli.session.control.TurnControl` driven in the turn's task group
    (:meth:`start`): Ctrl-C (unless ``interrupts`` is off) and the control's clock fed to it,
    what it answers handed to ``act`` (a press's at once, in order; the clock's in a task of
    its own, so that a cancel that hangs does not hold the kill up); ``tick`` (if given)
    called about ten times a second. The caller cancels the task group when the turn ends."""

    def __init__(
        self,
        control: TurnControl,
        act: Callable[[Act], Coroutine[Any, Any, None]],
        *,
        interrupts: bool = True,
        tick: Callable[[], None] | None = None,
    ) -> None:
        self.control, self._act, self._interrupts, self._tick = control, act, interrupts, tick
        self._changed = anyio.Event()
        control.wake = self.poke

    def start(self, tg: TaskGroup) -> None:
        """Its tasks, in ``tg``."""
        if self._interrupts:
            tg.start_soon(self._presses)
        tg.start_soon(self._clock, tg)
        if self._tick is not None:
            tg.start_soon(self._ticker)

    def poke(self) -> None:
        """The control was changed from outside (a cancel with a grace): look at its clock again."""
        self._changed.set()

    async def _presses(self) -> None:
        import signal
        import time

        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                act = self.control.press(time.monotonic())
                if act is not None:
                    await self._act(act)

    async def _clock(self, tg: TaskGroup) -> None:
        import math
        import time

        while True:
            now = time.monotonic()
            act = self.control.due(now)
            if act is not None:
                tg.start_soon(self._act, act)
                continue
            wait = self.control.wait(now)
            self._changed = anyio.Event()
            with anyio.move_on_after(math.inf if wait is None else wait):
                await self._changed.wait()

    async def _ticker(self) -> None:
        assert self._tick is not None
        while True:
            await anyio.sleep(0.1)
            self._tick()


async def _turn_tasks(
    link: AgentLink,
    live: SessionFeed,
    blocks: Sequence[dict[str, Any]],
    notice: Callable[[str], None],
    tick: Callable[[], None] | None,
    control: TurnControl,
    sent: Any = None,
    interrupts: bool = True,
) -> str:
    import time

    from acpcli.session.control import Act

    stop = "end_turn"
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            nonlocal stop
            stop = await (link.prompt(live, blocks, sent=sent) if sent is not None else link.prompt(live, blocks))
            control.stopped()
            tg.cancel_scope.cancel()

        async def act(what: Act) -> None:
            nonlocal stop
            if what is Act.CANCEL:
                notice("cancelling… (press Ctrl-C again to kill the agent)")
                live.interrupted = True
                await link.cancel(live)
            elif what is Act.LEAVE:
                notice("interrupted again: killing the agent")
                link.kill()
                raise Interrupted()
            elif what is Act.TIME_OUT:
                live.timed_out = control.timed_out
                try:
                    await link.cancel(live)
                except Exception:  # noqa: BLE001 - the agent may be gone already: killed after the grace
                    pass
            elif what is Act.KILL and control.timed_out is None:
                # a grace given from elsewhere (a client's --timeout, in the host): the agent
                # is stopped and the turn ends as its going ends it; the client reports the timeout
                log.warning("the agent did not end a cancelled turn in time: stopping it")
                link.kill()
            elif what is Act.KILL:  # no answer to our cancel: stop waiting for one, and stop the agent
                stop, live.timed_out = "cancelled", control.timed_out
                tg.cancel_scope.cancel()
                link.kill()

        async def watch_output() -> None:
            await live.output_lost.wait()
            assert live.output_error is not None
            if not isinstance(live.output_error, BrokenPipeError):
                link.kill()  # nobody will see the rest of this turn
            raise live.output_error

        control.start(time.monotonic())
        tg.start_soon(run)
        Driver(control, act, interrupts=interrupts, tick=tick).start(tg)
        tg.start_soon(watch_output)
    return stop


#: After a turn, a one-shot command waits until the agent has sent nothing for this many
#: seconds (updates after the turn: claude's background subagents report so) ...
LATE_QUIET = 0.3
#: ... but no longer than this in all.
LATE_LIMIT = 2.0


def late_updates_possible(link: AgentLink, live: SessionFeed, stop: str) -> bool:
    """Whether the agent may still send updates for a turn that ended with ``stop``: a v1
    turn that ended normally, on a connection still open, with the output still read. (A v2
    turn ends when the agent says it is idle: nothing of it follows.)"""
    return (
        stop == "end_turn"
        and link.features.protocol_version == 1
        and not link.conn.closed
        and not live.output_lost.is_set()
    )


async def collect_late(
    link: AgentLink, live: SessionFeed, stop: str, *, quiet: float = LATE_QUIET, limit: float = LATE_LIMIT
) -> int:
    """Updates after the turn: before a one-shot command lets the agent go, wait while they
    come -- until ``quiet`` seconds pass without one, ``limit`` seconds at most -- so that
    they are shown and stored like the turn's own (they arrive through ``live.feed`` as
    usual). Skipped when nothing can follow (:func:`late_updates_possible`). Returns how
    many came."""
    import time

    if not late_updates_possible(link, live, stop):
        return 0
    first = seen = live.updates_seen
    start = last = time.monotonic()
    while True:
        now = time.monotonic()
        if now - last >= quiet or now - start >= limit or link.conn.closed or live.output_lost.is_set():
            return live.updates_seen - first
        await anyio.sleep(min(0.05, quiet - (now - last)))
        if live.updates_seen != seen:
            seen, last = live.updates_seen, time.monotonic()


def after_turn(index: Index, live: SessionFeed) -> None:
    """What the index learns from a finished turn, whatever ended it: the session was used
    now, its usage as the agent last reported it, and its title if the agent gave one, else
    (once) the first line of its first prompt.
    (The event log is flushed by the caller, which owns the writer, before this.)"""
    index.touch(live.session_id)
    title_from_prompt(index, live)
    if live.store.title:
        index.set_title(live.session_id, live.store.title)
    if live.store.usage is not None:
        index.set_usage(live.session_id, live.store.usage)  # sessions --json shows it
    turn_indexed(index, live)  # what the turn said becomes searchable


def title_from_prompt(index: Index, live: SessionFeed) -> None:
    """Title the session after the first line of its first prompt, as ``sessions`` shows an
    untitled one -- once the prompt was sent, whether its turn went well or failed."""
    if live.first_prompt:
        index.set_prompt_title(live.session_id, live.first_prompt)  # a no-op once it is set
        live.first_prompt = ""  # one UPDATE per session and process, not per turn
