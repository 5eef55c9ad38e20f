"""The real program in a subprocess: help, version, usage errors."""

from __future__ import annotations

import subprocess
import sys

from acpcli import __version__
from acpcli.errors import ExitCode


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acpcli", *args], capture_output=True, text=True, timeout=60
    )


def test_help_lists_usage() -> None:
    proc = run("--help")
    assert proc.returncode == 0
    assert "Usage: acpcli" in proc.stdout
    assert proc.stderr == ""


def test_help_names_what_to_type_not_python_types() -> None:
    # typer 0.29 would show "WORD <list[str]>", "session_id <str>": every value a command
    # takes has a metavar, shown alone (the arguments' types hidden by typer_compat)
    import re

    listing = run("--help").stdout.split("Commands:", 1)[1]
    commands = re.findall(r"^  ([a-z]+) ", listing, re.MULTILINE)
    assert {"load", "prompt", "search", "sessions", "agents"} <= set(commands)
    for command in commands:
        proc = run(command, "--help")
        assert proc.returncode == 0, (command, proc.stderr)
        assert re.search(r"<[a-z]+(\[[a-z]+\])?>", proc.stdout) is None, (command, proc.stdout)
        assert "[[" not in proc.stdout.split("\n", 1)[0], proc.stdout  # the usage line


def test_version() -> None:
    proc = run("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"acpcli {__version__}"


def test_a_reader_gone_before_any_output_is_a_quiet_success() -> None:
    # a broken pipe in a command body is the reader's choice, not a failure (exit 0, not
    # click's exit 1): the root group turns it into OutputClosed for main()
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "acpcli", "completion", "bash"],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60,
        )
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr) == (ExitCode.OK, "")


def test_unknown_command_is_usage_error() -> None:
    proc = run("no-such-command")
    assert proc.returncode == ExitCode.USAGE
    assert "no-such-command" in proc.stderr
    assert proc.stdout == ""


def test_agent_arg_names_an_agent_only_while_the_name_runs_the_same_command() -> None:
    from acpcli.session.agent import AgentChoice, agent_arg, pick_agent

    demo = pick_agent("demo", None)
    assert agent_arg(demo) == "demo"
    assert agent_arg(AgentChoice("demo", ["something", "else"])) == "--cmd 'something else'"
    # a --cmd session is recorded under the agent's own name, which `--agent` does not know
    assert agent_arg(AgentChoice("codex-acp", ["codex-acp", "--x"])) == "--cmd 'codex-acp --x'"
    assert agent_arg(AgentChoice("cmd", ["my-agent"])) == "--cmd my-agent"
