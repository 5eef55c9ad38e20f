"""Live sessions (issue 23): a host process per session keeps the agent warm between commands.

Every test drives the real CLI in subprocesses with keep-alive on (the suite's default is 0,
see tests/conftest.py), and stops what it started: a host left behind fails the test.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from acpcli.errors import ExitCode
from tests.helpers.procs import running

from .conftest import TIMEOUT, Cli, error_line

LIVE = {"ACPCLI_KEEP_ALIVE": "300"}


def live_rows(cli: Cli) -> list[dict[str, object]]:
    proc = cli.ok("sessions", "--live", "--json")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def jsonl_texts(stdout: str) -> str:
    """The agent's text of a ``--format jsonl`` transcript."""
    text = []
    for line in stdout.splitlines():
        row = json.loads(line)
        if row.get("type") == "message" and row.get("role") == "agent":
            text.append(row.get("text") or "")
    return "".join(text)


@pytest.fixture
def hosts(cli: Cli) -> Iterator[Cli]:
    """``cli``, and at the end: every host stopped, and none of its processes left."""
    yield cli
    rows = live_rows(cli)
    cli.run("stop", "--all")
    for row in rows:
        for pid in (row["pid"], row["agentPid"]):
            deadline = time.monotonic() + 10
            while isinstance(pid, int) and running(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not (isinstance(pid, int) and running(pid)), f"process {pid} left behind"
    cli.trace.assert_all_gone()


def test_new_and_three_prompts_share_one_agent_process(hosts: Cli) -> None:
    cli = hosts
    proc = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), "--title", "kept", env=LIVE)
    sid = proc.stdout.strip()
    (row,) = live_rows(cli)
    assert row["id"] == sid
    outputs = [cli.ok("prompt", "--session", sid, f"number {n}", env=LIVE).stdout for n in range(3)]
    for n, out in enumerate(outputs):
        assert f"number {n}" in out
    assert live_rows(cli)[0]["pid"] == row["pid"]
    assert cli.trace.pids() == [row["agentPid"]]  # one agent process for all four commands
    shown = cli.show(sid)
    assert shown.index("number 0") < shown.index("number 1") < shown.index("number 2")
    (record,) = cli.index()
    assert record["title"] == "kept"


def test_a_session_made_without_a_host_is_continued_by_one(hosts: Cli) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1))  # keep-alive 0 in the suite's environment
    assert live_rows(cli) == []
    for n in range(3):
        assert f"number {n}" in cli.ok("prompt", "--session", sid, f"number {n}", env=LIVE).stdout
    # `new`'s agent ended with it; the host's serves all three prompts
    assert len(cli.trace.pids()) == 2
    assert live_rows(cli)[0]["agentPid"] == cli.trace.pids()[-1]


def test_an_agent_that_crashes_in_a_host_ends_the_turn_and_the_next_prompt_respawns_it(hosts: Cli) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    cli.ok("prompt", "--session", sid, "hello", env=LIVE)
    (row,) = live_rows(cli)
    crashed = cli.run("prompt", "--session", sid, "crash", env=LIVE)
    assert crashed.returncode == ExitCode.AGENT_EXITED, crashed.stderr
    assert "Traceback" not in crashed.stderr
    deadline = time.monotonic() + 10
    while running(int(row["pid"])) and time.monotonic() < deadline:  # type: ignore[arg-type]
        time.sleep(0.05)
    assert not running(int(row["pid"]))  # type: ignore[arg-type]
    again = cli.ok("prompt", "--session", sid, "after the fall", env=LIVE)
    assert "after the fall" in again.stdout


def test_keep_alive_zero_starts_no_host(cli: Cli) -> None:
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    cli.ok("prompt", "--session", sid, "hello", "--keep-alive", "0", env=LIVE)
    assert live_rows(cli) == []
    cli.trace.assert_all_gone()
    assert not (cli.home / "run").exists()


def test_a_one_shot_prompt_starts_no_host(cli: Cli) -> None:
    cli.ok("prompt", "--cmd", cli.trace.demo_cmd(protocol=1), "hello", env=LIVE)
    assert live_rows(cli) == []
    cli.trace.assert_all_gone()


