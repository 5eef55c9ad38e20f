"""The REPL's settings, login and ``@path`` mentions, driven in a real pseudo-terminal (see
``test_repl.py`` for the synchronisation rules: on what the screen shows, never on sleeps).

What reached the agent is read back from the wire log (``--log-file``), and the demo agent's
``status`` keyword answers with its current ``mode=… model=… effort=…``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import AgentTrace
from .pty import PROMPT, REPLY, Pty

TAB = "\t"
#: Styling/cursor sequences prompt-toolkit may put between what was typed and what TAB
#: appended (it draws the completed part on its own when only that changed).
ESCAPES = r"(?:\x1b\[[0-9;?]*[A-Za-z])*"


def _completed(typed: str, added: str) -> str:
    """A pattern for ``typed`` followed by the ``added`` completion, however it was drawn."""
    import re

    return re.escape(typed) + ESCAPES + re.escape(added)


def _methods(log: Path) -> list[str]:
    frames = [json.loads(line.split(" ", 2)[2]) for line in log.read_text().splitlines() if line.strip()]
    return [f["method"] for f in frames if "method" in f]


def _start(spawn, trace: AgentTrace, tmp_path: Path, *extra: str, protocol: int = 1, without: tuple[str, ...] = ()) -> tuple[Pty, Path]:  # type: ignore[no-untyped-def]
    log = tmp_path / "wire.log"
    pty = spawn("new", "--cmd", trace.demo_cmd(protocol=protocol, without=without, extra=extra), "--log-file", str(log))
    pty.prompt()
    return pty, log


@pytest.mark.parametrize("protocol", [1, 2])
def test_mode_and_model_go_through_config_options(spawn, trace: AgentTrace, tmp_path: Path, protocol: int) -> None:
    pty, log = _start(spawn, trace, tmp_path, protocol=protocol)
    pty.expect(r"mode: Ask")  # the toolbar
    pty.say("/mode")
    pty.expect(r"\* ask")  # the current one is starred, every value offered
    pty.expect(r"plan")
    pty.child.send("\x1b")  # Escape: kept
    pty.prompt()
    pty.say("/mode code")
    pty.expect(r"Session Mode: Code|Mode: Code")
    pty.prompt()
    pty.say("/model demo-smart")
    pty.expect(r"Model: ")
    pty.prompt()
    pty.say("status")
    pty.expect(r"mode=code model=demo-smart")
    pty.prompt()
    pty.expect(r"mode: Code · model: ")  # the toolbar follows
    assert pty.leave()[0] == ExitCode.OK
    methods = _methods(log)
    assert methods.count("session/set_config_option") == 2
    assert "session/set_mode" not in methods  # config options win over v1 modes (spec)
    trace.assert_no_unadvertised()


def test_v1_modes_alone_use_set_mode(spawn, trace: AgentTrace, tmp_path: Path) -> None:
    pty, log = _start(spawn, trace, tmp_path, without=("config-options",))
    pty.say("/mode plan")
    pty.expect(r"Mode: Plan")
    pty.prompt()
    pty.say("/model fast")
    pty.expect(r"offers no model setting")
    pty.prompt()
    pty.say("status")
    pty.expect(r"mode=plan")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK
    assert "session/set_mode" in _methods(log) and "session/set_config_option" not in _methods(log)
    trace.assert_no_unadvertised()


def test_v2_without_config_options_has_no_modes(spawn, trace: AgentTrace, tmp_path: Path) -> None:
    pty, log = _start(spawn, trace, tmp_path, protocol=2, without=("config-options",))
    pty.say("/mode code")
    pty.expect(r"offers no mode setting")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK
    assert not {"session/set_mode", "session/set_config_option"} & set(_methods(log))
    trace.assert_no_unadvertised()


def test_config_lists_and_sets_and_bad_values_keep_the_repl(spawn, trace: AgentTrace, tmp_path: Path) -> None:
    pty, log = _start(spawn, trace, tmp_path)
    pty.say("/config")
    pty.expect(r"effort\s+Medium")
    pty.prompt()
    pty.say("/config effort turbo")
    pty.expect(r"/config: 'turbo' is not a value of effort \(choose from: low, medium, high\)")
    pty.prompt()
    pty.say("/config effort high")
    pty.expect(r"Effort: High|: High")
    pty.prompt()
    pty.say("/config brave on")  # a boolean option: offered because acpcli advertised support
    pty.expect(r"Brave.*: on")
    pty.prompt()
    pty.say("status")
    pty.expect(r"effort=high")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK
    assert _methods(log).count("session/set_config_option") == 2  # the bad value was never sent


def test_tab_completes_setting_values(spawn, trace: AgentTrace, tmp_path: Path) -> None:
    pty, _ = _start(spawn, trace, tmp_path)
    pty.child.send("/model demo-s" + TAB)
    pty.expect(_completed("demo-s", "mart"))
    pty.child.send("\r")
    pty.expect(r"Model: ")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK


def test_the_agent_switching_its_own_mode_shows_in_the_toolbar(spawn, trace: AgentTrace, tmp_path: Path) -> None:
    pty, _ = _start(spawn, trace, tmp_path)
    pty.say("plan mode no-permission")
    pty.expect(REPLY)
    pty.prompt()
    pty.expect(r"mode: Plan")
    assert pty.leave()[0] == ExitCode.OK


@pytest.mark.parametrize("protocol", [1, 2])
def test_login_is_offered_when_the_agent_requires_it(spawn, trace: AgentTrace, tmp_path: Path, protocol: int) -> None:
    log = tmp_path / "wire.log"
    cmd = trace.demo_cmd(protocol=protocol, extra=("--require-auth", "--state-dir", str(tmp_path / "state")))
    pty = spawn("new", "--cmd", cmd, "--log-file", str(log))
    pty.expect("asks you to log in")
    pty.expect(r"log in with 1-1")
    pty.expect(r"1\. Demo login")
    pty.child.send("1\r")
    pty.expect("logged in")
    pty.prompt()  # the session was created after the login
    pty.say("hello no-permission")
    pty.expect(REPLY)
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK
    methods = _methods(log)
    login = "authenticate" if protocol == 1 else "auth/login"
    assert methods[:4] == ["initialize", "session/new", login, "session/new"]


def test_declining_the_login_exits_with_auth_required(spawn, trace: AgentTrace, tmp_path: Path) -> None:
    cmd = trace.demo_cmd(protocol=1, extra=("--require-auth", "--state-dir", str(tmp_path / "state")))
    pty = spawn("new", "--cmd", cmd)
    pty.expect(r"log in with 1-1")
    pty.child.send("\x03")  # Ctrl-C: not now
    pty.expect("acpcli auth")  # the hint names the command to log in later
    assert pty.wait() == ExitCode.AUTH_REQUIRED
    trace.assert_all_gone()


def test_mentions_complete_and_a_bad_one_comes_back_for_editing(
    spawn, trace: AgentTrace, tmp_path: Path, workdir: Path
) -> None:
    (workdir / "notes.txt").write_text("abc")
    (tmp_path / "outside.txt").write_text("secret")
    pty, log = _start(spawn, trace, tmp_path)
    pty.child.send("look at @no" + TAB)
    pty.expect(_completed("@no", "tes.txt"))
    pty.child.send(" and @../outside.txt no-permission\r")
    # (wrapped at words where the temporary paths make it long: under xdist they are longer)
    pty.expect(r"not sent:[\s\S]*?@\.\./outside\.txt[\s\S]*?is\s+outside\s+the\s+session")
    pty.expect(PROMPT)
    pty.expect(r"look at @notes\.txt and @\.\./outside\.txt")  # the line is back, as typed
    pty.child.send("\x08" * len("@../outside.txt no-permission") + "no-permission\r")  # fix it
    # "received resource file://…/notes.txt (3 chars)", wrapped on screen where the path ends
    pty.expect(r"notes\.txt \(3[\s\S]{0,40}?chars\)")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK
    assert _methods(log).count("session/prompt") == 1


def test_pasted_code_with_a_decorator_is_sent_as_text_with_one_dim_hint(
    spawn, trace: AgentTrace, tmp_path: Path, acpcli_home: Path
) -> None:
    """``@dataclass`` on its own line names no file: the prompt goes as typed (issue 24)."""
    from .screen import screen_text

    pty, _ = _start(spawn, trace, tmp_path, protocol=2)
    pty.child.send("\x1b[200~@dataclass\nclass Point:\n    x: int  # @property too no-permission\x1b[201~")
    pty.expect("no-permission")
    pty.child.send("\r")
    pty.expect(REPLY)
    pty.prompt()
    screen = screen_text(pty.seen)
    assert "not sent" not in screen, screen
    assert screen.count("@dataclass, @property name no file: sent as text") == 1, screen
    status, session_id = pty.leave()
    assert status == ExitCode.OK
    stored = json.loads((acpcli_home / "demo-agent" / "sessions" / f"{session_id}.json").read_text())
    sent = [u["content"] for u in stored["history"] if u.get("sessionUpdate") == "user_message"]
    assert sent == [[{"type": "text", "text": "@dataclass\nclass Point:\n    x: int  # @property too no-permission"}]], sent


def test_login_and_settings_against_the_sdk_agent(spawn, tmp_path: Path) -> None:
    """A peer we did not write (the official SDK): it refuses session/new until login, has both
    modes and config options, and states its settings in every answer."""
    import shlex
    import sys

    agent = Path(__file__).resolve().parent.parent / "peers" / "sdk_config_agent.py"
    record = tmp_path / "sdk.jsonl"
    cmd = shlex.join(["env", f"SDK_RECORD_FILE={record}", sys.executable, str(agent)])
    pty = spawn("new", "--cmd", cmd)
    pty.expect("asks you to log in")
    pty.expect(r"log in with 1-1")
    pty.child.send("1\r")
    pty.prompt()
    pty.say("/model SDK Large")  # a value's name works as well as its id
    pty.expect(r"Model: SDK Large")
    pty.prompt()
    pty.say("/mode code")
    pty.expect(r"Mode: Code")
    pty.prompt()
    pty.say("what now")
    pty.expect(r"mode=code model=sdk-large")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK
    sent = [json.loads(line) for line in record.read_text().splitlines()]
    settings = [(e["method"], e["params"].get("configId"), e["params"].get("value")) for e in sent if "set_" in e["method"]]
    assert settings == [("session/set_config_option", "model", "sdk-large"), ("session/set_config_option", "mode", "code")]
    assert [e["method"] for e in sent][:4] == ["initialize", "session/new", "authenticate", "session/new"]


def test_export_sessions_and_thoughts_commands(spawn, trace: AgentTrace, tmp_path: Path, workdir: Path) -> None:
    pty, _ = _start(spawn, trace, tmp_path)
    pty.say("first question no-permission")
    pty.expect(REPLY)
    pty.prompt()
    pty.say("/export notes/out.md")  # a directory that does not exist: one line, the REPL stays
    pty.expect(r"/export: cannot write notes/out\.md")
    pty.prompt()
    pty.say("/export out.md")
    pty.expect(r"wrote markdown transcript to out\.md")
    pty.prompt()
    exported = (workdir / "out.md").read_text()
    assert "first question no-permission" in exported and "Demo agent reply" in exported
    pty.say("/sessions")
    pty.expect(r"\* demo-[0-9a-f]{3,32} ")  # this one, starred, by its unique prefix (as `sessions` shows it)
    pty.prompt()
    pty.say("/thoughts")
    pty.expect("thoughts: shown in full")
    pty.prompt()
    before = len(pty.seen)
    pty.say("second no-permission")
    pty.expect(REPLY)
    pty.prompt()
    second_turn = pty.seen[before:]
    assert "Plan: take stock" in second_turn  # the thought in full ...
    assert "Thought · " not in second_turn  # ... not its one-line summary
    assert pty.leave()[0] == ExitCode.OK


def test_a_prompt_refused_for_login_offers_it_and_keeps_the_line(spawn, trace: AgentTrace, tmp_path: Path) -> None:
    """The agent answers a prompt with auth_required (after /logout): the REPL stays, offers
    the login, and the prompt comes back on the input line to be sent again."""
    log = tmp_path / "wire.log"
    cmd = trace.demo_cmd(protocol=1, extra=("--require-auth", "--state-dir", str(tmp_path / "state")))
    pty = spawn("new", "--cmd", cmd, "--log-file", str(log))
    pty.expect(r"log in with 1-1")
    pty.child.send("1\r")
    pty.prompt()
    pty.say("/logout")
    pty.expect("logged out")
    pty.prompt()
    pty.say("hello again no-permission")
    pty.expect("asks you to log in")
    pty.expect(r"log in with 1-1")
    pty.child.send("1\r")
    pty.expect("press Enter to send the prompt again")
    pty.prompt()
    pty.expect("hello again no-permission")  # back on the input line, as typed
    pty.child.send("\r")
    pty.expect(REPLY)
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK
    assert _methods(log).count("session/prompt") == 2 and _methods(log).count("authenticate") == 2


def test_markup_like_text_is_shown_as_typed(spawn, trace: AgentTrace, tmp_path: Path) -> None:
    pty, _ = _start(spawn, trace, tmp_path)
    pty.say("look at @notes[/b] please no-permission")  # rich markup syntax in a mention naming nothing: no crash
    pty.expect(r"@notes\[/b\] names no file: sent as text")
    pty.prompt()
    pty.say("/config [bold]x")
    pty.expect(r"offers no \[bold\]x setting")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK
