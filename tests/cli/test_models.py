"""Models offered the v1 ``models`` way (``availableModels``/``currentModelId``, changed with
``session/set_model``), as gemini does, through the real program.

Peer: ``tests/peers/sdk_models_agent.py`` (the official SDK), which records every request it
receives (``RECORD_FILE``) and answers a prompt with ``model=<id> mode=<id>``, so each test
checks both what was sent and what the agent then used.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from acpcli.errors import ExitCode

from .conftest import AgentTrace, Cli

MODELS_AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_models_agent.py"


def _cmd(state: Path | None = None) -> str:
    prefix = ["env", f"SDK_MODELS_STATE={state}"] if state is not None else []
    return shlex.join([*prefix, sys.executable, str(MODELS_AGENT)])


def _setting_requests(trace: AgentTrace) -> list[tuple[str, dict]]:
    return [(r["method"], r["params"]) for r in trace.requests() if r["method"].startswith("session/set_")]


def test_model_sets_the_model_with_set_model(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.ok("prompt", "--cmd", _cmd(), "--model", "Gemini 2.5 Pro", "-q", "hi")
    assert proc.stdout.strip() == "model=gemini-2.5-pro mode=default"
    sent = _setting_requests(trace)
    assert [m for m, _ in sent] == ["session/set_model"]
    assert sent[0][1]["modelId"] == "gemini-2.5-pro"
    trace.assert_all_gone()


def test_an_unknown_model_names_the_models_offered_and_sends_nothing(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.run("prompt", "--cmd", _cmd(), "--model", "gpt-5", "hi")
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert "gemini-2.5-pro" in proc.stderr and "gemini-2.5-flash" in proc.stderr
    assert _setting_requests(trace) == []
    assert "session/prompt" not in trace.methods()


def test_a_setting_the_agent_lacks_lists_the_settings_it_offers(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.run("prompt", "--cmd", _cmd(), "--set", "effort=high", "hi")
    assert proc.returncode == ExitCode.USAGE and proc.stdout == "", proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("acpcli: error: ")]
    assert len(errors) == 1 and "no effort setting (it offers: mode, model)" in errors[0], proc.stderr
    assert "session/prompt" not in trace.methods()


def test_a_model_the_agent_refuses_is_reported_with_the_models_offered(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.run("prompt", "--cmd", _cmd(), "--model", "pro", "hi", env={"SDK_MODELS_REFUSE": "gemini-2.5-pro"})
    assert proc.returncode != 0 and proc.stdout == "", proc.stderr
    assert "acpcli: hint: model offers: gemini-2.5-pro, gemini-2.5-flash" in proc.stderr, proc.stderr
    assert "session/prompt" not in trace.methods()
    trace.assert_all_gone()


def test_models_are_read_from_the_load_result_too(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    state = tmp_path / "models.json"
    sid = cli.new(_cmd(state))
    # gemini has load and no resume: prompt --session loads; the model list comes from the
    # load result (a new process knows nothing else about the session).
    proc = cli.ok("prompt", "--session", sid, "--model", "flash", "-q", "and now")
    assert proc.stdout.strip() == "model=gemini-2.5-flash mode=default"
    proc = cli.ok("prompt", "--session", sid, "--model", "pro", "--mode", "yolo", "-q", "again")
    assert proc.stdout.strip() == "model=gemini-2.5-pro mode=yolo"
    assert [m for m, _ in _setting_requests(trace)] == ["session/set_model", "session/set_mode", "session/set_model"]
    assert trace.methods().count("session/load") == 2


def test_repl_model_lists_sets_and_shows_in_the_toolbar(spawn, trace: AgentTrace, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    record = tmp_path / "record.jsonl"
    pty = spawn("new", "--cmd", shlex.join(["env", f"RECORD_FILE={record}", sys.executable, str(MODELS_AGENT)]))
    pty.prompt()
    pty.expect(r"model: Gemini 2\.5 Flash")  # the toolbar
    pty.say("/model")  # a picker of the models, in the agent's order
    pty.expect(r"1\.   gemini-2\.5-pro \(Gemini 2\.5 Pro\) — Deep reasoning")
    pty.expect(r"\* gemini-2\.5-flash \(Gemini 2\.5 Flash\)")  # the current one starred
    pty.child.send("\x1b")  # Escape: kept
    pty.expect(r"Model: Gemini 2\.5 Flash \(unchanged\)")
    pty.prompt()
    pty.say("/model gemini-2.5-pro")
    pty.expect(r"Model: Gemini 2\.5 Pro")
    pty.prompt()
    pty.say("which model")
    pty.expect(r"model=gemini-2\.5-pro")
    pty.prompt()
    pty.expect(r"model: Gemini 2\.5 Pro")  # the toolbar follows
    assert pty.leave()[0] == ExitCode.OK
    sent = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(e["method"], e["params"].get("modelId")) for e in sent if e["method"].startswith("session/set_")] == [
        ("session/set_model", "gemini-2.5-pro")
    ]