@pytest.mark.parametrize("output_format", ["text", "markdown", "jsonl"])
def test_a_warm_prompt_streams_in_every_format(hosts: Cli, output_format: str) -> None:
    cli = hosts
    cold_id = cli.new(cli.trace.demo_cmd(protocol=1))
    cli.ok("prompt", "--session", cold_id, "--keep-alive", "0", "first")
    cold = cli.ok("prompt", "--session", cold_id, "--keep-alive", "0", "--format", output_format, "alpha").stdout
    warm_id = cli.new(cli.trace.demo_cmd(protocol=1))
    cli.ok("prompt", "--session", warm_id, "first", env=LIVE)  # starts the host
    warm = cli.ok("prompt", "--session", warm_id, "--format", output_format, "alpha", env=LIVE).stdout
    assert len(live_rows(cli)) == 1
    # the same turn, drawn the same way, whether the agent was warm or not (the ids aside)
    assert same_turn(warm) == same_turn(cold)


def same_turn(text: str) -> str:
    """A turn's output with the agent's random ids made equal, and without the Markdown
    heading: the warm path heads it with the session's recorded title, the cold one with
    what the agent sent this process (nothing, after a resume)."""
    text = re.sub(r"\b[0-9a-f]{12,32}\b", "ID", text)
    return re.sub(r"\A# .*\n", "", text)


def test_concurrent_prompts_run_in_order_and_never_interleave(hosts: Cli) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1, extra=["--delay", "0.1"]))
    cli.ok("prompt", "--session", sid, "start the host", env=LIVE)
    first, second = _two_at_once(cli, sid)
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    a, b = jsonl_texts(first.stdout), jsonl_texts(second.stdout)
    assert "first one" in a and "second one" not in a
    assert "second one" in b and "first one" not in b
    assert "waiting behind 1 turn" in second.stderr
    shown = cli.show(sid)
    one, two = shown.index("first one"), shown.index("second one")
    # each turn's answer is whole between its prompt and the next one
    assert one < two
    assert "second one" not in shown[one:two].replace("> second one", "")


def _two_at_once(cli: Cli, sid: str) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """The second prompt is sent while the first one's turn runs."""
    env = cli.env(LIVE)
    first = subprocess.Popen(
        cli.argv("prompt", "--session", sid, "--format", "jsonl", "first one"), env=env, cwd=cli.cwd,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    time.sleep(0.5)  # the first one is queued first (not a timing assertion: order only)
    second = subprocess.Popen(
        cli.argv("prompt", "--session", sid, "--format", "jsonl", "second one"), env=env, cwd=cli.cwd,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    out1, err1 = first.communicate(timeout=TIMEOUT)
    out2, err2 = second.communicate(timeout=TIMEOUT)
    return (
        subprocess.CompletedProcess(first.args, first.returncode, out1, err1),
        subprocess.CompletedProcess(second.args, second.returncode, out2, err2),
    )


def test_stop_leaves_no_process(hosts: Cli) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    cli.ok("prompt", "--session", sid, "hello", env=LIVE)
    (row,) = live_rows(cli)
    proc = cli.ok("stop", sid)
    assert f"stopped {sid}" in proc.stderr
    assert not running(int(row["pid"]))  # type: ignore[arg-type]
    assert not running(int(row["agentPid"]))  # type: ignore[arg-type]
    assert live_rows(cli) == []
    assert "not live" in cli.ok("stop", sid).stderr


def test_keep_alive_expiry_leaves_no_process(hosts: Cli) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    cli.ok("prompt", "--session", sid, "--keep-alive", "1", "hello", env=LIVE)
    (row,) = live_rows(cli)
    deadline = time.monotonic() + 20
    while running(int(row["pid"])) and time.monotonic() < deadline:  # type: ignore[arg-type]
        time.sleep(0.1)
    assert not running(int(row["pid"]))  # type: ignore[arg-type]
    assert not running(int(row["agentPid"]))  # type: ignore[arg-type]
    assert not list((cli.home / "run").glob("*.lock"))


def test_a_host_killed_mid_turn_loses_nothing_and_the_next_prompt_works(hosts: Cli) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1, extra=["--delay", "0.05"]))
    cli.ok("prompt", "--session", sid, "start the host", env=LIVE)
    (row,) = live_rows(cli)
    client = subprocess.Popen(
        cli.argv("prompt", "--session", sid, "slow killed"), env=cli.env(LIVE), cwd=cli.cwd,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert client.stdout is not None
    seen = ""
    while "slow killed" not in seen:  # the turn has started streaming
        line = client.stdout.readline()
        assert line, "the prompt ended before its turn streamed"
        seen += line
    time.sleep(0.3)
    os.kill(int(row["pid"]), signal.SIGKILL)  # type: ignore[arg-type]
    _out, err = client.communicate(timeout=TIMEOUT)
    assert client.returncode == ExitCode.HOST_LOST, err
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("acpcli: error:")] == [
        "acpcli: error: the session host went away mid-turn"
    ]
    # what arrived before the kill is stored
    assert "slow killed" in cli.show(sid)
    # the agent, orphaned, ends when its input closes; the next prompt starts a new host
    again = cli.ok("prompt", "--session", sid, "after the kill", env=LIVE)
    assert "after the kill" in again.stdout
    (new_row,) = live_rows(cli)
    assert new_row["pid"] != row["pid"]


