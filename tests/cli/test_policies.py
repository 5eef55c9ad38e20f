"""``--permissions`` against an SDK agent that reads, asks, writes and runs commands.

``deny`` and ``read-only`` (and a script's default, deny) serve file reads only: the write is
refused and the file is not written, the command is refused and does not run, each refusal is
a JSON-RPC error naming the policy and one ``acpcli: refused ...`` line on stderr. ``allow``
serves everything. A turn the agent ends ``cancelled`` after a refusal says why in its hint.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from acpcli.errors import ExitCode
from acpcli.services.permissions import CHANGE_POLICY_UNATTENDED, POLICY_REFUSED

from .conftest import Cli

AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_policy_agent.py"
CMD = shlex.join([sys.executable, str(AGENT)])


@pytest.fixture
def area(workdir: Path) -> Path:
    directory = workdir / "area"
    directory.mkdir()
    (directory / "input.txt").write_text("the input\n")
    return directory


def report(stdout: str) -> dict[str, Any]:
    line = next(line for line in stdout.splitlines() if line.startswith("{"))
    return json.loads(line)


def refusals(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("acpcli: refused ")]


@pytest.mark.parametrize(
    ("flags", "policy"),
    [((), "deny"), (("--permissions", "deny"), "deny"), (("--permissions", "read-only"), "read-only"),
     (("--permissions", "ask"), "deny")],  # ask with nobody to ask (a script) is deny
    ids=["default", "deny", "read-only", "ask-in-a-script"],
)
def test_reading_policies_refuse_writes_and_commands(cli: Cli, area: Path, flags: tuple[str, ...], policy: str) -> None:
    proc = cli.run("prompt", "--cmd", CMD, *flags, f"try {area}")
    assert proc.returncode == 0, proc.stderr
    got = report(proc.stdout)

    assert got["read"] == {"ok": {"content": "the input\n"}}
    assert got["ask_read"] == {"ok": "yes" if policy == "read-only" else "no"}
    assert got["ask_edit"] == {"ok": "no"}
    for step in ("write", "terminal"):
        error = got[step]["error"]
        assert error["code"] == POLICY_REFUSED
        assert f"'{policy}'" in error["message"] and "--permissions ask|allow" in error["message"]
    assert not (area / "output.txt").exists()
    assert not (area / "ran").exists()

    lines = refusals(proc.stderr)
    expected = [
        *([] if policy == "read-only" else ["permission for 'Read input.txt' (kind read)"]),
        "permission for 'Edit output.txt' (kind edit)",
        f"writing {area / 'output.txt'}",
        f"running `touch {area / 'ran'}`",
    ]
    assert len(lines) == len(expected), proc.stderr
    for line, what in zip(lines, expected, strict=True):
        # Nobody can be asked in a script: the hint does not suggest `ask`.
        assert line == f"acpcli: refused {what} (policy {policy}): {CHANGE_POLICY_UNATTENDED}", line


def test_allow_serves_everything(cli: Cli, area: Path) -> None:
    proc = cli.run("prompt", "--cmd", CMD, "--permissions", "allow", f"try {area}")
    assert proc.returncode == 0, proc.stderr
    got = report(proc.stdout)
    assert got["ask_read"] == got["ask_edit"] == {"ok": "yes"}
    assert got["write"] == {"ok": {}} and "terminalId" in got["terminal"]["ok"]
    assert (area / "output.txt").read_text() == "written"
    assert (area / "ran").exists()
    assert refusals(proc.stderr) == []
    # Each answer given on the user's behalf is one line on stderr (stdout is the transcript).
    allowed = [line for line in proc.stderr.splitlines() if line.startswith("acpcli: allowed ")]
    assert allowed == [
        "acpcli: allowed 'Read input.txt' (kind read) with 'Allow' (policy allow)",
        "acpcli: allowed 'Edit output.txt' (kind edit) with 'Allow' (policy allow)",
    ], proc.stderr
    assert "acpcli:" not in proc.stdout


def test_a_cancelled_turn_after_a_refusal_says_so(cli: Cli, area: Path) -> None:
    proc = cli.run("prompt", "--cmd", CMD, f"edit {area}")
    assert proc.returncode == ExitCode.CANCELLED
    assert not (area / "output.txt").exists()
    lines = proc.stderr.splitlines()
    assert any(line.startswith("acpcli: refused permission for 'Edit output.txt'") for line in lines), proc.stderr
    hint = next(line for line in lines if line.startswith("acpcli: hint: "))
    assert "refused a request of the agent" in hint and CHANGE_POLICY_UNATTENDED in hint
    assert "--permissions ask" not in hint  # nobody can be asked in a script

    allowed = cli.run("prompt", "--cmd", CMD, "--permissions", "allow", f"edit {area}")
    assert allowed.returncode == 0, allowed.stderr
    assert (area / "output.txt").read_text() == "edited"


def test_the_permissions_config_key(cli: Cli, area: Path) -> None:
    """Top-level ``permissions`` applies to any agent; ``[agents.NAME] permissions`` wins for
    that agent; ``--permissions`` wins over both."""
    config = cli.home / "config.toml"
    cli.home.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f'permissions = "allow"\n[agents.careful]\ncommand = {json.dumps(shlex.split(CMD))}\npermissions = "read-only"\n'
    )
    top = cli.run("prompt", "--cmd", CMD, f"try {area}")
    assert top.returncode == 0 and report(top.stdout)["write"] == {"ok": {}}, top.stderr
    (area / "output.txt").unlink()

    careful = cli.run("prompt", "--agent", "careful", f"try {area}")
    assert report(careful.stdout)["write"]["error"]["code"] == POLICY_REFUSED
    assert "(policy read-only)" in careful.stderr and not (area / "output.txt").exists()

    flag = cli.run("prompt", "--agent", "careful", "--permissions", "allow", f"try {area}")
    assert report(flag.stdout)["write"] == {"ok": {}}, flag.stderr

    (area / "output.txt").unlink()
    config.write_text('permissions = "sometimes"\n')
    named = cli.run("prompt", "--agent", "careful", f"try {area}")  # the config is needed: exit 3
    assert named.returncode == ExitCode.CONFIG and "permissions must be one of" in named.stderr
    # A --cmd run needs no config: it says the key is not used, and keeps the default (deny).
    bad = cli.run("prompt", "--cmd", CMD, f"try {area}")
    assert bad.returncode == 0, bad.stderr
    assert "acpcli: warning: the permissions config key is not used" in bad.stderr
    assert "permissions must be one of" in bad.stderr and "(policy deny)" in bad.stderr
    assert not (area / "output.txt").exists()


def test_refusal_lines_neutralize_control_characters(cli: Cli, workdir: Path) -> None:
    """The path in a refusal line comes from the agent: escapes are shown, never sent."""
    evil = workdir / "x\x1b]2;pwned\x07"
    proc = cli.run("prompt", "--cmd", CMD, f"try {evil}")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr
    assert "^[]2;pwned^G" in proc.stderr


# -- on a terminal ------------------------------------------------------------------------------


def test_ask_on_a_terminal_serves_what_the_person_allows(spawn: Any, area: Path) -> None:
    """``ask`` is unchanged: the person answers both questions, the write and the command run."""
    from .pty import CHOICE

    pty = spawn("new", "--cmd", CMD)
    pty.prompt()
    pty.say(f"try {area}")
    for _ in range(2):  # "Read input.txt", then "Edit output.txt"
        pty.expect(CHOICE)
        pty.child.send("1\r")  # Allow
    pty.prompt()
    assert (area / "output.txt").read_text() == "written"
    assert (area / "ran").exists()
    assert "acpcli: refused" not in pty.seen
    assert pty.leave()[0] == ExitCode.OK


def test_deny_on_a_terminal_refuses_and_says_so(spawn: Any, area: Path) -> None:
    pty = spawn("new", "--cmd", CMD, "--permissions", "deny")
    pty.prompt()
    pty.say(f"try {area}")
    pty.expect("refused running")
    pty.prompt()
    assert not (area / "output.txt").exists() and not (area / "ran").exists()
    for what in ("permission for 'Read input.txt'", "permission for 'Edit output.txt'", "writing"):
        assert f"acpcli: refused {what}" in pty.seen, pty.seen
    assert "choose 1-" not in pty.seen  # nobody was asked
    assert pty.leave()[0] == ExitCode.OK


@pytest.mark.parametrize("verb", ["output", "wait", "kill", "release"])
def test_other_terminal_methods_are_refused_quietly(cli: Cli, verb: str) -> None:
    """No terminal can exist under deny: the rest of terminal/* is refused too, with no stderr
    line (nothing was attempted that the user needs to hear about)."""
    fs_agent = shlex.join([sys.executable, str(AGENT.parent / "sdk_fs_agent.py")])
    proc = cli.run("prompt", "--cmd", fs_agent, f"{verb} term-123")
    assert proc.returncode == 0, proc.stderr
    error = report(proc.stdout)["error"]
    assert error["code"] == POLICY_REFUSED and "'deny'" in error["message"], error
    assert refusals(proc.stderr) == []
