"""One session's private checkpoint store under ``ACPCLI_HOME``: its files, refs and lock.

Layout (``<home>/checkpoints/``, folders 0700)::

    <key>.lock          the store's lock (acpcli.history.lock), held around every change
    <key>/session       the session id
    <key>/roots         the roots ever checkpointed, absolute, each ended by a NUL byte; a
                        root's number is its place in this file (it never changes)
    <key>/git/          a bare git folder: objects (the user's borrowed through
                        objects/info/alternates), refs, info/attributes (no conversions)
    <key>/index-<n>     root n's private index (a copy of the user's to start with)
    <key>/exclude-<n>   root n's exclude file: the user's info/exclude and ours
    <key>/off           why checkpoints gave up on this session (JSON), when they did
    <key>/journal       the temporary files of a restore under way (removed when it ends)

Refs, under ``refs/acpcli/<id hash>/``: ``<n>`` the checkpoint after turn n (``0``: before the
first turn), ``before-<n>`` the files as turn n found them when the user had changed them
since the last checkpoint (a turn's diff is then the agent's alone), ``head`` the last state recorded (a checkpoint, or the result of a rewind),
``undo`` the state before the last rewind, ``rewinding`` the target of a rewind that has not
finished (set before its first write, removed after its last).

A checkpoint is a commit whose tree has one entry per root, named by the root's number; its
parent is what ``head`` was when it was taken.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

from acpcli.errors import CheckpointsBusy
from acpcli.history.lock import SessionLock, lock_name
from acpcli.paths import create_private, ensure_dir, home_dir
from acpcli.worktree.git import ATTRIBUTES, EMPTY_TREE

_OID = re.compile(r"[0-9a-f]{40}")


def checkpoints_dir() -> Path:
    """Where every session's checkpoint store lives: ``<home>/checkpoints/`` (not created here)."""
    return home_dir() / "checkpoints"


def store_key(session_id: str) -> str:
    """The folder name of ``session_id``'s store (safe characters and a hash of the whole id)."""
    return lock_name(session_id).removesuffix(".lock")