def test_stale_files_of_a_dead_host_are_not_trusted(hosts: Cli) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    cli.ok("prompt", "--session", sid, "hello", env=LIVE)
    (row,) = live_rows(cli)
    run = cli.home / "run"
    files = sorted(p.name for p in run.iterdir())
    os.kill(int(row["pid"]), signal.SIGKILL)  # type: ignore[arg-type]
    deadline = time.monotonic() + 10
    while running(int(row["pid"])) and time.monotonic() < deadline:  # type: ignore[arg-type]
        time.sleep(0.05)
    assert sorted(p.name for p in run.iterdir()) == files  # the dead host's socket and lock are left
    assert live_rows(cli) == []  # ... and not believed
    again = cli.ok("prompt", "--session", sid, "after a stale host", env=LIVE)
    assert "after a stale host" in again.stdout
    assert len(live_rows(cli)) == 1


def test_two_commands_racing_to_start_a_host_end_up_with_one(hosts: Cli) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    results = cli.run_all(
        ("prompt", "--session", sid, "--keep-alive", "300", "racer one"),
        ("prompt", "--session", sid, "--keep-alive", "300", "racer two"),
        ("prompt", "--session", sid, "--keep-alive", "300", "racer three"),
    )
    for proc in results:
        assert proc.returncode == 0, proc.stderr
    assert len(live_rows(cli)) == 1
    assert len(cli.trace.pids()) == 2  # `new`'s agent, and the one host's


def test_an_agent_error_in_a_host_is_the_same_exit_code(hosts: Cli) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    proc = cli.run("prompt", "--session", sid, "max tokens please", env=LIVE)
    assert proc.returncode == ExitCode.MAX_TOKENS, proc.stderr
    cold = cli.run("prompt", "--session", sid, "--keep-alive", "0", "max tokens please")
    assert cold.returncode == ExitCode.MAX_TOKENS


def test_a_session_the_agent_cannot_continue_is_reported_by_the_starting_command(hosts: Cli) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1, without=["load", "resume"]))
    message = error_line(cli.run("prompt", "--session", sid, "hello", env=LIVE), ExitCode.CAPABILITY)
    assert "can neither resume nor load" in message
    assert live_rows(cli) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
def test_another_user_cannot_reach_a_host(hosts: Cli, tmp_path: Path) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    cli.ok("prompt", "--session", sid, "hello", env=LIVE)
    from acpcli.session.hostwire.address import socket_dir

    sockets = list(socket_dir().glob("*.sock"))  # the test's ACPCLI_HOME is this process's too
    assert len(sockets) == 1
    assert oct(sockets[0].stat().st_mode & 0o777) == "0o600"
    assert oct(socket_dir().stat().st_mode & 0o777) == "0o700"
    assert oct((cli.home / "run").stat().st_mode & 0o777) == "0o700"
    probe = (
        "import socket,sys\n"
        "s=socket.socket(socket.AF_UNIX)\n"
        "try:\n s.connect(sys.argv[1])\nexcept OSError as e:\n print('refused', e.errno)\nelse:\n print('connected')\n"
    )
    nobody = 65534
    out = subprocess.run(
        ["python3", "-c", probe, str(sockets[0])], capture_output=True, text=True, timeout=30,
        preexec_fn=lambda: (os.setgid(nobody), os.setuid(nobody)),
        check=False,
    )
    assert out.stdout.startswith("refused"), out.stdout + out.stderr


