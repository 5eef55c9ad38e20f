"""A live session's host needs files under ``ACPCLI_HOME/run`` (its lock, its socket, the
start lock) and its log under ``logs/``. When one of them cannot be made or used — a
read-only home, ``run/`` that is a file or a symbolic link, a directory where the socket or
the lock goes — the command says so in one line (exit 16, ``STORAGE``) with the hint to run
without a host (``--keep-alive 0``): no traceback, no "could not start (exit None)", no agent
or host left behind, and ``--keep-alive 0`` then works.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from acpcli.errors import ExitCode
from acpcli.session.hostwire import address

from .conftest import Cli
from .test_storage import TRACEBACK_MARKS, in_namespace, needs_mount

LIVE = {"ACPCLI_KEEP_ALIVE": "300"}


def assert_no_host(proc: subprocess.CompletedProcess[str], broken: Path) -> None:
    """Exit 16, one error line naming ``broken``, the ``--keep-alive 0`` hint, nothing else."""
    assert proc.returncode == ExitCode.STORAGE, f"exit {proc.returncode}\n{proc.stderr}"
    assert not any(mark in proc.stderr for mark in TRACEBACK_MARKS), proc.stderr
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("acpcli: refused ")]
    assert len(lines) == 2, proc.stderr
    error, hint = lines
    assert error.startswith(f"acpcli: error: the session host cannot use {broken}: "), error
    assert hint.startswith("acpcli: hint: ") and "--keep-alive 0" in hint, hint
    assert proc.stdout == "", proc.stdout


def _break(cli: Cli, sid: str, what: str, tmp: Path) -> Path:
    """Break the host file ``what`` of session ``sid``; the path the error must name."""
    run = cli.home / "run"
    assert address.home_dir() == cli.home  # the paths as the command computes them
    if what == "run-file":
        run.write_text("not a directory\n")
        return run
    if what == "run-link":
        elsewhere = tmp / "elsewhere"
        elsewhere.mkdir(mode=0o700)
        run.symlink_to(elsewhere)
        return run
    if what == "socket-dir":  # (under the temporary directory when the home's path is long)
        path = address.socket_path(sid)
        path.mkdir(parents=True)
        (path / "inside").write_text("x")
        return path
    if what == "lock-dir":
        path = address.lock_path(sid)
        path.mkdir(parents=True)
        return path
    if what == "start-dir":
        path = address.start_path(sid)
        path.mkdir(parents=True)
        return path
    raise AssertionError(what)


@pytest.mark.parametrize("what", ["run-file", "run-link", "socket-dir", "lock-dir", "start-dir"])
@pytest.mark.parametrize("protocol", [1, 2])
def test_a_host_file_in_the_way_is_one_line_and_keep_alive_0_still_runs(
    cli: Cli, tmp_path: Path, what: str, protocol: int
) -> None:
    sid = cli.new(cli.trace.demo_cmd(protocol=protocol))  # keep-alive 0: no host yet
    broken = _break(cli, sid, what, tmp_path)
    proc = cli.run("prompt", "--session", sid, f"through a host ({what})", env=LIVE)
    assert_no_host(proc, broken)
    cli.trace.assert_all_gone()
    if what != "run-file":
        assert list(address.hosts()) == []
    again = cli.ok("prompt", "--session", sid, "--keep-alive", "0", "without a host", env=LIVE)
    assert "without a host" in again.stdout
    cli.trace.assert_all_gone()
    if what == "socket-dir":
        shutil.rmtree(broken)


@pytest.mark.parametrize("what", ["run-file", "run-link"])
def test_a_new_live_session_is_refused_before_its_agent_starts(cli: Cli, tmp_path: Path, what: str) -> None:
    broken = _break(cli, "unused", what, tmp_path)
    proc = cli.run("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=2), env=LIVE)
    assert_no_host(proc, broken)
    assert cli.trace.pids() == []  # refused before any agent was started
    assert cli.index() == []


@needs_mount
@pytest.mark.parametrize("command", ["prompt", "new"])
def test_a_read_only_home_is_one_line_for_a_live_session(cli: Cli, command: str) -> None:
    sid = cli.new(cli.trace.demo_cmd(protocol=2))
    if command == "prompt":
        args = ["prompt", "--session", sid, "--keep-alive", "300", "on a read-only home"]
    else:
        args = ["new", "--no-repl", "--keep-alive", "300", "--cmd", cli.trace.demo_cmd(protocol=1)]
    (proc, unhosted) = in_namespace(
        cli,
        f"mount --bind -o ro {cli.home} {cli.home}",
        args,
        ["prompt", "--cmd", cli.trace.demo_cmd(protocol=2), "--keep-alive", "0", "no host needed"],
    )
    assert proc.returncode == ExitCode.STORAGE, proc.stderr
    assert not any(mark in proc.stderr for mark in TRACEBACK_MARKS), proc.stderr
    error, hint = [line for line in proc.stderr.splitlines() if not line.startswith("acpcli: refused ")]
    assert error.startswith(f"acpcli: error: the session host cannot use {cli.home}/"), error
    assert "Read-only file system" in error, error
    assert "--keep-alive 0" in hint, hint
    # without a host the turn runs, and says (exit 16) that it could not be saved
    assert unhosted.returncode == ExitCode.STORAGE and "no host needed" in unhosted.stdout, unhosted.stderr
    cli.trace.assert_all_gone()
