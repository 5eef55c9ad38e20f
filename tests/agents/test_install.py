"""acpcli.agents.install: safe extraction of agent archives, install and remove."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acpcli.agents import install, registry
from acpcli.agents.install import extract
from acpcli.errors import AgentStartError, UnsafeArchive
from tests.helpers.registry_server import RegistryServer, endless, trickle

AGENT_SCRIPT = f"#!/bin/sh\nexec {sys.executable} -m acpcli.demo_agent --delay 0\n".encode()


def tar_bytes(*members: tuple[tarfile.TarInfo, bytes | None], mode: str = "w:gz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:  # type: ignore[call-overload]
        for info, data in members:
            if data is not None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return buf.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "", mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = mode
    return info


def good_tar() -> bytes:
    return tar_bytes(
        (member("dist", tarfile.DIRTYPE, mode=0o755), None),
        (member("dist/agent", mode=0o644), AGENT_SCRIPT),  # not executable: install makes it so
        (member("dist/README"), b"hi"),
        (member("dist/latest", tarfile.SYMTYPE, linkname="agent"), None),
    )


def _extract(tmp_path: Path, data: bytes, name: str) -> Path:
    archive = tmp_path / "archive"
    archive.write_bytes(data)
    dest = tmp_path / "dest"
    dest.mkdir()
    extract(archive, dest, f"http://x/{name}")
    return dest


def test_a_good_tar_is_extracted(tmp_path: Path) -> None:
    dest = _extract(tmp_path, good_tar(), "a.tar.gz")
    assert (dest / "dist" / "agent").read_bytes() == AGENT_SCRIPT
    assert os.readlink(dest / "dist" / "latest") == "agent"


@pytest.mark.parametrize(
    ("members", "problem"),
    [
        ([(member("../evil"), b"x")], "climbs out"),
        ([(member("a/../../evil"), b"x")], "climbs out"),
        ([(member("/tmp/evil"), b"x")], "absolute path"),
        ([(member("link", tarfile.SYMTYPE, linkname="/etc/passwd"), None)], "absolute path"),
        ([(member("link", tarfile.SYMTYPE, linkname="../../outside"), None)], "outside the agent's folder"),
        ([(member("d/link", tarfile.SYMTYPE, linkname="../.."), None)], "outside the agent's folder"),
        ([(member("hard", tarfile.LNKTYPE, linkname="../outside"), None)], "climbs out"),
        ([(member("dev", tarfile.CHRTYPE), None)], "device or special"),
        ([(member("fifo", tarfile.FIFOTYPE), None)], "device or special"),
        # a link inside first, then a file written through it: refused
        ([(member("up", tarfile.SYMTYPE, linkname="."), None), (member("up/x"), b"x")], "link"),
    ],
)
def test_unsafe_tars_are_refused_and_nothing_is_written_outside(
    tmp_path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], problem: str
) -> None:
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(UnsafeArchive, match=problem):
        _extract(tmp_path, tar_bytes(*members), "a.tgz")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "archive", "dest"])
    assert not (tmp_path / "evil").exists() and not (tmp_path / "outside").exists()


def zip_bytes(*entries: tuple[str, bytes, int]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            zf.writestr(info, data)
    return buf.getvalue()


def test_a_zip_with_permission_bits_only_is_extracted(tmp_path: Path) -> None:
    # Python's writestr() of a name records 0o600 without the file type bits: a regular file
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("bin/agent", AGENT_SCRIPT)
    dest = _extract(tmp_path, buf.getvalue(), "a.zip")
    assert (dest / "bin" / "agent").read_bytes() == AGENT_SCRIPT


def test_zips(tmp_path: Path) -> None:
    dest = _extract(tmp_path, zip_bytes(("bin/agent", AGENT_SCRIPT, stat.S_IFREG | 0o755)), "a.zip")
    assert os.access(dest / "bin" / "agent", os.X_OK)
    for bad, problem in (
        (("../evil", b"x", stat.S_IFREG | 0o644), "climbs out"),
        (("/evil", b"x", stat.S_IFREG | 0o644), "absolute"),
        (("ln", b"../../x", stat.S_IFLNK | 0o777), "outside"),
    ):
        (tmp_path / "dest").rename(tmp_path / f"old-{os.urandom(4).hex()}")
        with pytest.raises(UnsafeArchive, match=problem):
            _extract(tmp_path, zip_bytes(bad), "a.zip")


def test_a_broken_archive_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(AgentStartError, match="not a readable tar archive"):
        _extract(tmp_path, b"not a tar", "a.tar.gz")


@pytest.fixture
def server() -> Iterator[RegistryServer]:
    srv = RegistryServer()
    yield srv
    srv.stop()


def entry(server: RegistryServer, version: str = "1.0.0", archive: str = "/agent-1.tar.gz") -> registry.RegistryAgent:
    return registry.parse_entry(
        {
            "id": "bin-agent",
            "name": "Binary agent",
            "version": version,
            "distribution": {
                "binary": {registry.platform_key(): {"archive": server.base() + archive, "cmd": "./dist/agent", "args": ["acp"]}}
            },
        }
    )


def test_install_then_reinstall_a_newer_version_then_remove(server: RegistryServer, acpcli_home: Path) -> None:
    server.files["/agent-1.tar.gz"] = good_tar()
    done = install.install(entry(server))
    assert done.cmd == (acpcli_home / "agents" / "bin-agent" / "1.0.0" / "dist" / "agent").resolve()
    assert os.access(done.cmd, os.X_OK) and done.argv()[1:] == ["acp"]
    assert len(done.sha256) == 64
    assert install.installed("bin-agent") == done
    meta = json.loads((acpcli_home / "agents" / "bin-agent" / "current.json").read_text())
    assert meta["version"] == "1.0.0" and meta["sha256"] == done.sha256
    server.files["/agent-2.tar.gz"] = good_tar()
    again = install.install(entry(server, "2.0.0", "/agent-2.tar.gz"))
    assert again.version == "2.0.0"
    assert sorted(p.name for p in (acpcli_home / "agents" / "bin-agent").iterdir()) == ["2.0.0", "current.json"]
    assert install.remove("bin-agent") and install.installed("bin-agent") is None


def test_a_failed_install_leaves_the_old_version_and_nothing_half_done(server: RegistryServer, acpcli_home: Path) -> None:
    server.files["/agent-1.tar.gz"] = good_tar()
    install.install(entry(server))
    server.files["/evil.tar.gz"] = tar_bytes((member("../../evil"), b"x"))
    with pytest.raises(UnsafeArchive):
        install.install(entry(server, "2.0.0", "/evil.tar.gz"))
    with pytest.raises(AgentStartError, match="HTTP 404"):
        install.install(entry(server, "3.0.0", "/missing.tar.gz"))
    assert sorted(p.name for p in (acpcli_home / "agents" / "bin-agent").iterdir()) == ["1.0.0", "current.json"]
    assert install.installed("bin-agent").version == "1.0.0"  # type: ignore[union-attr]


def test_ctrl_c_while_the_new_version_goes_in_waits_for_it(
    server: RegistryServer, acpcli_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGINT between moving the old copy out and the new one in: held back until the new
    version and its current.json are in place, then one line says it was installed."""
    import signal

    from acpcli.errors import Interrupted

    server.files["/agent-1.tar.gz"] = good_tar()
    install.install(entry(server))
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        if Path(dst).name == "old":  # the old copy moves out: Ctrl-C right now
            os.kill(os.getpid(), signal.SIGINT)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    try:
        install.install(entry(server))  # the same version again: the old copy moves out first
    except KeyboardInterrupt:  # (caught here: it would stop the whole test run)
        pytest.fail("Ctrl-C went through as it was, mid-install")
    except Interrupted as err:
        assert str(err) == "interrupted, but 'bin-agent' 1.0.0 was already installed"
    else:
        pytest.fail("the Ctrl-C held back was never raised")
    assert install.installed("bin-agent").version == "1.0.0"  # type: ignore[union-attr]
    assert sorted(p.name for p in (acpcli_home / "agents" / "bin-agent").iterdir()) == ["1.0.0", "current.json"]


