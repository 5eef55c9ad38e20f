"""One writer per session, end to end: two commands on one session take turns (or the second
says it is busy), ``sessions rm`` leaves a running session alone, and an agent that reuses a
session id never takes over another session's record.

The agent is ``tests/peers/sdk_gate_agent.py``: each turn says ``WORD:start``, waits until the
test creates ``$GATE_DIR/WORD``, then streams ``WORD:tick0`` … ``WORD:tick4``. So the test
decides when a turn ends (no sleeps, no timing): two turns running at once interleave their
ticks, which the stored transcript would show.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import TIMEOUT, AgentTrace, Cli, error_line
from .pty import CTRL_C

GATE_AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_gate_agent.py"
WAITING = "waiting for another acpcli"


def gate_cmd(*flags: str) -> str:
    return shlex.join([sys.executable, str(GATE_AGENT), *flags])


def answer(word: str, agent: str = "sdk-gate") -> str:
    """What the gate agent says in a turn prompted with ``word``."""
    return " ".join([f"{word}:start@{agent}", *(f"{word}:tick{i}" for i in range(5))])


def wait_until(what: str, ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


class Background:
    """One acpcli command running while the test goes on; stdout and stderr go to files."""

    def __init__(self, cli: Cli, where: Path, *args: str, env: dict[str, str]) -> None:
        self.out, self.err = where.with_suffix(".out"), where.with_suffix(".err")
        with open(self.out, "w") as out, open(self.err, "w") as err:
            self.proc = subprocess.Popen(
                cli.argv(*args), env=cli.env(env), cwd=cli.cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err
            )
        self.pid = self.proc.pid
        _started.append(self)

    def stderr(self) -> str:
        return self.err.read_text()

    def finish(self) -> subprocess.CompletedProcess[str]:
        try:
            code = self.proc.wait(timeout=TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        return subprocess.CompletedProcess(self.proc.args, code, self.out.read_text(), self.stderr())


_started: list[Background] = []


@pytest.fixture(autouse=True)
def _no_command_left() -> Iterator[None]:
    """A test that fails half-way leaves no command running (nor its agent, with it)."""
    yield
    while _started:
        proc = _started.pop().proc
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # acpcli stops its agent on the way out
            try:
                proc.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def gates(tmp_path: Path) -> Path:
    path = tmp_path / "gates"
    path.mkdir()
    return path


def prompts(trace: AgentTrace) -> list[str]:
    """The text of every session/prompt the agents received, in order."""
    return [r["params"]["prompt"][0]["text"] for r in trace.requests("session/prompt")]


def messages(cli: Cli, sid: str) -> list[tuple[str, str]]:
    """``(role, text)`` of each message of the stored transcript (``export --format jsonl``)."""
    lines = cli.ok("export", sid, "--format", "jsonl").stdout.splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return [(row["role"], row["text"].strip()) for row in rows if row["type"] == "message"]


def in_turn(cli: Cli, trace: AgentTrace, gates: Path, sid: str, word: str, tmp_path: Path) -> Background:
    """``prompt --session SID WORD`` started, and in its turn (the agent has the prompt)."""
    before = len(prompts(trace))
    running = Background(cli, tmp_path / word, "prompt", "--session", sid, word, env={"GATE_DIR": str(gates)})
    wait_until(f"the turn of {word!r} to start", lambda: len(prompts(trace)) > before)
    return running


def test_two_prompts_on_one_session_take_turns(cli: Cli, trace: AgentTrace, gates: Path, tmp_path: Path) -> None:
    sid = cli.new(gate_cmd())
    first = in_turn(cli, trace, gates, sid, "one", tmp_path)
    second = Background(cli, tmp_path / "two", "prompt", "--session", sid, "two", env={"GATE_DIR": str(gates)})
    wait_until("the second prompt to say it waits", lambda: WAITING in second.stderr())
    assert f"{WAITING} (pid {first.pid}) to finish its turn on session {sid}" in second.stderr()
    assert prompts(trace) == ["one"]  # the second sent nothing while it waited
    (gates / "one").touch()
    (gates / "two").touch()
    done = [first.finish(), second.finish()]
    assert [p.returncode for p in done] == [0, 0], [p.stderr for p in done]
    assert second.stderr().count(WAITING) == 1  # said once
    assert prompts(trace) == ["one", "two"]
    # one turn after the other: each answer whole, in the record and in what each printed
    assert messages(cli, sid) == [("user", "one"), ("agent", answer("one")), ("user", "two"), ("agent", answer("two"))]
    assert answer("one") in done[0].stdout and answer("two") in done[1].stdout
    shown = cli.show(sid)
    assert shown.index(answer("one")) < shown.index(answer("two"))
    trace.assert_all_gone()


@pytest.mark.parametrize("command", ["prompt", "resume", "load"])
def test_no_wait_on_a_busy_session_exits_18_with_one_line(
    cli: Cli, trace: AgentTrace, gates: Path, tmp_path: Path, command: str
) -> None:
    sid = cli.new(gate_cmd())
    first = in_turn(cli, trace, gates, sid, "one", tmp_path)
    args = ["prompt", "--session", sid, "--no-wait", "two"] if command == "prompt" else [command, sid, "--no-repl", "--no-wait"]
    busy = cli.run(*args)
    message = error_line(busy, ExitCode.BUSY)
    assert busy.stderr.count("\n") == 1, busy.stderr  # one line, no hint
    assert message == f"session {sid} is busy: another acpcli (pid {first.pid}) is running a turn on it"
    (gates / "one").touch()
    assert first.finish().returncode == 0
    assert prompts(trace) == ["one"]
    assert messages(cli, sid) == [("user", "one"), ("agent", answer("one"))]
    trace.assert_all_gone()


def test_ctrl_c_while_waiting_gives_up_and_sends_nothing(
    cli: Cli, trace: AgentTrace, gates: Path, tmp_path: Path
) -> None:
    sid = cli.new(gate_cmd())
    first = in_turn(cli, trace, gates, sid, "one", tmp_path)
    agents = len(trace.pids())
    second = Background(cli, tmp_path / "two", "prompt", "--session", sid, "two", env={"GATE_DIR": str(gates)})
    wait_until("the second prompt to say it waits", lambda: WAITING in second.stderr())
    second.proc.send_signal(signal.SIGINT)
    gave_up = second.finish()
    assert gave_up.returncode == ExitCode.INTERRUPTED, gave_up.stderr
    assert gave_up.stderr.splitlines()[-1] == f"acpcli: interrupted while waiting for session {sid}: nothing was sent"
    assert "Traceback" not in gave_up.stderr and gave_up.stdout == ""
    assert len(trace.pids()) == agents  # no agent was even started for it
    (gates / "one").touch()
    assert first.finish().returncode == 0
    assert prompts(trace) == ["one"]
    assert messages(cli, sid) == [("user", "one"), ("agent", answer("one"))]
    trace.assert_all_gone()


def test_rm_of_a_session_with_a_running_turn_is_refused(
    cli: Cli, trace: AgentTrace, gates: Path, tmp_path: Path
) -> None:
    sid = cli.new(gate_cmd())
    first = in_turn(cli, trace, gates, sid, "one", tmp_path)
    refused = cli.run("sessions", "rm", sid)
    message = error_line(refused, ExitCode.BUSY)
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert message == f"session {sid} was not deleted: another acpcli (pid {first.pid}) is running a turn on it"
    idle = cli.new(gate_cmd())
    pruned = cli.ok("sessions", "prune", "--older-than", "2999-01-01")  # every session: prune keeps the busy one
    assert pruned.stderr.splitlines() == ["deleted 1 session", "kept 1 session with a turn running in another acpcli"]
    assert [row["id"] for row in cli.index()] == [sid] and idle != sid
    (gates / "one").touch()
    finished = first.finish()
    assert finished.returncode == 0, finished.stderr
    assert messages(cli, sid) == [("user", "one"), ("agent", answer("one"))]  # the turn is stored
    cli.ok("sessions", "rm", sid)  # once the turn is over, rm works
    assert sid not in {row["id"] for row in cli.index()}
    trace.assert_all_gone()


def test_a_prompt_waiting_for_a_session_that_rm_deleted_says_so(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    """What ``sessions rm`` does (lock, delete, drop the lock file) while a prompt waits: the
    prompt then finds the session gone, and says so in one line (exit 8), recording nothing."""
    from acpcli.history.index import Index
    from acpcli.history.lock import SessionLock

    sid = cli.new(gate_cmd())
    held = SessionLock(sid)
    assert held.try_acquire()
    waiting = Background(cli, tmp_path / "two", "prompt", "--session", sid, "two", env={})
    wait_until("the prompt to say it waits", lambda: WAITING in waiting.stderr())
    with Index() as index:
        index.delete(sid)
    held.discard()
    done = waiting.finish()
    assert done.returncode == ExitCode.SESSION_NOT_FOUND, done.stderr
    assert done.stderr.splitlines()[-1] == f"acpcli: error: no session {sid!r} in the local index", done.stderr
    assert prompts(trace) == [] and cli.index() == []
    trace.assert_all_gone()


@pytest.mark.parametrize("other", ["cwd", "agent"])
def test_an_agent_reusing_a_session_id_does_not_take_over_the_record(
    cli: Cli, trace: AgentTrace, workdir: Path, tmp_path: Path, other: str
) -> None:
    here = str(workdir.resolve())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first_cmd = gate_cmd("--session-id", "same")
    second_cmd = gate_cmd("--session-id", "same", "--name", "other-agent") if other == "agent" else first_cmd
    second_cwd = str(elsewhere.resolve()) if other == "cwd" else here
    second_agent = "other-agent" if other == "agent" else "sdk-gate"

    assert cli.new(first_cmd) == "same"
    made = cli.ok("new", "--no-repl", "--cmd", second_cmd, "--cwd", second_cwd)
    second = made.stdout.strip()
    assert second == "same.2"  # a local id of its own, printed where the agent's would be
    assert "already recorded here for another session: this one is recorded as same.2" in made.stderr

    rows = {row["id"]: row for row in cli.index()}
    assert (rows["same"]["agent"], rows["same"]["cwd"]) == ("sdk-gate", here)
    assert "agentSessionId" not in rows["same"]
    assert (rows[second]["agent"], rows[second]["cwd"], rows[second]["agentSessionId"]) == (second_agent, second_cwd, "same")

    cli.ok("prompt", "--session", "same", "alpha")
    cli.ok("prompt", "--session", second, "beta")
    # each record runs its own agent in its own directory; the agent is addressed by its own id
    resumed = [(r["params"]["sessionId"], r["params"]["cwd"]) for r in trace.requests("session/resume")]
    assert resumed == [("same", here), ("same", second_cwd)]
    assert [r["params"]["sessionId"] for r in trace.requests("session/prompt")] == ["same", "same"]
    assert messages(cli, "same") == [("user", "alpha"), ("agent", answer("alpha"))]
    assert messages(cli, second) == [("user", "beta"), ("agent", answer("beta", second_agent))]
    if other == "agent":  # the other agent's list titles its own session, not the first one
        cli.ok("sessions", "--remote", "--cmd", second_cmd)
        titles = {row["id"]: (row["title"], row["titleSource"]) for row in cli.index()}
        assert titles == {"same": ("alpha", "prompt"), second: ("listed by other-agent", "agent")}
    trace.assert_all_gone()


def test_a_repl_and_a_script_on_one_session_take_turns(
    spawn, cli: Cli, trace: AgentTrace, gates: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The REPL (on a pseudo-terminal) and ``prompt --session`` on the same session: each waits
    for the other's turn (the REPL says so in a line that stays), and the record holds the
    three turns one after the other."""
    sid = cli.new(gate_cmd())
    for name, value in {"GATE_DIR": gates, "RECORD_FILE": trace.record_file, "PID_FILE": trace.pid_file}.items():
        monkeypatch.setenv(name, str(value))  # for the REPL's agent (the pty gets this environment)
    repl = spawn("resume", sid)
    repl.prompt()
    repl.say("r1")
    wait_until("the REPL's turn to start", lambda: prompts(trace) == ["r1"])

    script = Background(cli, tmp_path / "s1", "prompt", "--session", sid, "s1", env={"GATE_DIR": str(gates)})
    wait_until("the script to wait for the REPL's turn", lambda: WAITING in script.stderr())
    assert f"(pid {repl.child.pid})" in script.stderr()
    (gates / "r1").touch()
    repl.expect("r1:tick4")
    repl.prompt()
    wait_until("the script's turn to start", lambda: prompts(trace) == ["r1", "s1"])

    repl.say("r2")
    repl.expect(rf"{WAITING} \(pid {script.pid}\)")  # the REPL waits for the script's turn
    assert prompts(trace) == ["r1", "s1"]
    (gates / "s1").touch()
    (gates / "r2").touch()
    done = script.finish()
    assert done.returncode == 0, done.stderr
    repl.expect("r2:tick4")
    repl.prompt()
    code, _ = repl.leave()
    assert code == 0
    assert prompts(trace) == ["r1", "s1", "r2"]
    assert messages(cli, sid) == [
        ("user", "r1"), ("agent", answer("r1")), ("user", "s1"), ("agent", answer("s1")),
        ("user", "r2"), ("agent", answer("r2")),
    ]
    trace.assert_all_gone()


