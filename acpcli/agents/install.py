"""Binary agents of the ACP registry installed under ``ACPCLI_HOME/agents/ID/VERSION/``.

An install downloads the platform's archive (``.tar.gz``, ``.tgz``, ``.tar.bz2``, ``.tar.xz``,
``.zip``, or a bare executable) into a ``.partial-*`` folder beside the versions, records its
sha256, extracts it there refusing absolute paths, ``..``, links that point outside and
device files, makes ``cmd`` executable, and only then moves the version into place and
points ``current.json`` at it. The previous version stays until the new one is in place; an
install killed on the way leaves only a ``.partial-*`` folder, removed by the next install; a
failed one leaves nothing (no empty folder either), nor does one stopped by Ctrl-C, which says
so in one line (:class:`~acpcli.errors.Interrupted`, exit 130) naming what is installed now.

Bounds: the download stops at :data:`MAX_ARCHIVE_SIZE` bytes and at the overall deadline
(:data:`acpcli.agents.registry.ARCHIVE_DEADLINE`); extraction stops at :data:`MAX_EXTRACTED_SIZE`
bytes, at :data:`MAX_MEMBERS` files, and when the archive expands more than
:data:`MAX_RATIO` times its own size (past :data:`RATIO_FLOOR`): a zip or tar bomb is an
:class:`~acpcli.errors.UnsafeArchive`. A disk that fills up is an
:class:`~acpcli.errors.AgentStartError` that says so.

One install or removal of an agent at a time: each holds an advisory lock
(``flock``, released by the system when its process dies) on ``agents/.ID.lock``; a second
one waits, saying for whom, and then uses the version the first installed.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import re
import shutil
import stat
import tarfile
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from acpcli.errors import AgentStartError, Interrupted, UnsafeArchive

#: A version as a folder name: it starts like a version number (the registry's schema
#: says ``MAJOR.MINOR.PATCH…``), so it can never be ``current.json``, ``.``/``..`` or a path.
_VERSION = re.compile(r"[vV]?[0-9][A-Za-z0-9._+-]{0,63}")
_TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar")

#: The largest archive downloaded (bytes), counted as it arrives.
MAX_ARCHIVE_SIZE = 1 << 30
#: The most an archive may unpack to (bytes, all files together).
MAX_EXTRACTED_SIZE = 4 << 30
#: How many times its own size an archive may unpack to (past :data:`RATIO_FLOOR`).
MAX_RATIO = 100
#: Unpacking up to this many bytes is never a ratio problem (a small archive of text).
RATIO_FLOOR = 64 << 20
#: The most files, folders and links one archive may hold.
MAX_MEMBERS = 100_000


@dataclass
class Installed:
    """An installed binary agent: where, which version, how to start it."""

    id: str
    version: str
    folder: Path
    cmd: Path
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    archive: str = ""
    sha256: str = ""

    def argv(self) -> list[str]:
        return [str(self.cmd), *self.args]


def valid_id(agent_id: str) -> bool:
    """Whether ``agent_id`` is a registry id (and so a safe folder name)."""
    from acpcli.agents.registry import _ID

    return bool(_ID.fullmatch(agent_id))


def agents_dir() -> Path:
    from acpcli.paths import home_dir

    return home_dir() / "agents"


def installed(agent_id: str) -> Installed | None:
    """The installed copy of ``agent_id`` whose command is still there, else None."""
    if not valid_id(agent_id):
        return None
    try:
        data = json.loads((agents_dir() / agent_id / "current.json").read_text(encoding="utf-8"))
        if not valid_version(str(data["version"])):
            return None
        folder = agents_dir() / agent_id / str(data["version"])
        cmd = (folder / str(data["cmd"])).resolve()
        if not cmd.is_relative_to(folder.resolve()) or not os.access(cmd, os.X_OK):
            return None
        return Installed(
            agent_id,
            str(data["version"]),
            folder,
            cmd,
            [str(a) for a in data.get("args", [])],
            {str(k): str(v) for k, v in dict(data.get("env", {})).items()},
            str(data.get("archive", "")),
            str(data.get("sha256", "")),
        )
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None


def valid_version(version: str) -> bool:
    """Whether ``version`` can name a version's folder (see :data:`_VERSION`)."""
    return bool(_VERSION.fullmatch(version)) and not version.endswith((".json", ".lock", ".tmp"))


class _CannotWrite(AgentStartError):
    """Writing the agent's files failed (a full disk, a quota): not the archive's fault."""

    def __init__(self, error: OSError, archive: str) -> None:
        super().__init__(f"{archive}: cannot write its files: {error.strerror or error}")
        self.error = error


