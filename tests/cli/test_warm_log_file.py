"""``--log-file`` (and ``ACPCLI_LOG_FILE``) on a prompt sent to a warm host: the host writes
that turn's frames (from ``session/prompt`` to its answer, redacted as always) to the file the
command named, resolved against the command's own working directory; a file that cannot be
opened refuses the turn (exit 17, one line, nothing sent to the agent), one that cannot be
written is exit 17 at the end with the frames not logged counted, as without a host."""

from __future__ import annotations

import json
from pathlib import Path

from acpcli.errors import ExitCode

from .conftest import Cli, error_line
from .test_live_sessions import hosts  # noqa: F401 - the fixture: every host stopped at the end

LIVE = {"ACPCLI_KEEP_ALIVE": "300"}


def _prompts(log: Path) -> list[str]:
    """The text of every ``session/prompt`` the log holds."""
    texts = []
    for line in log.read_text().splitlines():
        frame = json.loads(line.split(" ", 2)[2])
        if frame.get("method") == "session/prompt":
            texts.append(" ".join(block.get("text", "") for block in frame["params"]["prompt"]))
    return texts


def test_a_warm_prompt_logs_its_turn_to_its_own_log_file(hosts: Cli, tmp_path: Path) -> None:  # noqa: F811
    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=2), env=LIVE).stdout.strip()
    cli.ok("prompt", "--session", sid, "before any log", env=LIVE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = cli.run("prompt", "--session", sid, "--log-file", "logs/first.log", "logged turn", env=LIVE, cwd=elsewhere)
    assert first.returncode == ExitCode.OK, first.stderr
    log = elsewhere / "logs" / "first.log"  # the command's directory, not the host's
    assert _prompts(log) == ["logged turn"]
    assert oct(log.stat().st_mode & 0o777) == "0o600"
    assert any(" <- " in line and '"session/update"' in line for line in log.read_text().splitlines())
    cli.ok("prompt", "--session", sid, "not logged", env=LIVE, cwd=elsewhere)
    second = cli.run("prompt", "--session", sid, "another turn", env={**LIVE, "ACPCLI_LOG_FILE": "env.log"}, cwd=elsewhere)
    assert second.returncode == ExitCode.OK, second.stderr
    assert _prompts(log) == ["logged turn"]
    assert _prompts(elsewhere / "env.log") == ["another turn"]
    assert not (cli.cwd / "logs").exists() and not (cli.cwd / "env.log").exists()
    assert len(cli.trace.pids()) == 1  # all warm: one agent


def test_a_warm_log_file_that_cannot_be_opened_refuses_the_turn(hosts: Cli, tmp_path: Path) -> None:  # noqa: F811
    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    directory = tmp_path / "a-directory"
    directory.mkdir()
    for where, env in ((a_file / "under.log", {}), (directory, {"ACPCLI_LOG_FILE": str(directory)})):
        args = ["--log-file", str(where)] if not env else []
        proc = cli.run("prompt", "--session", sid, *args, "never sent", env={**LIVE, **env})
        message = error_line(proc, ExitCode.OUTPUT)
        assert message.startswith(f"cannot write the wire log {where}: "), message
    assert "never sent" not in cli.show(sid)
    assert "still here" in cli.ok("prompt", "--session", sid, "still here", env=LIVE).stdout


def test_a_warm_log_file_on_a_full_disk_exits_17_and_the_turn_is_stored(hosts: Cli) -> None:  # noqa: F811
    cli = hosts
    if not Path("/dev/full").exists():
        import pytest

        pytest.skip("needs /dev/full")
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=2), env=LIVE).stdout.strip()
    proc = cli.run("prompt", "--session", sid, "--log-file", "/dev/full", "full log", env=LIVE)
    assert proc.returncode == ExitCode.OUTPUT, proc.stderr
    assert "Demo agent reply" in proc.stdout
    ours = [line for line in proc.stderr.splitlines() if line.startswith("acpcli:") and not line.startswith("acpcli: refused ")]
    assert len(ours) == 1, proc.stderr
    assert ours[0].startswith("acpcli: error: cannot write the wire log /dev/full: No space left on device ("), ours[0]
    assert ours[0].endswith(" frames not logged)"), ours[0]
    assert "full log" in cli.show(sid)


def test_a_warm_log_file_that_is_a_fifo_is_refused_and_the_host_keeps_serving(hosts: Cli, tmp_path: Path) -> None:  # noqa: F811
    """The host never waits on a FIFO's reader (every client's turn would wait with it)."""
    import os

    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=2), env=LIVE).stdout.strip()
    fifo = tmp_path / "a-fifo"
    os.mkfifo(fifo)
    proc = cli.run("prompt", "--session", sid, "--log-file", str(fifo), "never sent", env=LIVE)
    message = error_line(proc, ExitCode.OUTPUT)
    assert message.startswith(f"cannot write the wire log {fifo}: a FIFO"), message
    assert "served after" in cli.ok("prompt", "--session", sid, "served after", env=LIVE).stdout
    assert "never sent" not in cli.show(sid)
