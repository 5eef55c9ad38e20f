"""The interactive REPL driven as a person would: in a real pseudo-terminal, with pexpect.

Each test spawns ``python -m acpcli new|resume`` on a pty (xterm-256color, 30x100) with the
per-test ``ACPCLI_HOME``; the agent is the demo agent (``--delay 0``; the ``slow`` keyword still
streams at 20 ms a chunk), wrapped by :class:`~tests.cli.conftest.AgentTrace` so its pid is
known and its survival can be checked. Where the demo agent cannot show a behaviour (it
remembers "always" answers itself; it never talks outside a turn), a tiny stdlib v1 agent
written here (:data:`ASKING_AGENT`) is used instead.

Synchronisation is on what the terminal shows, never on sleeps:

* prompt-toolkit asks the terminal where the cursor is (``ESC[6n``) each time it draws a
  prompt; a real terminal answers, so :meth:`Pty.expect` answers too (otherwise
  prompt-toolkit waits, then warns about CPR);
* "the prompt is ready for keys" is bracketed paste being switched on followed by the ``›``
  prompt (:data:`PROMPT`); the rendered user message also starts with ``›``, so matching on
  ``›`` alone would race with the redraw;
* negative checks ("nothing was recalled", "the line was cleared") are made positive by
  typing ``/help`` afterwards: a clean line runs the local help, a dirty one sends the
  whole line to the agent, which answers "Demo agent reply".
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import sys
from pathlib import Path

import pexpect
import pytest

from acpcli.errors import ExitCode

from .conftest import DEMO_ID, AgentTrace
from .pty import CHOICE, CTRL_C, CTRL_D, DOWN, HELP_TEXT, REPLY, RESUME, UP, Pty, new_args
from .screen import screen_text


def _help_shown(pty: Pty) -> bool:
    """After typing ``/help``: True if the local help ran, False if the line went to the agent."""
    return pty.expect([HELP_TEXT, REPLY, "permission:"]) == 0


def _stty_flags(text: str) -> set[str]:
    return set(text.replace(";", " ").split())


# -- prompt, streaming, permissions -----------------------------------------------------------


def test_prompt_streams_the_answer_and_permission_always_is_remembered(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace))
    pty.prompt()
    pty.say("hello there")
    pty.expect("permission:")
    pty.expect(CHOICE)  # (drawn whole, then taking keys)
    count = int(pty.child.match.group(1))
    assert "reject_always" in pty.child.match.group(0)  # the options are drawn below the question
    question = pty.seen[pty.seen.rindex("permission:") :]
    for name in ("Allow once", "Always allow", "Reject", "Always reject"):
        assert name in question, question
    for kind in ("allow_once", "allow_always", "reject_once", "reject_always"):
        assert kind in question, question
    assert count == 4
    pty.child.send("2\r")
    pty.expect(REPLY)
    pty.expect("hello there")  # the answer quotes the prompt
    pty.prompt()

    # allow_always is remembered for the session: the second edit is not asked about.
    mark = len(pty.seen)
    pty.say("second turn")
    assert pty.expect(["permission:", REPLY]) == 1, pty.seen[mark:]
    pty.prompt()
    assert "permission:" not in pty.seen[mark:]
    status, session_id = pty.leave()
    assert status == ExitCode.OK
    assert DEMO_ID.match(session_id)
    trace.assert_all_gone()


def test_permission_options_are_chosen_with_the_arrow_keys(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace))
    pty.prompt()
    pty.say("hello")
    pty.expect(CHOICE)  # (drawn whole, then taking keys)
    assert "reject_always" in pty.child.match.group(0)
    pty.child.send(DOWN + DOWN + "\r")  # from "Allow once" down to "Reject"
    pty.expect(REPLY)
    assert pty.expect(["rejected", "allowed"]) == 0
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK


def test_reject_is_reported_in_the_answer(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace))
    pty.prompt()
    pty.say("hello")
    pty.expect(CHOICE)
    pty.child.send("3\r")
    pty.expect(REPLY)
    assert pty.expect(["rejected", "allowed"]) == 0
    pty.prompt()
    # reject_once is not remembered: the next edit asks again.
    pty.say("again")
    assert pty.expect(["permission:", REPLY]) == 0
    pty.expect(CHOICE)
    pty.child.send("1\r")
    pty.expect(REPLY)
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK


#: A minimal v1 agent (stdlib only) that asks for permission on *every* prompt, unlike the
#: demo agent, which itself remembers an "always" answer: with it, a turn that is not asked
#: about proves that acpcli remembered the choice. It says which option it was given.
ASKING_AGENT = r"""
import json, os, sys, threading, time

def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

OPTIONS = [
    {"optionId": "yes-once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "yes-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "no-once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "no-always", "name": "Always reject", "kind": "reject_always"},
]
asked = 0
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}})
    elif method == "session/new":
        # The answer and an available_commands_update in one write, as agents commonly do.
        commands = [{"name": "zap", "description": "zap things"}, {"name": "help", "description": "its own help"}]
        sys.stdout.write(
            json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "asking-1"}}) + "\n"
            + json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "asking-1",
                "update": {"sessionUpdate": "available_commands_update", "availableCommands": commands}}})
            + "\n")
        sys.stdout.flush()
    elif method == "session/prompt":
        asked += 1
        sid = msg["params"]["sessionId"]
        text = " ".join(b.get("text", "") for b in msg["params"]["prompt"] if isinstance(b, dict))
        send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
            "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "GOT[%s] " % text}}}})
        if "late" in text:  # answer the turn, then talk outside it once the file late-go exists
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"stopReason": "end_turn"}})

            def later(sid=sid):
                while not os.path.exists("late-go"):
                    time.sleep(0.01)
                send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
                    "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "LATE-NEWS"}}}})

            threading.Thread(target=later, daemon=True).start()
            continue
        ask_id = "ask-%d" % asked
        send({"jsonrpc": "2.0", "id": ask_id, "method": "session/request_permission", "params": {
            "sessionId": sid, "options": OPTIONS,
            "toolCall": {"toolCallId": "call-%d" % asked, "title": "Touch a file", "kind": "edit",
                         "status": "pending"}}})
        for reply in sys.stdin:
            answer = json.loads(reply)
            if answer.get("id") == ask_id and "method" not in answer:
                break
        outcome = (answer.get("result") or {}).get("outcome") or {}
        chosen = outcome.get("optionId") or outcome.get("outcome")
        send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "ASKED-%d CHOSEN=%s" % (asked, chosen)}}}})
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"stopReason": "end_turn"}})
    elif "id" in msg and method is not None:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "not here"}})
