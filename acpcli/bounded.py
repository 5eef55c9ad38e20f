"""Reading whole what a user may point anywhere: a file, a FIFO, a device, standard input.

Whatever acpcli reads whole at a user's word (``prompt -f FILE``, a prompt on standard input,
``--mcp-config FILE``, ``config.toml``) is read here chunk by chunk and given up as soon as it
holds more than its cap (:class:`TooLarge`), so ``/dev/zero`` or a FIFO fed by ``yes`` costs
at most the cap in memory and the time to read that much, never the whole stream.

A FIFO is bounded in time as well: opening one for reading waits for a writer, forever if none
comes, so it is opened without waiting, and given up (:class:`Silent`, an :class:`OSError`
whose ``strerror`` says why) when nothing is written to it for :data:`IDLE_SECONDS`.

Nested data (JSON, TOML) is bounded too: :func:`check_depth` refuses what is nested deeper
than :data:`MAX_DEPTH`, where a parser or a later walk would run out of stack.

Pure and light: on the start-up path of every command that reads a config.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

#: Bytes read at a time: small enough that the overshoot past a cap stays small.
CHUNK = 64 * 1024
#: The most a config or MCP server file may hold (bytes): far more than any hand-written one.
MAX_CONFIG_BYTES = 1024 * 1024
#: How long a FIFO may stay silent (no writer yet, or one that writes nothing) before it is
#: given up (seconds): a writer that is coming comes sooner.
IDLE_SECONDS = 10.0
#: How deeply config and MCP data may nest (tables, arrays, objects): far more than any real one.
MAX_DEPTH = 64


class Readable(Protocol):
    """A binary stream: ``read(size)`` gives at most ``size`` bytes, ``b""`` at its end."""

    def read(self, size: int, /) -> bytes: ...


class TooLarge(Exception):
    """The stream held more than ``limit`` bytes; only a little more than that was read."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {size_text(limit)}")
        self.limit = limit


class TooDeep(Exception):
    """The data nests deeper than ``limit`` levels."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"nested more than {limit} levels deep")
        self.limit = limit


def size_text(size: int) -> str:
    """``16 MiB``, ``1 MiB``, ``64 KiB``, ``100 bytes``: a cap as the user reads it."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} bytes"


def read_capped(stream: Readable, limit: int, check: Callable[[bytes, int], None] | None = None) -> bytes:
    """All of ``stream`` when it holds at most ``limit`` bytes; :class:`TooLarge` as soon as
    it holds more (after reading at most ``limit + 1`` bytes). ``check(chunk, offset)`` sees
    each chunk as it arrives, so a binary stream can be refused at its first chunk."""
    parts: list[bytes] = []
    size = 0
    while True:
        chunk = stream.read(min(CHUNK, limit + 1 - size))
        if not chunk:
            break
        if check is not None:
            check(chunk, size)
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            raise TooLarge(limit)
    return b"".join(parts)


class Silent(OSError):
    """Nothing was written to a FIFO for :data:`IDLE_SECONDS` (no writer, or a silent one)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            errno.ETIMEDOUT, f"nothing was written to it for {seconds:g} seconds (a FIFO with no writer?)"
        )


class _Fifo:
    """A FIFO opened without waiting, read with a deadline on each chunk."""

    def __init__(self, fd: int, idle: float) -> None:
        self.fd = fd
        self.idle = idle

    def read(self, size: int, /) -> bytes:
        import select

        while True:
            if hasattr(select, "poll"):
                poller = select.poll()
                poller.register(self.fd, select.POLLIN)
                ready = bool(poller.poll(self.idle * 1000))  # POLLHUP too: the writer left
            else:
                ready = bool(select.select([self.fd], [], [], self.idle)[0])
            if not ready:
                raise Silent(self.idle)
            try:
                return os.read(self.fd, size)  # b"": the last writer closed it
            except BlockingIOError:
                continue  # another reader took what was there


@contextmanager
def open_bounded(path: str | os.PathLike[str], idle: float = IDLE_SECONDS) -> Iterator[Readable]:
    """``path`` opened for reading whole: a FIFO without waiting for a writer, then read with
    :class:`Silent` after ``idle`` seconds without a byte; anything else as ``open`` opens it.
    OSError as ``open`` raises it."""
    nonblock = getattr(os, "O_NONBLOCK", 0)
    if not nonblock:  # no FIFOs to fear without it (Windows)
        with open(path, "rb") as stream:
            yield stream
        return
    fd = os.open(path, os.O_RDONLY | nonblock | getattr(os, "O_CLOEXEC", 0))
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            yield _Fifo(fd, idle)
            return
        os.set_blocking(fd, True)  # a regular file ignores it; a device reads as it would
        with os.fdopen(fd, "rb", closefd=False) as stream:
            yield stream
    finally:
        os.close(fd)


def read_file_capped(path: str, limit: int) -> bytes:
    """The bytes of the file at ``path`` (:func:`read_capped`, :func:`open_bounded`); OSError
    as ``open`` raises it (:class:`Silent` for a FIFO nobody writes to)."""
    with open_bounded(path) as stream:
        return read_capped(stream, limit)


def check_depth(data: Any, limit: int = MAX_DEPTH) -> None:
    """:class:`TooDeep` when ``data`` (dicts and lists) nests deeper than ``limit``; walked
    without recursion, so the check itself cannot run out of stack."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth >= limit:
            raise TooDeep(limit)
        stack.extend((child, depth + 1) for child in children)