def ref_space(session_id: str) -> str:
    """The refs of ``session_id``'s checkpoints: ``refs/acpcli/<hash of the id>``."""
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"refs/acpcli/{digest}"


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (0600) through a temporary file and a rename."""
    tmp = path.with_name(path.name + ".tmp")
    fd = create_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)


class Store:
    """The files of one session's store (nothing is created until :meth:`create`)."""

    def __init__(self, session_id: str, base: Path | None = None) -> None:
        self.session_id = session_id
        self.base = base if base is not None else checkpoints_dir()
        self.key = store_key(session_id)
        self.dir = self.base / self.key
        self.git_dir = self.dir / "git"
        self.refs = ref_space(session_id)

    # -- layout ------------------------------------------------------------------------

    def exists(self) -> bool:
        return (self.git_dir / "HEAD").is_file()

    def create(self) -> None:
        """Make the bare store (no git process: the few files a bare repository needs)."""
        if self.exists():
            return
        ensure_dir(self.dir)
        write_private(self.dir / "session", self.session_id.encode("utf-8", "surrogatepass"))
        for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "info"):
            ensure_dir(self.git_dir / sub)
        write_private(self.git_dir / "config", b"[core]\n\trepositoryformatversion = 0\n\tbare = true\n")
        write_private(self.git_dir / "info" / "attributes", ATTRIBUTES)
        write_private(self.git_dir / "info" / "exclude", b"")
        write_private(self.git_dir / "HEAD", b"ref: refs/heads/main\n")  # last: it makes the store exist

    def index(self, number: int) -> Path:
        return self.dir / f"index-{number}"

    def exclude(self, number: int) -> Path:
        return self.dir / f"exclude-{number}"

    def roots(self) -> list[Path]:
        """The roots ever checkpointed, by number."""
        try:
            data = (self.dir / "roots").read_bytes()
        except OSError:
            return []
        return [Path(os.fsdecode(raw)) for raw in data.split(b"\0")[:-1]]

    def number_roots(self, roots: list[Path]) -> list[int]:
        """The numbers of ``roots`` (new ones appended to the roots file)."""
        known = self.roots()
        added = [r for r in roots if r not in known]
        if added:
            known += added
            write_private(self.dir / "roots", b"".join(os.fsencode(r) + b"\0" for r in known))
        return [known.index(r) for r in roots]

    def borrow(self, objects: list[Path]) -> None:
        """Let the store read the objects of the user's repositories ``objects``."""
        path = self.git_dir / "objects" / "info" / "alternates"
        try:
            current = path.read_bytes().split(b"\n")
        except OSError:
            current = []
        wanted = [os.fsencode(o) for o in objects if b"\n" not in os.fsencode(o)]
        missing = [w for w in wanted if w not in current]
        if missing:
            lines = [c for c in current if c] + missing
            write_private(path, b"".join(line + b"\n" for line in lines))

    def write_if_changed(self, path: Path, data: bytes) -> None:
        try:
            if path.read_bytes() == data:
                return
        except OSError:
            pass
        write_private(path, data)

    # -- objects and refs, written without a git process -------------------------------
    #
    # A checkpoint's top tree, its commit and its refs are a few hundred bytes: writing them
    # here (a loose object: zlib of "<kind> <size>\0<body>", named by its SHA-1; a loose ref:
    # the object's name in a file) saves three git processes per checkpoint. The store is a
    # SHA-1 repository of its own making, never packed.

    def write_object(self, kind: str, body: bytes) -> str:
        """Store a ``kind`` object (``tree``, ``commit``) of ``body``; its name."""
        data = kind.encode() + b" " + str(len(body)).encode() + b"\0" + body
        oid = hashlib.sha1(data).hexdigest()
        path = self.git_dir / "objects" / oid[:2] / oid[2:]
        if not path.exists():
            ensure_dir(path.parent)
            tmp = path.with_name(f"tmp_obj_{os.getpid()}_{oid[2:]}")
            with open(tmp, "wb") as f:
                f.write(zlib.compress(data, 1))
            os.chmod(tmp, 0o400)  # (as git keeps an object: written once; the user's alone)
            os.replace(tmp, path)
        return oid

    def commit_tree(self, oid: str) -> str | None:
        """The tree of commit ``oid`` when it is one of ours (a loose object), else None (ask
        git). No git process: a checkpoint compares trees without one."""
        if not _OID.fullmatch(oid):
            return None
        try:
            data = zlib.decompress((self.git_dir / "objects" / oid[:2] / oid[2:]).read_bytes())
        except (OSError, zlib.error):
            return None
        header, _, body = data.partition(b"\0")
        first = body.split(b"\n", 1)[0]
        if not header.startswith(b"commit ") or not first.startswith(b"tree "):
            return None
        tree = first[5:].decode("ascii", "replace")
        return tree if _OID.fullmatch(tree) else None

    def tree(self, entries: list[tuple[bytes, str]]) -> str:
        """A tree of folders (``(name, tree oid)``, names without ``/``)."""
        if any(oid == EMPTY_TREE for _, oid in entries):
            self.write_object("tree", b"")  # git knows it without it, but not every command
        body = b"".join(b"40000 " + name + b"\0" + bytes.fromhex(oid) for name, oid in sorted(entries, key=lambda e: e[0] + b"/"))
        return self.write_object("tree", body)

    def commit(self, tree: str, parent: str | None, message: str, when: float | None = None) -> str:
        """A commit of ``tree`` (after ``parent``), by acpcli, now (or ``when``)."""
        stamp = f"{int(time.time() if when is None else when)} +0000".encode()
        lines = [b"tree " + tree.encode()]
        if parent:
            lines.append(b"parent " + parent.encode())
        lines += [b"author acpcli <acpcli@localhost> " + stamp, b"committer acpcli <acpcli@localhost> " + stamp]
        body = b"\n".join(lines) + b"\n\n" + message.replace("\0", "").encode("utf-8", "replace") + b"\n"
        return self.write_object("commit", body)

    def refs_now(self) -> dict[str, str]:
        """Every ref of the session, by its name under :attr:`refs` (packed-refs, then the
        loose refs, which win)."""
        found: dict[str, str] = {}
        prefix = self.refs + "/"
        with contextlib.suppress(OSError):
            for line in (self.git_dir / "packed-refs").read_text("ascii", "replace").splitlines():
                oid, _, ref = line.partition(" ")
                if ref.startswith(prefix) and _OID.fullmatch(oid):
                    found[ref[len(prefix) :]] = oid
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.git_dir / self.refs):
                if entry.name.endswith(".lock"):
                    continue  # a ref being written (or left by a crash)
                with contextlib.suppress(OSError):
                    oid = Path(entry.path).read_text("ascii", "replace").strip()
                    if _OID.fullmatch(oid):
                        found[entry.name] = oid
        return found

    def set_refs(self, updates: dict[str, str | None]) -> None:
        """Set (or, with None, delete) refs of the session, in the order given, each by a
        rename (the caller holds the store's lock)."""
        folder = ensure_dir(self.git_dir / self.refs)
        for name, oid in updates.items():
            path = folder / name
            if oid is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                continue
            tmp = folder / f"{name}.lock"
            fd = create_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)  # 0600, whatever the umask
            try:
                os.write(fd, (oid + "\n").encode("ascii"))
            finally:
                os.close(fd)
            os.replace(tmp, path)

    # -- giving up ---------------------------------------------------------------------

    def off_reason(self, max_files: int, time_limit: float) -> str | None:
        """Why checkpoints gave up on this session, unless the bounds grew since."""
        try:
            data = json.loads((self.dir / "off").read_text(encoding="utf-8"))
            if max_files > int(data["max_files"]) or time_limit > float(data["time_limit"]):
                return None
            return str(data["reason"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def give_up(self, reason: str, max_files: int, time_limit: float) -> None:
        with contextlib.suppress(OSError):
            ensure_dir(self.dir)
            data = {"reason": reason, "max_files": max_files, "time_limit": time_limit}
            write_private(self.dir / "off", json.dumps(data).encode())

    # -- the journal of a restore ------------------------------------------------------

    @property
    def journal(self) -> Path:
        return self.dir / "journal"

    def clean_journal(self) -> None:
        """Remove what an interrupted restore left: its temporary files (each named in the
        journal, absolute, and only a file or link that is still there), then the journal."""
        try:
            data = self.journal.read_bytes()
        except OSError:
            return
        for raw in data.split(b"\0"):
            if raw:
                with contextlib.suppress(OSError):
                    os.unlink(raw)
        with contextlib.suppress(OSError):
            os.unlink(self.journal)

    def write_journal(self, temps: list[bytes]) -> None:
        data = b"".join(t + b"\0" for t in temps)
        fd = create_private(self.journal, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)

    # -- the lock ----------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, wait: float) -> Iterator[SessionLock]:
        """Hold the store's lock (waiting up to ``wait`` seconds for another acpcli to let it
        go, else :class:`CheckpointsBusy`). The lock is not the session's turn lock: a turn's
        holder takes this one too."""
        lock = SessionLock(self.session_id, directory=self.base)
        deadline = time.monotonic() + wait
        while not lock.try_acquire():
            if time.monotonic() >= deadline:
                raise CheckpointsBusy(
                    f"the checkpoints of session {self.session_id} are in use by another acpcli"
                    + (f" (pid {lock.holder()})" if lock.holder() else "")
                )
            time.sleep(0.02)
        try:
            yield lock
        finally:
            lock.release()

    def delete(self) -> bool:
        """Remove the whole store (while holding its lock: :meth:`SessionLock.discard` then
        removes the lock file); whether there was one."""
        existed = self.dir.exists()
        shutil.rmtree(self.dir, ignore_errors=True)
        return existed
