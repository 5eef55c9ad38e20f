"""Agents that die or leave processes behind, end to end, and code from the working directory.

* An agent that exits mid-turn while a child it started still holds its stdout: acpcli notices
  the agent's own exit (not only the end of its stdout), ends the turn with exit 9 and the
  agent's last stderr line, and kills what the agent left; it never waits for that child,
  not even one it cannot find until the end (double-forked, environment cleared: the sweep
  at acpcli's exit, as its subreaper, ends it).
* A ``setsid`` process (outside the agent's process group) started by the agent, or by a
  command the agent runs in a terminal (``terminal/create``), is gone once acpcli has exited,
  whether its parent still runs or it was orphaned first.
* The agent's stderr log stays under its cap however much the agent writes, and says what it
  dropped.
* ``--agent demo`` run in a folder holding ``acpcli/demo_agent/__main__.py`` runs acpcli's
  demo agent, never that file.

Peer: ``tests/peers/leaver.py`` (v1, official SDK), whose prompt says what to leave behind;
every ``sleep 301`` it starts has its pid in ``$CHILD_PID_FILE``.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acpcli.errors import ExitCode
from acpcli.wire.transport import STDERR_LOG_MAX_BYTES
from tests.helpers.procs import running

from .conftest import TIMEOUT, Cli

LEAVER = Path(__file__).resolve().parent.parent / "peers" / "leaver.py"
CMD = shlex.join([sys.executable, str(LEAVER)])


def _left_running(pids: list[int], limit: float = 10.0) -> list[int]:
    """The pids still running after up to ``limit`` seconds (a SIGKILL takes a moment)."""
    deadline = time.monotonic() + limit
    while True:
        left = [pid for pid in pids if running(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


@pytest.fixture
def children(tmp_path: Path) -> Path:
    return tmp_path / "children.pids"


def _child_pids(path: Path) -> list[int]:
    pids = [int(p) for p in path.read_text().split()] if path.exists() else []
    assert pids, "the agent started no child"
    return pids


@pytest.mark.parametrize("verb", ["exit-holding", "exit-holding-setsid", "exit-holding-untagged"])
def test_an_agent_that_exits_while_its_child_holds_its_stdout_ends_the_turn(
    cli: Cli, children: Path, verb: str
) -> None:
    # Before the fix acpcli read the agent's stdout until the sleep ended (301 s): the
    # command's own timeout fails this test.
    proc = cli.run("prompt", "--cmd", CMD, verb, env={"CHILD_PID_FILE": str(children)})

    assert proc.returncode == ExitCode.AGENT_EXITED, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("acpcli: error: ")]
    assert len(errors) == 1 and "status 5" in errors[0], proc.stderr
    assert "started a child" in proc.stdout  # what arrived before the exit is shown
    assert "leaver: exiting mid-turn" in proc.stderr  # the agent's last stderr line
    assert _left_running(_child_pids(children)) == []
    cli.trace.assert_all_gone()


@pytest.mark.parametrize("verb", ["orphan", "terminal-orphan", "terminal-child"])
def test_setsid_processes_of_the_agent_and_its_terminals_are_gone_after_acpcli(
    cli: Cli, children: Path, verb: str
) -> None:
    """``orphan``: the agent's shell started ``setsid sleep`` and exited (the sleep, holding
    the agent's stdout, was re-parented); ``terminal-orphan``: the same from a terminal
    command; ``terminal-child``: a terminal command still waiting for its ``setsid`` child
    when the agent releases the terminal."""
    proc = cli.run("prompt", "--permissions", "allow", "--cmd", CMD, verb, env={"CHILD_PID_FILE": str(children)})

    assert proc.returncode == 0, proc.stderr
    assert f"{verb} done" in proc.stdout
    assert _left_running(_child_pids(children)) == []
    cli.trace.assert_all_gone()


def test_a_stderr_flood_leaves_a_log_under_its_cap(cli: Cli) -> None:
    flood = 5 * STDERR_LOG_MAX_BYTES
    for _ in range(2):  # a second run must not double it
        proc = cli.run("prompt", "--cmd", CMD, f"flood {flood}")
        assert proc.returncode == 0, proc.stderr

    logs = sorted((cli.home / "logs").glob("*.stderr.log*"))
    sizes = {log.name: log.stat().st_size for log in logs}
    assert len(logs) == 2 and all(size <= STDERR_LOG_MAX_BYTES for size in sizes.values()), sizes
    current = next(log for log in logs if log.name.endswith(".stderr.log"))
    head = current.read_bytes()[:200].decode()
    assert head.startswith("[acpcli: ") and "bytes of this log were dropped" in head, head
    assert current.read_bytes().endswith(b"x" * 1023 + b"\n")  # the newest part is kept


def test_the_demo_agent_never_runs_code_from_the_working_directory(cli: Cli, workdir: Path) -> None:
    marker = workdir / "ran-from-cwd"
    fake = workdir / "acpcli" / "demo_agent"
    fake.mkdir(parents=True)
    (workdir / "acpcli" / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")

    # acpcli itself must be the real one: not `python -m acpcli`, which would import the fake.
    boot = "import sys; del sys.path[0]; from acpcli.cli import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", boot, "prompt", "--agent", "demo", "hello no-permission"],
        env=cli.env(), cwd=workdir, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT,
        check=False,
    )

    assert proc.returncode == 0, proc.stderr
    assert "Demo agent reply" in proc.stdout
    assert not marker.exists()