def test_attach_shows_a_turn_sent_from_a_script_as_it_streams_and_sends_its_own(hosts: Cli, spawn) -> None:  # type: ignore[no-untyped-def]
    from .pty import CTRL_D, REPLY

    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()
    cli.ok("prompt", "--session", sid, "before attaching", env=LIVE)
    pty = spawn("attach", sid, "--permissions", "allow")
    pty.expect("attached to")
    pty.expect("before attaching")  # the transcript so far
    pty.prompt()
    pty.child.send("half typed")
    script = subprocess.Popen(
        cli.argv("prompt", "--session", sid, "--permissions", "allow", "from the script"), env=cli.env(LIVE),
        cwd=cli.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    pty.expect(r"\(from another terminal\)")
    pty.expect("from the script")
    pty.expect(REPLY)
    _out, _err = script.communicate(timeout=TIMEOUT)
    assert script.returncode == 0, _err
    pty.prompt()
    pty.expect("half typed")  # what was typed before the turn came back with the input line
    pty.say(" and sent from here")
    pty.expect("half typed and sent from here")
    pty.expect(REPLY)
    pty.prompt()
    pty.child.send(CTRL_D)
    pty.expect("the session stays live")
    assert pty.wait() == 0
    assert [row["id"] for row in live_rows(cli)] == [sid]  # leaving keeps the session live
    shown = cli.show(sid)
    assert shown.index("before attaching") < shown.index("from the script") < shown.index("half typed and sent")
    assert cli.trace.pids() == [live_rows(cli)[0]["agentPid"]]


def test_attach_to_a_session_with_no_host_says_how_to_start_one(cli: Cli, spawn) -> None:  # type: ignore[no-untyped-def]
    """A session this index does not hold and no host runs: nothing to start (a recorded
    one is offered a host: test_parity_32.py)."""
    import pexpect

    sid = "demo-0123456789abcdef0123456789abcdef"
    pty = spawn("attach", sid)
    pty.expect("is not live: no host runs it")
    pty.expect(f"acpcli load {sid}")
    pty.expect(pexpect.EOF)
    pty.child.close()
    assert pty.child.exitstatus == ExitCode.HOST_LOST
    assert "is not live" in error_line(cli.run("attach", sid), ExitCode.HOST_LOST)


def test_settings_given_to_a_warm_prompt_apply_to_the_live_session(hosts: Cli) -> None:
    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()
    out = cli.ok("prompt", "--session", sid, "--model", "smart", "status", env=LIVE).stdout
    assert "model=demo-smart" in out
    again = cli.ok("prompt", "--session", sid, "status", env=LIVE).stdout
    assert "model=demo-smart" in again  # the live session keeps it
    assert len(cli.trace.pids()) == 1


def test_a_bad_setting_on_a_warm_prompt_is_its_own_error_and_the_host_stays(hosts: Cli) -> None:
    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()
    bad = cli.run("prompt", "--session", sid, "--model", "no-such-model", "status", env=LIVE)
    assert bad.returncode == ExitCode.USAGE, bad.stderr
    assert "Traceback" not in bad.stderr
    assert "hello again" in cli.ok("prompt", "--session", sid, "hello again", env=LIVE).stdout
    assert len(cli.trace.pids()) == 1


def test_ctrl_c_withdraws_a_waiting_prompt_and_cancels_only_the_running_turn(hosts: Cli) -> None:
    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1, extra=["--delay", "0.05"]), env=LIVE)
    sid = sid.stdout.strip()
    env = cli.env(LIVE)

    def start(text: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            cli.argv("prompt", "--session", sid, text), env=env, cwd=cli.cwd, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )

    running_one = start("slow running")
    assert running_one.stdout is not None
    while "slow running" not in (running_one.stdout.readline() or "slow running"):
        pass
    waiting = start("slow waiting")
    assert waiting.stderr is not None
    line = waiting.stderr.readline()
    assert "waiting behind 1 turn" in line
    waiting.send_signal(signal.SIGINT)
    _out, err = waiting.communicate(timeout=TIMEOUT)
    assert waiting.returncode == ExitCode.INTERRUPTED, err
    assert "Traceback" not in err
    running_one.send_signal(signal.SIGINT)  # cancels the running turn only
    _out, err = running_one.communicate(timeout=TIMEOUT)
    assert running_one.returncode == ExitCode.INTERRUPTED, err
    shown = cli.show(sid)
    assert "slow running" in shown
    assert "slow waiting" not in shown  # withdrawn: never sent
    assert "after both" in cli.ok("prompt", "--session", sid, "after both", env=LIVE).stdout
    assert len(cli.trace.pids()) == 1  # the host stayed


def test_timeout_bounds_a_warm_turn_and_the_host_stays(hosts: Cli) -> None:
    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1, extra=["--delay", "0.2"]), env=LIVE)
    sid = sid.stdout.strip()
    proc = cli.run("prompt", "--session", sid, "--timeout", "1", "slow", env=LIVE)
    assert proc.returncode == ExitCode.TIMEOUT, proc.stderr
    assert "the turn outlasted --timeout 1 s: cancelled" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "after the timeout" in cli.ok("prompt", "--session", sid, "after the timeout", env=LIVE).stdout
    assert len(cli.trace.pids()) == 1


