"""How a one-shot command stops its agent once its work is stored (issue 24).

An agent that does not exit at the end of its input (codex; claude exits only slowly) is sent
SIGTERM after a short grace, not after two seconds: ``prompt`` no longer keeps its caller
waiting for seconds after the answer. An agent that does exit at the end of its input (gemini,
which writes its files first) is never hurried: it saves and exits on its own.

Peer: ``tests/peers/sdk_quirks_agent.py --at-eof stay|save``, which records when its input
ended and when it saved or got SIGTERM (``$EOF_RECORD``).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from acpcli.wire.transport import STDIN_GRACE

from .conftest import Cli

QUIRKS = Path(__file__).resolve().parent.parent / "peers" / "sdk_quirks_agent.py"


def quirks_cmd(*flags: str) -> str:
    return shlex.join([sys.executable, str(QUIRKS), *flags])


def steps(record: Path) -> list[tuple[str, float]]:
    """The agent's ``(step, time)`` lines."""
    rows = [line.split() for line in record.read_text().splitlines()] if record.exists() else []
    return [(name, float(at)) for name, at in rows]


@pytest.mark.parametrize(
    "args",
    [("prompt", "--cmd", "{cmd}", "hello"), ("new", "--no-repl", "--cmd", "{cmd}")],
    ids=["prompt", "new --no-repl"],
)
def test_an_agent_that_stays_after_its_input_ends_is_stopped_promptly(
    cli: Cli, tmp_path: Path, args: tuple[str, ...]
) -> None:
    record = tmp_path / "eof.record"
    argv = [quirks_cmd("--at-eof", "stay") if arg == "{cmd}" else arg for arg in args]
    proc = cli.ok(*argv, env={"EOF_RECORD": str(record)})
    if args[0] == "prompt":
        assert "you said: hello" in proc.stdout
    got = steps(record)
    assert [name for name, _ in got] == ["eof", "sigterm"], got  # asked to leave, not killed
    # The default grace (2 s) was not waited for; the margin is for a busy machine.
    assert got[1][1] - got[0][1] < STDIN_GRACE - 0.1, got
    cli.trace.assert_all_gone()


def test_an_agent_that_saves_and_exits_at_the_end_of_its_input_is_not_hurried(
    cli: Cli, tmp_path: Path
) -> None:
    record = tmp_path / "eof.record"
    proc = cli.ok(
        "prompt", "--cmd", quirks_cmd("--at-eof", "save"), "hello", env={"EOF_RECORD": str(record)}
    )
    assert "you said: hello" in proc.stdout
    assert [name for name, _ in steps(record)] == ["eof", "saved"]
    cli.trace.assert_all_gone()
