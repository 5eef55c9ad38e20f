"""Off-spec agents: one line naming method and member, never a traceback; real agents' extras accepted.

An agent that sends what ACP does not allow gets one line naming the method and the member,
never a traceback; what real agents send beyond the schema (unknown members, ``_meta``,
unstable fields, ``result: null``) is accepted. The contract is :mod:`acpcli.protocol`'s; the
agent is ``tests/peers/off_spec_agent.py`` (raw stdio, v1)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import Cli

AGENT = shlex.join([sys.executable, str(Path(__file__).resolve().parent.parent / "peers" / "off_spec_agent.py")])


@pytest.mark.parametrize(
    ("mode", "line"),
    [
        ("new-without-id", "acpcli: error: session/new: the agent's answer is not valid ACP v1: sessionId: missing"),
        (
            "prompt-not-object",
            "acpcli: error: session/prompt: the agent's answer is not valid ACP v1: the answer is a string, not an object",
        ),
        (
            "bad-error-object",
            "acpcli: error: session/prompt: went wrong [malformed error object: code: a string, not integer] (-32603)",
        ),
    ],
)
def test_an_answer_acpcli_cannot_read_fails_in_one_line(cli: Cli, mode: str, line: str) -> None:
    proc = cli.run("prompt", "--cmd", AGENT, "hi", env={"OFF_SPEC": mode})
    assert proc.returncode == ExitCode.AGENT_ERROR, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == line
    assert "Traceback" not in proc.stderr


def test_an_invalid_permission_request_is_answered_invalid_params_and_the_turn_goes_on(cli: Cli) -> None:
    proc = cli.run("prompt", "--cmd", AGENT, "--permissions", "allow", "hi", env={"OFF_SPEC": "permission"})
    assert proc.returncode == 0, proc.stderr
    assert (
        'the client answered: {"code": -32602, "message": "session/request_permission: invalid params: options: missing"}'
        in proc.stdout
    )
    assert "hello from off-spec" in proc.stdout


def test_what_agents_add_beyond_the_schema_is_accepted(cli: Cli) -> None:
    # unknown members and _meta in every answer, gemini's unstable `models`, a load answered null
    env = {"OFF_SPEC": "extras"}
    assert "hello from off-spec" in cli.ok("prompt", "--cmd", AGENT, "hi", env=env).stdout
    session_id = cli.new(AGENT)
    assert "replayed" in cli.ok("load", session_id, "--cmd", AGENT, "--no-repl", env=env).stdout
