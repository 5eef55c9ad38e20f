"""``acpcli rewind ID --to TURN`` rewinds the conversation too (issue 34): a new session holds
the turns before TURN (``show NEW``), the next prompt continues there, the old session stays as
it was. Through the real CLI: the demo agent (which cannot fork: the transcript goes with the
first prompt), and an agent written with the official SDK with and without ``session/fork``;
the next prompt through a live session's host and without one."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import Cli, error_line

SESSIONS_AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_sessions_agent.py"
MODES = {"hosted": "300", "unhosted": "0"}


@pytest.fixture(params=sorted(MODES))
def keep_alive(request: pytest.FixtureRequest, cli: Cli) -> object:
    yield MODES[request.param]
    cli.run("stop", "--all")


def test_the_demo_agent_gets_a_new_session_from_the_transcript_and_the_files_go_back(
    cli: Cli, workdir: Path, keep_alive: str
) -> None:
    env = {"ACPCLI_KEEP_ALIVE": keep_alive}
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=env).stdout.strip()
    for name in ("one", "two", "three", "four"):
        cli.ok("prompt", "--session", sid, "--permissions", "allow", f"write {name}.txt", env=env)
    before = cli.show(sid)
    done = cli.ok("rewind", sid, "--to", "3", "--yes", env=env)
    new = done.stdout.strip()
    assert done.stdout == new + "\n" and new != sid  # the id alone, as `new` prints it
    assert "sent to the agent as context with its first prompt" in done.stderr and "turns 1-2" in done.stderr
    assert "remove   three.txt" in done.stderr and "remove   four.txt" in done.stderr
    assert sorted(p.name for p in workdir.iterdir()) == ["one.txt", "two.txt"]
    shown = cli.show(new)
    assert "write one.txt" in shown and "write two.txt" in shown
    assert "write three.txt" not in shown and "write four.txt" not in shown
    assert cli.show(sid) == before  # the old session stays as it was
    (row,) = [r for r in cli.index() if r["id"] == new]
    assert row["parent"] == sid
    first = cli.ok("prompt", "--session", new, "--permissions", "allow", "write five.txt", env=env)
    assert "the conversation so far" in first.stdout or "acpcli:conversation-so-far" in first.stdout, first.stdout
    second = cli.ok("prompt", "--session", new, "--permissions", "allow", "write six.txt", env=env)
    assert "conversation so far" not in second.stdout and "conversation-so-far" not in second.stdout
    later = cli.show(new)
    assert "write five.txt" in later and "write six.txt" in later and "write three.txt" not in later
    assert later.count("write one.txt") == shown.count("write one.txt")  # the context is not recorded as said
    # the new session's checkpoints count its turns as its transcript does (1-2 came with it)
    rows = [json.loads(line) for line in cli.ok("checkpoints", new, "--json", env=env).stdout.splitlines()]
    assert [(r["turn"], [f["path"] for f in r["files"]]) for r in rows] == [(2, []), (3, ["five.txt"]), (4, ["six.txt"])]
    # so a rewound session rewinds again: before its turn 4, the files and the conversation agree
    again = cli.ok("rewind", new, "--to", "4", "--yes", env=env).stdout.strip()
    assert sorted(p.name for p in workdir.iterdir()) == ["five.txt", "one.txt", "two.txt"]
    shown_again = cli.show(again)
    assert "write five.txt" in shown_again and "write six.txt" not in shown_again and "write three.txt" not in shown_again
    cli.ok("rewind", new, "--undo", env=env)
    cli.ok("rewind", sid, "--undo", env=env)  # each session's own last rewind
    assert sorted(p.name for p in workdir.iterdir()) == ["five.txt", "four.txt", "one.txt", "six.txt", "three.txt", "two.txt"]


def _sdk(*flags: str) -> str:
    return shlex.join([sys.executable, str(SESSIONS_AGENT), *flags])


@pytest.fixture
def state(tmp_path: Path) -> dict[str, str]:
    return {"SDK_SESSIONS_STATE": str(tmp_path / "agent-sessions.json")}


@pytest.mark.parametrize("fork", [True, False], ids=["fork", "no-fork"])
def test_an_sdk_agent_forks_only_a_whole_conversation(cli: Cli, state: dict[str, str], fork: bool, keep_alive: str) -> None:
    env = {**state, "ACPCLI_KEEP_ALIVE": keep_alive}
    cmd = _sdk("--fork") if fork else _sdk()
    sid = cli.ok("new", "--no-repl", "--cmd", cmd, env=env).stdout.strip()
    for text in ("alpha", "beta", "gamma"):
        cli.ok("prompt", "--session", sid, text, env=env)
    # all three turns kept: the agent forks when it can
    whole = cli.ok("rewind", sid, "--to", "4", "--conversation", env=env)
    new = whole.stdout.strip()
    forks = cli.trace.requests("session/fork")
    if fork:
        assert len(forks) == 1 and "(session/fork)" in whole.stderr
    else:
        assert forks == [] and "cannot fork a conversation" in whole.stderr
    answer = cli.ok("prompt", "--session", new, "delta", env=env).stdout
    if fork:
        assert "(I remember: alpha, beta, gamma;" in answer, answer
    else:  # the agent holds nothing: the transcript came with the prompt
        assert "(I remember: nothing;" in answer and "alpha" in answer and "gamma" in answer, answer
    # two turns of three kept: a new session and the transcript, fork or not
    part = cli.ok("rewind", sid, "--to", "3", "--conversation", env=env)
    cut = part.stdout.strip()
    assert len(cli.trace.requests("session/fork")) == len(forks)
    assert ("forks only whole conversations" if fork else "cannot fork a conversation") in part.stderr
    answer = cli.ok("prompt", "--session", cut, "epsilon", env=env).stdout
    assert "you said: epsilon" in answer and "alpha" in answer and "beta" in answer and "gamma" not in answer, answer
    assert "(I remember: nothing;" in answer
    cli.ok("prompt", "--session", cut, "zeta", env=env)
    sent = {r["params"]["prompt"][0]["text"]: r["params"]["prompt"] for r in cli.trace.requests("session/prompt")}
    assert len(sent["epsilon"]) == 2 and sent["epsilon"][1]["text"].startswith("--- the conversation so far")
    assert len(sent["zeta"]) == 1  # sent once: then the agent has it
    shown = cli.show(cut)
    assert "alpha" in shown and "beta" in shown and "gamma" not in shown and "zeta" in shown
    # the old session is untouched, here and on the agent
    assert "gamma" in cli.show(sid) and "epsilon" not in cli.show(sid)
    assert "(I remember: alpha, beta, gamma;" in cli.ok("prompt", "--session", sid, "eta", env=env).stdout


def test_a_rewound_conversation_the_agent_forgot_starts_anew_not_from_the_whole_parent(
    cli: Cli, state: dict[str, str]
) -> None:
    # An agent that forks and, like claude, forgets a session no prompt reached: the next
    # process's prompt finds the rewound session gone. It must start again from the turns kept,
    # not from a fork of the parent, which holds the turns the rewind left out.
    env = {**state, "ACPCLI_KEEP_ALIVE": "0"}
    cmd = _sdk("--fork", "--forgetful")
    sid = cli.ok("new", "--no-repl", "--cmd", cmd, env=env).stdout.strip()
    for text in ("alpha", "beta", "gamma"):
        cli.ok("prompt", "--session", sid, text, env=env)
    cut = cli.ok("rewind", sid, "--to", "3", "--conversation", env=env).stdout.strip()
    forks = len(cli.trace.requests("session/fork"))
    answer = cli.ok("prompt", "--session", cut, "epsilon", env=env)
    assert len(cli.trace.requests("session/fork")) == forks, answer.stderr  # no fork of the parent
    assert "you said: epsilon" in answer.stdout and "gamma" not in answer.stdout, answer.stdout
    assert "alpha" in answer.stdout and "beta" in answer.stdout  # the transcript kept came with it


def test_rewinding_to_the_first_turn_is_an_empty_session(cli: Cli, state: dict[str, str]) -> None:
    sid = cli.ok("new", "--no-repl", "--cmd", _sdk(), env=state).stdout.strip()
    cli.ok("prompt", "--session", sid, "alpha", env=state)
    new = cli.ok("rewind", sid, "--to", "1", "--conversation", env=state).stdout.strip()
    assert "alpha" not in cli.show(new)
    answer = cli.ok("prompt", "--session", new, "beta", env=state).stdout
    assert "you said: beta (I remember: nothing;" in answer and "conversation so far" not in answer


def test_bad_rewinds_change_nothing_and_start_no_agent(cli: Cli, state: dict[str, str], workdir: Path) -> None:
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1)).stdout.strip()
    cli.ok("prompt", "--session", sid, "--permissions", "allow", "write one.txt")
    agents = len(cli.trace.pids())
    text = error_line(cli.run("rewind", sid, "--to", "3"), ExitCode.USAGE)
    assert "has 1 turn" in text and "from 1 to 2" in text
    text = error_line(cli.run("rewind", sid, "--undo", "--conversation"), ExitCode.USAGE)
    assert "--undo" in text
    (workdir / "one.txt").write_text("changed by hand\n")
    refused = cli.run("rewind", sid, "--to", "1", "--yes")
    assert refused.returncode == ExitCode.USAGE and "changed by hand" in refused.stderr and refused.stdout == ""
    dry = cli.ok("rewind", sid, "--to", "1", "--dry-run")
    assert "no new session" in dry.stderr
    assert len(cli.trace.pids()) == agents  # no agent started for any of them
    assert [r["id"] for r in cli.index()] == [sid]
    assert (workdir / "one.txt").read_text() == "changed by hand\n"
