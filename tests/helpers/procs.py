"""Which processes are still running, read from ``/proc`` (``kill(pid, 0)`` where there is none).

A zombie (``Z``) or a dying process (``X``) counts as gone: it runs nothing, it only waits for
its parent to reap it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

_DEAD = ("Z", "X")
_HAVE_PROC = Path("/proc/self/stat").exists()


def _stat_fields(stat_line: str) -> list[str]:
    """``state ppid pgrp ...`` of a ``/proc/<pid>/stat`` line. The command name before them is
    in parentheses and may hold spaces and parentheses, so split after the last ``)``."""
    return stat_line[stat_line.rindex(")") + 2 :].split()


def _all_stats() -> Iterator[tuple[int, list[str]]]:
    """(pid, stat fields) of every process that is still there when read."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            yield int(entry.name), _stat_fields((entry / "stat").read_text())
        except OSError:
            continue  # gone between the listing and the read


def running(pid: int) -> bool:
    """True while ``pid`` is a running process (neither gone nor a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, but is someone else's (a reused pid)
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return not _HAVE_PROC  # gone since the kill(0); or no /proc (macOS): trust kill(0)
    return _stat_fields(stat_line)[0] not in _DEAD


def gone(pid: int) -> bool:
    """True once ``pid`` runs no more (exited, or a zombie waiting to be reaped)."""
    return not running(pid)


def group_members(pgid: int) -> list[int]:
    """Pids of the processes in group ``pgid`` that are still running."""
    return [pid for pid, fields in _all_stats() if int(fields[2]) == pgid and fields[0] not in _DEAD]


def child_group(parent: int) -> int:
    """The process group of a child of ``parent`` (an agent started as a group leader)."""
    for _pid, fields in _all_stats():
        if int(fields[1]) == parent:
            return int(fields[2])
    raise AssertionError(f"no child process of {parent} found")
