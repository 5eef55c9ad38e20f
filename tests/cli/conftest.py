"""Fixtures for end-to-end tests of the real ``acpcli`` program (``python -m acpcli``).

Every command runs in a subprocess with stdin not a terminal (so never the REPL), with the
per-test ``ACPCLI_HOME`` of ``tests/conftest.py``. Agents are started by acpcli itself from a
``--cmd`` line built here, wrapped so that each agent process leaves a trace:

* the demo agent runs under ``sh -c 'echo $$ >> PIDS; exec AGENT 2>> STDERR'`` — ``exec`` keeps
  the pid, so the pid file names the real agent process, and its stderr (which acpcli keeps
  to itself) is kept in a file where the ``UNADVERTISED ...`` marker lines can be looked for;
* the SDK record agent (``tests/peers/sdk_record_agent.py``) writes its pid to ``PID_FILE``
  and every request it receives to ``RECORD_FILE`` (both set in the environment acpcli passes on).

After a command exits, :meth:`AgentTrace.assert_all_gone` checks that none of those processes
is still alive: acpcli must never leave an agent behind.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from acpcli.errors import ExitCode
from tests.helpers.procs import running

from .pty import spawn  # noqa: F401  (the pseudo-terminal fixture of the REPL tests)

RECORD_AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_record_agent.py"

#: A guard against hangs only: every command here finishes in about a second when it works.
TIMEOUT = 60.0

DEMO_ID = re.compile(r"^demo-[0-9a-f]{32}$")


@dataclass
class AgentTrace:
    """Where the agents started for one test leave their pids, stderr and received requests."""

    root: Path
    pid_file: Path = field(init=False)
    stderr_file: Path = field(init=False)
    record_file: Path = field(init=False)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.pid_file = self.root / "agent.pids"
        self.stderr_file = self.root / "agent.stderr"
        self.record_file = self.root / "record.jsonl"

    def pids(self) -> list[int]:
        """Pids of every agent process started so far, in start order."""
        if not self.pid_file.exists():
            return []
        return [int(line) for line in self.pid_file.read_text().split()]

    def stderr(self) -> str:
        """Everything the (wrapped) demo agents wrote on stderr."""
        return self.stderr_file.read_text() if self.stderr_file.exists() else ""

    def requests(self, method: str | None = None) -> list[dict[str, Any]]:
        """What the record agent received (``{"method", "params", "request"}``), in order."""
        if not self.record_file.exists():
            return []
        rows = [json.loads(line) for line in self.record_file.read_text().splitlines() if line]
        return [r for r in rows if method is None or r["method"] == method]

    def methods(self) -> list[str]:
        return [r["method"] for r in self.requests()]

    def assert_all_gone(self) -> None:
        """No agent process this test started is still running."""
        left = [pid for pid in self.pids() if running(pid)]
        assert not left, f"agent processes left behind: {left}"

    def assert_no_unadvertised(self) -> None:
        """The demo agent never saw a method or field it had not advertised."""
        assert "UNADVERTISED" not in self.stderr(), self.stderr()

    def demo_cmd(
        self,
        *,
        protocol: int = 2,
        without: Iterable[str] = (),
        replay: str | None = None,
        extra: Sequence[str] = (),
        state_dir: Path | None = None,
    ) -> str:
        """A ``--cmd`` line running the demo agent (``--delay 0``) under the tracing wrapper."""
        agent = [sys.executable, "-m", "acpcli.demo_agent", "--delay", "0", "--protocol", str(protocol)]
        for feature in without:
            agent += ["--without", feature]
        if replay is not None:
            agent += ["--replay", replay]
        if state_dir is not None:
            agent += ["--state-dir", str(state_dir)]
        agent += list(extra)
        script = f"echo $$ >> {shlex.quote(str(self.pid_file))}; exec \"$@\" 2>> {shlex.quote(str(self.stderr_file))}"
        return shlex.join(["sh", "-c", script, "demo-agent", *agent])

    def record_cmd(self, *flags: str) -> str:
        """A ``--cmd`` line running the SDK record agent with capability ``flags``
        (``--load``, ``--resume``, ``--close``, ``--list``, ``--additional-directories``,
        ``--mcp-http``). Its pid and requests go to this trace via the environment."""
        return shlex.join([sys.executable, str(RECORD_AGENT), *flags])


class Cli:
    """Runs ``python -m acpcli ...`` as a real subprocess, stdin not a terminal."""

    def __init__(self, home: Path, trace: AgentTrace, cwd: Path) -> None:
        self.home = home
        self.trace = trace
        self.cwd = cwd

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)  # carries the per-test ACPCLI_HOME
        env["ACPCLI_HOME"] = str(self.home)
        env["RECORD_FILE"] = str(self.trace.record_file)
        env["PID_FILE"] = str(self.trace.pid_file)
        env["COLUMNS"] = "400"  # tables unfolded, so ids can be found in them
        for noisy in ("FORCE_COLOR", "ACPCLI_LOG_FILE", "ACPCLI_DEBUG"):
            env.pop(noisy, None)
        env.update(extra or {})
        return env

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "acpcli", *args]

    def run(
        self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run one command to completion."""
        return subprocess.run(
            self.argv(*args),
            env=self.env(env),
            cwd=cwd or self.cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,  # callers assert on the exit code
        )

    def run_all(self, *commands: Sequence[str]) -> list[subprocess.CompletedProcess[str]]:
        """Run independent commands at the same time (real concurrent processes)."""
        return run_concurrently([(self, args) for args in commands])

    def elsewhere(self, home: Path) -> Cli:
        """The same trace and cwd, another acpcli home (another machine, as far as acpcli knows)."""
        home.mkdir(parents=True, exist_ok=True)
        return Cli(home, self.trace, self.cwd)

    def ok(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """Run a command that must succeed."""
        proc = self.run(*args, **kwargs)
        assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stderr}"
        return proc

    def new(self, cmd: str, *args: str) -> str:
        """``acpcli new --no-repl --cmd CMD ...``: the new session id."""
        proc = self.ok("new", "--no-repl", "--cmd", cmd, *args)
        return proc.stdout.strip()

    def index(self) -> list[dict[str, Any]]:
        """Every session of the local index (``sessions --json --all``)."""
        proc = self.ok("sessions", "--json", "--all")
        return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]

    def show(self, session_id: str) -> str:
        return self.ok("show", session_id).stdout


