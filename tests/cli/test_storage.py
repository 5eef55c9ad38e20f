"""Full or read-only storage and unwritable output, end to end.

Storage (the session index and event log under ``ACPCLI_HOME``) that cannot be written never
stops the turn: the answer still streams, one stderr line says what could not be saved and
where, the command exits 16 (``STORAGE``), nothing hangs, no traceback. Output that cannot be
written (``-o FILE``, stdout, ``--log-file``, ``--raw`` on a full disk; a closed stdout) exits
17 (``OUTPUT``) with one line, and the agent is not left behind.

A full disk is a small tmpfs mounted in a private mount namespace (``unshare -m``, as root);
those tests skip with the reason when that is not possible. Read-only storage uses a
read-only mount as root (root ignores file modes) and ``chmod`` otherwise.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import TIMEOUT, AgentTrace, Cli

REPLY = "Demo agent reply"
SAVE_ERROR = re.compile(r"^acpcli: error: cannot save sessions to (\S+): (.+) \((\d+) session updates? not saved\)$")
TRACEBACK_MARKS = ("Traceback", "Exception Group", "Logging error")
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _can_mount() -> str | None:
    """Why private tmpfs mounts are impossible here, or None when they work."""
    if not IS_ROOT:
        return "needs root for a private tmpfs mount (unshare -m)"
    if shutil.which("unshare") is None:
        return "needs unshare(1)"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt && umount /mnt"],
        capture_output=True, text=True, check=False,
    )
    return None if probe.returncode == 0 else f"cannot mount a tmpfs in a private namespace: {probe.stderr.strip()}"


MOUNT_PROBLEM = _can_mount()
needs_mount = pytest.mark.skipif(MOUNT_PROBLEM is not None, reason=MOUNT_PROBLEM or "")


def in_namespace(cli: Cli, setup: str, *commands: list[str] | str) -> list[subprocess.CompletedProcess[str]]:
    """Run ``setup`` (shell) and then each of ``commands`` in one private mount namespace:
    a list is an acpcli command line, whose exit status, stdout and stderr come back; a
    string is a shell step between them."""
    out_dir = cli.trace.root / "ns"
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = ["set -e", setup, "set +e"]
    acpcli_commands = [args for args in commands if isinstance(args, list)]
    i = 0
    for args in commands:
        if isinstance(args, str):
            lines.append(args)
            continue
        argv = shlex.join(cli.argv(*args))
        lines.append(f"{argv} >{out_dir}/{i}.out 2>{out_dir}/{i}.err </dev/null; echo $? >{out_dir}/{i}.rc")
        i += 1
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", "\n".join(lines)],
        env=cli.env(), cwd=cli.cwd, capture_output=True, text=True, timeout=TIMEOUT * len(commands), check=False,
    )
    assert proc.returncode == 0, proc.stderr
    results = []
    for i, args in enumerate(acpcli_commands):
        rc = int((out_dir / f"{i}.rc").read_text())
        results.append(
            subprocess.CompletedProcess(args, rc, (out_dir / f"{i}.out").read_text(), (out_dir / f"{i}.err").read_text())
        )
    return results


#: The one warning that the files' checkpoint could not be taken either (the same full disk).
CHECKPOINT_WARNING = "acpcli: warning: no checkpoint of this turn: "


def error_lines(stderr: str) -> list[str]:
    """acpcli's own stderr lines, less the permission policy's refusals (the demo agent asks to
    edit a file, and a script's default policy refuses it) and the checkpoint's warning (one at
    most: the same full disk keeps the files' checkpoint too)."""
    lines = stderr.splitlines()
    assert sum(line.startswith(CHECKPOINT_WARNING) for line in lines) <= 1, stderr
    return [
        line for line in lines
        if line.startswith("acpcli:") and not line.startswith(("acpcli: refused ", CHECKPOINT_WARNING))
    ]


def assert_unsaved(proc: subprocess.CompletedProcess[str], where: Path) -> re.Match[str]:
    """The turn ran (the answer is on stdout), exit 16, one ``acpcli:`` line naming ``where``
    (beside the policy's refusal lines, which say something else)."""
    assert proc.returncode == ExitCode.STORAGE, f"exit {proc.returncode}\n{proc.stderr}"
    assert REPLY in proc.stdout, proc.stdout
    assert not any(mark in proc.stderr for mark in TRACEBACK_MARKS), proc.stderr
    ours = error_lines(proc.stderr)
    assert len(ours) == 1, proc.stderr
    match = SAVE_ERROR.match(ours[0])
    assert match is not None, ours[0]
    assert Path(match.group(1)) == where / "acpcli.db"
    assert int(match.group(3)) > 0
    return match


def prompt_args(trace: AgentTrace, protocol: int, *extra: str) -> list[str]:
    return ["prompt", "--cmd", trace.demo_cmd(protocol=protocol), *extra, "hello storage"]


@needs_mount
@pytest.mark.parametrize("protocol", [2, 1])
def test_a_full_disk_never_stops_the_turn(cli: Cli, trace: AgentTrace, protocol: int) -> None:
    home = cli.home
    setup = f"mount -t tmpfs -o size=300k,mode=0700 tmpfs {home}; dd if=/dev/zero of={home}/filler bs=1k count=400 2>/dev/null || true"
    (proc,) = in_namespace(cli, setup, prompt_args(trace, protocol))
    match = assert_unsaved(proc, home)
    assert "full" in match.group(2) or "space" in match.group(2), match.group(2)
    trace.assert_all_gone()


@needs_mount
@pytest.mark.parametrize("protocol", [2, 1])
def test_a_disk_that_fills_up_between_turns(cli: Cli, trace: AgentTrace, protocol: int) -> None:
    """The index opens fine, then its writes fail: acpcli moves to memory mid-command, the
    v2 turn still ends (its final ``idle`` is not lost with the failed write), and what was
    saved before stays readable."""
    home = cli.home
    first, second, listing = in_namespace(
        cli,
        f"mount -t tmpfs -o size=2m,mode=0700 tmpfs {home}",
        prompt_args(trace, protocol),
        f"dd if=/dev/zero of={home}/filler bs=4k 2>/dev/null || true",
        prompt_args(trace, protocol),
        ["sessions", "--json", "--all"],
    )
    assert first.returncode == ExitCode.OK, first.stderr
    assert_unsaved(second, home)
    trace.assert_all_gone()
    assert listing.returncode == ExitCode.OK, listing.stderr
    first_id = re.search(r"session (\S+)", first.stderr)
    assert first_id is not None, first.stderr
    assert first_id.group(1) in listing.stdout  # what was saved before is still readable


@needs_mount
@pytest.mark.parametrize("protocol", [2, 1])
def test_a_read_only_home(cli: Cli, trace: AgentTrace, protocol: int) -> None:
    home = cli.home
    (proc,) = in_namespace(cli, f"mount -t tmpfs -o size=1m,ro,mode=0700 tmpfs {home}", prompt_args(trace, protocol))
    match = assert_unsaved(proc, home)
    assert "Read-only" in match.group(2), match.group(2)
    trace.assert_all_gone()


@pytest.mark.parametrize("protocol", [2, 1])
def test_a_database_file_without_write_permission(cli: Cli, trace: AgentTrace, protocol: int) -> None:
    cli.ok(*prompt_args(trace, protocol))  # creates the index
    db = cli.home / "acpcli.db"
    assert db.is_file()
    if IS_ROOT:
        if MOUNT_PROBLEM is not None:
            pytest.skip(f"root ignores file modes, and {MOUNT_PROBLEM}")
        (proc,) = in_namespace(cli, f"mount --bind -o ro {db} {db}", prompt_args(trace, protocol))
    else:
        db.chmod(0o400)
        proc = cli.run(*prompt_args(trace, protocol))
    assert_unsaved(proc, cli.home)
    trace.assert_all_gone()
    # What was saved before is still there to read.
    assert len(cli.index()) == 1


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("protocol", [2, 1])
@pytest.mark.parametrize("where", ["-o", "stdout", "--log-file", "--raw"])
def test_output_on_a_full_disk_exits_17(cli: Cli, trace: AgentTrace, protocol: int, where: str) -> None:
    extra = {"-o": ["-o", "/dev/full"], "--log-file": ["--log-file", "/dev/full"], "--raw": ["--raw"]}.get(where, [])
    with open("/dev/full", "w") as full, open(os.devnull, "w") as null:
        proc = subprocess.run(
            cli.argv(*prompt_args(trace, protocol, *extra)), env=cli.env(), cwd=cli.cwd, stdin=subprocess.DEVNULL,
            stdout=full if where in ("stdout", "--raw") else null, stderr=subprocess.PIPE, text=True,
            timeout=TIMEOUT, check=False,
        )
    assert proc.returncode == ExitCode.OUTPUT, proc.stderr
    assert not any(mark in proc.stderr for mark in TRACEBACK_MARKS), proc.stderr
    ours = error_lines(proc.stderr)
    assert len(ours) == 1 and ours[0].startswith("acpcli: error: cannot write "), proc.stderr
    assert "No space left on device" in ours[0]
    if where == "--log-file":
        assert "/dev/full" in ours[0]
    trace.assert_all_gone()


@pytest.mark.parametrize("protocol", [2, 1])
def test_a_closed_stdout_exits_17_before_starting_the_agent(cli: Cli, trace: AgentTrace, protocol: int) -> None:
    argv = ["sh", "-c", 'exec "$@" >&-', "sh", *cli.argv(*prompt_args(trace, protocol))]
    proc = subprocess.run(
        argv, env=cli.env(), cwd=cli.cwd, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        timeout=TIMEOUT, check=False,
    )
    assert proc.returncode == ExitCode.OUTPUT, proc.stderr
    assert proc.stderr.splitlines() == [
        "acpcli: error: standard output is closed: nowhere to write (redirect it, or use -o FILE)"
    ], proc.stderr
    assert trace.pids() == []  # nothing was started
    assert not (cli.home / "acpcli.db").exists()


def test_a_closed_stdout_with_o_file_still_works(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    out = tmp_path / "answer.txt"
    argv = ["sh", "-c", 'exec "$@" >&-', "sh", *cli.argv(*prompt_args(trace, 2, "-o", str(out)))]
    proc = subprocess.run(
        argv, env=cli.env(), cwd=cli.cwd, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        timeout=TIMEOUT, check=False,
    )
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert REPLY in out.read_text()
    trace.assert_all_gone()



@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["new", "sessions", "--help", "completion"])
def test_other_commands_on_a_full_stdout_exit_17(cli: Cli, trace: AgentTrace, command: str) -> None:
    cli.new(trace.demo_cmd())  # something for `sessions --all` to list (it was never prompted)
    args = {
        "new": ["new", "--no-repl", "--cmd", trace.demo_cmd()],
        "sessions": ["sessions", "--all"],
        "--help": ["--help"],
        "completion": ["completion", "bash"],
    }[command]
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            cli.argv(*args), env=cli.env(), cwd=cli.cwd, stdin=subprocess.DEVNULL, stdout=full,
            stderr=subprocess.PIPE, text=True, timeout=TIMEOUT, check=False,
        )
    assert proc.returncode == ExitCode.OUTPUT, proc.stderr
    assert proc.stderr == "acpcli: error: cannot write the output: No space left on device\n", proc.stderr
    trace.assert_all_gone()


@needs_mount
def test_search_on_an_index_it_cannot_write_searches_what_is_indexed(cli: Cli, trace: AgentTrace) -> None:
    cli.ok("prompt", "--cmd", trace.demo_cmd(), "indexed zebu")
    cli.ok("prompt", "--cmd", trace.demo_cmd(), "stale zebu")
    db = cli.home / "acpcli.db"
    stale = next(r["id"] for r in cli.index() if r["title"] == "stale zebu")
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("UPDATE sessions SET search_seq = 0 WHERE id = ?", (stale,))  # as if never indexed
    conn.commit()
    conn.close()
    (proc,) = in_namespace(cli, f"mount --bind -o ro {db} {db}", ["search", "zebu", "--json"])
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert not any(mark in proc.stderr for mark in TRACEBACK_MARKS), proc.stderr
    found = [line for line in proc.stdout.splitlines() if line]
    assert len(found) >= 1 and "indexed zebu" in proc.stdout
    assert "could not index" in proc.stderr


@needs_mount
def test_listing_an_older_index_it_cannot_migrate_reads_it_as_it_is(cli: Cli, trace: AgentTrace) -> None:
    import sqlite3

    cli.ok("prompt", "--cmd", trace.demo_cmd(), "an old session")
    db = cli.home / "acpcli.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for statement in (  # as an acpcli at schema 6 left it
        "DROP TABLE search_fts", "DROP TABLE search_docs", "ALTER TABLE sessions DROP COLUMN search_seq",
        "ALTER TABLE sessions DROP COLUMN title_source", "ALTER TABLE sessions DROP COLUMN usage", "ALTER TABLE sessions DROP COLUMN parent_id",
        "PRAGMA user_version = 6",
    ):
        conn.execute(statement)
    conn.close()
    (proc,) = in_namespace(cli, f"mount --bind -o ro {db} {db}", ["sessions", "--json", "--all"])
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert not any(mark in proc.stderr for mark in TRACEBACK_MARKS), proc.stderr
    assert len(proc.stdout.splitlines()) == 1