@contextmanager
def _writing(archive: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise _CannotWrite(exc, archive) from None


class _Budget:
    """What one archive may still unpack: bytes (:data:`MAX_EXTRACTED_SIZE`, and
    :data:`MAX_RATIO` times the archive's size) and members (:data:`MAX_MEMBERS`)."""

    def __init__(self, archive_size: int, archive: str) -> None:
        self.archive = archive
        self.by_ratio = max(MAX_RATIO * archive_size, RATIO_FLOOR)
        self.size = 0
        self.members = 0

    def member(self, name: str) -> None:
        self.members += 1
        if self.members > MAX_MEMBERS:
            raise UnsafeArchive(f"{self.archive}: refusing it: more than {MAX_MEMBERS} files")

    def take(self, n: int, name: str) -> None:
        self.size += n
        if self.size > MAX_EXTRACTED_SIZE:
            raise UnsafeArchive(
                f"{self.archive}: refusing it: it unpacks to more than {MAX_EXTRACTED_SIZE} bytes (at {name!r})"
            )
        if self.size > self.by_ratio:
            raise UnsafeArchive(
                f"{self.archive}: refusing it: it unpacks to more than {MAX_RATIO} times its own size "
                f"(at {name!r}), a decompression bomb"
            )


def _inside(root: Path, path: Path) -> bool:
    return os.path.realpath(path) == str(root) or os.path.realpath(path).startswith(str(root) + os.sep)


def _member_path(root: Path, name: str, archive: str) -> Path:
    """Where member ``name`` goes under ``root``; an absolute or ``..`` name is refused."""
    pure = PurePosixPath(name.replace("\\", "/"))
    if pure.is_absolute() or name.startswith(("/", "\\")) or (pure.parts and ":" in pure.parts[0]):
        raise UnsafeArchive(f"{archive}: refusing the absolute path {name!r}")
    if ".." in pure.parts:
        raise UnsafeArchive(f"{archive}: refusing the path {name!r}, which climbs out with '..'")
    parts = [p for p in pure.parts if p not in ("", ".")]
    return root.joinpath(*parts) if parts else root


def _prepare(root: Path, path: Path, name: str, archive: str) -> None:
    """Make ``path``'s folder; refuse when it is, through a link, outside ``root``."""
    with _writing(archive):
        path.parent.mkdir(parents=True, exist_ok=True)
    if not _inside(root, path.parent):
        raise UnsafeArchive(f"{archive}: refusing {name!r}, which goes through a link out of the agent's folder")
    if path.is_symlink():
        raise UnsafeArchive(f"{archive}: refusing {name!r}, which would write through a link")


def _link(root: Path, path: Path, target: str, name: str, archive: str) -> None:
    """A symbolic link ``path`` → ``target``, refused when it points outside ``root``."""
    if os.path.isabs(target):
        raise UnsafeArchive(f"{archive}: refusing the link {name!r} to the absolute path {target!r}")
    _prepare(root, path, name, archive)
    if os.path.lexists(path):
        raise UnsafeArchive(f"{archive}: refusing the link {name!r}, which would replace what the archive already wrote")
    resolved = os.path.realpath(os.path.join(os.path.dirname(path), target))
    if not (resolved == str(root) or resolved.startswith(str(root) + os.sep)):
        raise UnsafeArchive(f"{archive}: refusing the link {name!r} to {target!r}, outside the agent's folder")
    with _writing(archive):
        os.symlink(target, path)


def _write(root: Path, path: Path, name: str, archive: str, data: Any, mode: int, budget: _Budget) -> None:
    """Copy the member ``data`` to ``path``, counting it against ``budget`` as it goes (a
    member's declared size may lie: what is written is what counts)."""
    _prepare(root, path, name, archive)
    with _writing(archive):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        out = os.fdopen(fd, "wb")
    with out:
        while chunk := data.read(1 << 20):
            budget.take(len(chunk), name)
            with _writing(archive):
                out.write(chunk)
        with _writing(archive):
            out.flush()
    with _writing(archive):
        os.chmod(path, (mode & 0o755) | stat.S_IRUSR | stat.S_IWUSR)


def _zip_entries(archive_file: Path) -> int | None:
    """How many entries a zip's end record says it holds (zip64 too), read before
    :mod:`zipfile` loads its whole central directory into memory; None when not found."""
    with archive_file.open("rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - (65535 + 22)))
        tail = f.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) < at + 22:
            return None
        total = int.from_bytes(tail[at + 10 : at + 12], "little")
        if total != 0xFFFF or at < 20 or tail[at - 20 : at - 16] != b"PK\x06\x07":
            return total
        f.seek(int.from_bytes(tail[at - 12 : at - 4], "little"))
        record = f.read(56)
        if record[:4] != b"PK\x06\x06" or len(record) < 40:
            return None
        return int.from_bytes(record[32:40], "little")


#: What reading a broken or unsupported archive raises, besides the formats' own errors.
_UNREADABLE = (EOFError, OSError, zlib.error, lzma.LZMAError, NotImplementedError, RuntimeError, ValueError)


def extract(archive_file: Path, dest: Path, archive: str) -> None:
    """Extract ``archive_file`` (named ``archive``: its URL) into the empty folder ``dest``.
    Links are made last, once every file is in place, each checked where it points. Within
    the bounds of :class:`_Budget`, else :class:`UnsafeArchive`; a write that fails (a full
    disk) is an :class:`AgentStartError` saying so."""
    root = Path(os.path.realpath(dest))
    lower = archive.lower().split("?")[0]
    links: list[tuple[Path, str, str]] = []
    budget = _Budget(archive_file.stat().st_size, archive)
    if lower.endswith(_TAR_SUFFIXES):
        try:
            with tarfile.open(archive_file) as tar:
                for member in tar:
                    budget.member(member.name)
                    path = _member_path(root, member.name, archive)
                    if member.isdir():
                        _prepare(root, path / "x", member.name, archive)
                    elif member.isfile():
                        if budget.size + member.size > min(MAX_EXTRACTED_SIZE, budget.by_ratio):
                            budget.take(member.size, member.name)  # refused before a byte is written
                        data = tar.extractfile(member)
                        assert data is not None
                        _write(root, path, member.name, archive, data, member.mode, budget)
                    elif member.issym():
                        links.append((path, member.linkname, member.name))
                    elif member.islnk():
                        source = _member_path(root, member.linkname, archive)
                        links.append((path, os.path.relpath(source, path.parent), member.name))
                    else:
                        raise UnsafeArchive(f"{archive}: refusing {member.name!r}, a device or special file")
        except (tarfile.TarError, *_UNREADABLE) as exc:
            raise AgentStartError(f"{archive}: not a readable tar archive: {_first_line(exc)}") from None
    elif lower.endswith(".zip"):
        try:
            entries = _zip_entries(archive_file)
            if entries is not None and entries > MAX_MEMBERS:
                raise UnsafeArchive(f"{archive}: refusing it: more than {MAX_MEMBERS} files")
            with zipfile.ZipFile(archive_file) as zf:
                declared = 0
                for info in zf.infolist():
                    budget.member(info.filename)
                    declared += info.file_size
                if declared > min(MAX_EXTRACTED_SIZE, budget.by_ratio):
                    budget.take(declared, "the whole archive")  # refused before a byte is written
                for info in zf.infolist():
                    path = _member_path(root, info.filename, archive)
                    mode = info.external_attr >> 16
                    if info.is_dir():
                        _prepare(root, path / "x", info.filename, archive)
                    elif stat.S_ISLNK(mode):
                        if info.file_size > 4096:
                            raise UnsafeArchive(f"{archive}: refusing the link {info.filename!r}: its target is too long")
                        with zf.open(info) as data:
                            target = data.read(4097).decode("utf-8", "replace")
                        links.append((path, target, info.filename))
                    elif stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # 0: permission bits only (Python's writestr)
                        raise UnsafeArchive(f"{archive}: refusing {info.filename!r}, a device or special file")
                    else:
                        with zf.open(info) as data:
                            _write(root, path, info.filename, archive, data, mode or 0o644, budget)
        except (zipfile.BadZipFile, *_UNREADABLE) as exc:
            raise AgentStartError(f"{archive}: not a readable zip archive: {_first_line(exc)}") from None
    else:  # a bare executable
        name = PurePosixPath(lower).name or "agent"
        with archive_file.open("rb") as data:
            _write(root, _member_path(root, name, archive), name, archive, data, 0o755, budget)
    for path, target, name in links:
        _link(root, path, target, name, archive)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0].rstrip(":") if text else type(exc).__name__


