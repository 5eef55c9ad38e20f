"""A hostile agent against the real program: no escape sequence it sends reaches the terminal.

The agent (``tests/peers/hostile_agent.py``, raw stdio, v1) puts :data:`EVIL` (an OSC that
renames the terminal, SGR and erase-screen CSIs, a C1 CSI, CR, DEL, NUL, a DCS) in every field
it controls: messages, thoughts, tool titles, kinds, locations, output and diffs, plans,
command names, permission options, the session title, the agent's name, error messages and
data, stderr. Every command that shows them (``prompt`` piped and on a "terminal" with
``FORCE_COLOR``, ``show``, ``export`` as text, Markdown and JSON lines, ``sessions``, the REPL
in a pseudo-terminal) must show them neutralized (``^[``, ``\\x9b``), never as they are;
``--format jsonl`` carries them exactly, as JSON escapes.

It also sends lines the JSON parser cannot take (1000 nested brackets) and lines over the
line limit (made small with ``ACPCLI_MAX_LINE_BYTES`` so the test stays fast): a warning on
stderr, and the turn goes on, or fails with a clear error when the dropped line was the answer.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import Cli, error_line
from .pty import CHOICE

AGENT = Path(__file__).resolve().parent.parent / "peers" / "hostile_agent.py"
HOSTILE = shlex.join([sys.executable, str(AGENT)])
sys.path.insert(0, str(AGENT.parent))
from hostile_agent import EVIL  # noqa: E402  (the agent's module, found by its path above)

#: What EVIL looks like once neutralized (the visible stand-ins of each control character).
SHOWN = "^[]2;PWNED^G^[[41m^[[2J\\x9b31m^M\\x7f^@^[P+q^[\\"
#: Pieces of EVIL that must never reach an output as they are.
RAW_PIECES = ("\x1b]2;PWNED", "\x07", "\x1b[41m", "\x1b[2J", "\x9b", "\x7f", "\x00", "\x1bP+q")
#: Escape sequences rich itself writes on a terminal: styling, and a live region's moves.
OURS = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\d*[AK]|\x1b\[\?25[lh]|\r")


def controls(text: str, *, terminal: bool = False) -> list[str]:
    """Control characters in ``text`` other than newline and tab (and, for ``terminal``
    output, other than the escape sequences rich writes itself)."""
    if terminal:
        text = OURS.sub("", text)
    return sorted({f"U+{ord(c):04X}" for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F})


def assert_clean(text: str, *, terminal: bool = False) -> None:
    for piece in RAW_PIECES:
        assert piece not in text, f"{piece!r} reached the output:\n{text!r}"
    assert controls(text, terminal=terminal) == [], repr(text)


def run(cli: Cli, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return cli.run(*args, env={"HOSTILE_HUGE": "200000", "ACPCLI_MAX_LINE_BYTES": "100000", **(env or {})})


def prompt(cli: Cli, text: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run(cli, "prompt", "--cmd", HOSTILE, "--permissions", "allow", *extra, text, env=env)


# -- every field, every output ------------------------------------------------------------------


def test_piped_prompt_shows_every_field_neutralized(cli: Cli) -> None:
    proc = prompt(cli, "hostile")
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert_clean(proc.stdout)
    assert_clean(proc.stderr)
    out = proc.stdout
    for field in ("thinking", "message", "second", "tool", "tool output", "line two", "more output", "step", "link"):
        assert f"{field} {SHOWN}" in out, (field, out)
    assert f"-old {SHOWN}"[:20] in out  # the diff (its lines cut at the CR, as splitlines does)
    assert "[permission: allow]" in out


def test_terminal_prompt_shows_every_field_neutralized(cli: Cli) -> None:
    proc = prompt(cli, "hostile", env={"FORCE_COLOR": "1", "COLUMNS": "120"})
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert "\x1b[" in proc.stdout  # it did render for a terminal: our own styling is there
    assert_clean(proc.stdout, terminal=True)
    assert_clean(proc.stderr, terminal=True)
    assert "^[]2;PWNED^G" in proc.stdout
    assert "\\x9b31m" in proc.stdout


def test_stored_transcript_is_neutralized_in_show_export_and_sessions(cli: Cli, tmp_path: Path) -> None:
    assert prompt(cli, "hostile").returncode == ExitCode.OK
    for env in ({}, {"FORCE_COLOR": "1"}):
        terminal = bool(env)
        for args in (("show", "hostile-1"), ("export", "hostile-1", "--format", "text"),
                     ("export", "hostile-1", "--format", "markdown"), ("sessions",),
                     ("search", "message"), ("show", "hostile-1", "--grep", "message")):
            # (wide enough for the whole title: a terminal's table cuts a long one short)
            proc = run(cli, *args, env={**env, "COLUMNS": "400"} if args == ("sessions",) and terminal else env)
            assert proc.returncode == ExitCode.OK, (args, proc.stderr)
            assert_clean(proc.stdout, terminal=terminal)
            assert_clean(proc.stderr, terminal=terminal)
            assert "^[]2;PWNED" in proc.stdout, (args, proc.stdout)
            if args in (("sessions",), ("show", "hostile-1")):  # the title, the thought: markup shown as text
                assert "[/dim] [link=https://example.invalid]click[/link]" in proc.stdout, (args, proc.stdout)
    target = tmp_path / "out.md"
    assert run(cli, "export", "hostile-1", "--format", "markdown", "-o", str(target)).returncode == ExitCode.OK
    assert_clean(target.read_text(encoding="utf-8"))
    assert f"title {SHOWN} here" in target.read_text(encoding="utf-8")  # the session title heads it


def test_jsonl_carries_the_text_exactly_as_json_escapes(cli: Cli) -> None:
    proc = prompt(cli, "hostile", "--format", "jsonl")
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert_clean(proc.stdout)  # DEL and C1 are escaped too, not only what JSON must escape
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    texts = [e.get("text") for e in events if e.get("type") == "message"]
    assert f"message {EVIL} one\n\nsecond {EVIL}" in texts
    stored = run(cli, "export", "hostile-1", "--format", "jsonl")
    assert_clean(stored.stdout)
    assert any(EVIL in line for line in (json.loads(x).get("title") or "" for x in stored.stdout.splitlines()))


def test_agent_error_message_is_neutralized(cli: Cli) -> None:
    proc = prompt(cli, "error")
    assert_clean(proc.stderr)
    assert proc.returncode == ExitCode.AGENT_ERROR
    assert f"failed {SHOWN} badly" in proc.stderr


def test_agent_stderr_quoted_when_it_dies_is_neutralized(cli: Cli) -> None:
    proc = prompt(cli, "crash")
    assert proc.returncode == ExitCode.AGENT_EXITED, proc.stderr
    assert_clean(proc.stdout)
    assert_clean(proc.stderr)
    assert f"dying {SHOWN} now" in proc.stderr


# -- lines the parser cannot take, lines over the limit ------------------------------------------------


def test_deeply_nested_and_undecodable_lines_are_skipped_with_a_warning(cli: Cli) -> None:
    proc = prompt(cli, "deep")
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "still here after the deep line" in proc.stdout
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("acpcli: warning: ")]
    assert any("nested too deeply" in line for line in warnings), proc.stderr
    assert any("not utf-8" in line for line in warnings), proc.stderr
    assert_clean(proc.stderr)


def test_an_answer_over_the_line_limit_fails_the_request_instead_of_hanging(cli: Cli) -> None:
    proc = prompt(cli, "huge-answer")
    assert "acpcli: warning: skipped a 200" in proc.stderr
    message = error_line(
        subprocess.CompletedProcess(proc.args, proc.returncode, "", "\n".join(
            line for line in proc.stderr.splitlines() if line.startswith("acpcli: error: ")
        )),
        ExitCode.AGENT_ERROR,
    )
    assert "over the 100000-byte limit" in message
    assert "session/prompt" in message


def test_an_agent_request_over_the_line_limit_gets_an_invalid_request_error(cli: Cli) -> None:
    proc = prompt(cli, "huge-request")
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert "the client answered -32600" in proc.stdout
    assert "over the 100000-byte line limit" in proc.stderr


# -- the REPL in a pseudo-terminal ---------------------------------------------------------------------


def test_repl_shows_the_hostile_agent_neutralized(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = spawn("new", "--cmd", HOSTILE)
    pty.prompt()
    pty.say("hostile")
    pty.expect("permission:")
    pty.expect(CHOICE)
    pty.child.send("1\r")
    pty.expect(r"permission: allow")
    pty.prompt()
    pty.child.send("/ev\t")  # the agent's own command, completed (the only one: inserted)
    pty.expect(r"il(?:\x1b\[[0-9;]*m)*\^\[")  # "/ev" + "il^[…", prompt-toolkit's own stand-ins
    pty.child.send("\x15")  # Ctrl-U: clear the line
    pty.say("error")
    pty.expect("badly")
    pty.prompt()
    pty.child.send("\x15")  # the failed prompt is offered again: clear it
    pty.say("/mode")  # a picker of the agent's modes: their names and descriptions shown, never obeyed
    pty.expect(CHOICE)
    pty.expect(r"\* evil \(Evil \^\[")
    pty.child.send("\x1b")
    pty.expect(r"\(unchanged\)")
    pty.prompt()
    pty.leave()
    for piece in RAW_PIECES:
        assert piece not in pty.seen, f"{piece!r} reached the terminal"
    assert "^[]2;PWNED" in pty.seen


@pytest.mark.parametrize("size", [70 * 1024 * 1024])
def test_the_real_64_mib_limit(cli: Cli, size: int) -> None:
    proc = cli.run("prompt", "--cmd", HOSTILE, "huge-answer", env={"HOSTILE_HUGE": str(size)})
    assert proc.returncode == ExitCode.AGENT_ERROR, proc.stderr
    assert f"over the {64 * 1024 * 1024}-byte limit" in proc.stderr


def test_show_skips_junk_in_the_event_log(cli: Cli) -> None:
    from acpcli.history.index import Index
    from acpcli.paths import db_path

    assert prompt(cli, "hostile").returncode == ExitCode.OK
    with Index.open(db_path()) as index, index.writer() as writer:
        for junk in ("not json", "[" * 5000 + "]" * 5000, "42", '{"params": []}', '{"jsonrpc":"2.0","params":{"update":7}}',
                     json.dumps({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "\n\nafter junk\x1b[2J"}})):
            writer.append("hostile-1", "agent_message_chunk", junk)
    for args in (("show", "hostile-1"), ("export", "hostile-1", "--format", "markdown")):
        proc = run(cli, *args)
        assert proc.returncode == ExitCode.OK, proc.stderr
        assert "Traceback" not in proc.stderr
        assert "after junk^[[2J" in proc.stdout
        assert_clean(proc.stdout)


def test_markdown_and_quiet_prompt_output_is_neutralized(cli: Cli) -> None:
    for extra in (("--format", "markdown"), ("--quiet",)):
        proc = prompt(cli, "hostile", *extra)
        assert proc.returncode == ExitCode.OK, (extra, proc.stderr)
        assert_clean(proc.stdout)
        assert f"message {SHOWN} one" in proc.stdout, (extra, proc.stdout)


@pytest.mark.parametrize("keep_alive", ["0", "300"])
def test_a_new_id_with_control_characters_is_refused_for_scripts_not_printed_escaped(cli: Cli, keep_alive: str) -> None:
    """``ID=$(acpcli new ...)`` then ``prompt --session "$ID"``: an id holding ESC, BEL or a
    bidirectional override can be given back neither raw nor escaped. Refused in one line
    (exit 7), nothing on stdout; the session is recorded and ``--last`` continues it."""
    env = {"HOSTILE_ID": "s\x1b]0;x\x07-\u2067" + "7" * 30, "ACPCLI_KEEP_ALIVE": keep_alive}
    try:
        proc = run(cli, "new", "--no-repl", "--cmd", HOSTILE, env=env)
        message = error_line(proc, ExitCode.AGENT_ERROR)
        assert message == (
            "the new session's id: the agent chose one with control characters "
            f"('s^[]0;x^G-\\u2067{'7' * 30}'): not printed, since no command could be given it back"
        )
        assert "acpcli: hint: the session is recorded: `acpcli prompt --last`" in proc.stderr
        assert_clean(proc.stderr)
        (row,) = cli.index()
        assert row["id"] == env["HOSTILE_ID"]
        again = run(cli, "prompt", "--last", "--cmd", HOSTILE, "--permissions", "deny", "stop:end_turn", env=env)
        assert again.returncode == 0, again.stderr
        assert [r["id"] for r in cli.index()] == [env["HOSTILE_ID"]]
    finally:
        cli.run("stop", "--all")
    # a clean id is printed as it is, to be given back
    proc = run(cli, "new", "--no-repl", "--cmd", HOSTILE, env={"ACPCLI_KEEP_ALIVE": keep_alive, "HOSTILE_ID": "clean-42"})
    try:
        assert proc.returncode == 0 and proc.stdout == "clean-42\n", proc.stderr
    finally:
        cli.run("stop", "--all")
