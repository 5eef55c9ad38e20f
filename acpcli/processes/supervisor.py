"""The command's supervisor: signals, sudden failures and the event log's clock.

:class:`Supervisor` runs the body of a command that drives an agent (``prompt``, ``new``,
``load``, ``resume``) and, for as long as it runs:

* **SIGTERM and SIGHUP** (the terminal closed under the REPL) are treated like Ctrl-C: a
  turn in progress gets ``session/cancel`` and a moment (``grace``) to end, then the agent's
  process group is killed, the body is cancelled -- its ``finally`` blocks store what arrived,
  close the view and restore the terminal -- and :class:`~acpcli.errors.Terminated` leaves
  with exit 143 / 129.
* **A failure reported from the side** (:meth:`fail`: the ``--raw`` output could not be
  written; a wire log that cannot be written stops nothing, see :mod:`acpcli.wire.wiretap`) kills the agent's process group the same way and leaves with that error.
* **The event log is flushed by time**: every ``tick`` seconds the writer flushes what has
  waited ``flush_interval`` (0.1 s), so what arrived is on disk within about 100 ms whether
  or not more follows (a ``kill -9`` loses at most that).

Every way out ends with the agent's process group dead: the transport's ``aclose`` kills
the group when the link closes; the supervisor only makes it immediate. The command owns
its process (:func:`acpcli.processes.children.claim`): orphans of the agent and of its terminals are
re-parented to acpcli, and whatever is left under it when the command ends is killed and
reaped (:func:`acpcli.processes.children.sweep`), whichever way it ends.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from acpcli.errors import AcpcliError, OutputError, Terminated

log = logging.getLogger("acpcli.processes.supervisor")

T = TypeVar("T")

class Supervisor:
    """See the module docstring. Set :attr:`link` and :attr:`writer` once they exist."""

    def __init__(self, *, grace: float = 1.0, tick: float = 0.02) -> None:
        self.link: Any = None  # the AgentLink, once open
        self.writer: Any = None  # the EventWriter, once open
        self.grace = grace
        self.tick = tick
        self.stdout_fd: int | None = None  # a pipe to watch for its reader going away
        self.signum: int | None = None
        self.failure: AcpcliError | None = None
        self._failed = anyio.Event()
        #: The methods of the requests given up with ``$/cancel_request`` (the connection's).
        self.cancelled: list[str] = []

    def fail(self, error: AcpcliError) -> None:
        """Stop the command with ``error`` (callable from synchronous code)."""
        if self.failure is None:
            self.failure = error
            self._failed.set()

    async def run(self, body: Callable[[], Awaitable[T]]) -> T:
        """Run ``body`` under supervision; its result, or the error that stopped it."""
        from acpcli.processes import children

        children.claim()
        result: list[T] = []
        try:
            async with anyio.create_task_group() as tg:

                async def main() -> None:
                    result.append(await body())
                    tg.cancel_scope.cancel()

                tg.start_soon(main)
                tg.start_soon(self._watch_signals, tg.cancel_scope)
                tg.start_soon(self._watch_failure, tg.cancel_scope)
                tg.start_soon(self._flush_by_time)
                tg.start_soon(self._watch_reader)
        except BaseException as exc:
            children.sweep()
            self._raise_stop()
            inner = getattr(exc, "exceptions", None)
            if inner and len(inner) == 1:  # a task group's wrapping adds nothing to the report
                raise inner[0] from None
            raise
        children.sweep()
        self._raise_stop()
        return result[0]

    def _raise_stop(self) -> None:
        if self.signum is not None:
            raise Terminated(self.signum) from None
        if self.failure is not None:
            raise self.failure from None

    async def _watch_signals(self, scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
            received = 0
            async for signum in signals:
                received = self.signum = int(signum)
                break
        # Stopping now: a repeated signal (a closing terminal sends SIGHUP more than once)
        # must not end the process before the clean-up below and the body's finally blocks.
        for again in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(again, signal.SIG_IGN)
        log.info("signal %d: cancelling the turn and stopping the agent", received)
        await self._stop_agent(cancel_turn=True)
        scope.cancel()

    async def _watch_failure(self, scope: anyio.CancelScope) -> None:
        await self._failed.wait()
        await self._stop_agent(cancel_turn=False)
        scope.cancel()

    async def _stop_agent(self, *, cancel_turn: bool) -> None:
        """Cancel a running turn (waiting up to ``grace`` for the agent to end it), then
        kill the agent's process group."""
        link = self.link
        if link is None:
            return
        if cancel_turn:
            busy = [live for live in list(link.sessions.values()) if getattr(live, "turn_active", False)]
            with anyio.move_on_after(self.grace):
                try:
                    for live in busy:
                        live.interrupted = True
                        await link.cancel(live)
                    while any(live.turn_active for live in busy):  # noqa: ASYNC110 - a plain flag of run_turn, polled for at most `grace`
                        await anyio.sleep(0.02)
                except Exception as exc:  # noqa: BLE001 - the agent may already be gone; kill it anyway
                    log.debug("cancelling before the stop failed: %s", exc)
        self._flush()
        link.kill()

    def _flush(self) -> None:
        writer = self.writer
        if writer is not None:
            try:
                writer.flush()
            except Exception as exc:  # noqa: BLE001 - a failed store must not stop the stop
                log.warning("flushing the event log failed: %s", exc)

    async def _flush_by_time(self) -> None:
        while True:
            await anyio.sleep(self.tick)
            writer = self.writer
            if writer is not None:
                try:
                    writer.flush_if_due()
                except Exception as exc:  # noqa: BLE001 - see _flush
                    log.warning("flushing the event log failed: %s", exc)


    async def _watch_reader(self) -> None:
        """A pipe's reader that went away (``| head -1``) while the agent pauses would only
        be noticed at the next write: notice it now (the pipe reports an error to poll), stop
        the agent and leave quietly, as for a broken pipe."""
        import os
        import select
        import stat

        fd = self.stdout_fd
        if fd is None or not hasattr(select, "poll"):
            return
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                return
        except OSError:
            return
        poller = select.poll()
        poller.register(fd, 0)  # only POLLERR / POLLHUP, which are always reported
        while True:
            await anyio.sleep(0.2)
            if poller.poll(0):
                from acpcli.errors import OutputClosed

                self.fail(OutputClosed())
                return


class GuardedTap:
    """A tap (``--raw``: the frames are the output) whose write failures stop the command with
    :class:`~acpcli.errors.OutputError` through the supervisor instead of breaking the
    connection (the tap runs on the connection's reader and sender)."""

    def __init__(self, inner: Any, what: str, supervisor: Supervisor) -> None:
        self._inner = inner
        self._what = what
        self._supervisor = supervisor
        self._broken = False

    def sent(self, frame: bytes) -> None:
        self._call(self._inner.sent, frame)

    def received(self, frame: bytes) -> None:
        self._call(self._inner.received, frame)

    def close(self) -> None:
        if self._broken:
            return
        try:
            self._inner.close()
        except OSError as exc:
            self._broken = True
            self._supervisor.fail(output_error(self._what, exc))

    def _call(self, method: Callable[[bytes], None], frame: bytes) -> None:
        if self._broken:
            return
        try:
            method(frame)
        except BrokenPipeError:
            raise
        except OSError as exc:
            self._broken = True
            self._supervisor.fail(output_error(self._what, exc))


def output_error(what: str, exc: OSError) -> OutputError:
    """``cannot write WHAT: REASON`` (exit 17)."""
    return OutputError(f"cannot write {what}: {exc.strerror or exc}")
