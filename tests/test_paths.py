"""Files that hold transcripts or logs are 0600, their directories 0700, whatever the umask.

The helpers are checked directly, then the real CLI is run under umask 0o022 and 0o000 (a
child process: the umask is per process) and every file it left under its home, plus the
``--log-file``, is checked.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from acpcli.paths import create_private, ensure_dir, open_private, tighten

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def loose_umask():
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_open_private_is_0600_under_umask_0(tmp_path: Path, loose_umask: None) -> None:
    path = tmp_path / "new" / "deeper" / "log.txt"
    with open_private(path, "ab") as out:
        out.write(b"x")
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700 and mode(path.parent.parent) == 0o700
    with open_private(path, "a", encoding="utf-8") as out:  # appending keeps what was there
        out.write("y")
    assert path.read_text() == "xy"


def test_existing_loose_file_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / "old.log"
    path.write_text("before")
    path.chmod(0o644)
    os.close(create_private(path))
    assert mode(path) == 0o600 and path.read_text() == "before"
    path.chmod(0o666)
    tighten(path)
    assert mode(path) == 0o600


def test_tighten_leaves_non_regular_files_alone(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o644)
    os.chmod(fifo, 0o644)
    tighten(fifo)
    assert mode(fifo) == 0o644
    tighten(tmp_path / "missing")  # no error


def test_ensure_dir_is_0700_under_umask_0(tmp_path: Path, loose_umask: None) -> None:
    made = ensure_dir(tmp_path / "a" / "b")
    assert mode(made) == 0o700 and mode(made.parent) == 0o700


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_cli_leaves_only_private_files(tmp_path: Path, umask: int) -> None:
    home = tmp_path / "home"  # does not exist: acpcli creates it
    log = tmp_path / "logs-elsewhere" / "wire.log"
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "ACPCLI_HOME": str(home), "ACPCLI_DEBUG": "1"}
    env.pop("ACPCLI_LOG_FILE", None)
    demo = f"{sys.executable} -m acpcli.demo_agent --delay 0 --protocol 1"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "acpcli", *args],
            env=env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
            preexec_fn=lambda: os.umask(umask),  # only the child's umask
            check=False,
        )

    first = run("prompt", "--cmd", demo, "--log-file", str(log), "hello")
    assert first.returncode == 0, first.stderr
    session = first.stderr.split("session ", 1)[1].split()[0]
    again = run("prompt", "--cmd", demo, "--session", session, "again")  # reopens the index, the demo's file
    assert again.returncode == 0, again.stderr

    files = [p for p in home.rglob("*") if p.is_file()] + [log]
    names = {p.name for p in files}
    # What must be there for this test to mean anything: the index, a log, the demo's session.
    assert "acpcli.db" in names and "wire.log" in names, names
    assert any(p.suffix == ".json" and p.parent.name == "sessions" for p in files), names
    assert any(n.endswith(".stderr.log") for n in names) and "acpcli.log" in names, names
    loose = {str(p): oct(mode(p)) for p in files if mode(p) != 0o600}
    assert not loose, loose
    dirs = [home, *(p for p in home.rglob("*") if p.is_dir()), log.parent]
    open_dirs = {str(p): oct(mode(p)) for p in dirs if mode(p) != 0o700}
    assert not open_dirs, open_dirs


def test_index_and_its_wal_files_are_0600_under_umask_0(tmp_path: Path, loose_umask: None) -> None:
    from acpcli.history.index import Index, SessionRecord

    path = tmp_path / "state" / "acpcli.db"
    with Index.open(path) as index:
        index.upsert_session(SessionRecord(id="s1", agent="demo", argv=["demo"], cwd=str(tmp_path)))
        with Index.open(path) as second:  # a second connection, as another process would open it
            second.touch("s1")
            wal_files = [Path(f"{path}{suffix}") for suffix in ("-wal", "-shm")]
            assert all(p.exists() for p in wal_files)  # open while the connections are
            modes = {p.name: oct(mode(p)) for p in [path, *wal_files]}
    assert set(modes.values()) == {"0o600"}, modes
    assert mode(path.parent) == 0o700


def test_an_older_loose_index_is_tightened(tmp_path: Path) -> None:
    from acpcli.history.index import Index

    path = tmp_path / "acpcli.db"
    with Index.open(path) as index:
        assert index.list_sessions() == []
    path.chmod(0o644)
    with Index.open(path) as index:
        assert index.list_sessions() == []
    assert mode(path) == 0o600