def test_the_command_that_started_a_host_does_not_end_it_on_its_way_out(hosts: Cli) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    cli.ok("prompt", "--session", sid, "start it", env=LIVE)
    (row,) = live_rows(cli)  # the starting command has exited: its sweep left the host alone
    assert running(int(row["pid"])) and running(int(row["agentPid"]))  # type: ignore[arg-type]


def test_a_host_and_a_command_without_one_take_turns_on_a_session(hosts: Cli, tmp_path: Path) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1))  # no host yet: the cold command starts its own agent
    out_file = tmp_path / "cold.jsonl"
    with open(out_file, "w") as out:
        cold = subprocess.Popen(  # a turn that lasts (its command runs 3 s) while the host starts
            cli.argv(
                "prompt", "--session", sid, "--keep-alive", "0", "--format", "jsonl", "--permissions", "allow",
                "cold one run sleep 3",
            ),
            env=cli.env(), cwd=cli.cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.PIPE, text=True,
        )
    deadline = time.monotonic() + TIMEOUT
    while "cold one" not in out_file.read_text() and time.monotonic() < deadline:
        time.sleep(0.02)  # its turn is running: it holds the session's writer lock
    warm = cli.run("prompt", "--session", sid, "--format", "jsonl", "warm one", env=LIVE)
    _out, cold_err = cold.communicate(timeout=TIMEOUT)
    assert cold.returncode == 0, cold_err
    assert warm.returncode == 0, warm.stderr
    # (the host the warm one starts waits for the cold turn while it attaches the session)
    cold_out = out_file.read_text()
    assert "warm one" not in jsonl_texts(cold_out) and "warm one" in jsonl_texts(warm.stdout)
    shown = cli.show(sid)
    assert shown.index("cold one") < shown.index("warm one")
    free = cli.run("prompt", "--session", sid, "--no-wait", "fine now", env=LIVE)
    assert free.returncode == 0, free.stderr  # nobody else writes now


@pytest.mark.parametrize("how", [["--session", "SID"], ["--last"]], ids=["session", "last"])
def test_a_prompt_without_keep_alive_on_a_live_session_goes_through_its_host(hosts: Cli, how: list[str]) -> None:
    # issue 32.9: the host's agent takes the turn; no second agent starts beside it
    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()
    (row,) = live_rows(cli)
    args = [sid if arg == "SID" else arg for arg in how]
    cold = cli.run("prompt", *args, "--keep-alive", "0", "--format", "jsonl", "cold one no-permission")
    assert cold.returncode == 0, cold.stderr
    assert f"session {sid} is live: its agent takes this turn" in cold.stderr
    assert "cold one" in jsonl_texts(cold.stdout)
    assert cli.trace.pids() == [row["agentPid"]]  # the host's agent, and no other
    warm = cli.ok("prompt", "--session", sid, "warm one no-permission", env=LIVE)
    assert "Turn 2" in warm.stdout  # the host's agent counts the cold one as its first turn
    shown = cli.show(sid)
    assert shown.index("cold one") < shown.index("warm one")
    assert live_rows(cli)[0]["pid"] == row["pid"]


def test_sessions_json_says_which_sessions_are_live(hosts: Cli) -> None:
    cli = hosts
    live_id = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()
    cold_id = cli.new(cli.trace.demo_cmd(protocol=1))
    flags = {row["id"]: row["live"] for row in cli.index()}
    assert flags == {live_id: True, cold_id: False}


def test_rm_and_close_of_a_live_session_stop_its_host_first(hosts: Cli) -> None:
    cli = hosts
    doomed = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()
    closing = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()
    rows = {row["id"]: row for row in live_rows(cli)}
    removed = cli.ok("sessions", "rm", doomed, "--yes")
    assert "stopped the live session's host" in removed.stderr
    assert not running(int(rows[doomed]["pid"])) and not running(int(rows[doomed]["agentPid"]))  # type: ignore[arg-type]
    closed = cli.ok("close", closing)
    assert "stopped the live session's host" in closed.stderr
    assert not running(int(rows[closing]["pid"]))  # type: ignore[arg-type]
    assert live_rows(cli) == []
    (record,) = cli.index()
    assert record["id"] == closing and record["state"] == "closed"


