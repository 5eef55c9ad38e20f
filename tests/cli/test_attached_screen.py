"""Every terminal attached to a live session draws every turn as the REPL draws its own
(issue 32): the live region with its status line, the answer in whole lines once, each tool
call and plan once per change, the header of another terminal's turn before it — checked on
the emulated screens (:mod:`tests.cli.screen`) of two terminals, with the demo agent
streaming in small chunks."""

from __future__ import annotations

import subprocess

import pytest

from acpcli.errors import ExitCode

from .conftest import TIMEOUT, Cli
from .pty import CTRL_C, CTRL_D, Pty
from .screen import screen_text
from .test_live_sessions import LIVE, live_rows
from .test_live_sessions import (
    hosts as hosts,  # the fixture: every host stopped, nothing left behind
)

WIDTH = 72
HEADER = "── (from another terminal) ──"
#: The end of the demo agent's answer.
LAST = "CMD."


def _repl(cli: Cli, spawn, *agent: str, width: int = WIDTH) -> tuple[Pty, str]:  # type: ignore[no-untyped-def]
    repl: Pty = spawn(
        "new", "--cmd", cli.trace.demo_cmd(protocol=1, extra=list(agent)), "--keep-alive", "300",
        "--permissions", "allow", width=width, true_cpr=True,
    )
    repl.expect("/help for commands")
    repl.prompt()
    (row,) = live_rows(cli)
    return repl, str(row["id"])


def _attach(spawn, sid: str, width: int = WIDTH) -> Pty:  # type: ignore[no-untyped-def]
    watcher: Pty = spawn("attach", sid, width=width, true_cpr=True)
    watcher.expect("attached to")
    watcher.prompt()
    return watcher


def _turn(screen: str, prompt: str) -> list[str]:
    """The lines of the turn of ``prompt`` (its ``›`` line to the answer's last line)."""
    lines = screen.splitlines()
    start = lines.index(f"› {prompt}")
    end = next(i for i in range(start, len(lines)) if lines[i].endswith(LAST))
    return lines[start : end + 1]


def _lines_from(lines: list[str], first: str) -> list[str]:
    """The lines that are not blank from the line ``first`` on."""
    return [line for line in lines[lines.index(first) :] if line.strip()]


def _count(lines: list[str], word: str) -> int:
    return sum(1 for line in lines if word in line)


@pytest.mark.parametrize("width", [60, 100])
def test_an_attached_terminal_draws_a_streamed_turn_as_the_sender_does(hosts: Cli, spawn, width: int) -> None:  # type: ignore[no-untyped-def]
    cli = hosts
    repl, sid = _repl(cli, spawn, "--delay", "0.01", "--chunk-size", "5", width=width)
    watcher = _attach(spawn, sid, width)
    repl.say("hello there")
    watcher.expect("another terminal's turn")  # the status line of a running turn: it is busy
    watcher.child.send(CTRL_C)  # not this terminal's to cancel: said, and the turn goes on
    watcher.expect("it is cancelled there")
    repl.expect("Ctrl-C cancels")
    repl.prompt()
    watcher.prompt()
    mine, theirs = screen_text(repl.seen, width), screen_text(watcher.seen, width)
    assert theirs.count(HEADER) == 1 and theirs.index(HEADER) < theirs.index("› hello there"), theirs
    assert _count(theirs.splitlines(), "it is cancelled there") == 1, theirs
    sent = _turn(mine, "hello there")
    seen = [line for line in _turn(theirs, "hello there") if "it is cancelled there" not in line]
    # the answer in whole lines, once each, as the terminal that sent it has it (the notice,
    # wherever it landed, aside)
    assert _lines_from(seen, "Demo agent reply") == _lines_from(sent, "Demo agent reply"), theirs
    assert _count(seen, "Demo agent reply") == 1, theirs
    for word in ("Take stock of the request", "-Hello.", "+Turn 1: hello there", "Thought ·"):
        assert _count(seen, word) == _count(sent, word) == (1 if word != "Take stock of the request" else 2), (
            word, mine, theirs,
        )
    assert "idle" not in theirs.split(HEADER)[1].split(LAST)[0], theirs  # no toolbar over the turn
    for pty in (watcher, repl):
        pty.child.send(CTRL_D)
        pty.expect("the session stays live")
        assert pty.wait() == ExitCode.OK


