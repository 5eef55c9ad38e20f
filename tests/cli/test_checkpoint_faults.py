"""Checkpoint faults through the real CLI (issue 34): a full disk while checkpointing is a
warning and exit 16 at the end, the answer and the transcript whole; a tree over the bounds
(``checkpoint_max_files``, ``checkpoint_time_limit``: small ones here) gives up with one line and
the turn goes on; a rewind killed with ``kill -9`` leaves every path old or new, and ``--undo``
still works."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from acpcli.errors import ExitCode
from acpcli.history.index import Index
from acpcli.worktree import Checkpoints
from tests.helpers.records import rec

from .conftest import TIMEOUT, Cli

MODES = {"hosted": "300", "unhosted": "0"}


@pytest.fixture(params=sorted(MODES))
def keep_alive(request: pytest.FixtureRequest, cli: Cli) -> object:
    yield MODES[request.param]
    cli.run("stop", "--all")


@pytest.fixture
def full_disk(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A ``git`` first on PATH that says the disk is full for every write of an object or an
    index while the mark file exists (the environment to run acpcli with, and the mark)."""
    real = shutil.which("git")
    assert real is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mark = tmp_path / "disk-full"
    script = bin_dir / "git"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ -e "{mark}" ]; then\n'
        '  case " $* " in *" update-index "*|*" write-tree "*|*" hash-object "*|*" add "*)\n'
        '    echo "error: unable to write file: No space left on device" >&2; echo "fatal: failed" >&2; exit 128;;\n'
        "  esac\n"
        "fi\n"
        f'exec "{real}" "$@"\n'
    )
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}, mark


def _turns(cli: Cli, sid: str, env: dict[str, str]) -> list[str]:
    import json

    rows = [json.loads(line) for line in cli.ok("checkpoints", sid, "--json", env=env).stdout.splitlines() if line]
    return [f"{r['turn']}:{','.join(sorted(f['path'] for f in r['files']))}" for r in rows]


def test_a_full_disk_is_a_warning_then_exit_16_and_the_transcript_is_whole(
    cli: Cli, workdir: Path, full_disk: tuple[dict[str, str], Path]
) -> None:
    env, mark = full_disk
    env = {**env, "ACPCLI_KEEP_ALIVE": "0"}
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=env).stdout.strip()
    well = cli.ok("prompt", "--session", sid, "--permissions", "allow", "write one.txt", env=env)
    mark.touch()
    full = cli.run("prompt", "--session", sid, "--permissions", "allow", "write two.txt", env=env)
    assert full.returncode == ExitCode.STORAGE, (full.returncode, full.stderr)
    warnings = [line for line in full.stderr.splitlines() if "the disk is full" in line]
    assert len(warnings) == 2, full.stderr  # the warning during the turn, the error at the end
    assert warnings[0].startswith("acpcli: warning: no checkpoint of this turn")
    assert warnings[1].startswith("acpcli: error: not every checkpoint of") and "the transcript are whole" in warnings[1]
    # the answer is all there, as a turn whose checkpoint worked has it
    assert "Turn 2: write two.txt" in full.stdout and full.stdout.count("\n") == well.stdout.count("\n")
    assert (workdir / "two.txt").exists() and "write two.txt" in cli.show(sid)
    mark.unlink()
    cli.ok("prompt", "--session", sid, "--permissions", "allow", "write three.txt", env=env)
    # what the lost checkpoint missed is recorded before the next turn (as changes made between
    # turns are), so that turn's diff is its own and a rewind to it keeps two.txt
    assert _turns(cli, sid, env) == ["0:", "1:one.txt", "2:three.txt"]
    plan = cli.ok("rewind", sid, "--to", "2", "--files", "--dry-run", env=env).stdout
    assert "three.txt" in plan and "two.txt" not in plan, plan
    plan = cli.ok("rewind", sid, "--to", "1", "--files", "--dry-run", env=env).stdout
    assert "two.txt" in plan and "three.txt" in plan, plan


@pytest.mark.parametrize(
    ("config", "said"),
    [("checkpoint_max_files = 20", "more than 20 files"), ("checkpoint_time_limit = 0.000001", "took more than")],
    ids=["files", "time"],
)
def test_a_tree_over_the_bounds_gives_up_in_one_line_and_the_turn_goes_on(
    cli: Cli, workdir: Path, keep_alive: str, config: str, said: str
) -> None:
    (cli.home / "config.toml").write_text(config + "\n")
    for i in range(40):
        (workdir / f"f{i:02}.txt").write_text(f"{i}\n")
    env = {"ACPCLI_KEEP_ALIVE": keep_alive}
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=env).stdout.strip()
    done = cli.ok("prompt", "--session", sid, "--permissions", "allow", "write big.txt", env=env)
    lines = [line for line in done.stderr.splitlines() if "checkpoints are off" in line]
    assert len(lines) == 1 and said in lines[0], done.stderr
    assert "Turn 1: write big.txt" in done.stdout and (workdir / "big.txt").exists()
    again = cli.ok("prompt", "--session", sid, "--permissions", "allow", "write more.txt", env=env)
    assert len([line for line in again.stderr.splitlines() if "checkpoints" in line]) <= 1, again.stderr
    assert (workdir / "more.txt").exists()
    assert cli.ok("checkpoints", sid, "--json").stdout == ""


SID = "demo-killed0123456789abcdef0123456789ab"


def test_a_rewind_killed_midway_leaves_each_file_old_or_new_and_undo_works(cli: Cli, index: Index, workdir: Path) -> None:
    index.upsert_session(rec(SID, cwd=str(workdir)))
    names = [f"d{i // 100}/f{i:04}.txt" for i in range(1200)]
    old = {n: f"old {n}\n".encode() * 200 for n in names}
    new = {n: f"new {n}\n".encode() * 300 for n in names}
    for name, data in old.items():
        (workdir / name).parent.mkdir(exist_ok=True)
        (workdir / name).write_bytes(data)
    cps = Checkpoints(SID, [workdir])
    cps.take(0, "")
    for name, data in new.items():
        (workdir / name).write_bytes(data)
    cps.take(1, "rewrite them all")

    def state() -> tuple[int, int]:
        """How many files are old and new; every other content fails the test."""
        olds = news = 0
        for name in names:
            data = (workdir / name).read_bytes()
            assert data in (old[name], new[name]), f"{name} is half-written: {len(data)} bytes"
            olds += data == old[name]
            news += data == new[name]
        return olds, news

    killed_midway = 0
    first = workdir / min(names)  # the restore writes in path order: this one first
    for delay in (0.0, 0.005, 0.02):
        proc = subprocess.Popen(
            cli.argv("rewind", SID, "--to", "1", "--files", "--yes"), env=cli.env(), cwd=workdir,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + TIMEOUT
        while first.read_bytes() != old[min(names)] and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(delay)  # then a moment into the writes
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=TIMEOUT)
        olds, _ = state()  # whatever it reached: each path old or new
        killed_midway += 0 < olds < len(names)
        cli.ok("rewind", SID, "--undo", "--files")  # before the killed rewind: all new
        assert state() == (0, len(names))
    assert killed_midway, "no kill landed in the middle of a rewind"
    assert not list(workdir.rglob(".acpcli-tmp-*"))  # what a kill left is cleaned up
    cli.ok("rewind", SID, "--to", "1", "--files")
    assert state() == (len(names), 0)