def _download(url: str, into: Path, progress: Callable[[int, int | None], None] | None) -> str:
    """Fetch ``url`` into the file ``into``; its sha256. At most :data:`MAX_ARCHIVE_SIZE`
    bytes, within the archive deadline. Failure: AgentStartError; a failed write: OSError."""
    from acpcli.agents import registry

    digest = hashlib.sha256()

    def fail(reason: str) -> AgentStartError:
        return AgentStartError(f"cannot download {url}: {reason}")

    with into.open("wb") as out:

        def write(chunk: bytes) -> None:
            out.write(chunk)
            digest.update(chunk)

        got = registry.download(
            url,
            write,
            limit=MAX_ARCHIVE_SIZE,
            seconds=registry.deadline(registry.ARCHIVE_DEADLINE),
            fail=fail,
            progress=progress,
        )
    if got.status != 200:
        raise fail(f"HTTP {got.status} {got.reason}".rstrip())
    return digest.hexdigest()


def _lock_path(agent_id: str) -> Path:
    return agents_dir() / f".{agent_id}.lock"


def _holder(path: Path, agent_id: str) -> str:
    """Who holds the lock ``path`` and what for, as its holder wrote it: ``another acpcli
    (pid 123) installing 'ID'``."""
    try:
        pid, _, doing = path.read_text(encoding="ascii").partition(" ")
    except (OSError, ValueError):
        pid, doing = "", ""
    doing = doing.strip() if doing.strip() in ("installing", "removing") else "installing or removing"
    return f"another acpcli{f' (pid {pid})' if pid.isdigit() else ''} {doing} {agent_id!r}"