def test_another_terminals_turn_is_headed_after_this_terminals_answer(hosts: Cli, spawn) -> None:  # type: ignore[no-untyped-def]
    cli = hosts
    repl, sid = _repl(cli, spawn, "--delay", "0.005")
    watcher = _attach(spawn, sid)
    repl.say("mine first")
    repl.expect("Thought")  # its turn runs: the script's prompt waits behind it
    script = subprocess.Popen(
        cli.argv("prompt", "--session", sid, "--permissions", "allow", "from the script"), env=cli.env(LIVE),
        cwd=cli.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    _out, err = script.communicate(timeout=TIMEOUT)
    assert script.returncode == 0, err
    for pty in (repl, watcher):
        pty.expect("from the script")
        pty.prompt()
    screen = screen_text(repl.seen, WIDTH)
    assert screen.count(HEADER) == 1, screen
    mine = _turn(screen, "mine first")
    assert HEADER not in mine, screen  # not between the prompt and its answer
    assert screen.index(LAST) < screen.index(HEADER) < screen.index("› from the script"), screen
    theirs = screen_text(watcher.seen, WIDTH)
    assert theirs.count(HEADER) == 2, theirs
    first, second = theirs.split(HEADER)[1:]
    assert "› mine first" in first and LAST in first and "from the script" not in first, theirs
    assert second.lstrip("\n").startswith("› from the script"), theirs
    assert _count(second.splitlines(), "Demo agent reply") == 1, theirs


STOPPED = "the session's host was stopped from another terminal"


def test_stop_from_elsewhere_ends_attached_terminals_in_one_line_not_as_a_crash(hosts: Cli, spawn) -> None:  # type: ignore[no-untyped-def]
    cli = hosts
    repl, sid = _repl(cli, spawn, "--delay", "0.05")
    watcher = _attach(spawn, sid)
    repl.say("slow and long")  # a turn of the REPL's under way: it ends cancelled, then the REPL
    repl.expect("Thought")
    watcher.expect("another terminal's turn")
    assert f"stopped {sid}" in cli.ok("stop", sid).stderr
    for pty in (repl, watcher):
        pty.expect(STOPPED)
        assert pty.wait() == ExitCode.OK
        screen = screen_text(pty.seen, WIDTH)
        assert "went away" not in screen and "acpcli: error" not in screen, screen
        assert screen.count(STOPPED) == 1 and f"acpcli resume {sid}" in screen.replace("\n", ""), screen
    assert "Turn ended: cancelled" in screen_text(repl.seen, WIDTH)
    assert live_rows(cli) == []
    assert "slow and long" in cli.show(sid)  # the session stays, to be continued


def test_the_host_tells_its_watchers_it_stops_before_it_goes(hosts: Cli) -> None:
    import json
    import socket

    from acpcli.session.hostwire.address import socket_path

    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(TIMEOUT)
        sock.connect(str(socket_path(sid)))
        reader = sock.makefile("rb")
        sock.sendall(b'{"t": "hello", "pid": 4242, "role": "attach"}\n')
        assert json.loads(reader.readline())["t"] == "ready"
        cli.ok("stop", sid)
        said = [json.loads(line)["t"] for line in reader]  # to the end of the connection
    assert said == ["stopping"], said


def test_a_terminal_attached_mid_turn_draws_that_turn_once_whole(hosts: Cli, spawn) -> None:  # type: ignore[no-untyped-def]
    cli = hosts
    repl, sid = _repl(cli, spawn, "--delay", "0.03", "--chunk-size", "6")
    repl.say("joined halfway")
    repl.expect("What happened")  # the answer is half streamed when the other terminal joins
    watcher: Pty = spawn("attach", sid, width=WIDTH, true_cpr=True)
    watcher.expect("attached to")
    watcher.expect("another terminal's turn")
    watcher.prompt()
    repl.prompt()
    mine, theirs = screen_text(repl.seen, WIDTH), screen_text(watcher.seen, WIDTH)
    assert theirs.count(HEADER) == 1 and theirs.index(HEADER) < theirs.index("› joined halfway"), theirs
    seen, sent = _turn(theirs, "joined halfway"), _turn(mine, "joined halfway")
    for word in ("Demo agent reply", "You wrote:", "What happened in this turn:", "-Hello."):
        assert _count(seen, word) == _count(sent, word) == 1, (word, theirs)
    assert seen[seen.index("Demo agent reply") :] == sent[sent.index("Demo agent reply") :], theirs


def test_close_from_elsewhere_says_the_session_was_closed(hosts: Cli, spawn) -> None:  # type: ignore[no-untyped-def]
    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()
    watcher = _attach(spawn, sid)
    cli.ok("close", sid)  # stops the idle host first, then closes the session on the agent
    watcher.expect("the session was closed from another terminal")
    assert watcher.wait() == ExitCode.OK
    assert "host was stopped" not in screen_text(watcher.seen, WIDTH)
