"""The writer lock of a session (acpcli.history.lock): exclusive across holders, named safely,
never inherited by a child process, gone with its holder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from acpcli.errors import SessionBusy
from acpcli.history.lock import SessionLock, lock_dir, lock_name


def test_one_holder_at_a_time_and_the_pid_is_written(acpcli_home: Path) -> None:
    first, second = SessionLock("s-1"), SessionLock("s-1")
    assert first.try_acquire() and first.held
    assert first.path.parent == lock_dir() == acpcli_home / "locks"
    assert not second.try_acquire() and not second.held
    assert second.holder() == os.getpid()
    assert SessionLock("s-2").try_acquire()  # another session is another lock
    first.release()
    assert second.try_acquire()


@pytest.mark.parametrize("session_id", ["../../etc/passwd", "a/b", ".hidden", "x" * 5000, "日本語", "\ud800", "a b"])
def test_any_session_id_gets_a_plain_file_name_of_its_own(session_id: str) -> None:
    name = lock_name(session_id)
    assert "/" not in name and not name.startswith(".") and len(name) < 80 and name.isascii()
    assert name != lock_name(session_id + "x")
    lock = SessionLock(session_id)
    assert lock.try_acquire()
    assert lock.path.parent == lock_dir()
    lock.release()


def test_a_child_process_never_inherits_the_lock() -> None:
    lock = SessionLock("s")
    assert lock.try_acquire()
    script = "import time; print('running', flush=True); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", script], close_fds=False, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "running\n"  # started for good
        lock.release()
        assert SessionLock("s").try_acquire()  # the child (an agent, say) holds nothing
    finally:
        child.kill()
        child.wait()
        assert child.stdout is not None
        child.stdout.close()


def test_the_lock_goes_with_its_holder_process() -> None:
    script = (
        "import sys, time\n"
        "from acpcli.history.lock import SessionLock\n"
        "lock = SessionLock('s')\n"
        "assert lock.try_acquire()\n"
        "print('held', flush=True)\n"
        "time.sleep(30)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        lock = SessionLock("s")
        assert not lock.try_acquire() and lock.holder() == holder.pid
        holder.kill()  # a crash: no clean-up of its own
        holder.wait()
        assert lock.try_acquire()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()


def test_a_waiter_locks_the_file_that_replaced_a_discarded_one() -> None:
    holder, waiter = SessionLock("s"), SessionLock("s")
    assert holder.try_acquire()
    said: list[int | None] = []

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: waiter.acquire(on_wait=said.append))
            await anyio.sleep(0.1)
            holder.discard()  # the session was deleted: its lock file goes with it
        assert waiter.held and waiter.path.exists()

    anyio.run(main)
    assert said == [os.getpid()]  # said once, naming the holder
    assert not SessionLock("s").try_acquire()  # a newcomer sees the waiter's file: one holder


def test_no_wait_raises_session_busy_naming_the_holder() -> None:
    holder = SessionLock("s")
    assert holder.try_acquire()
    with pytest.raises(SessionBusy, match=rf"session s is busy: another acpcli \(pid {os.getpid()}\)"):
        anyio.run(lambda: SessionLock("s").acquire(wait=False))
