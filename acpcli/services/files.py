"""Files the agent reads and writes through the client, confined to the session's roots.

Files (``fs/read_text_file``, ``fs/write_text_file``), confined to the session's root set
``[cwd, *additionalDirectories]``:

* The path must be absolute. It is resolved with every symlink followed (``os.path.realpath``,
  which also resolves the deepest existing parent of a path that does not exist yet) and only
  then checked against the equally resolved roots, so ``..``, symlinks and absolute paths
  cannot leave the root set. A refused path is answered -32602 naming the path and the roots.
  Every file operation then uses the resolved path.
* Reads honour ``line`` (1-based; 0 reads from the start, as the schema allows it) and
  ``limit`` (a number of lines; lines end at ``\\n``, line endings are kept). Text is UTF-8;
  anything else is answered -32602 ("not UTF-8 text"). A read larger than
  :data:`MAX_READ_BYTES` is refused: ask for fewer lines. Only what is asked is read, line by
  line in chunks (a 2 GB file costs a 1 MiB buffer and the time to reach ``line``).
* **A missing file inside the roots reads as empty content**, ``{"content": ""}``, marked with
  ``_meta: {"acpcli": {"missing": true}}``. Deliberately: gemini reads a file before writing it
  and only creates new files when that read succeeds with empty content; an error would make it
  unable to create any file. Agents that care can tell the difference by the marker.
* Writes are atomic: a temporary file in the target's directory, ``fsync``, ``os.replace``.
  Missing parent directories (inside the roots) are created; an existing file keeps its mode,
  a new one gets the umask's. Writing over a directory or other non-file is refused.
* Other OS errors (permission denied, disk full) are answered -32603 with the reason.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from acpcli.errors import RpcError

if TYPE_CHECKING:

    pass

# -- the root set ---------------------------------------------------------------------------

#: ``session_id -> (cwd, additional roots)``, or None for a session this client does not hold.
SessionRoots = Callable[[str], "tuple[str, Sequence[str]] | None"]

Handler = Callable[[Any], Awaitable[Any]]

#: The most a single ``fs/read_text_file`` answers with (the selected lines, in bytes).
MAX_READ_BYTES = 32 * 1024 * 1024

#: Marks the empty answer to a read of a file that does not exist (see the module docstring).
MISSING_META = {"acpcli": {"missing": True}}


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


def confine(path: str, roots: Sequence[str]) -> str:
    """``path`` resolved (symlinks followed), if it lies inside one of ``roots``.

    Raises :class:`RpcError` -32602 for a relative path, or one that resolves outside every
    root (roots are resolved the same way, so a root reached through a symlink still counts).
    """
    if not isinstance(path, str) or not path:
        raise RpcError(RpcError.INVALID_PARAMS, "path must be a non-empty string")
    if not os.path.isabs(path):
        raise RpcError(
            RpcError.INVALID_PARAMS,
            f"path must be absolute: {path!r}",
            {"path": path, "roots": list(roots)},
        )
    try:
        resolved = os.path.realpath(path)
        real_roots = [os.path.realpath(root) for root in roots if isinstance(root, str) and os.path.isabs(root)]
    except (ValueError, OSError) as exc:  # an embedded NUL byte, a symlink loop
        raise RpcError(RpcError.INVALID_PARAMS, f"unusable path {path!r}: {exc}") from exc
    if any(_inside(resolved, root) for root in real_roots):
        return resolved
    shown = path if resolved == path else f"{path} (resolves to {resolved})"
    raise RpcError(
        RpcError.INVALID_PARAMS,
        f"{shown} is outside the session's directories: {', '.join(roots)}",
        {"path": path, "resolved": resolved, "roots": list(roots)},
    )


# -- files ------------------------------------------------------------------------------------


def _os_error(action: str, path: str, exc: OSError) -> RpcError:
    if exc.errno in (errno.EISDIR, errno.ENOTDIR):
        return RpcError(RpcError.INVALID_PARAMS, f"cannot {action} {path}: {exc.strerror}")
    return RpcError(RpcError.INTERNAL_ERROR, f"cannot {action} {path}: {exc.strerror or exc}")


#: Bytes read at a time while looking for lines: a line is never held whole before it is chosen.
_READ_CHUNK = 1024 * 1024


def read_text(path: str, line: int | None = None, limit: int | None = None) -> str | None:
    """The UTF-8 text of ``path`` (already confined), from ``line`` (1-based), at most
    ``limit`` lines; ``None`` if the file does not exist. Raises :class:`RpcError`.

    Streamed: the lines before ``line`` are counted chunk by chunk and dropped, and reading
    stops once ``limit`` lines or more than :data:`MAX_READ_BYTES` are chosen, so memory stays
    within about that cap and time within what is asked, whatever the file's size or its
    longest line."""
    start = max((line or 1) - 1, 0)
    try:
        # O_NONBLOCK: opening a FIFO must not hang; regular files ignore the flag.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _os_error("read", path, exc) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RpcError(RpcError.INVALID_PARAMS, f"cannot read {path}: not a regular file")
        try:
            data = _chosen_lines(fd, start, limit)
        except OSError as exc:
            raise _os_error("read", path, exc) from exc
    finally:
        os.close(fd)
    if len(data) > MAX_READ_BYTES:
        what = f"{path} is" if start == 0 and limit is None else f"{path}: the lines asked for are"
        raise RpcError(
            RpcError.INVALID_PARAMS,
            f"{what} larger than {MAX_READ_BYTES} bytes: read it in parts with line and limit",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RpcError(
            RpcError.INVALID_PARAMS,
            f"{path} is not UTF-8 text (invalid byte at offset {exc.start} of what was read)",
        ) from exc


def _nth_line_end(chunk: bytes, n: int) -> int:
    """The offset just past the ``n``-th ``\\n`` of ``chunk`` (``n`` >= 1; the caller has
    counted that there are that many)."""
    at = -1
    for _ in range(n):
        at = chunk.index(b"\n", at + 1)
    return at + 1


def _chosen_lines(fd: int, start: int, limit: int | None) -> bytes:
    """The bytes of lines ``start`` (0-based) to ``start + limit`` of the open file ``fd``, or
    just more than :data:`MAX_READ_BYTES` of them when they hold more (the caller refuses).

    Binary lines end at ``b"\\n"`` only, which never occurs inside a UTF-8 character. Holes of
    a sparse file hold no line end, so the lines before ``start`` skip them unread."""
    offset = 0
    rest = b""
    skip = start
    while skip:  # drop the lines before the first one asked for
        offset = _next_data(fd, offset)
        chunk = os.pread(fd, _READ_CHUNK, offset)
        if not chunk:
            return b""
        offset += len(chunk)
        ends = chunk.count(b"\n")
        if ends >= skip:
            rest = chunk[_nth_line_end(chunk, skip) :]
            skip = 0
        else:
            skip -= ends
    if limit == 0:
        return b""
    parts: list[bytes] = []
    size = 0
    left = limit
    while True:
        if left is not None:
            ends = rest.count(b"\n")
            if ends >= left:
                parts.append(rest[: _nth_line_end(rest, left)])
                break
            left -= ends
        parts.append(rest)
        size += len(rest)
        if size > MAX_READ_BYTES:
            break
        rest = os.pread(fd, _READ_CHUNK, offset)
        if not rest:
            break
        offset += len(rest)
    return b"".join(parts)


def _next_data(fd: int, offset: int) -> int:
    """Where the next data at or after ``offset`` begins (past a hole of a sparse file, which
    reads as zero bytes: no line end); ``offset`` itself where holes cannot be found."""
    seek_data = getattr(os, "SEEK_DATA", None)
    if seek_data is None:
        return offset
    try:
        return os.lseek(fd, offset, seek_data)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # nothing but a hole up to the end of the file
            return os.fstat(fd).st_size
        return offset  # a file system that cannot tell: read on


def write_text(path: str, content: str) -> None:
    """Write ``content`` to ``path`` (already confined) atomically, as UTF-8.

    Creates missing parent directories, keeps an existing file's mode. Raises :class:`RpcError`.
    """
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates from a "\\ud800" escape
        raise RpcError(RpcError.INVALID_PARAMS, f"content for {path} is not valid Unicode text") from exc
    parent, name = os.path.split(path)
    try:
        os.makedirs(parent, exist_ok=True)
        try:
            existing = os.stat(path)
        except FileNotFoundError:
            existing = None
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            raise RpcError(RpcError.INVALID_PARAMS, f"cannot write {path}: not a regular file")
        import secrets  # here: hmac, hashlib and random are ~5 ms of every command's start

        temp = os.path.join(parent, f".{name}.{secrets.token_hex(4)}.acpcli-tmp")
        # 0o666 lets the umask decide a new file's mode, as any editor would.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())  # the rename must never expose an empty file after a crash
                if existing is not None:
                    os.fchmod(out.fileno(), stat.S_IMODE(existing.st_mode))
            os.replace(temp, path)
        except BaseException:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise _os_error("write", path, exc) from exc