def test_a_client_that_sends_nonsense_is_dropped_and_the_host_stays(hosts: Cli) -> None:
    import socket

    from acpcli.session.hostwire.address import socket_path

    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()
    for junk in (b"not json\n", b'{"t": "hello"}\n{"t": "answer", "id": {"x": 1}}\n', b"[1, 2]\n", b"\xff\xfe\n"):
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(str(socket_path(sid)))
            sock.sendall(junk)
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(10)
            try:
                while sock.recv(65536):
                    pass
            except OSError:
                pass
    assert "still here" in cli.ok("prompt", "--session", sid, "still here", env=LIVE).stdout
    assert len(live_rows(cli)) == 1


def test_a_one_shot_prompt_with_keep_alive_leaves_its_new_session_live(hosts: Cli) -> None:
    cli = hosts
    first = cli.ok("prompt", "--cmd", cli.trace.demo_cmd(protocol=1), "--keep-alive", "60", "first of many")
    assert "first of many" in first.stdout
    (row,) = live_rows(cli)
    assert f"session {row['id']}" in first.stderr
    again = cli.ok("prompt", "--last", "second of many", env=LIVE)
    assert "second of many" in again.stdout
    assert cli.trace.pids() == [row["agentPid"]]  # one agent for both prompts


# -- the REPL over a host (new, load, resume with keep-alive on) -----------------------------


def _repl_on_a_host(cli: Cli, spawn, *extra: str):  # type: ignore[no-untyped-def]
    """An interactive ``new`` with keep-alive on: its REPL, and the host's row."""
    pty = spawn("new", "--cmd", cli.trace.demo_cmd(protocol=1, extra=list(extra)), "--keep-alive", "300", "--permissions", "allow")
    pty.expect("/help for commands")
    pty.prompt()
    (row,) = live_rows(cli)
    return pty, row


def test_the_repl_of_new_runs_over_a_host_and_attach_and_a_script_share_its_turns(hosts: Cli, spawn) -> None:  # type: ignore[no-untyped-def]
    from .pty import CTRL_D, REPLY

    cli = hosts
    repl, row = _repl_on_a_host(cli, spawn)
    sid = str(row["id"])
    repl.say("typed in the repl")
    repl.expect(REPLY)
    repl.prompt()
    watcher = spawn("attach", sid, "--permissions", "allow")
    watcher.expect("attached to")
    watcher.expect("typed in the repl")  # the REPL's turn, stored by the host
    watcher.prompt()
    repl.say("second from the repl")
    watcher.expect("second from the repl")  # streamed to the other terminal as it runs
    watcher.expect(REPLY)
    repl.expect(REPLY)
    repl.prompt()
    watcher.prompt()
    watcher.say("typed in attach")
    repl.expect(r"\(from another terminal\)")
    repl.expect("typed in attach")
    repl.expect(REPLY)
    watcher.expect(REPLY)
    script = cli.run("prompt", "--session", sid, "--permissions", "allow", "from the script", env=LIVE)
    assert script.returncode == 0, script.stderr
    repl.expect(r"\(from another terminal\)")
    repl.expect("from the script")
    repl.expect(REPLY)
    repl.prompt()
    watcher.expect("from the script")  # the watcher draws the script's turn too, then its line comes back
    watcher.expect(REPLY)
    watcher.prompt()
    watcher.child.send(CTRL_D)
    watcher.expect("the session stays live")
    assert watcher.wait() == 0
    repl.child.send(CTRL_D)
    repl.expect("the session stays live")
    repl.expect(f"acpcli attach {sid}")
    assert repl.wait() == 0
    (after,) = live_rows(cli)  # Ctrl-D leaves the host, and its one agent, running
    assert after["pid"] == row["pid"]
    assert cli.trace.pids() == [row["agentPid"]]
    shown = cli.show(sid)
    order = ["typed in the repl", "second from the repl", "typed in attach", "from the script"]
    assert [shown.index(text) for text in order] == sorted(shown.index(text) for text in order)