@contextmanager
def _locked(agent_id: str, doing: str = "installing") -> Iterator[bool]:
    """Hold the advisory lock of ``agent_id`` (``agents/.ID.lock``, holding the pid and
    ``doing``); yields whether another acpcli held it first (it was waited for). The system releases it when the process dies;
    a holder that does not finish within the archive deadline and a minute is given up on
    with an :class:`AgentStartError`. The lock file is removed on release: a waiter that
    then holds a removed file's lock tries again with the file at the path."""
    import fcntl

    from acpcli import notices
    from acpcli.agents import registry
    from acpcli.paths import ensure_dir

    path = _lock_path(agent_id)
    patience = registry.deadline(registry.ARCHIVE_DEADLINE) + 60
    gives_up = time.monotonic() + patience
    waited = False
    races = 0
    while True:
        try:
            ensure_dir(path.parent)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        except FileNotFoundError as exc:
            races += 1
            if races < 100:
                continue  # another acpcli removed the empty folder as it was made: again
            raise AgentStartError(f"cannot lock {path}: {exc.strerror or exc}") from None
        except OSError as exc:
            raise AgentStartError(f"cannot lock {path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            if not waited:
                notices.warn("agent-install-wait", f"waiting for {_holder(path, agent_id)}")
                waited = True
            if time.monotonic() > gives_up:
                raise AgentStartError(
                    f"waited {patience:g}s for {_holder(path, agent_id)}; not waiting longer",
                    hint="when it is done (or gone), run the command again",
                ) from None
            time.sleep(0.1)
            continue
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except OSError:
            same = False
        if same:
            break
        os.close(fd)  # the holder removed the file as it let go: lock the current one
    try:
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()} {doing}".encode())
        except OSError:
            pass  # the pid only helps the message of whoever waits
        yield waited
    finally:
        try:
            path.unlink()
        except OSError:
            pass
        os.close(fd)


def _rmdir_empty(folder: Path) -> None:
    """Remove ``folder`` if it is empty (a failed install's agent folder, the agents folder)."""
    try:
        folder.rmdir()
    except OSError:
        pass


def installable(entry: Any) -> Any:
    """The binary of registry agent ``entry`` for this platform, when it can be installed
    here (its id and version are safe folder names); else :class:`AgentStartError`."""
    from acpcli.agents import registry

    target = entry.binary.get(registry.platform_key())
    if target is None:
        plats = ", ".join(sorted(entry.binary)) or "none"
        raise AgentStartError(f"registry agent {entry.id!r} has no binary for {registry.platform_key()} (binaries for: {plats})")
    if not valid_id(entry.id):
        raise AgentStartError(f"registry agent {entry.id[:80]!r}: refusing the id as a folder name")
    if not valid_version(entry.version):
        raise AgentStartError(f"registry agent {entry.id!r}: refusing the version {entry.version[:80]!r} as a folder name")
    return target


def install(entry: Any, *, progress: Callable[[int, int | None], None] | None = None) -> Installed:
    """Install the binary of registry agent ``entry`` for this platform (again, if it is).

    One at a time per agent (:func:`_locked`): when another acpcli was installing it, and
    installed this very version, that copy is used. A failure leaves what was there before
    and nothing else: no partial folder, no empty folder."""
    target = installable(entry)
    base = agents_dir() / entry.id
    before = installed(entry.id)
    done_at: list[float] = []  # when the new version was in place, if it was
    try:
        with _locked(entry.id) as waited:
            if waited and (have := installed(entry.id)) is not None and have.version == entry.version:
                return have  # the other acpcli installed it meanwhile
            try:
                _install_locked(entry, target, base, progress, done_at)
            finally:
                _rmdir_empty(base)  # under the lock: nobody is about to fill it
    except _CannotWrite as exc:
        raise _storage(entry.id, base, exc.error) from None
    except OSError as exc:
        raise _storage(entry.id, base, exc) from None
    except KeyboardInterrupt:
        raise _interrupted(entry, before, bool(done_at)) from None  # after the clean-up above: say what is left
    finally:
        _rmdir_empty(base.parent)  # holds the lock files while they are held: not before
    done = installed(entry.id)
    if done is None:
        raise AgentStartError(f"registry agent {entry.id!r}: the installed {target.cmd!r} cannot be run")
    return done


def _interrupted(entry: Any, before: Installed | None, done: bool) -> Interrupted:
    """Ctrl-C during an install, once its partial folder is gone: one line saying what is
    installed now (``done``: the new version, in place before Ctrl-C arrived; else the
    version from before, or nothing)."""
    now = installed(entry.id)
    what = f"{entry.id!r} {entry.version}"
    if done and now is not None and now.version == entry.version:
        return Interrupted(f"interrupted, but {what} was already installed")
    if now is None:
        return Interrupted(f"interrupted: {what} was not installed; nothing was left behind")
    again = " again" if now.version == entry.version else ""
    return Interrupted(f"interrupted: {what} was not installed{again}; {now.version} is still the one installed")


@contextmanager
def _whole() -> Iterator[None]:
    """Ctrl-C held back (then raised) while the new version replaces the old one, so an
    install is either in place with its ``current.json`` or not at all (in the main thread
    only: signals are handled there)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt


def _storage(agent_id: str, base: Path, exc: OSError) -> AgentStartError:
    """A write that failed during an install (a full disk, a quota, a read-only home)."""
    import errno

    full = exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
    return AgentStartError(
        f"cannot install registry agent {agent_id!r}: {exc.strerror or exc} (writing in {base}); nothing was installed",
        hint=f"free some space, then run `acpcli agents install {agent_id}` again" if full else None,
    )


def _install_locked(
    entry: Any, target: Any, base: Path, progress: Callable[[int, int | None], None] | None, done_at: list[float]
) -> None:
    from acpcli.paths import ensure_dir

    ensure_dir(base)
    for stale in base.glob(".partial-*"):
        shutil.rmtree(stale, ignore_errors=True)  # an earlier install that was interrupted
    staging = Path(tempfile.mkdtemp(prefix=".partial-", dir=base))
    try:
        archive_file = staging / "download"
        sha256 = _download(target.archive, archive_file, progress)
        files = staging / "files"
        files.mkdir()
        extract(archive_file, files, target.archive)
        archive_file.unlink()
        cmd = _member_path(files, target.cmd, target.archive)
        if not cmd.is_file() or not _inside(Path(os.path.realpath(files)), cmd):
            raise AgentStartError(f"{target.archive}: has no {target.cmd!r} to run")
        cmd.chmod(cmd.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        final = base / entry.version
        old = staging / "old"
        meta = {
            "id": entry.id,
            "version": entry.version,
            "cmd": target.cmd,
            "args": target.args,
            "env": target.env,
            "archive": target.archive,
            "sha256": sha256,
        }
        tmp = staging / "current.json"
        tmp.write_text(json.dumps(meta, indent=2), encoding="utf-8")
        with _whole():
            if os.path.lexists(final):  # the same version again: the old copy goes when the new is in
                os.replace(final, old)
            try:
                os.replace(files, final)
            except OSError:
                if os.path.lexists(old):
                    os.replace(old, final)
                raise
            os.replace(tmp, base / "current.json")
            done_at.append(time.monotonic())
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for other in base.iterdir():  # the new version is in place: older ones go
        if other.name != entry.version and not other.name.startswith(".") and other.name != "current.json":
            if other.is_dir() and not other.is_symlink():
                shutil.rmtree(other, ignore_errors=True)
            else:
                other.unlink(missing_ok=True)


def remove(agent_id: str) -> bool:
    """Remove every installed version of ``agent_id``; whether there was one. Waits for an
    install of it that is under way (:func:`_locked`)."""
    if not valid_id(agent_id):
        return False
    folder = agents_dir() / agent_id
    if not folder.exists():
        return False
    try:
        with _locked(agent_id, "removing"):
            if not folder.exists():
                return False
            shutil.rmtree(folder)
    finally:
        _rmdir_empty(folder.parent)
    return True