def test_ctrl_c_while_the_repl_waits_gives_the_line_back(
    spawn, cli: Cli, trace: AgentTrace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the REPL, Ctrl-C while a turn waits for the session withdraws it: nothing is sent, the
    line comes back for editing, the REPL stays; sent again once the session is free, it runs."""
    from acpcli.history.lock import SessionLock

    sid = cli.new(gate_cmd())
    for name, value in {"RECORD_FILE": trace.record_file, "PID_FILE": trace.pid_file}.items():
        monkeypatch.setenv(name, str(value))
    repl = spawn("resume", sid)
    repl.prompt()
    other = SessionLock(sid)  # another acpcli's turn, as far as the REPL can tell
    assert other.try_acquire()
    repl.say("r1")
    repl.expect(rf"{WAITING} \(pid {os.getpid()}\)")
    repl.child.send(CTRL_C)
    repl.expect(rf"not sent: (?:\x1b\[[0-9;]*m)*interrupted while waiting for session {sid}: nothing was sent")
    repl.prompt()
    assert prompts(trace) == []
    other.release()
    repl.say("")  # the line came back: Enter sends it
    repl.expect("r1:tick4")
    repl.prompt()
    code, _ = repl.leave()
    assert code == 0
    assert prompts(trace) == ["r1"]
    assert messages(cli, sid) == [("user", "r1"), ("agent", answer("r1"))]
    trace.assert_all_gone()
