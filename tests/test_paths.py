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
    # 0600, or 0400 for what is written once (a checkpoint store's objects, as git keeps them)
    loose = {str(p): oct(mode(p)) for p in files if mode(p) not in (0o600, 0o400)}
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


# -- whose state it is: a home or index another user may write is refused ------------------

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="giving a file to another user (chown) needs root")
OTHER_UID = 4242  # no user of this machine needs to have it


@pytest.mark.parametrize("loose", [0o777, 0o770, 0o703, 0o1777])
def test_a_home_others_may_write_is_refused_unless_shared_on_purpose(
    acpcli_home: Path, loose: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acpcli.errors import ConfigError, ExitCode
    from acpcli.history.index import check_home
    from acpcli.paths import ALLOW_SHARED_ENV, private_state

    assert mode(acpcli_home) == 0o700  # the tests' home is made as acpcli makes one
    check_home()
    assert private_state()
    acpcli_home.chmod(loose)
    with pytest.raises(ConfigError) as info:
        check_home()
    assert info.value.exit_code == ExitCode.CONFIG
    assert f"ACPCLI_HOME {acpcli_home} is writable by" in info.value.message
    assert ALLOW_SHARED_ENV in (info.value.hint or "")
    assert not private_state()
    monkeypatch.setenv(ALLOW_SHARED_ENV, "1")
    check_home()  # used on purpose: allowed, but still not private
    assert not private_state()


def test_an_index_others_may_write_is_refused(acpcli_home: Path) -> None:
    from acpcli.errors import ConfigError
    from acpcli.history.index import check_home
    from acpcli.paths import db_path

    db_path().write_bytes(b"")
    db_path().chmod(0o622)
    with pytest.raises(ConfigError, match=r"the session index .*acpcli\.db is writable by group and others \(mode 0622\)"):
        check_home()
    db_path().chmod(0o600)
    check_home()


@needs_root
@pytest.mark.parametrize("whose", ["home", "index", "config"])
def test_state_owned_by_another_user_is_refused(acpcli_home: Path, whose: str) -> None:
    from acpcli.config import load_config
    from acpcli.errors import ConfigError
    from acpcli.history.index import check_home
    from acpcli.paths import config_path, db_path

    target = {"home": acpcli_home, "index": db_path(), "config": config_path()}[whose]
    if whose != "home":
        target.write_text("")
    os.chown(target, OTHER_UID, -1)
    with pytest.raises(ConfigError, match=f"is owned by another user \\(uid {OTHER_UID}\\)"):
        load_config()
    if whose != "config":
        with pytest.raises(ConfigError, match=str(target)):
            check_home()


def test_a_home_that_is_a_file_and_an_index_that_is_a_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from acpcli.errors import ConfigError
    from acpcli.history.index import check_home

    home = tmp_path / "a-file"
    home.write_text("x")
    monkeypatch.setenv("ACPCLI_HOME", str(home))
    with pytest.raises(ConfigError, match=f"^ACPCLI_HOME {home} is a file, not a directory$"):
        check_home()
    monkeypatch.setenv("ACPCLI_HOME", str(home / "below"))
    with pytest.raises(ConfigError, match=f"{home} is a file, not a directory"):
        check_home()
    home = ensure_dir(tmp_path / "home")
    (home / "acpcli.db").mkdir()
    monkeypatch.setenv("ACPCLI_HOME", str(home))
    with pytest.raises(ConfigError, match=f"^the session index {home}/acpcli.db is a directory, not a file$"):
        check_home()
