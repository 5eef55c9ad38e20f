"""Text piped beside a prompt (issue 32.12) through the host's socket: a prompt message's
``stdin`` becomes a ``resource`` named ``stdin`` (the demo agent takes embedded context)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from acpcli.services.mentions import STDIN_URI
from tests.cli.conftest import Cli

from .conftest import LIVE


def _answer(client: Any) -> str:
    """The agent's text of the turn, up to its end."""
    said = []
    while (message := client.until("u", "end", "error"))["t"] == "u":
        event = json.loads(message["p"])
        update = event.get("params", {}).get("update", event) if "jsonrpc" in event else event
        content = update.get("content") if isinstance(update, dict) else None
        if update.get("sessionUpdate") == "agent_message_chunk" and isinstance(content, dict):
            said.append(str(content.get("text")))
    assert message["t"] == "end", message
    return "".join(said)


@pytest.mark.parametrize(
    ("stdin", "block"),
    [
        pytest.param("line one\nline two\n", f"received resource {STDIN_URI} (18 chars)", id="text"),
        pytest.param("", None, id="empty"),
        pytest.param(["not", "text"], None, id="not-a-string"),
    ],
)
def test_a_prompt_message_carries_what_was_piped(hosts: Cli, raw: Any, stdin: Any, block: str | None) -> None:
    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()
    client = raw(sid)
    client.send({"t": "prompt", "text": "review this no-permission", "settings": [], "stdin": stdin})
    answer = _answer(client)
    if block is None:
        assert "received resource" not in answer
    else:
        assert block in answer
    assert "review this" in cli.show(sid)
