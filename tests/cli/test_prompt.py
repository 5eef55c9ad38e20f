"""End-to-end tests of ``acpcli prompt`` in scripts and shell pipelines (issue 5).

Every test runs the real program (``python -m acpcli``) in a subprocess against the real
demo agent (``--delay 0``), started through the tracing wrapper of ``tests/cli/conftest.py``
so that no test can pass while leaving an agent process behind. Pipelines (``| head -1``,
``| tee``) run in a real ``bash``.

Invariants checked throughout: stdout carries the transcript only (the ``session ID``
status line, errors and notices go to stderr); redirected output has no ANSI escapes
unless ``FORCE_COLOR`` asks for them; the exit code tells how the turn ended.
"""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from acpcli.errors import ExitCode
from tests.cli.conftest import DEMO_ID, TIMEOUT, AgentTrace, Cli, error_line

ESC = "\x1b"
TRACEBACK_MARKS = ("Traceback", "Exception ignored", "BrokenPipeError")

#: Documented ``--format jsonl`` event types and the fields each must carry
#: (``acpcli/render/jsonl.py``).
JSONL_FIELDS: dict[str, set[str]] = {
    "message_start": {"type", "sessionId", "index", "role", "id"},
    "message_chunk": {"type", "sessionId", "index", "role", "id"},
    "message": {"type", "sessionId", "index", "role", "id", "text", "content"},
    "tool_call": {"type", "sessionId", "index", "id", "title", "kind", "status", "content", "locations", "rawInput", "rawOutput"},
    "tool_call_chunk": {"type", "sessionId", "index", "id", "content"},
    "plan": {"type", "sessionId", "index", "id", "planType", "entries"},
    "session": {"type", "sessionId", "field"},
    "turn_end": {"type", "sessionId", "stopReason"},
}


# -- helpers ------------------------------------------------------------------------------


def run_with_stdin(cli: Cli, args: list[str], stdin: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``cli.run`` with ``stdin`` piped in (``Cli.run`` always gives /dev/null)."""
    return subprocess.run(
        cli.argv(*args), input=stdin, env=cli.env(env), cwd=cli.cwd,
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )


def bash(cli: Cli, script: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a real shell pipeline in the test's cwd with acpcli's environment."""
    return subprocess.run(
        ["bash", "-c", script], env=cli.env(env), cwd=cli.cwd, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )


def acpcli_line(cli: Cli, *args: str) -> str:
    """A shell-quoted ``python -m acpcli ARGS`` command line."""
    return shlex.join(cli.argv(*args))


def sent(log: Path) -> list[dict[str, Any]]:
    """The frames acpcli sent, from a ``--log-file`` wire tap (lines ``TIME -> JSON``)."""
    frames = []
    for line in log.read_text(encoding="utf-8").splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] == "->":
            frames.append(json.loads(parts[2]))
    return frames


def sent_methods(log: Path) -> list[str]:
    return [f["method"] for f in sent(log) if "method" in f]


