"""acpcli.agent_install: safe extraction of agent archives, install and remove."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from acpcli import agent_install, registry
from acpcli.agent_install import extract
from acpcli.errors import AgentStartError, UnsafeArchive
from tests.helpers.registry_server import RegistryServer

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
    done = agent_install.install(entry(server))
    assert done.cmd == (acpcli_home / "agents" / "bin-agent" / "1.0.0" / "dist" / "agent").resolve()
    assert os.access(done.cmd, os.X_OK) and done.argv()[1:] == ["acp"]
    assert len(done.sha256) == 64
    assert agent_install.installed("bin-agent") == done
    meta = json.loads((acpcli_home / "agents" / "bin-agent" / "current.json").read_text())
    assert meta["version"] == "1.0.0" and meta["sha256"] == done.sha256
    server.files["/agent-2.tar.gz"] = good_tar()
    again = agent_install.install(entry(server, "2.0.0", "/agent-2.tar.gz"))
    assert again.version == "2.0.0"
    assert sorted(p.name for p in (acpcli_home / "agents" / "bin-agent").iterdir()) == ["2.0.0", "current.json"]
    assert agent_install.remove("bin-agent") and agent_install.installed("bin-agent") is None


def test_a_failed_install_leaves_the_old_version_and_nothing_half_done(server: RegistryServer, acpcli_home: Path) -> None:
    server.files["/agent-1.tar.gz"] = good_tar()
    agent_install.install(entry(server))
    server.files["/evil.tar.gz"] = tar_bytes((member("../../evil"), b"x"))
    with pytest.raises(UnsafeArchive):
        agent_install.install(entry(server, "2.0.0", "/evil.tar.gz"))
    with pytest.raises(AgentStartError, match="HTTP 404"):
        agent_install.install(entry(server, "3.0.0", "/missing.tar.gz"))
    assert sorted(p.name for p in (acpcli_home / "agents" / "bin-agent").iterdir()) == ["1.0.0", "current.json"]
    assert agent_install.installed("bin-agent").version == "1.0.0"  # type: ignore[union-attr]


def test_a_version_that_is_not_a_folder_name_is_refused(server: RegistryServer) -> None:
    with pytest.raises(AgentStartError, match="as a folder name"):
        agent_install.install(entry(server, "../1"))