def test_mode_and_close_in_a_repl_over_a_host_go_through_it_and_close_leaves_nothing(hosts: Cli, spawn) -> None:  # type: ignore[no-untyped-def]
    cli = hosts
    repl, row = _repl_on_a_host(cli, spawn)
    repl.say("/mode plan")
    repl.expect("Session Mode: Plan")
    repl.prompt()
    # the host's session has it: a warm prompt from a script runs in that mode
    assert "mode=plan" in cli.ok("prompt", "--session", str(row["id"]), "which mode", env=LIVE).stdout
    repl.say("/mode nonsense")
    repl.expect("/mode: ")  # one line, and the REPL goes on
    repl.prompt()
    watcher = spawn("attach", str(row["id"]))
    watcher.expect("attached to")
    watcher.prompt()
    repl.say("/close")
    from acpcli.text.safe import shown_id

    repl.expect(re.escape(f"closed {shown_id(str(row['id']))}"))  # (the line `close` prints)
    assert repl.wait() == 0
    watcher.expect("the session was closed from another terminal")  # not an error: exit 0
    assert watcher.wait() == 0
    for pid in (row["pid"], row["agentPid"]):
        deadline = time.monotonic() + 10
        while running(int(pid)) and time.monotonic() < deadline:  # type: ignore[arg-type]
            time.sleep(0.05)
        assert not running(int(pid))  # type: ignore[arg-type]
    assert live_rows(cli) == []
    cli.trace.assert_all_gone()
    (record,) = cli.index()
    assert record["state"] == "closed"


def test_a_host_killed_during_a_repl_turn_ends_the_repl_with_one_line(hosts: Cli, spawn) -> None:  # type: ignore[no-untyped-def]
    cli = hosts
    repl, row = _repl_on_a_host(cli, spawn, "--delay", "0.05")
    repl.say("slow killed")
    repl.expect("Thought")  # the turn is streaming
    os.kill(int(row["pid"]), signal.SIGKILL)  # type: ignore[arg-type]
    repl.expect("acpcli: error: the session host went away mid-turn")
    assert repl.wait() == ExitCode.HOST_LOST
    assert "Traceback" not in repl.seen
    assert "slow killed" in cli.show(str(row["id"]))


def test_a_repl_with_keep_alive_zero_starts_no_host(cli: Cli, spawn) -> None:  # type: ignore[no-untyped-def]
    from .pty import REPLY

    pty = spawn("new", "--cmd", cli.trace.demo_cmd(protocol=1), "--keep-alive", "0", "--permissions", "allow")
    pty.prompt()
    pty.say("no host here")
    pty.expect(REPLY)
    pty.prompt()
    assert live_rows(cli) == []
    assert not (cli.home / "run").exists()
    code, _sid = pty.leave()
    assert code == 0
    cli.trace.assert_all_gone()


def test_load_and_resume_with_keep_alive_leave_a_warm_host_or_join_the_running_one(hosts: Cli) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    cli.ok("prompt", "--session", sid, "said before")
    cold = cli.ok("load", sid, "--no-repl", "--keep-alive", "0").stdout
    assert live_rows(cli) == []
    warm = cli.ok("load", sid, "--no-repl", "--keep-alive", "60").stdout
    assert same_turn(warm) == same_turn(cold)  # the replay printed as without a host
    (row,) = live_rows(cli)
    agents = cli.trace.pids()
    assert agents[-1] == row["agentPid"]
    assert "warm after load" in cli.ok("prompt", "--session", sid, "warm after load", env=LIVE).stdout
    # a second load or a resume joins the running host: no second agent
    again = cli.ok("load", sid, "--no-repl", "--keep-alive", "60").stdout
    assert "warm after load" in again
    assert cli.ok("resume", sid, "--no-repl", "--keep-alive", "60").stdout == ""
    assert cli.trace.pids() == agents
    (same,) = live_rows(cli)
    assert same["pid"] == row["pid"]


def test_resume_with_keep_alive_starts_a_host_that_resumed(hosts: Cli) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    assert cli.ok("resume", sid, "--no-repl", "--keep-alive", "60").stdout == ""
    (row,) = live_rows(cli)
    assert "after resume" in cli.ok("prompt", "--session", sid, "after resume", env=LIVE).stdout
    assert cli.trace.pids()[-1] == row["agentPid"]


def test_an_interactive_load_with_keep_alive_runs_its_repl_over_the_host(hosts: Cli, spawn) -> None:  # type: ignore[no-untyped-def]
    from .pty import CTRL_D, REPLY

    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    cli.ok("prompt", "--session", sid, "--permissions", "allow", "remembered words")
    repl = spawn("load", sid, "--keep-alive", "60", "--permissions", "allow")
    repl.expect(f"session {sid}")
    repl.expect("remembered words")  # the replay, as stored
    repl.prompt()
    (row,) = live_rows(cli)
    repl.say("and now this")
    repl.expect(REPLY)
    repl.prompt()
    repl.child.send(CTRL_D)
    repl.expect("the session stays live")
    assert repl.wait() == 0
    assert live_rows(cli)[0]["pid"] == row["pid"]
    shown = cli.show(sid)
    assert shown.index("remembered words") < shown.index("and now this")