def run_concurrently(
    jobs: Sequence[tuple[Cli, Sequence[str]]], env: dict[str, str] | None = None
) -> list[subprocess.CompletedProcess[str]]:
    """Start every ``(cli, args)`` command at once (``env``: extra variables for all), then
    collect them in order."""
    procs = [
        subprocess.Popen(
            cli.argv(*args), env=cli.env(env), cwd=cli.cwd, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for cli, args in jobs
    ]
    results = []
    try:
        for (cli, args), proc in zip(jobs, procs, strict=False):
            out, err = proc.communicate(timeout=TIMEOUT)
            results.append(subprocess.CompletedProcess(cli.argv(*args), proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:  # only after a timeout
                proc.kill()
                proc.wait()
    return results


def error_line(proc: subprocess.CompletedProcess[str], code: ExitCode) -> str:
    """Assert the command failed with ``code``, printing nothing on stdout and exactly one
    ``acpcli: error:`` line (plus at most one hint line) on stderr; return the error text.
    Indented lines after the error line (the agent's ``error.data``, at most 4) belong to it."""
    assert proc.returncode == code, f"exit {proc.returncode}, wanted {code!r}\nstderr: {proc.stderr}"
    assert proc.stdout == "", proc.stdout
    lines = proc.stderr.splitlines()
    detail = [line for line in lines if line.startswith("  ")]
    assert len(detail) <= 4, proc.stderr
    lines = [line for line in lines if not line.startswith("  ")]
    errors = [line for line in lines if line.startswith("acpcli: error: ")]
    hints = [line for line in lines if line.startswith("acpcli: hint: ")]
    assert len(errors) == 1 and len(hints) <= 1 and len(lines) == len(errors) + len(hints), proc.stderr
    return errors[0][len("acpcli: error: ") :]


@pytest.fixture
def trace(tmp_path: Path) -> AgentTrace:
    return AgentTrace(tmp_path / "trace")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """The directory commands run in (the default session cwd)."""
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def cli(acpcli_home: Path, trace: AgentTrace, workdir: Path) -> Cli:
    return Cli(acpcli_home, trace, workdir)


@pytest.fixture(params=["hosted", "unhosted"])
def repl_mode(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """The extra arguments of a REPL test (``new``, ``load``, ``resume``), which then runs
    twice: ``hosted`` (the default of a person's REPL: the session in a background host,
    keep-alive on) and ``unhosted`` (``--keep-alive 0``: the REPL holds the agent), so the
    two paths cannot drift apart. Hosts started by a hosted run are stopped afterwards."""
    if request.param == "unhosted":
        yield ["--keep-alive", "0"]
        return
    try:
        yield ["--keep-alive", "60"]
    finally:
        subprocess.run(
            [sys.executable, "-m", "acpcli", "stop", "--all"], stdin=subprocess.DEVNULL, capture_output=True,
            timeout=TIMEOUT, check=False,
        )