"""


@pytest.mark.parametrize(("choice", "option_id"), [("2", "yes-always"), ("4", "no-always")])
def test_an_always_answer_is_remembered_by_acpcli(spawn, tmp_path: Path, choice: str, option_id: str) -> None:
    agent = tmp_path / "asking_agent.py"
    agent.write_text(ASKING_AGENT)
    pty = spawn("new", "--cmd", shlex.join([sys.executable, str(agent)]))
    pty.prompt()
    pty.say("first")
    pty.expect("permission:")
    pty.expect(CHOICE)
    assert int(pty.child.match.group(1)) == 4
    pty.child.send(choice + "\r")
    pty.expect(f"ASKED-1 CHOSEN={option_id}")
    pty.prompt()
    mark = len(pty.seen)
    pty.say("second")
    # The agent asks again; acpcli answers from memory without showing the question.
    assert pty.expect([CHOICE, "ASKED-2 CHOSEN=([a-z-]+)"]) == 1, pty.seen[mark:]
    assert pty.child.match.group(1) == option_id
    pty.prompt()
    assert "permission:" not in pty.seen[mark:]
    assert pty.leave()[0] == ExitCode.OK


def test_tab_completes_the_agents_own_commands(spawn, tmp_path: Path) -> None:
    agent = tmp_path / "asking_agent.py"
    agent.write_text(ASKING_AGENT)
    pty = spawn("new", "--cmd", shlex.join([sys.executable, str(agent)]))
    pty.prompt()
    pty.child.send("/za")
    pty.expect("/za")
    pty.child.send("\t")
    pty.expect("p")  # "/zap", from the agent's available_commands_update
    pty.child.send("\r")
    pty.expect(r"GOT\[/zap\]")  # an agent command is sent to the agent as a prompt
    pty.child.send(CTRL_C)
    pty.expect("ASKED-1 CHOSEN=cancelled")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK


def test_an_update_while_typing_is_shown_without_breaking_the_line(
    spawn, tmp_path: Path, workdir: Path
) -> None:
    agent = tmp_path / "asking_agent.py"
    agent.write_text(ASKING_AGENT)
    pty = spawn("new", "--cmd", shlex.join([sys.executable, str(agent)]))
    pty.prompt()
    pty.say("tell me later")
    pty.expect(r"GOT\[tell me later\]")
    pty.prompt()
    pty.child.send("half")
    pty.expect("half")
    (workdir / "late-go").touch()  # the agent (cwd = the session cwd) now speaks outside a turn
    pty.expect("LATE-NEWS")  # shown while the prompt is up, without any key pressed
    pty.child.send(" done\r")
    pty.expect(r"GOT\[half done\]")  # the half-typed line survived the interruption
    pty.expect(CHOICE)
    pty.child.send("1\r")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK


def test_ctrl_c_at_the_permission_question_answers_cancelled(spawn, tmp_path: Path) -> None:
    agent = tmp_path / "asking_agent.py"
    agent.write_text(ASKING_AGENT)
    pty = spawn("new", "--cmd", shlex.join([sys.executable, str(agent)]))
    pty.prompt()
    pty.say("first")
    pty.expect(CHOICE)
    pty.child.send(CTRL_C)
    pty.expect("ASKED-1 CHOSEN=cancelled")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK


# -- local commands, completion, keys ---------------------------------------------------------


def test_help_lists_the_commands(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace))
    pty.prompt()
    pty.say("/help")
    pty.expect("Ctrl-D leaves")
    shown = pty.seen[pty.seen.rindex("/help") :]
    for command in ("/help", "/close", "/quit"):
        assert re.search(rf"^\s*{re.escape(command)}\s+\S", shown, re.MULTILINE), shown
    assert re.search(r"^\s*/cancel\s+cancel the running turn", shown, re.MULTILINE), shown
    assert "//WORD sends /WORD to the agent" in shown, shown
    for command in ("/queue", "/now"):  # the prompt queue of a running turn
        assert re.search(rf"^\s*{re.escape(command)}\s+\S", shown, re.MULTILINE), shown
    assert "during a turn: Enter queues" in shown, shown
    assert REPLY not in pty.seen  # a local command, never sent to the agent
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK


def test_cancel_at_idle_is_a_command_not_a_prompt(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace))
    pty.prompt()
    pty.say("/cancel")
    pty.expect("no turn is running")
    pty.prompt()
    pty.say("/help")
    assert _help_shown(pty)  # the line was clean: /cancel did not come back either
    pty.prompt()
    assert REPLY not in pty.seen  # never sent to the agent
    assert "› /cancel" in screen_text(pty.seen)  # echoed: the line below has a cause
    assert pty.leave()[0] == ExitCode.OK


def test_the_unknown_command_line_wraps_at_words_on_a_narrow_terminal(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace), width=60)
    pty.prompt()
    pty.say("/modle plan")
    pty.expect(r"typed\)")
    pty.prompt()
    rows = screen_text(pty.seen, width=60).splitlines()
    start = next(i for i, row in enumerate(rows) if row.startswith("unknown command /modle"))
    said = rows[start : start + 3]
    line = "unknown command /modle: did you mean /mode? (//modle sends it to the agent as typed)"
    words = line.split(" ")
    shown = " ".join(said).split()
    assert shown[: len(words)] == words, said  # every word whole: the line broke between words
    assert all(len(row) <= 60 for row in said), said
    pty.child.send(CTRL_C)  # the line came back for fixing: cleared, then Ctrl-D leaves
    assert pty.leave()[0] == ExitCode.OK


def test_an_unknown_slash_word_is_not_sent_and_the_nearest_command_is_named(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace))
    pty.prompt()
    pty.say("/modle plan")
    pty.expect(r"unknown command /modle: did you mean /mode\?")
    pty.prompt()
    pty.expect("/modle plan")  # back on the line, for fixing
    pty.child.send(CTRL_C)
    pty.say("/mode")
    pty.expect(r"\* ask")
    pty.child.send("\x1b")  # (the picker of modes: Escape keeps it)
    pty.prompt()
    assert REPLY not in pty.seen
    screen = screen_text(pty.seen)
    assert screen.index("› /modle plan") < screen.index("unknown command /modle") < screen.index("› /mode\n"), screen
    assert pty.leave()[0] == ExitCode.OK


def test_a_double_slash_reaches_an_agent_command_that_a_local_one_shadows(spawn, tmp_path: Path) -> None:
    agent = tmp_path / "asking_agent.py"
    agent.write_text(ASKING_AGENT)
    pty = spawn("new", "--cmd", shlex.join([sys.executable, str(agent)]))
    pty.prompt()
    pty.say("/help")
    pty.expect(HELP_TEXT)
    pty.prompt()
    shown = screen_text(pty.seen)
    assert "the agent's own: /zap" in shown and "the agent's /help: type //help" in shown, shown
    pty.say("//help late")
    pty.expect(r"GOT\[/help late\]")  # sent as /help, to the agent
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK


def test_tab_completes_a_slash_command(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace))
    pty.prompt()
    pty.child.send("/he")
    pty.expect("/he")
    pty.child.send("\t")
    pty.expect("lp")  # the completion is drawn in the input line
    pty.child.send("\r")
    # "/he" uncompleted is no local command: it would reach the agent as a prompt.
    assert _help_shown(pty)
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK


def test_ctrl_c_clears_the_line_and_keeps_the_repl(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace))
    pty.prompt()
    pty.child.send("half typed")
    pty.expect("typed")
    pty.child.send(CTRL_C)  # the line is cleared in place (no new prompt is drawn)
    pty.child.send(CTRL_C)  # on an empty line too: nothing happens, the REPL stays
    pty.say("/help")
    assert _help_shown(pty), "the line was not cleared by Ctrl-C"
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK


def test_alt_enter_inserts_a_newline(spawn, trace: AgentTrace, acpcli_home: Path) -> None:
    pty = spawn(*new_args(trace))
    pty.prompt()
    pty.child.send("first line no-permission\x1b\r")
    pty.child.send("second line")
    pty.expect("second line")
    pty.child.send("\r")
    pty.expect(REPLY)
    pty.prompt()
    status, session_id = pty.leave()
    assert status == ExitCode.OK
    # What the agent received (kept in its session file): one prompt of two lines.
    stored = json.loads((acpcli_home / "demo-agent" / "sessions" / f"{session_id}.json").read_text())
    texts = [
        block.get("text")
        for update in stored["history"]
        if update.get("sessionUpdate") == "user_message"
        for block in update["content"]
    ]
    assert texts == ["first line no-permission\nsecond line"], texts


# -- history ------------------------------------------------------------------------------------


def test_history_is_kept_per_directory(spawn, trace: AgentTrace, workdir: Path, tmp_path: Path) -> None:
    pty = spawn(*new_args(trace))
    pty.prompt()
    pty.say("remember me no-permission")
    pty.expect(REPLY)
    pty.prompt()
    mark = len(pty.seen)
    pty.child.send(UP)
    pty.expect("remember me")
    pty.child.send("\r")
    pty.expect(REPLY)  # an empty line would send nothing: Up recalled the message
    pty.prompt()
    assert "remember me no-permission" in pty.seen[mark:]
    assert pty.leave()[0] == ExitCode.OK

    # A new process in the same directory recalls it too.
    again = spawn(*new_args(trace))
    again.prompt()
    again.child.send(UP)
    again.expect("remember me")
    again.child.send("\r")
    again.expect(r"You wrote:")
    again.expect("remember me no-permission")
    again.prompt()
    assert again.leave()[0] == ExitCode.OK

    # Another directory has its own history: Up recalls nothing, so "/help" runs alone.
    other = tmp_path / "elsewhere"
    other.mkdir()
    third = spawn(*new_args(trace), cwd=other)
    third.prompt()
    third.child.send(UP)
    third.say("/help")
    assert _help_shown(third), "history leaked from another directory"
    third.prompt()
    assert third.leave()[0] == ExitCode.OK


# -- Ctrl-C during a turn -----------------------------------------------------------------------


def test_ctrl_c_cancels_a_slow_turn(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace))
    pty.prompt()
    pty.say("slow no-permission")
    pty.expect(REPLY)  # the answer is streaming
    pty.child.send(CTRL_C)
    pty.expect("cancelling")
    pty.expect("cancelled")
    pty.prompt()  # the REPL is usable again
    pty.say("/help")
    assert _help_shown(pty)
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK
    trace.assert_all_gone()


def test_second_ctrl_c_kills_the_agent_and_exits_130(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace), shell_after=True)
    pty.prompt()
    pty.say("slow no-permission")
    pty.expect(REPLY)
    # Freeze the agent so it cannot confirm the first cancel: the second Ctrl-C then
    # necessarily lands while the turn is still waiting (and SIGKILL works on a stopped process).
    [agent_pid] = trace.pids()
    os.kill(agent_pid, signal.SIGSTOP)
    try:
        pty.child.send(CTRL_C)
        pty.expect("cancelling")
        pty.child.send(CTRL_C)
        pty.expect("kill")
        pty.expect(r"ACPCLI-EXIT=(\d+)")
        status = int(pty.child.match.group(1))
        pty.expect(pexpect.EOF)
        stty = pty.child.before
    finally:
        try:
            os.kill(agent_pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    assert status == ExitCode.INTERRUPTED
    trace.assert_all_gone()
    flags = _stty_flags(stty)
    assert {"echo", "icanon", "isig"} <= flags, stty


# -- leaving, resuming, terminal state ------------------------------------------------------------


def test_ctrl_d_leaves_cleanly_and_resume_shows_the_transcript(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace), shell_after=True)
    pty.prompt()
    pty.say("tell me about resume no-permission")
    pty.expect(REPLY)
    pty.prompt()
    pty.child.send(CTRL_D)
    pty.expect(RESUME.pattern)
    session_id = pty.child.match.group(1)
    pty.expect(r"ACPCLI-EXIT=(\d+)")
    assert int(pty.child.match.group(1)) == ExitCode.OK
    pty.expect(pexpect.EOF)
    flags = _stty_flags(pty.child.before)
    assert {"echo", "icanon", "isig"} <= flags, pty.child.before
    assert not {"-echo", "-icanon", "-isig"} & flags, pty.child.before
    trace.assert_all_gone()

    back = spawn("resume", session_id)
    back.expect("stored locally by acpcli")
    back.expect("tell me about resume no-permission")
    back.expect(REPLY)
    back.expect("resumed")
    back.prompt()
    back.say("/help")
    assert _help_shown(back)
    back.prompt()
    status, again = back.leave()
    assert (status, again) == (ExitCode.OK, session_id)
    trace.assert_all_gone()


def test_toolbar_shows_title_and_state(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace))
    pty.prompt()
    pty.expect("idle")
    pty.say("a titled chat no-permission")
    pty.expect(REPLY)
    pty.prompt()
    pty.expect(r"a titled chat no-permission\s*·\s*idle")  # the agent's title, in the toolbar
    assert pty.leave()[0] == ExitCode.OK


def test_quit_command_leaves(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace))
    pty.prompt()
    pty.say("/quit")
    pty.expect(RESUME.pattern)
    assert pty.wait() == ExitCode.OK
    trace.assert_all_gone()


def test_v1_turn_in_the_repl(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace, protocol=1))
    pty.prompt()
    pty.say("hello from v1")
    pty.expect(CHOICE)
    pty.child.send("1\r")
    pty.expect(REPLY)
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK



@pytest.mark.parametrize(
    ("words", "said"),
    [("refuse", "refused"), ("max tokens no-permission", "token limit")],
)
def test_other_stop_reasons_are_said_plainly_and_the_repl_goes_on(spawn, trace: AgentTrace, words: str, said: str) -> None:
    pty = spawn(*new_args(trace))
    pty.prompt()
    pty.say(words)
    pty.expect(f"Turn ended: [^\\r\\n]*{said}")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK


def test_agent_crash_mid_turn_exits_with_agent_exited_and_a_sane_terminal(spawn, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace), shell_after=True)
    pty.prompt()
    pty.say("crash no-permission")
    pty.expect("acpcli: error: the agent exited with status 3")
    pty.expect(r"ACPCLI-EXIT=(\d+)")
    assert int(pty.child.match.group(1)) == ExitCode.AGENT_EXITED
    pty.expect(pexpect.EOF)
    flags = _stty_flags(pty.child.before)
    assert {"echo", "icanon", "isig"} <= flags and not {"-echo", "-icanon", "-isig"} & flags, pty.child.before
    trace.assert_all_gone()


def test_close_command_closes_the_session_and_leaves(spawn, trace: AgentTrace, cli) -> None:  # type: ignore[no-untyped-def]
    pty = spawn(*new_args(trace))
    pty.prompt()
    pty.say("hi no-permission")
    pty.expect(REPLY)
    pty.prompt()
    pty.say("/close")
    pty.expect("closed demo-")  # the same line as `acpcli close`: nothing about an empty answer
    assert pty.wait() == ExitCode.OK
    trace.assert_all_gone()
    [record] = cli.index()
    assert record["state"] == "closed", record