def _frames(stdout: str) -> list[tuple[str, str, object]]:
    """A ``--raw`` run's frames from its ``session/prompt`` on: direction, method (or answer)
    and update kind."""
    rows = [json.loads(line) for line in stdout.splitlines()]
    shape = [
        (
            row["direction"],
            row["message"].get("method") or ("result" if "result" in row["message"] else "error"),
            ((row["message"].get("params") or {}).get("update") or {}).get("sessionUpdate"),
        )
        for row in rows
    ]
    start = next(n for n, frame in enumerate(shape) if frame[1] == "session/prompt")
    return shape[start:]


def test_raw_on_a_live_session_streams_the_turns_frames_as_cold(hosts: Cli) -> None:
    cli = hosts
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    cli.ok("prompt", "--session", sid, "first", "--keep-alive", "0")
    cold = cli.ok("prompt", "--session", sid, "--raw", "--keep-alive", "0", "alpha").stdout
    cli.ok("prompt", "--session", sid, "start the host", env=LIVE)
    (row,) = live_rows(cli)
    warm = cli.ok("prompt", "--session", sid, "--raw", "alpha", env=LIVE).stdout
    assert _frames(warm) == _frames(cold)
    assert [json.loads(line)["message"]["method"] for line in warm.splitlines()[:1]] == ["session/prompt"]
    assert cli.trace.pids()[-1] == row["agentPid"]  # the warm one ran on the host's agent
    assert live_rows(cli)[0]["pid"] == row["pid"]


def test_each_new_sessions_host_log_is_its_own_and_masks_secrets(hosts: Cli) -> None:
    import shlex
    import sys

    cli = hosts
    secret = "sekrit-value-1234"
    # the agent's last stderr line (quoted by the host's log when it crashes) holds a key
    agent = f"{shlex.quote(sys.executable)} -m acpcli.demo_agent --protocol 1"
    cmd = f"sh -c '{agent}; echo \"my key is $MY_API_KEY\" >&2; exit 3'"
    env = {**LIVE, "MY_API_KEY": secret}
    first = cli.ok("new", "--no-repl", "--cmd", cmd, env=env).stdout.strip()
    second = cli.ok("new", "--no-repl", "--cmd", cmd, env=env).stdout.strip()
    logs = cli.home / "logs"
    assert sorted(p.name for p in logs.glob("host-*.log")) == sorted([f"host-{first}.log", f"host-{second}.log"])
    crashed = cli.run("prompt", "--session", first, "crash", env=env)
    assert crashed.returncode == ExitCode.AGENT_EXITED, crashed.stderr
    text = (logs / f"host-{first}.log").read_text()
    assert "my key is ***" in text
    assert secret not in text


def test_ctrl_c_in_a_repl_over_a_host_cancels_the_turn_and_both_stay(hosts: Cli, spawn) -> None:  # type: ignore[no-untyped-def]
    from .pty import CTRL_C, REPLY

    cli = hosts
    repl, row = _repl_on_a_host(cli, spawn)
    repl.say("slow please")
    repl.expect("still streaming")
    repl.child.send(CTRL_C)
    repl.expect("Turn ended: cancelled")
    repl.prompt()
    repl.say("after the cancel")
    repl.expect(REPLY)
    repl.prompt()
    (after,) = live_rows(cli)
    assert after["pid"] == row["pid"] and after["agentPid"] == row["agentPid"]


def test_live_sessions_on_a_terminal_are_a_table_that_fits(hosts: Cli) -> None:
    """``sessions --live`` on a terminal: a table in its width with the ids as ``sessions``
    shows them (the unique prefix) and the agent's display name; on a pipe, whole tab-separated lines."""
    from .screen import screen_text

    cli = hosts
    sid = cli.ok("new", "--no-repl", "--agent", "demo", env=LIVE).stdout.strip()
    cli.ok("prompt", "--session", sid, "hello", env=LIVE)
    piped = cli.ok("sessions", "--live").stdout.splitlines()
    assert piped[0].split("\t")[:2] == ["ID", "AGENT"] and piped[1].split("\t")[0] == sid
    for width in (60, 100):
        out = cli.ok("sessions", "--live", env={"FORCE_COLOR": "1", "COLUMNS": str(width)}).stdout
        header, row = screen_text(out.replace("\n", "\r\n"), width=width, height=10).splitlines()[:2]
        assert "\t" not in header and header.split()[:2] == ["ID", "AGENT"]
        assert row.split()[:2] == [sid[:8], "demo"] and "idle" in row.split()
        assert len(header) <= width and len(row) <= width
