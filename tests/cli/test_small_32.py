"""Low points of issue 32: `prompt --last` names the session it continues, hosted and unhosted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .conftest import Cli


@pytest.fixture(params=["hosted", "unhosted"])
def keep(request: pytest.FixtureRequest, cli: Cli) -> Iterator[dict[str, str]]:
    """The environment of a command through a session host (keep-alive on) or without one;
    every host is stopped at the end."""
    yield {"ACPCLI_KEEP_ALIVE": "300" if request.param == "hosted" else "0"}
    cli.run("stop", "--all")


def test_last_says_which_session_it_continues(cli: Cli, keep: dict[str, str]) -> None:
    older = cli.new(cli.trace.demo_cmd(protocol=1), "--title", "the older one")
    newer = cli.new(cli.trace.demo_cmd(protocol=1), "--title", "the newer one\x1b[31m")
    proc = cli.run("prompt", "--last", "again no-permission", env=keep)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("continuing")]
    assert lines == [f"continuing session {newer}: the newer one^[[31m"], proc.stderr
    assert older not in proc.stderr
