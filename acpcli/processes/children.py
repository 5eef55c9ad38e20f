"""What the processes acpcli starts leave behind, found and ended (Linux ``/proc``).

An agent, or a command it runs in a terminal, can start processes that leave its process
group (``setsid``, a daemon's double fork): killing the group does not reach them, and once
their parent has exited they are re-parented away from it. This module keeps them in reach:

* **A tag.** Every process acpcli starts gets ``ACPCLI_OWNER=<tag>`` in its environment, and
  its descendants inherit it, so a stray process can be told to belong to one agent or one
  terminal (``/proc/PID/environ``) wherever it was re-parented, unless it cleared its
  environment. Tags are unique among running acpclis (they start with acpcli's pid).
* **Trees.** :func:`leftovers` collects what to end for one owner (a group leader acpcli
  started): its descendants while it lives (the ppid links of ``/proc/*/stat``), the members
  of its process group, every process bearing its tag, and their descendants.
* **A child subreaper.** When the command owns its process (:func:`claim`, called by the
  CLI's supervisor), acpcli becomes a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``):
  every orphaned descendant is re-parented to acpcli rather than to init, so even one that
  dropped its tag is still a child of acpcli, and :func:`sweep` kills and reaps it at the end.
* **Reaping.** A process re-parented to acpcli must be reaped by acpcli: :func:`reap` waits
  for the ones acpcli killed (and, in a claimed process, for every zombie child that nobody
  else waits for). Processes whose status belongs to someone else (the agent and terminal
  commands, which anyio waits for) are registered with :func:`manage` and never touched.

What cannot be reached: a process that left both the tree and the tag before acpcli claimed
its process (or on a system without ``/proc`` and ``PR_SET_CHILD_SUBREAPER``), and anything
left when acpcli itself is killed with SIGKILL. Nothing here raises: a process that vanished
between reading and signalling is simply gone.
"""

from __future__ import annotations

import itertools
import os
import signal
import sys
from collections.abc import Iterable, Mapping
from contextlib import suppress
from typing import Any, NamedTuple

#: The environment variable that carries a process's owner tag to its descendants.
TAG_VAR = "ACPCLI_OWNER"

_PR_SET_CHILD_SUBREAPER = 36
_HAVE_PROC = os.path.exists("/proc/self/stat")
_DEAD = ("Z", "X")

_counter = itertools.count(1)
_managed: set[int] = set()  # pids another waiter reaps (anyio's child watcher)
_killed: set[int] = set()  # pids acpcli signalled, to be reaped once re-parented to it
_state = {"subreaper": False, "claimed": False}


class _Proc(NamedTuple):
    ppid: int
    pgid: int
    state: str
    start: int  # clock ticks after boot: with the pid, a process's identity


def new_tag(kind: str) -> str:
    """A fresh owner tag for one process acpcli starts (``kind``: ``agent``, ``terminal``)."""
    return f"{os.getpid()}-{kind}-{next(_counter)}"


