"""A wire log (``--log-file`` / ``ACPCLI_LOG_FILE``) that cannot be written never stops the
conversation it records: the answer arrives and is stored in full, one line says what was not
logged, and the command exits 17 (``OUTPUT``) at the end -- beside another error, a warning
line. A log that cannot even be opened is refused before any agent starts. In the REPL the
warning is shown at once. ``/dev/full`` stands in for a full disk."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import AgentTrace, Cli
from .pty import CTRL_D, REPLY

FULL = Path("/dev/full")
needs_full = pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")
NOT_LOGGED = re.compile(r"^acpcli: (error|warning): cannot write the wire log /dev/full: No space left on device \((\d+) frames not logged\)$")
ANSWER_END = "Keywords to try"  # the last paragraph of the demo agent's answer


def ours(stderr: str) -> list[str]:
    """acpcli's own stderr lines, less the permission policy's refusals and the session line."""
    return [line for line in stderr.splitlines() if line.startswith("acpcli:") and not line.startswith("acpcli: refused ")]


@needs_full
@pytest.mark.parametrize("how", ["--log-file", "ACPCLI_LOG_FILE"])
@pytest.mark.parametrize("protocol", [2, 1])
def test_a_full_log_does_not_stop_the_turn(cli: Cli, trace: AgentTrace, how: str, protocol: int) -> None:
    args = ["--log-file", str(FULL)] if how == "--log-file" else []
    env = {"ACPCLI_LOG_FILE": str(FULL)} if how == "ACPCLI_LOG_FILE" else None
    proc = cli.run("prompt", "--cmd", trace.demo_cmd(protocol=protocol), *args, "hello log", env=env)
    assert proc.returncode == ExitCode.OUTPUT, proc.stderr
    assert REPLY in proc.stdout and ANSWER_END in proc.stdout  # the answer arrived in full
    (line,) = ours(proc.stderr)
    match = NOT_LOGGED.match(line)
    assert match and match.group(1) == "error" and int(match.group(2)) > 3, proc.stderr
    assert "Traceback" not in proc.stderr
    (row,) = cli.index()
    shown = cli.show(row["id"])
    assert "hello log" in shown and ANSWER_END in shown  # and it was stored in full
    trace.assert_all_gone()


@needs_full
def test_beside_another_error_the_log_is_a_warning(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.run("prompt", "--cmd", trace.demo_cmd(), "--log-file", str(FULL), "refuse")
    assert proc.returncode == ExitCode.REFUSAL, proc.stderr
    warning, error = ours(proc.stderr)
    assert NOT_LOGGED.match(warning) and warning.startswith("acpcli: warning: "), proc.stderr
    assert error.startswith("acpcli: error: "), proc.stderr
    trace.assert_all_gone()


@pytest.mark.parametrize("where", ["directory", "under-a-file"])
def test_a_log_that_cannot_be_opened_is_refused_before_the_agent_starts(
    cli: Cli, trace: AgentTrace, tmp_path: Path, where: str
) -> None:
    (tmp_path / "file").write_text("")
    if where == "directory":  # (--log-file DIR is refused by its own check: exit 2)
        path = tmp_path
        proc = cli.run("prompt", "--cmd", trace.demo_cmd(), "hi", env={"ACPCLI_LOG_FILE": str(path)})
    else:
        path = tmp_path / "file" / "wire.log"
        proc = cli.run("prompt", "--cmd", trace.demo_cmd(), "--log-file", str(path), "hi")
    assert proc.returncode == ExitCode.OUTPUT, proc.stderr
    assert proc.stderr.startswith(f"acpcli: error: cannot write the wire log {path}: "), proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert trace.pids() == []  # nothing was started


@needs_full
def test_the_repl_says_it_at_once_and_goes_on(spawn, trace: AgentTrace) -> None:  # type: ignore[no-untyped-def]
    pty = spawn("new", "--cmd", trace.demo_cmd(), "--log-file", str(FULL))
    pty.expect(r"cannot write the wire log /dev/full: No space left on device; the session goes on without it")
    pty.prompt()
    pty.say("hello no-permission")
    pty.expect(ANSWER_END)
    pty.prompt()
    pty.say("again no-permission")
    pty.expect(r"\(turn 2\)")
    pty.prompt()
    pty.child.send(CTRL_D)
    assert pty.wait() == ExitCode.OUTPUT
    assert pty.seen.count("the session goes on without it") == 1  # said once, not per frame
    assert "frames not logged" in pty.seen  # and once more, as the exit's reason
    trace.assert_all_gone()
