"""Standard input piped beside a prompt (issue 32.12): ``git diff | acpcli prompt "review this"``
sends the diff with the prompt, as a ``resource`` named ``stdin`` (embedded context) or a text
block between a header and an end line, the same through a session's host and without one."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pexpect
import pytest

from acpcli.errors import ExitCode
from acpcli.services.mentions import STDIN_FOOTER, STDIN_HEADER, STDIN_URI

from .conftest import TIMEOUT, Cli, error_line

LIVE = {"ACPCLI_KEEP_ALIVE": "300"}

DIFF = "diff --git a/x.py b/x.py\n-old line\n+new line with @nothing here\n"


def piped(cli: Cli, args: list[str], stdin: bytes | None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``acpcli ARGS`` with ``stdin`` piped in (None: /dev/null)."""
    proc = subprocess.run(
        cli.argv(*args), input=stdin, stdin=subprocess.DEVNULL if stdin is None else None, env=cli.env(env),
        cwd=cli.cwd, capture_output=True, timeout=TIMEOUT, check=False,
    )
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture(params=["hosted", "unhosted"])
def mode(request: pytest.FixtureRequest, cli: Cli) -> Iterator[dict[str, str]]:
    """The environment of a ``prompt --session`` through a host (keep-alive on) or without one;
    every host is stopped at the end."""
    yield LIVE if request.param == "hosted" else {"ACPCLI_KEEP_ALIVE": "0"}
    cli.run("stop", "--all")


def prompt_blocks(cli: Cli) -> list[list[dict[str, Any]]]:
    """The content blocks of every ``session/prompt`` the record agent received."""
    return [request["params"]["prompt"] for request in cli.trace.requests("session/prompt")]


def test_piped_stdin_is_a_resource_named_stdin_for_an_agent_with_embedded_context(cli: Cli, mode: dict[str, str]) -> None:
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    proc = piped(cli, ["prompt", "--session", sid, "review this"], DIFF.encode(), env=mode)
    assert proc.returncode == 0, proc.stderr
    assert f"received resource {STDIN_URI} ({len(DIFF)} chars)" in proc.stdout
    shown = cli.show(sid)
    assert shown.index("review this") < shown.index(f"[resource {STDIN_URI}]")


def test_piped_stdin_is_a_headed_text_block_for_an_agent_without_embedded_context(cli: Cli, mode: dict[str, str]) -> None:
    sid = cli.new(cli.trace.record_cmd("--load", "--resume"))
    proc = piped(cli, ["prompt", "--session", sid, "review", "this"], DIFF.encode(), env=mode)
    assert proc.returncode == 0, proc.stderr
    (blocks,) = prompt_blocks(cli)
    assert blocks == [
        {"type": "text", "text": "review this"},
        {"type": "text", "text": f"{STDIN_HEADER}\n{DIFF}{STDIN_FOOTER}"},
    ]
    assert "new line with @nothing here" in cli.show(sid)  # the context is part of the stored prompt


@pytest.mark.parametrize("stdin", [None, b"", b"  \n\n\t\n"], ids=["dev-null", "empty", "blank"])
def test_empty_stdin_adds_nothing(cli: Cli, mode: dict[str, str], stdin: bytes | None) -> None:
    sid = cli.new(cli.trace.record_cmd("--load", "--resume"))
    proc = piped(cli, ["prompt", "--session", sid, "just this"], stdin, env=mode)
    assert proc.returncode == 0, proc.stderr
    assert prompt_blocks(cli) == [[{"type": "text", "text": "just this"}]]


def test_a_new_session_with_a_prompt_file_sends_stdin_after_it(cli: Cli) -> None:
    task = cli.cwd / "task.md"
    task.write_text("check the tests\n")
    last = "no newline at the end"
    proc = piped(cli, ["prompt", "--cmd", cli.trace.record_cmd(), "-f", str(task)], last.encode())
    assert proc.returncode == 0, proc.stderr
    assert prompt_blocks(cli) == [[
        {"type": "text", "text": "check the tests\n"},
        {"type": "text", "text": f"{STDIN_HEADER}\n{last}\n{STDIN_FOOTER}"},
    ]]


def test_stdin_as_the_prompt_is_not_sent_twice(cli: Cli) -> None:
    proc = piped(cli, ["prompt", "--cmd", cli.trace.record_cmd(), "-f", "-"], b"the whole prompt\n")
    assert proc.returncode == 0, proc.stderr
    assert prompt_blocks(cli) == [[{"type": "text", "text": "the whole prompt\n"}]]


@pytest.mark.parametrize(
    ("stdin", "said"),
    [
        pytest.param(b"text\0more", "cannot read standard input: binary data, not text (a NUL byte at offset 4)", id="binary"),
        pytest.param(b"ok \xff", "cannot read standard input: not UTF-8 text (byte 0xff at offset 3)", id="not-utf8"),
    ],
)
def test_piped_stdin_that_is_not_text_is_refused_before_the_agent_starts(cli: Cli, stdin: bytes, said: str) -> None:
    proc = piped(cli, ["prompt", "--cmd", cli.trace.demo_cmd(), "review this"], stdin)
    assert error_line(proc, ExitCode.USAGE) == said
    assert cli.trace.pids() == []


def test_piped_stdin_over_the_cap_is_refused(cli: Cli) -> None:
    from acpcli.cli.streams import MAX_PROMPT_BYTES

    proc = piped(cli, ["prompt", "--cmd", cli.trace.demo_cmd(), "review this"], b"a" * (MAX_PROMPT_BYTES + 10))
    assert error_line(proc, ExitCode.USAGE).startswith("standard input is too large: more than 8")
    assert cli.trace.pids() == []


def test_a_terminal_on_stdin_is_never_read(spawn, cli: Cli) -> None:  # type: ignore[no-untyped-def]
    trace = {"RECORD_FILE": str(cli.trace.record_file), "PID_FILE": str(cli.trace.pid_file)}
    pty = spawn("prompt", "--cmd", cli.trace.record_cmd(), "from a terminal", env=trace)
    pty.expect("you said: from a terminal")
    pty.child.expect(pexpect.EOF, timeout=TIMEOUT)
    assert prompt_blocks(cli) == [[{"type": "text", "text": "from a terminal"}]]