# -- owning the process -------------------------------------------------------------------------


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux 3.4+); True if it is one. Idempotent."""
    if _state["subreaper"]:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        done = libc.prctl(_PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
    except (OSError, AttributeError):
        return False
    _state["subreaper"] = done == 0
    return _state["subreaper"]


def claim() -> None:
    """This process is the command's own (the CLI): adopt orphans (:func:`become_subreaper`)
    and end every process left under it at exit (:func:`sweep`). Idempotent.

    A library caller does not claim its host process: only tagged leftovers are ended then.
    """
    if _state["claimed"]:
        return
    _state["claimed"] = True
    become_subreaper()
    import atexit

    atexit.register(sweep)


def manage(pid: int) -> None:
    """``pid`` is a child whose exit status another waiter collects: never reap it."""
    _managed.add(pid)


def unmanage(pid: int) -> None:
    """``pid`` has been reaped by its waiter."""
    _managed.discard(pid)


# -- finding --------------------------------------------------------------------------------------
#
# Cheap by design: a terminal released among 1,500 live ones must not read all of /proc. Trees
# are walked through /proc/PID/task/TID/children (the direct children of each thread), and
# environments are read only of the children of the processes an orphan can have been
# re-parented to (acpcli when it is a subreaper, else its ancestors up to init).


def _stat(pid: int) -> _Proc | None:
    """``/proc/PID/stat`` (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            line = f.read()
        fields = line[line.rindex(b")") + 2 :].split()
        return _Proc(int(fields[1]), int(fields[2]), fields[0].decode(), int(fields[19]))
    except (OSError, ValueError, IndexError):
        return None


def _all_pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _children_files_work() -> bool:
    return os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def _children(pid: int, parents: dict[int, list[int]] | None) -> list[int]:
    """The direct children of ``pid``: from ``parents`` (a whole-table map, when the kernel
    has no ``children`` files), else from the ``children`` file of each of its threads."""
    if parents is not None:
        return parents.get(pid, [])
    found: list[int] = []
    if pid == os.getpid():
        # acpcli has a thread per child it waits for; only the main thread (where children
        # are started, and orphans are re-parented to) and this one can have children.
        import threading

        tids = list({str(pid), str(threading.get_native_id())})
    else:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return found
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found.extend(int(child) for child in f.read().split())
        except (OSError, ValueError):
            continue
    return found


def _parents_map() -> dict[int, list[int]] | None:
    """None when ``children`` files can be read; else ppid -> pids of every process."""
    if _children_files_work():
        return None
    parents: dict[int, list[int]] = {}
    for pid in _all_pids():
        proc = _stat(pid)
        if proc is not None:
            parents.setdefault(proc.ppid, []).append(pid)
    return parents


def _orphan_homes() -> list[int]:
    """Where an orphan of acpcli's descendants can have been re-parented to: the nearest
    subreaper above its dead parent, so acpcli itself when it is one, else acpcli's
    ancestors up to init (one of them, ``systemd --user`` say, may be a subreaper)."""
    me = os.getpid()
    homes = [me]
    if _state["subreaper"]:
        return homes
    pid = me
    while pid > 1 and len(homes) < 64:
        proc = _stat(pid)
        if proc is None or proc.ppid <= 0:
            break
        pid = proc.ppid
        homes.append(pid)
    return homes


def _tag_of(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:  # someone else's, or gone
        return None
    prefix = TAG_VAR.encode() + b"="
    for item in data.split(b"\0"):
        if item.startswith(prefix):
            return item[len(prefix) :].decode("utf-8", "replace")
    return None


def _descendants(roots: Iterable[int], parents: dict[int, list[int]] | None) -> set[int]:
    found: set[int] = set()
    stack = list(roots)
    while stack:
        for child in _children(stack.pop(), parents):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _living(pids: Iterable[int]) -> dict[int, int]:
    """``{pid: start time}`` of those of ``pids`` that run (not gone, not zombies)."""
    alive: dict[int, int] = {}
    for pid in pids:
        proc = _stat(pid)
        if proc is not None and proc.state not in _DEAD:
            alive[pid] = proc.start
    return alive


def running(pid: int) -> bool:
    """Whether ``pid`` runs (neither gone nor a zombie)."""
    return bool(_living((pid,)))


def leftovers(root: int, tag: str | None, *, alive: bool) -> dict[int, int]:
    """What to end for the owner ``root`` (a process group leader acpcli started, tagged
    ``tag``), as ``{pid: start time}``: its descendants (only while it is ``alive``: a dead
    root's pid may be another process's by now), every process bearing its tag, and their
    descendants. Never ``root``, acpcli or a managed pid. (Its group is for ``killpg``.)
    """
    if not _HAVE_PROC:
        return {}
    me = os.getpid()
    parents = _parents_map()
    tops = {root} if alive else set()
    if tag is not None:
        candidates = [pid for home in _orphan_homes() for pid in _children(home, parents)]
        tops.update(pid for pid in candidates if pid != me and pid not in _managed and _tag_of(pid) == tag)
    found = tops | _descendants(tops, parents)
    found -= _managed | {me, root}
    return _living(found)


def snapshot_alive(pids: Mapping[int, int]) -> dict[int, int]:
    """The ones of ``pids`` (``{pid: start time}``) that are still the same running process."""
    now = _living(pids)
    return {pid: start for pid, start in pids.items() if now.get(pid) == start}


async def exited(process: Any, within: float | None = None) -> bool:
    """Wait up to ``within`` seconds (None: no limit) for an anyio ``process`` to exit; True
    once it has.

    ``process.wait()``, raced with a look at its exit status now and then: before anyio 4.9
    ``wait()`` also waits for the pipes to close, which a process it left behind holding
    them may never do.
    """
    import anyio

    async def watch(scope: anyio.CancelScope, waiter: Any) -> None:
        await waiter()
        scope.cancel()

    async def poll() -> None:
        delay = 0.01
        while process.returncode is None:
            await anyio.sleep(delay)
            delay = min(delay * 2, 1.0)

    if process.returncode is None:
        with anyio.move_on_after(within):
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch, tg.cancel_scope, process.wait)
                tg.start_soon(watch, tg.cancel_scope, poll)
    return process.returncode is not None


async def reaped(within: float = 0.5) -> None:
    """:func:`reap`, waiting up to ``within`` seconds for what acpcli killed to die."""
    import anyio

    with anyio.move_on_after(within):
        while reap():  # noqa: ASYNC110 - a zombie appearing is no event; polled, briefly
            await anyio.sleep(0.01)


# -- ending ---------------------------------------------------------------------------------------


def signal_all(pids: Mapping[int, int], sig: signal.Signals) -> int:
    """Send ``sig`` to each of ``pids`` (``{pid: start time}``) that is still that process;
    how many were signalled."""
    sent = 0
    for pid in snapshot_alive(pids) if pids else ():
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
            sent += 1
            if sig == signal.SIGKILL:
                _killed.add(pid)
    return sent


def reap(timeout: float = 0.0) -> bool:
    """Collect the exit status of acpcli's zombie children that no one else waits for: the
    ones acpcli killed, and in a claimed process every one (orphans re-parented to it).
    Waits up to ``timeout`` seconds for killed children of acpcli to become zombies; True
    while some of them are still dying."""
    import time

    deadline = time.monotonic() + timeout
    me = os.getpid()
    while True:
        if not _HAVE_PROC:
            for pid in list(_killed):
                with suppress(OSError):
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        _killed.discard(pid)
            return False
        dying = False
        for pid in _children(me, _parents_map()):
            if pid in _managed:
                continue
            proc = _stat(pid)
            if proc is None:
                continue
            if proc.state != "Z":
                dying = dying or pid in _killed
                continue
            if _state["claimed"] or pid in _killed:
                with suppress(OSError):  # ChildProcessError: someone else reaped it
                    os.waitpid(pid, os.WNOHANG)
                _killed.discard(pid)
        for pid in [pid for pid in _killed if _stat(pid) is None]:
            _killed.discard(pid)
        if not dying or time.monotonic() >= deadline:
            return dying
        time.sleep(0.01)


def sweep() -> None:
    """End everything left under a claimed process (children that are not managed, and
    their descendants), and reap it. Run at exit by :func:`claim`, and by the supervisor."""
    if not _state["claimed"] or not _HAVE_PROC:
        return
    parents = _parents_map()
    tops = {pid for pid in _children(os.getpid(), parents) if pid not in _managed}
    alive = _living(tops | _descendants(tops, parents))
    if alive:
        signal_all(alive, signal.SIGKILL)
    reap(timeout=1.0)
