"""acpcli.bounded: reading whole what may never end, in bounded memory; nesting depth."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from acpcli.bounded import CHUNK, TooDeep, TooLarge, check_depth, read_capped, size_text


class Endless(io.RawIOBase):
    """A stream that never ends, counting what was read of it."""

    def __init__(self) -> None:
        self.read_so_far = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        buffer[:] = b"y" * len(buffer)
        self.read_so_far += len(buffer)
        return len(buffer)


def test_read_capped_reads_at_most_just_past_the_cap() -> None:
    endless = Endless()
    with pytest.raises(TooLarge) as err:
        read_capped(endless, 3 * CHUNK + 5)
    assert endless.read_so_far == 3 * CHUNK + 6
    assert str(err.value) == f"more than {size_text(3 * CHUNK + 5)}"


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK])
def test_read_capped_returns_everything_up_to_the_cap(size: int) -> None:
    data = bytes(range(256)) * (size // 256 + 1)
    assert read_capped(io.BytesIO(data[:size]), 2 * CHUNK) == data[:size]
    with pytest.raises(TooLarge):
        read_capped(io.BytesIO(data[: size + 1]), size)


def test_read_capped_shows_each_chunk_with_its_offset() -> None:
    seen: list[tuple[int, int]] = []
    read_capped(io.BytesIO(b"z" * (CHUNK + 10)), 10 * CHUNK, lambda chunk, at: seen.append((at, len(chunk))))
    assert seen == [(0, CHUNK), (CHUNK, 10)]


def test_size_text() -> None:
    assert [size_text(n) for n in (8 << 20, 1 << 20, 64 << 10, 1 << 30, 100, 1025)] == [
        "8 MiB", "1 MiB", "64 KiB", "1 GiB", "100 bytes", "1025 bytes"
    ]


def test_check_depth_counts_levels_without_recursion() -> None:
    check_depth({"a": [{"b": [1, 2]}]}, limit=4)
    with pytest.raises(TooDeep):
        check_depth({"a": [{"b": [1, 2]}]}, limit=3)
    deep: list[object] = []
    for _ in range(100_000):  # deeper than Python's recursion: the check must not recurse
        deep = [deep]
    with pytest.raises(TooDeep):
        check_depth(deep)
    check_depth("a string is no level", limit=0)


def test_a_fifo_is_opened_without_waiting_and_given_up_when_silent(tmp_path: Path) -> None:
    import errno
    import os

    from acpcli.bounded import Silent, open_bounded

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(Silent) as err, open_bounded(fifo, idle=0.2) as stream:
        read_capped(stream, 100)
    assert err.value.errno == errno.ETIMEDOUT and "0.2 seconds" in str(err.value.strerror)
    # a writer that writes and leaves: everything it wrote, then the end
    with open_bounded(fifo, idle=30) as stream:
        with open(fifo, "wb") as writer:
            writer.write(b"some text")
        assert read_capped(stream, 100) == b"some text"
    plain = tmp_path / "plain"
    plain.write_bytes(b"x" * (CHUNK + 3))
    with open_bounded(plain, idle=0) as stream:
        assert read_capped(stream, 2 * CHUNK) == b"x" * (CHUNK + 3)
    with pytest.raises(IsADirectoryError), open_bounded(tmp_path) as stream:
        read_capped(stream, 100)
