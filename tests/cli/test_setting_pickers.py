"""``/mode``, ``/model`` and ``/config NAME`` without a value (issue 32): a picker of what the
agent advertised, the current value marked and highlighted; Enter sets the one picked, Escape
(or picking the current one) leaves it as it was, nothing sent. With a value, as before. Run
hosted and unhosted (the ``repl_mode`` fixture), in a pseudo-terminal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acpcli.errors import ExitCode

from .conftest import AgentTrace
from .pty import CHOICE, DOWN, UP, Pty
from .screen import Screen

ESC = "\x1b"
UP_THEN_ESC = UP + ESC  # (a key moved the highlight: Escape still keeps what was)


def _start(spawn: Any, trace: AgentTrace, tmp_path: Path, repl_mode: list[str], **demo: Any) -> tuple[Pty, Path]:
    log = tmp_path / "wire.log"
    pty: Pty = spawn("new", "--cmd", trace.demo_cmd(**demo), "--log-file", str(log), *repl_mode)
    pty.prompt()
    return pty, log


def _sets(log: Path) -> list[dict[str, Any]]:
    """The params of every request that changed a setting, in order."""
    frames = [json.loads(line.split(" ", 2)[2]) for line in log.read_text().splitlines() if line.strip()]
    return [f["params"] for f in frames if f.get("method", "").startswith("session/set_")]


def _status(pty: Pty, wanted: str) -> None:
    pty.say("status")
    pty.expect(wanted)
    pty.prompt()


def _picker(pty: Pty, count: int, last: str) -> list[str]:
    """Wait for the picker of ``count`` options, drawn to its ``last`` one; its rows."""
    pty.expect(CHOICE)
    assert pty.child.match.group(1) == str(count), pty.seen[-2000:]
    pty.expect(last)
    screen = Screen(pty.width, pty.height).feed(pty.seen).text()
    rows = screen[screen.rindex("choose 1-") :].splitlines()
    return [row.strip() for row in rows if row.strip()[:1] in "›123456789"]


def test_mode_picks_with_the_keys_and_escape_keeps_it(spawn: Any, trace: AgentTrace, tmp_path: Path, repl_mode: list[str]) -> None:
    pty, log = _start(spawn, trace, tmp_path, repl_mode)
    pty.say("/mode")
    rows = _picker(pty, 3, "Design and plan")
    assert rows[0].startswith("›") and "* ask (Ask)" in rows[0], rows  # the current one: marked, highlighted
    assert "code (Code) — Write and modify code" in rows[1] and "*" not in rows[1], rows
    pty.child.send(DOWN + DOWN + "\r")  # plan
    pty.expect(r"Session Mode: Plan")
    pty.prompt()
    _status(pty, "mode=plan")
    pty.say("/mode")
    rows = _picker(pty, 3, "Design and plan")
    assert "* plan (Plan)" in rows[2] and rows[2].startswith("›"), rows
    pty.child.send(UP_THEN_ESC)
    pty.expect(r"Session Mode: Plan \(unchanged\)")
    pty.prompt()
    _status(pty, "mode=plan")
    assert pty.leave()[0] == ExitCode.OK
    assert [(p.get("configId"), p.get("value")) for p in _sets(log)] == [("mode", "plan")]  # Esc sent nothing
    trace.assert_no_unadvertised()


def test_model_and_config_pick_by_typing(spawn: Any, trace: AgentTrace, tmp_path: Path, repl_mode: list[str]) -> None:
    pty, log = _start(spawn, trace, tmp_path, repl_mode, protocol=1)
    pty.say("/model")
    _picker(pty, 2, "The thorough one")
    pty.child.send("smart\r")
    pty.expect(r"Model: Demo Smart")
    pty.prompt()
    pty.say("/config effort")
    _picker(pty, 3, "Think hard")
    pty.child.send("2\r")  # the current one, by its number: nothing to change
    pty.expect(r"Reasoning effort: Medium \(unchanged\)")
    pty.prompt()
    pty.say("/config effort")
    _picker(pty, 3, "Think hard")
    pty.child.send("3\r")
    pty.expect(r"Reasoning effort: High")
    pty.prompt()
    pty.say("/config brave")  # a boolean: no list to pick from, its usage as before
    pty.expect(r"/config brave true\|false")
    pty.prompt()
    _status(pty, "mode=ask model=demo-smart effort=high")
    assert pty.leave()[0] == ExitCode.OK
    assert [(p.get("configId"), p.get("value")) for p in _sets(log)] == [("model", "demo-smart"), ("effort", "high")]


def test_v1_modes_alone_are_picked_too(spawn: Any, trace: AgentTrace, tmp_path: Path, repl_mode: list[str]) -> None:
    pty, log = _start(spawn, trace, tmp_path, repl_mode, protocol=1, without=("config-options",))
    pty.say("/mode")
    _picker(pty, 3, "Design and plan")
    pty.child.send(DOWN + "\r")
    pty.expect(r"Mode: Code")
    pty.prompt()
    _status(pty, "mode=code")
    assert pty.leave()[0] == ExitCode.OK
    assert _sets(log) == [{"sessionId": _sets(log)[0]["sessionId"], "modeId": "code"}]
