"""End-to-end tests of what a transcript keeps (``show``, ``export``, ``prompt``'s output): text an
agent sends between turns, turns that end badly, updates after a turn's answer, usage.

The real program runs in subprocesses against the SDK agent ``tests/peers/sdk_late_agent.py``.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from acpcli.errors import ExitCode
from tests.cli.conftest import AgentTrace, Cli

LATE_AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_late_agent.py"


def late_cmd() -> str:
    return shlex.join([sys.executable, str(LATE_AGENT)])


def _first(cli: Cli, text: str = "hello") -> str:
    """A new session with one turn; its id."""
    proc = cli.ok("prompt", "--cmd", late_cmd(), text)
    return proc.stderr.split()[1]  # "session ID" on stderr


def _events(jsonl: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in jsonl.splitlines() if line.strip()]


def test_text_sent_between_turns_is_a_message_of_its_own(cli: Cli) -> None:
    # gemini says "[MODE_UPDATE] yolo" after a mode change, outside any turn: it is not the end
    # of the previous answer
    sid = _first(cli)
    cli.ok("prompt", "--session", sid, "--mode", "yolo", "again")
    shown = cli.show(sid)
    assert "ANSWER to hello[MODE_UPDATE]" not in shown
    assert "ANSWER to hello\n\n[MODE_UPDATE] yolo\n" in shown, shown
    agents = [e["text"] for e in _events(cli.ok("export", sid, "--format", "jsonl").stdout)
              if e["type"] == "message" and e["role"] == "agent"]
    assert agents == ["ANSWER to hello", "[MODE_UPDATE] yolo", "ANSWER to again"]
    markdown = cli.ok("export", sid, "--format", "markdown").stdout
    assert "ANSWER to hello\n\n[MODE_UPDATE] yolo" in markdown, markdown


def test_cancelled_and_failed_turns_are_marked_and_each_prompt_has_its_heading(cli: Cli) -> None:
    sid = _first(cli)
    cancelled = cli.run("prompt", "--session", sid, "cancelled this")  # the agent ends it "cancelled"
    assert cancelled.returncode == ExitCode.CANCELLED and "PARTIAL" in cancelled.stdout
    failed = cli.run("prompt", "--session", sid, "fail now")
    assert failed.returncode != 0
    cli.ok("prompt", "--session", sid, "next one")
    shown = cli.show(sid)
    assert "> cancelled this\n\nPARTIAL\n\n[turn cancelled]\n\n> fail now\n\n[turn failed: Internal error (-32603): model exploded]\n\n> next one" in shown, shown
    assert shown.count("[turn") == 2  # a turn that simply ended says nothing
    markdown = cli.ok("export", sid, "--format", "markdown").stdout
    # two prompts in a row (the first failed before the agent said anything): two headings
    assert "## User\n\nfail now\n\n*[turn failed: Internal error (-32603): model exploded]*\n\n## User\n\nnext one\n\n## Agent\n\nANSWER to next one" in markdown, markdown
    assert markdown.count("## User") == 4
    assert "*[turn cancelled]*" in markdown
    events = _events(cli.ok("export", sid, "--format", "jsonl").stdout)
    ends = [(e["stopReason"], e["error"]) for e in events if e["type"] == "turn_end"]
    assert ends == [("end_turn", None), ("cancelled", None), (None, "Internal error (-32603): model exploded"), ("end_turn", None)]


def test_markdown_export_starts_with_what_the_session_is(cli: Cli, workdir: Path) -> None:
    sid = _first(cli, "what is this?")
    markdown = cli.ok("export", sid, "--format", "markdown").stdout
    head = markdown.split("## User")[0]
    lines = head.strip().splitlines()
    assert lines[0] == "# what is this?"  # the title sessions shows
    assert f"- **Session:** `{sid}`" in lines
    assert f"- **Directory:** `{workdir}`" in lines
    agent = next(line for line in lines if line.startswith("- **Agent:**"))
    assert "sdk-late" in agent and agent.endswith(" 0.1")  # agentInfo's name and version
    assert any(line.startswith("- **Started:** 20") for line in lines)
    assert any(line.startswith("- **Last used:** 20") for line in lines)


# -- updates after the turn -------------------------------------------------------------------


def _late_parts(text: str) -> None:
    """The turn's answer completed by messageId, the tool call by toolCallId (each where it
    started), and the id-less text after the turn as a message of its own."""
    assert text.index("ANSWER +MORE") < text.index("BG-DONE") < text.index("LATE-TEXT"), text
    assert "ANSWER +MORE" in text and "ANSWERLATE" not in text


def test_prompt_waits_for_updates_after_the_turn_and_keeps_them(cli: Cli) -> None:
    proc = cli.ok("prompt", "--cmd", late_cmd(), "late please")
    assert "LATE-TEXT" in proc.stdout and "BG-DONE" in proc.stdout, proc.stdout  # shown ...
    sid = proc.stderr.split()[1]
    shown = cli.show(sid)  # ... and stored
    _late_parts(shown)
    assert "background task (other): completed" in shown and "in_progress" not in shown
    assert shown.index("> late please") < shown.index("ANSWER +MORE"), shown


def test_jsonl_output_has_the_updates_after_turn_end(cli: Cli) -> None:
    proc = cli.ok("prompt", "--cmd", late_cmd(), "--format", "jsonl", "late please")
    events = _events(proc.stdout)
    end = next(i for i, e in enumerate(events) if e["type"] == "turn_end")
    after = events[end + 1 :]
    finished = {e["index"]: e["text"] for e in after if e["type"] == "message"}
    assert finished[1] == "ANSWER +MORE"  # the answer, completed in place by its messageId
    assert "LATE-TEXT" in finished.values()
    tools = [e for e in after if e["type"] == "tool_call"]
    assert tools and tools[-1]["index"] == 2 and tools[-1]["status"] == "completed"


def test_a_prompt_through_a_live_session_ends_with_its_turn_and_the_host_keeps_the_rest(cli: Cli, tmp_path: Path) -> None:
    # The host stores what the agent says after the turn; the warm prompt does not wait for it.
    from tests.host.conftest import wait_for

    sid = _first(cli)
    gate = tmp_path / "gate"  # the agent sends all but " +MORE" once it exists
    env = {"LATE_GATE": str(gate), "LATE_DELAY": "0.2"}
    try:
        proc = cli.ok("prompt", "--session", sid, "--keep-alive", "30", "late please", env=env)
        assert "ANSWER" in proc.stdout, proc.stdout
        assert "MORE" not in proc.stdout and "LATE-TEXT" not in proc.stdout, proc.stdout  # not waited for
        gate.touch()  # the prompt has exited: what comes now comes after it
        wait_for(lambda: "LATE-TEXT" in cli.show(sid), what="the updates after the turn to be stored")
        _late_parts(cli.show(sid))
        again = cli.ok("prompt", "--session", sid, "--keep-alive", "30", "next one", env=env)
        assert "ANSWER to next one" in again.stdout and "LATE-TEXT" not in again.stdout, again.stdout
    finally:
        cli.ok("stop", sid)
    shown = cli.show(sid)
    _late_parts(shown)
    assert shown.count("LATE-TEXT") == 1 and shown.index("LATE-TEXT") < shown.index("> next one"), shown


def test_the_repl_draws_updates_after_the_turn_above_the_input_line(spawn, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from tests.cli.pty import CTRL_D
    from tests.cli.screen import screen_text

    monkeypatch.setenv("LATE_DELAY", "1.0")  # well after the input line is back
    pty = spawn("new", "--cmd", late_cmd())
    pty.prompt()
    pty.say("late please")
    pty.prompt()
    assert "LATE-TEXT" not in pty.seen
    pty.child.send("typed")
    pty.expect("typed")
    pty.expect("LATE-TEXT")  # drawn above the waiting line, no key pressed
    pty.child.send(" more\r")
    pty.expect("ANSWER to typed more")  # what was typed survived
    pty.prompt()
    screen = screen_text(pty.seen)
    assert screen.index("› late please") < screen.index("LATE-TEXT") < screen.index("› typed more"), screen
    assert "BG-DONE" in screen
    pty.child.send(CTRL_D)
    assert pty.wait() == 0


# -- usage -------------------------------------------------------------------------------------

WARNING = "acpcli: warning: the context window is 95% full (95k of 100k tokens)"


def test_prompt_warns_once_on_stderr_when_the_context_passes_90_percent(cli: Cli) -> None:
    proc = cli.ok("prompt", "--cmd", late_cmd(), "usage please")
    assert proc.stderr.splitlines().count(WARNING) == 1, proc.stderr
    assert WARNING not in proc.stdout
    calm = cli.ok("prompt", "--cmd", late_cmd(), "usage please", env={"USED": "89000"})
    assert "warning" not in calm.stderr, calm.stderr


def test_usage_is_in_jsonl_show_export_and_the_index(cli: Cli) -> None:
    proc = cli.ok("prompt", "--cmd", late_cmd(), "--format", "jsonl", "usage please")
    usage = {"used": 95000, "size": 100000, "cost": {"amount": 0.12, "currency": "USD"}}
    assert {"type": "session", "sessionId": _events(proc.stdout)[0]["sessionId"], "field": "usage", "usage": usage} in _events(proc.stdout)
    sid = proc.stderr.split()[1]
    assert cli.show(sid).endswith("[usage] 95k/100k tokens (95%) · $0.12\n")
    assert "- **Usage:** 95k/100k tokens (95%) · $0.12" in cli.ok("export", sid, "--format", "markdown").stdout
    exported = _events(cli.ok("export", sid, "--format", "jsonl").stdout)
    assert exported[-1]["field"] == "usage" and exported[-1]["usage"] == usage
    (row,) = [r for r in cli.index() if r["id"] == sid]
    assert row["usage"] == usage  # sessions --json
    other = _first(cli)  # a session whose agent never reported usage
    assert [r["usage"] for r in cli.index() if r["id"] == other] == [None]


def test_the_repl_warns_once_about_a_nearly_full_context(spawn) -> None:  # type: ignore[no-untyped-def]
    from tests.cli.pty import CTRL_D
    from tests.cli.screen import screen_text

    pty = spawn("new", "--cmd", late_cmd())
    pty.prompt()
    pty.say("usage please")
    pty.expect("95% full")
    pty.prompt()
    pty.say("usage again")  # still past 90 %: not said again
    pty.expect("ANSWER")
    pty.prompt()
    pty.child.send(CTRL_D)
    assert pty.wait() == 0
    screen = screen_text(pty.seen)
    assert screen.count("warning: the context window is 95% full (95k of 100k tokens)") == 1, screen
    assert screen.index("› usage please") < screen.index("95% full") < screen.index("› usage again"), screen


def test_a_live_session_warns_through_its_client(cli: Cli) -> None:
    sid = _first(cli)
    proc = cli.ok("prompt", "--session", sid, "--keep-alive", "30", "usage please")
    try:
        assert proc.stderr.splitlines().count(WARNING) == 1, proc.stderr
        (row,) = [r for r in cli.index() if r["id"] == sid]
        assert row["usage"]["used"] == 95000
    finally:
        cli.ok("stop", sid)


def test_show_on_a_terminal_pages_what_is_longer_than_the_screen(cli: Cli, trace: AgentTrace, spawn: Any, tmp_path: Path) -> None:
    """``show`` on a terminal: a transcript longer than the screen goes through $PAGER (with
    its colours); one that fits, ``--no-pager`` and a pipe print it as it is."""
    sid = cli.new(trace.demo_cmd())
    for n in range(3):
        cli.ok("prompt", "--session", sid, f"turn number {n}")
    paged = tmp_path / "paged.txt"
    pager = {"PAGER": f"tee {paged}"}
    assert spawn("show", sid, env=pager).wait() == 0
    text = paged.read_text()
    assert text.count("\n") > 30 and "turn number 2" in text and "\x1b[" in text  # longer than 30 rows, in colour
    paged.unlink()
    assert spawn("show", sid, "--no-pager", env=pager).wait() == 0
    assert not paged.exists()
    assert spawn("show", sid, "--grep", "characters", env=pager).wait() == 0  # the thoughts alone fit: no pager
    assert not paged.exists()
    assert "turn number 2" in cli.ok("show", sid, env=pager).stdout and not paged.exists()  # a pipe


def test_show_grep_puts_each_match_under_its_prompt(cli: Cli, trace: AgentTrace) -> None:
    sid = cli.new(trace.demo_cmd())
    cli.ok("prompt", "--session", sid, "first question about apples")
    cli.ok("prompt", "--session", sid, "second question about pears")
    proc = cli.ok("show", sid, "--grep", "fenced")  # in every answer, in no prompt
    lines = proc.stdout.splitlines()
    prompts = [line for line in lines if line.startswith("> ")]
    assert prompts[:1] == ["> first question about apples"] and "> second question about pears" in prompts
    assert "2 of" in proc.stderr and "match 'fenced'" in proc.stderr
