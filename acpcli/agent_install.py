"""Binary agents of the ACP registry installed under ``ACPCLI_HOME/agents/ID/VERSION/``.

An install downloads the platform's archive (``.tar.gz``, ``.tgz``, ``.tar.bz2``, ``.tar.xz``,
``.zip``, or a bare executable) into a ``.partial-*`` folder beside the versions, records its
sha256, extracts it there refusing absolute paths, ``..``, links that point outside and
device files, makes ``cmd`` executable, and only then moves the version into place and
points ``current.json`` at it. The previous version stays until the new one is in place; an
interrupted install leaves only a ``.partial-*`` folder, removed by the next install.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from acpcli.errors import AgentStartError, UnsafeArchive

_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
_TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar")


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
    from acpcli.registry import _ID

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
    except (OSError, ValueError, KeyError, TypeError):
        return None


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
    os.symlink(target, path)


def _write(root: Path, path: Path, name: str, archive: str, data: Any, mode: int) -> None:
    _prepare(root, path, name, archive)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(data, out)
    os.chmod(path, (mode & 0o755) | stat.S_IRUSR | stat.S_IWUSR)


def extract(archive_file: Path, dest: Path, archive: str) -> None:
    """Extract ``archive_file`` (named ``archive``: its URL) into the empty folder ``dest``.
    Links are made last, once every file is in place, each checked where it points."""
    root = Path(os.path.realpath(dest))
    lower = archive.lower().split("?")[0]
    links: list[tuple[Path, str, str]] = []
    if lower.endswith(_TAR_SUFFIXES):
        try:
            with tarfile.open(archive_file) as tar:
                for member in tar:
                    path = _member_path(root, member.name, archive)
                    if member.isdir():
                        _prepare(root, path / "x", member.name, archive)
                    elif member.isfile():
                        data = tar.extractfile(member)
                        assert data is not None
                        _write(root, path, member.name, archive, data, member.mode)
                    elif member.issym():
                        links.append((path, member.linkname, member.name))
                    elif member.islnk():
                        source = _member_path(root, member.linkname, archive)
                        links.append((path, os.path.relpath(source, path.parent), member.name))
                    else:
                        raise UnsafeArchive(f"{archive}: refusing {member.name!r}, a device or special file")
        except (tarfile.TarError, EOFError, OSError) as exc:
            if isinstance(exc, UnsafeArchive):
                raise
            raise AgentStartError(f"{archive}: not a readable tar archive: {_first_line(exc)}") from None
    elif lower.endswith(".zip"):
        try:
            with zipfile.ZipFile(archive_file) as zf:
                for info in zf.infolist():
                    path = _member_path(root, info.filename, archive)
                    mode = info.external_attr >> 16
                    if info.is_dir():
                        _prepare(root, path / "x", info.filename, archive)
                    elif stat.S_ISLNK(mode):
                        links.append((path, zf.read(info).decode("utf-8", "replace"), info.filename))
                    elif mode and not stat.S_ISREG(mode):
                        raise UnsafeArchive(f"{archive}: refusing {info.filename!r}, a device or special file")
                    else:
                        with zf.open(info) as data:
                            _write(root, path, info.filename, archive, data, mode or 0o644)
        except (zipfile.BadZipFile, OSError) as exc:
            if isinstance(exc, UnsafeArchive):
                raise
            raise AgentStartError(f"{archive}: not a readable zip archive: {_first_line(exc)}") from None
    else:  # a bare executable
        name = PurePosixPath(lower).name or "agent"
        with archive_file.open("rb") as data:
            _write(root, _member_path(root, name, archive), name, archive, data, 0o755)
    for path, target, name in links:
        _link(root, path, target, name, archive)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0].rstrip(":") if text else type(exc).__name__


def _download(url: str, into: Path, progress: Callable[[int, int | None], None] | None) -> str:
    """Fetch ``url`` into the file ``into``; its sha256. Failure: AgentStartError."""
    import httpx

    from acpcli import registry

    digest = hashlib.sha256()
    try:
        with httpx.Client(timeout=registry.FETCH_TIMEOUT, follow_redirects=True, max_redirects=5) as client:
            with client.stream("GET", url, headers={"User-Agent": "acpcli"}) as response:
                if response.status_code != 200:
                    raise AgentStartError(f"cannot download {url}: HTTP {response.status_code} {response.reason_phrase}".rstrip())
                total = int(response.headers.get("content-length") or 0) or None
                done = 0
                with into.open("wb") as out:
                    for chunk in response.iter_bytes():
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, total)
    except httpx.HTTPError as exc:
        raise AgentStartError(f"cannot download {url}: {registry._describe(exc)}") from None
    return digest.hexdigest()


def install(entry: Any, *, progress: Callable[[int, int | None], None] | None = None) -> Installed:
    """Install the binary of registry agent ``entry`` for this platform (again, if it is)."""
    from acpcli import registry
    from acpcli.paths import ensure_dir

    target = entry.binary.get(registry.platform_key())
    if target is None:
        plats = ", ".join(sorted(entry.binary)) or "none"
        raise AgentStartError(f"registry agent {entry.id!r} has no binary for {registry.platform_key()} (binaries for: {plats})")
    if not _VERSION.fullmatch(entry.version) or entry.version.strip(".") == "":
        raise AgentStartError(f"registry agent {entry.id!r}: refusing the version {entry.version[:80]!r} as a folder name")
    base = ensure_dir(agents_dir() / entry.id)
    for stale in base.glob(".partial-*"):
        shutil.rmtree(stale, ignore_errors=True)  # an earlier install that was interrupted
    staging = Path(tempfile.mkdtemp(prefix=".partial-", dir=base))
    try:
        archive_file = staging / "download"
        sha256 = _download(target.archive, archive_file, progress)
        files = staging / "files"
        files.mkdir()
        extract(archive_file, files, target.archive)
        cmd = _member_path(files, target.cmd, target.archive)
        if not cmd.is_file() or not _inside(Path(os.path.realpath(files)), cmd):
            raise AgentStartError(f"{target.archive}: has no {target.cmd!r} to run")
        cmd.chmod(cmd.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        final = base / entry.version
        if final.exists():
            old = base / f".partial-old-{os.getpid()}"
            os.replace(final, old)
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.replace(files, final)
        except OSError:
            if not final.is_dir():
                raise
            # another acpcli installed this very version meanwhile: theirs is as good
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
        os.replace(tmp, base / "current.json")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for other in base.iterdir():  # the new version is in place: older ones go
        if other.is_dir() and other.name != entry.version and not other.name.startswith("."):
            shutil.rmtree(other, ignore_errors=True)
    done = installed(entry.id)
    if done is None:
        raise AgentStartError(f"registry agent {entry.id!r}: the installed {target.cmd!r} cannot be run")
    return done


def remove(agent_id: str) -> bool:
    """Remove every installed version of ``agent_id``; whether there was one."""
    if not valid_id(agent_id):
        return False
    folder = agents_dir() / agent_id
    if not folder.exists():
        return False
    shutil.rmtree(folder)
    return True