def session_from_stderr(stderr: str) -> str:
    """The id in the ``session ID`` status line a new prompt prints on stderr."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stderr)  # FORCE_COLOR colours stderr too
    ids = [line.split()[1] for line in plain.splitlines() if line.startswith("session ")]
    assert len(ids) == 1, stderr
    assert DEMO_ID.match(ids[0]), ids
    return ids[0]


def assert_clean_failure(proc: subprocess.CompletedProcess[str], code: ExitCode) -> None:
    assert proc.returncode == code, f"exit {proc.returncode}, wanted {code!r}\n{proc.stderr}"
    assert not any(mark in proc.stderr for mark in TRACEBACK_MARKS), proc.stderr
    assert sum(line.startswith("acpcli: error: ") for line in proc.stderr.splitlines()) == 1, proc.stderr


# -- where the prompt comes from ----------------------------------------------------------


def test_prompt_from_arguments_streams_plain_transcript(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.run("prompt", "--cmd", trace.demo_cmd(), "hello", "there")
    assert proc.returncode == 0, proc.stderr
    # the arguments are joined into one prompt, echoed first, then the agent's answer
    assert proc.stdout.startswith("> hello there\n"), proc.stdout[:200]
    assert "## Demo agent reply" in proc.stdout
    assert "Turn 1: hello there" in proc.stdout
    # status goes to stderr, never into the transcript
    sid = session_from_stderr(proc.stderr)
    assert sid not in proc.stdout
    assert ESC not in proc.stdout and ESC not in proc.stderr
    # no terminal: the edit's permission request got the non-interactive answer (deny)
    assert "Rejected: the file was not changed." in proc.stdout
    assert not (cli.cwd / "DEMO.md").exists()
    trace.assert_all_gone()
    trace.assert_no_unadvertised()


def test_prompt_from_file(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("words from a file\n", encoding="utf-8")
    proc = cli.ok("prompt", "--cmd", trace.demo_cmd(), "-f", str(prompt))
    assert proc.stdout.startswith("> words from a file\n"), proc.stdout[:200]
    trace.assert_all_gone()


def test_prompt_from_dash_file_reads_stdin(cli: Cli, trace: AgentTrace) -> None:
    proc = run_with_stdin(cli, ["prompt", "--cmd", trace.demo_cmd(), "-f", "-"], "words via dash\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("> words via dash\n"), proc.stdout[:200]
    trace.assert_all_gone()


def test_prompt_from_piped_stdin(cli: Cli, trace: AgentTrace) -> None:
    line = f"printf 'piped words\\n' | {acpcli_line(cli, 'prompt', '--cmd', trace.demo_cmd())}"
    proc = bash(cli, line)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("> piped words\n"), proc.stdout[:200]
    trace.assert_all_gone()


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        pytest.param(["", "  "], None, id="blank-arguments"),
        pytest.param([], "", id="empty-stdin"),
        pytest.param([], " \n\t\n", id="blank-stdin"),
        pytest.param(["-f", "-"], "", id="empty-dash-file"),
        pytest.param(["-f", "EMPTY"], None, id="empty-file"),
        pytest.param(["-f", "MISSING"], None, id="missing-file"),
        pytest.param(["-f", "EMPTY", "and", "text"], None, id="file-and-text"),
        pytest.param(["--format", "xml", "hi"], None, id="unknown-format"),
    ],
)
def test_bad_prompt_is_a_usage_error_before_any_agent(
    cli: Cli, trace: AgentTrace, tmp_path: Path, args: list[str], stdin: str | None
) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    args = [str(empty) if a == "EMPTY" else str(tmp_path / "missing.txt") if a == "MISSING" else a for a in args]
    argv = ["prompt", "--cmd", trace.demo_cmd(), *args]
    proc = cli.run(*argv) if stdin is None else run_with_stdin(cli, argv, stdin)
    error_line(proc, ExitCode.USAGE)
    assert trace.pids() == [], "a bad prompt must not start the agent"


# -- where the output goes ----------------------------------------------------------------


@pytest.mark.parametrize(
    "env",
    [{"NO_COLOR": "1", "TERM": "xterm-256color"}, {"TERM": "dumb"}],
    ids=["NO_COLOR", "TERM=dumb"],
)
def test_redirected_output_has_no_ansi(cli: Cli, trace: AgentTrace, env: dict[str, str]) -> None:
    proc = cli.run("prompt", "--cmd", trace.demo_cmd(), "no escapes please", env=env)
    assert proc.returncode == 0, proc.stderr
    assert ESC not in proc.stdout
    assert proc.stdout.startswith("> no escapes please\n")


def test_force_color_gives_ansi_even_when_redirected(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.run("prompt", "--cmd", trace.demo_cmd(), "colour please", env={"FORCE_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr
    assert ESC + "[" in proc.stdout
    assert "Demo agent reply" in proc.stdout
    # status lines still go to stderr, not into the rendered transcript
    assert session_from_stderr(proc.stderr) not in proc.stdout


def test_stdout_redirect_to_file_is_the_transcript_only(cli: Cli, trace: AgentTrace) -> None:
    line = acpcli_line(cli, "prompt", "--cmd", trace.demo_cmd(), "into a file")
    proc = bash(cli, f"{line} > answer.md; echo $? > status")
    assert (cli.cwd / "status").read_text().strip() == "0", proc.stderr
    answer = (cli.cwd / "answer.md").read_text(encoding="utf-8")
    assert answer.startswith("> into a file\n")
    assert "session demo-" not in answer and ESC not in answer
    assert proc.stdout == ""
    assert "session demo-" in proc.stderr


def test_jsonl_lines_parse_with_documented_fields(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.ok("prompt", "--cmd", trace.demo_cmd(), "--format", "jsonl", "json please")
    sid = session_from_stderr(proc.stderr)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events and all(isinstance(e, dict) for e in events)
    for event in events:
        assert event["type"] in JSONL_FIELDS, event
        missing = JSONL_FIELDS[event["type"]] - set(event)
        assert not missing, (missing, event)
        assert event["sessionId"] == sid
    types = {e["type"] for e in events}
    assert {"message_start", "message_chunk", "message", "tool_call", "plan", "turn_end"} <= types
    assert events[-1] == {"type": "turn_end", "sessionId": sid, "stopReason": "end_turn"}
    # the last ``message`` event of an index is authoritative: chunks add up to it
    final: dict[int, dict[str, Any]] = {}
    chunks: dict[int, str] = {}
    for e in events:
        if e["type"] == "message":
            final[e["index"]] = e
        elif e["type"] == "message_chunk":
            chunks[e["index"]] = chunks.get(e["index"], "") + e.get("text", "")
    roles = {final[i]["role"] for i in final}
    assert {"user", "thought", "agent"} <= roles
    for index, message in final.items():
        assert message["text"] == chunks[index]
    user = [m for m in final.values() if m["role"] == "user"]
    agent = [m for m in final.values() if m["role"] == "agent"]
    assert user[0]["text"] == "json please"
    assert agent[-1]["text"].startswith("## Demo agent reply")


def test_markdown_is_a_readable_transcript(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.ok("prompt", "--cmd", trace.demo_cmd(), "--format", "markdown", "markdown please")
    out = proc.stdout
    assert "## User\n\nmarkdown please" in out
    assert "## Agent" in out
    assert "<details>" in out and "<summary>Thought</summary>" in out  # thoughts folded
    assert "**Tool:** Edit DEMO.md (`edit`) — failed" in out  # tool calls with status
    assert "```diff" in out  # and their diffs
    assert ESC not in out


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_output_file_gets_what_stdout_would(cli: Cli, trace: AgentTrace, tmp_path: Path, fmt: str) -> None:
    target = tmp_path / "out" / "transcript.txt"
    target.parent.mkdir()
    cmd = trace.demo_cmd()
    to_file, to_stdout = cli.run_all(
        ["prompt", "--cmd", cmd, "--format", fmt, "-o", str(target), "same prompt"],
        ["prompt", "--cmd", cmd, "--format", fmt, "same prompt"],
    )
    assert to_file.returncode == 0 and to_stdout.returncode == 0, to_file.stderr + to_stdout.stderr
    assert to_file.stdout == ""
    # two fresh sessions with the same prompt: the same transcript, byte for byte
    assert target.read_text(encoding="utf-8") == to_stdout.stdout
    trace.assert_all_gone()


def test_quiet_prints_only_the_answer(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.ok("prompt", "--cmd", trace.demo_cmd(), "-q", "just the answer")
    assert proc.stdout.startswith("## Demo agent reply\n"), proc.stdout[:200]
    assert proc.stdout.rstrip().endswith("`run CMD`.")
    # no echo of the prompt, no thought, plan or tool call (the tool's diff says "Turn 1:")
    for noise in ("> just the answer\n\n[", "[thought]", "[plan]", "[tool]", "Turn 1:"):
        assert noise not in proc.stdout, noise


# -- continuing a session -----------------------------------------------------------------


def test_session_resumes_on_v2(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    first = cli.ok("prompt", "--cmd", trace.demo_cmd(), "-q", "first words")
    assert "(turn 1)" in first.stdout
    sid = session_from_stderr(first.stderr)
    log = tmp_path / "wire.log"
    proc = cli.ok("prompt", "--session", sid, "--log-file", str(log), "second words")
    assert "(turn 2)" in proc.stdout
    methods = sent_methods(log)
    assert "session/resume" in methods and "session/load" not in methods and "session/new" not in methods
    # resume replays nothing: the transcript starts with this turn
    assert proc.stdout.startswith("> second words\n")
    assert "first words" not in proc.stdout
    assert "session demo-" not in proc.stderr  # not a new session
    assert [r["id"] for r in cli.index()] == [sid]
    trace.assert_all_gone()
    trace.assert_no_unadvertised()


def test_session_loads_without_printing_the_replay(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    sid = session_from_stderr(cli.ok("prompt", "--cmd", trace.demo_cmd(), "first words").stderr)
    log = tmp_path / "wire.log"
    proc = cli.ok(
        "prompt", "--session", sid, "--cmd", trace.demo_cmd(without=["resume"]), "--log-file", str(log), "second words"
    )
    methods = sent_methods(log)
    assert "session/load" in methods and "session/resume" not in methods
    assert proc.stdout.startswith("> second words\n"), proc.stdout[:200]
    assert "first words" not in proc.stdout
    assert "(turn 2)" in proc.stdout
    trace.assert_no_unadvertised()
    trace.assert_all_gone()


def test_session_without_resume_or_load_is_a_capability_error(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    sid = cli.new(trace.demo_cmd())
    log = tmp_path / "wire.log"
    proc = cli.run(
        "prompt", "--session", sid, "--cmd", trace.demo_cmd(without=["resume", "load"]),
        "--log-file", str(log), "third",
    )
    message = error_line(proc, ExitCode.CAPABILITY)
    assert "resume" in message and "load" in message
    methods = sent_methods(log)
    assert not {"session/resume", "session/load", "session/prompt"} & set(methods), methods
    trace.assert_no_unadvertised()
    trace.assert_all_gone()


def test_unknown_session_starts_nothing(cli: Cli, trace: AgentTrace) -> None:
    error_line(cli.run("prompt", "--session", "demo-nosuch", "--cmd", trace.demo_cmd(), "hi"), ExitCode.SESSION_NOT_FOUND)
    assert trace.pids() == []


def test_session_and_last_together_is_usage(cli: Cli, trace: AgentTrace) -> None:
    error_line(cli.run("prompt", "--session", "x", "--last", "--cmd", trace.demo_cmd(), "hi"), ExitCode.USAGE)
    assert trace.pids() == []


def test_last_continues_the_latest_session_here(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    cmd = trace.demo_cmd()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = cli.run_all(["prompt", "--cmd", cmd, "older"], ["prompt", "--cmd", cmd, "--cwd", str(elsewhere), "other dir"])
    assert all(p.returncode == 0 for p in first), [p.stderr for p in first]
    older, other_dir = (session_from_stderr(p.stderr) for p in first)
    newer = session_from_stderr(cli.ok("prompt", "--cmd", cmd, "newer").stderr)
    assert len({older, newer, other_dir}) == 3
    log = tmp_path / "wire.log"
    proc = cli.ok("prompt", "--last", "--cmd", cmd, "--log-file", str(log), "-q", "again")
    assert "(turn 2)" in proc.stdout
    resumed = [f["params"]["sessionId"] for f in sent(log) if f.get("method") == "session/prompt"]
    assert resumed == [newer]
    trace.assert_all_gone()


def test_last_does_not_continue_another_commands_session(cli: Cli, trace: AgentTrace) -> None:
    cli.ok("prompt", "--cmd", trace.demo_cmd(protocol=1), "made by one command")
    # The same agent (recorded under its own name), another command line: nothing to continue.
    error_line(cli.run("prompt", "--last", "--cmd", trace.demo_cmd(protocol=2), "hi"), ExitCode.SESSION_NOT_FOUND)


def test_last_with_no_agent_named_continues_the_latest_session_here_whatever_its_agent(
    cli: Cli, trace: AgentTrace, tmp_path: Path
) -> None:
    # The scripted flow: `acpcli new --cmd … --no-repl`, then `acpcli prompt --last "…"`.
    older = session_from_stderr(cli.ok("prompt", "--cmd", trace.demo_cmd(protocol=2), "older").stderr)
    newer = session_from_stderr(cli.ok("prompt", "--cmd", trace.demo_cmd(protocol=1), "newer").stderr)
    assert older != newer
    log = tmp_path / "wire.log"
    proc = cli.ok("prompt", "--last", "--log-file", str(log), "-q", "again")
    assert "(turn 2)" in proc.stdout
    assert [f["params"]["sessionId"] for f in sent(log) if f.get("method") == "session/prompt"] == [newer]
    trace.assert_all_gone()


def test_last_with_no_agent_named_and_no_session_here(cli: Cli, trace: AgentTrace) -> None:
    error_line(cli.run("prompt", "--last", "hi"), ExitCode.SESSION_NOT_FOUND)
    assert trace.pids() == []


def test_last_without_an_earlier_session(cli: Cli, trace: AgentTrace) -> None:
    error_line(cli.run("prompt", "--last", "--cmd", trace.demo_cmd(), "hi"), ExitCode.SESSION_NOT_FOUND)
    assert trace.pids() == []


# -- how the turn ended -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code", "in_stdout"),
    [
        ("please refuse", ExitCode.REFUSAL, "stop reason *refusal*"),
        ("hit max tokens now", ExitCode.MAX_TOKENS, "## Demo agent reply"),
        ("crash now", ExitCode.AGENT_EXITED, "> crash now"),
    ],
    ids=["refusal", "max_tokens", "crash"],
)
def test_exit_code_follows_how_the_turn_ended(
    cli: Cli, trace: AgentTrace, text: str, code: ExitCode, in_stdout: str
) -> None:
    proc = cli.run("prompt", "--cmd", trace.demo_cmd(), text)
    assert_clean_failure(proc, code)
    assert in_stdout in proc.stdout  # what arrived before the end is still printed
    assert "acpcli: error" not in proc.stdout
    trace.assert_all_gone()


def test_exit_code_is_visible_to_the_shell(cli: Cli, trace: AgentTrace) -> None:
    line = acpcli_line(cli, "prompt", "--cmd", trace.demo_cmd(), "refuse")
    proc = bash(cli, f"{line} > /dev/null 2>&1; echo \"status=$?\"")
    assert proc.stdout.strip() == f"status={int(ExitCode.REFUSAL)}"


# -- pipelines ----------------------------------------------------------------------------


def _head_1(cli: Cli, trace: AgentTrace) -> tuple[subprocess.CompletedProcess[str], str]:
    """``acpcli prompt slow… | head -1``: ``slow`` streams for seconds, so head is gone long
    before acpcli's next write -- a broken pipe for sure. Returns the pipeline and acpcli's
    own exit status (``PIPESTATUS[0]``)."""
    line = acpcli_line(cli, "prompt", "--cmd", trace.demo_cmd(), "slow, then stop reading")
    proc = bash(cli, f"{line} | head -1; echo \"${{PIPESTATUS[0]}}\" > status")
    return proc, (cli.cwd / "status").read_text().strip()


def test_head_ends_quietly_and_shuts_the_agent_down(cli: Cli, trace: AgentTrace) -> None:
    # acpcli's own status is checked (deterministically) by the next test
    proc, _status = _head_1(cli, trace)
    assert proc.stdout == "> slow, then stop reading\n"
    assert not any(mark in proc.stderr for mark in TRACEBACK_MARKS), proc.stderr
    assert "acpcli: error" not in proc.stderr, proc.stderr
    assert len(trace.pids()) == 1
    trace.assert_all_gone()


def test_reader_leaving_mid_answer_exits_zero(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    # What `| head -1` does, made deterministic: stop reading while the slow answer streams.
    proc = _start_slow(cli, trace, tmp_path / "wire.log", 2)
    assert proc.stdout is not None and proc.stderr is not None
    with proc:  # closes the pipes and reaps the process
        proc.stdout.close()
        err = proc.stderr.read()
        proc.wait(timeout=TIMEOUT)
    assert not any(mark in err for mark in TRACEBACK_MARKS), err
    trace.assert_all_gone()
    assert proc.returncode == 0, err


def test_tee_file_equals_stdout(cli: Cli, trace: AgentTrace) -> None:
    line = acpcli_line(cli, "prompt", "--cmd", trace.demo_cmd(), "tee me")
    proc = bash(cli, f"set -o pipefail; {line} | tee copy.txt")
    assert proc.returncode == 0, proc.stderr
    assert (cli.cwd / "copy.txt").read_text(encoding="utf-8") == proc.stdout
    assert proc.stdout.startswith("> tee me\n") and "## Demo agent reply" in proc.stdout


def _start_slow(cli: Cli, trace: AgentTrace, log: Path, protocol: int) -> subprocess.Popen[str]:
    """A ``slow`` prompt whose stdout is a pipe; returns once the answer is streaming.

    Reading the answer's first line from the pipe while the turn still runs is itself the
    proof that output is flushed per chunk (what makes ``| tee`` stream)."""
    proc = subprocess.Popen(
        cli.argv("prompt", "--cmd", trace.demo_cmd(protocol=protocol), "--log-file", str(log), "go slow"),
        env=cli.env(), cwd=cli.cwd, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if "Streaming slowly" in line:
            break
    else:  # pragma: no cover - only when streaming is broken
        proc.kill()
        with proc:
            pytest.fail(f"the slow answer never streamed: {proc.communicate()[1]}")
    assert proc.poll() is None, "the slow turn ended before it could be interrupted"
    return proc


def test_sigint_cancels_the_turn_on_the_wire(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    log = tmp_path / "wire.log"
    proc = _start_slow(cli, trace, log, 2)
    with proc:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode in (ExitCode.INTERRUPTED, ExitCode.CANCELLED), err
    cancels = [f for f in sent(log) if f.get("method") == "session/cancel"]
    assert len(cancels) == 1, sent_methods(log)
    assert "id" not in cancels[0]  # a notification
    prompts = [f for f in sent(log) if f.get("method") == "session/prompt"]
    assert cancels[0]["params"]["sessionId"] == prompts[0]["params"]["sessionId"]
    assert not any(mark in err for mark in TRACEBACK_MARKS), err
    assert "Streaming slowly" not in out  # that line was consumed by the reader above
    trace.assert_all_gone()


def test_sigint_exits_130(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    proc = _start_slow(cli, trace, tmp_path / "wire.log", 2)
    with proc:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == ExitCode.INTERRUPTED, err
    trace.assert_all_gone()