def test_a_version_that_is_not_a_folder_name_is_refused(server: RegistryServer) -> None:
    with pytest.raises(AgentStartError, match="as a folder name"):
        install.install(entry(server, "../1"))


# --- bounded downloads and extraction --------------------------------------------------


def test_an_archive_that_never_ends_is_cut_while_it_arrives(
    server: RegistryServer, acpcli_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(install, "MAX_ARCHIVE_SIZE", 1 << 20)
    server.responders["/agent-1.tar.gz"] = endless()
    with pytest.raises(AgentStartError, match=r"cannot download .*: it is larger than the 1048576 bytes accepted"):
        install.install(entry(server))
    assert server.sent["/agent-1.tar.gz"] < 64 << 20  # not the 256 MiB the server had
    assert not (acpcli_home / "agents").exists()  # nothing left, not even an empty folder


def test_a_trickling_archive_meets_the_overall_deadline(
    server: RegistryServer, acpcli_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(registry.DEADLINE_ENV, "1")
    server.responders["/agent-1.tar.gz"] = trickle(0.2)
    with pytest.raises(AgentStartError, match=r"took longer than 1s in all"):
        install.install(entry(server))
    assert not (acpcli_home / "agents").exists()


def zeros_tar(size: int) -> bytes:
    """A gzipped tar of ``size`` zero bytes (a few KB per MB) and the agent's script."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = member("dist/zeros")
        info.size = size
        tar.addfile(info, _Zeros(size))
        script = member("dist/agent", mode=0o755)
        script.size = len(AGENT_SCRIPT)
        tar.addfile(script, io.BytesIO(AGENT_SCRIPT))
    return buf.getvalue()


def zeros_zip(size: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("dist/zeros", "w") as out:
            for _ in range(size // (1 << 20)):
                out.write(bytes(1 << 20))
        zf.writestr("dist/agent", AGENT_SCRIPT)
    return buf.getvalue()


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def _written(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize(("name", "build"), [("a.tar.gz", zeros_tar), ("a.zip", zeros_zip)])
def test_a_decompression_bomb_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, build: Any
) -> None:
    monkeypatch.setattr(install, "RATIO_FLOOR", 1 << 20)
    data = build(64 << 20)  # 64 MiB of zeros in some 64 KB: a ratio of about 1000
    assert len(data) < 1 << 20
    with pytest.raises(UnsafeArchive, match=r"more than 100 times its own size .*decompression bomb") as info:
        _extract(tmp_path, data, name)
    assert "\n" not in str(info.value)
    assert _written(tmp_path / "dest") <= 100 * len(data) + (1 << 20)


def test_the_total_size_is_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "MAX_EXTRACTED_SIZE", 1 << 20)
    noise = os.urandom(1 << 20)  # does not compress: the ratio is fine, the size is not
    data = tar_bytes((member("a"), noise), (member("b"), noise))
    with pytest.raises(UnsafeArchive, match=r"unpacks to more than 1048576 bytes \(at 'b'\)"):
        _extract(tmp_path, data, "a.tar.gz")
    assert not (tmp_path / "dest" / "b").exists()  # refused on its declared size, before writing


def test_the_number_of_members_is_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "MAX_MEMBERS", 10)
    with pytest.raises(UnsafeArchive, match="more than 10 files"):
        _extract(tmp_path, tar_bytes(*((member(f"f{n}"), b"x") for n in range(11))), "a.tgz")
    (tmp_path / "dest").rename(tmp_path / "dest-tar")
    with pytest.raises(UnsafeArchive, match="more than 10 files"):
        _extract(tmp_path, zip_bytes(*((f"f{n}", b"x", stat.S_IFREG | 0o644) for n in range(11))), "a.zip")
    assert list((tmp_path / "dest").iterdir()) == []  # the zip's count is read before anything


def test_a_corrupt_zip_is_one_error(tmp_path: Path) -> None:
    data = bytearray(zeros_zip(2 << 20))
    data[200:400] = os.urandom(200)  # inside the deflated data: zlib, not zipfile, notices
    with pytest.raises(AgentStartError, match="not a readable zip archive"):
        _extract(tmp_path, bytes(data), "a.zip")


# --- versions, leftovers, locks ----------------------------------------------------------


@pytest.mark.parametrize("version", ["current.json", "..", ".", "latest", "1.0.0/../../x", "1.0.0.lock", "2.json"])
def test_versions_that_are_not_version_folder_names_are_refused(
    server: RegistryServer, acpcli_home: Path, version: str
) -> None:
    server.files["/agent-1.tar.gz"] = good_tar()
    with pytest.raises(AgentStartError, match="as a folder name"):
        install.install(entry(server, version))
    assert not (acpcli_home / "agents").exists()
    assert server.requests == []  # refused before anything was downloaded


def test_a_failed_first_install_leaves_no_empty_folder(server: RegistryServer, acpcli_home: Path) -> None:
    with pytest.raises(AgentStartError, match="HTTP 404"):
        install.install(entry(server, archive="/missing.tar.gz"))
    assert not (acpcli_home / "agents").exists()
    server.files["/evil.tar.gz"] = tar_bytes((member("../../evil"), b"x"))
    with pytest.raises(UnsafeArchive):
        install.install(entry(server, archive="/evil.tar.gz"))
    assert not (acpcli_home / "agents").exists()


def test_a_lock_held_by_a_process_that_died_is_free(server: RegistryServer, acpcli_home: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom acpcli.agents import install\n"
         "with install._locked('bin-agent'):\n    print('held', flush=True)\n    time.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "ACPCLI_HOME": str(acpcli_home)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert (acpcli_home / "agents" / ".bin-agent.lock").read_text() == f"{holder.pid} installing"
    finally:
        holder.kill()  # SIGKILL: no finally of its own runs; the system lets go of the lock
        holder.wait()
        holder.stdout.close()  # type: ignore[union-attr]
    server.files["/agent-1.tar.gz"] = good_tar()
    assert install.install(entry(server)).version == "1.0.0"
    assert sorted(p.name for p in (acpcli_home / "agents").iterdir()) == ["bin-agent"]  # no lock file left


def test_a_lock_not_let_go_of_is_given_up_on(
    server: RegistryServer, acpcli_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    from acpcli import notices

    (acpcli_home / "agents").mkdir()
    lock = acpcli_home / "agents" / ".bin-agent.lock"
    lock.write_text("4242 removing")
    said: list[str] = []
    previous = notices.set_sink(said.append)
    monkeypatch.setenv(registry.DEADLINE_ENV, "0.1")  # the patience is the deadline and a minute
    monkeypatch.setattr(install.time, "monotonic", _clock(step=10.0))
    with lock.open() as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another open file: as another process, flock says no
        try:
            with pytest.raises(AgentStartError, match=r"waited 60\.1s for another acpcli \(pid 4242\) removing 'bin-agent'"):
                install.install(entry(server))
        finally:
            notices.set_sink(previous)
            notices.reset()
    assert said == ["waiting for another acpcli (pid 4242) removing 'bin-agent'"]
    assert server.requests == []


def _clock(step: float) -> Any:
    """A monotonic clock that moves ``step`` seconds each time it is read."""
    now = [0.0]

    def monotonic() -> float:
        now[0] += step
        return now[0]

    return monotonic
