"""A hostile agent's forms against the real CLI (issue 31, "Forms and links"), through
``tests/peers/sdk_elicit_agent.py``'s ``ask PARAMS`` (the request a test chooses):

* a field ``pattern`` that makes ``re`` backtrack for hours is decided without backtracking, or,
  when only ``re`` can read it, refused after a deadline with one line: never a hang, never
  accepted unchecked, and SIGTERM still ends acpcli while it is being checked;
* the pattern, the message, a field's name and a link the agent chose reach stderr with their
  escape sequences and bidirectional overrides shown, never obeyed;
* answers that name no field of a form do not accept it with the agent's defaults.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from acpcli.errors import ExitCode

from .conftest import TIMEOUT, Cli

AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_elicit_agent.py"
CMD = shlex.join([sys.executable, str(AGENT)])
LIVE = {"ACPCLI_KEEP_ALIVE": "300"}


def ask(schema_fields: dict[str, Any], message: str = "Fill me in", required: tuple[str, ...] = ()) -> str:
    """The prompt that makes the agent ask a form of ``schema_fields``."""
    schema: dict[str, Any] = {"type": "object", "properties": schema_fields}
    if required:
        schema["required"] = list(required)
    return "ask " + json.dumps({"mode": "form", "message": message, "requestedSchema": schema})


def answered(stdout: str) -> str:
    """The agent's report of the answer it got (``ANSWER decline null``)."""
    return stdout[stdout.index("ANSWER ") :].splitlines()[0]


def form_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("acpcli:") and "the agent's" in line]


def test_a_backtracking_pattern_is_decided_at_once(cli: Cli) -> None:
    prompt = ask({"code": {"type": "string", "pattern": "^(a+)+$"}}, required=("code",))
    proc = cli.ok("prompt", "--cmd", CMD, "--answer", "code=" + "a" * 37 + "!", prompt)
    assert answered(proc.stdout) == "ANSWER decline null"
    (line,) = form_lines(proc.stderr)
    assert line.endswith(": field 'code': does not match ^(a+)+$")
    proc = cli.ok("prompt", "--cmd", CMD, "--answer", "code=" + "a" * 23, prompt)
    assert answered(proc.stdout) == 'ANSWER accept {"code": "' + "a" * 23 + '"}'
    # nested and counted repeats, a long value: still one pass over it
    prompt = ask({"host": {"type": "string", "pattern": r"^([a-z0-9]+\.?)+[a-z]{2,}$"}})
    proc = cli.ok("prompt", "--cmd", CMD, "--answer", "host=" + "ab." * 3000 + "-", prompt)
    assert form_lines(proc.stderr)[0].endswith(": field 'host': does not match ^([a-z0-9]+\\.?)+[a-z]{2,}$")


def test_a_pattern_only_re_reads_is_checked_with_a_deadline(cli: Cli) -> None:
    # a back-reference: re decides it, in a child process; here that is quick
    prompt = ask({"twice": {"type": "string", "pattern": r"^(\w+)-\1$"}})
    proc = cli.ok("prompt", "--cmd", CMD, "--answer", "twice=ab-ab", prompt)
    assert answered(proc.stdout) == 'ANSWER accept {"twice": "ab-ab"}'
    proc = cli.ok("prompt", "--cmd", CMD, "--answer", "twice=ab-ba", prompt)
    assert form_lines(proc.stderr)[0].endswith(r": field 'twice': does not match ^(\w+)-\1$")
    # ... and here it would backtrack for hours: refused, not accepted unchecked
    prompt = ask({"code": {"type": "string", "pattern": r"^(a|aa)+\1$"}}, required=("code",))
    proc = cli.ok("prompt", "--cmd", CMD, "--answer", "code=" + "a" * 44 + "!", prompt)
    assert answered(proc.stdout) == "ANSWER decline null"
    (line,) = form_lines(proc.stderr)
    assert line.endswith(": field 'code': the agent's pattern for it could not be checked in time")


def test_sigterm_ends_acpcli_while_a_pattern_is_checked(cli: Cli) -> None:
    prompt = ask({"code": {"type": "string", "pattern": r"^(a+)+\1$"}})
    proc = subprocess.Popen(
        cli.argv("prompt", "--cmd", CMD, "--answer", "code=" + "a" * 33 + "!", prompt),
        env=cli.env(), cwd=cli.cwd, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    seen = threading.Event()
    out: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for chunk in iter(lambda: proc.stdout.read(1), ""):  # type: ignore[union-attr]
            out.append(chunk)
            if "GOT[" in "".join(out[-8:]):
                seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert seen.wait(TIMEOUT), "".join(out)  # the turn began: the form is being answered
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=TIMEOUT) == ExitCode.TERMINATED
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        reader.join(5)
        assert proc.stderr is not None
        proc.stderr.close()
        assert proc.stdout is not None
        proc.stdout.close()
    cli.trace.assert_all_gone()


def test_a_warm_host_checks_such_a_pattern_in_time_too(cli: Cli) -> None:
    sid = cli.ok("new", "--no-repl", "--cmd", CMD, env=LIVE).stdout.strip()
    try:
        prompt = ask({"code": {"type": "string", "pattern": r"^(a+)+\1$"}})
        proc = cli.ok("prompt", "--session", sid, "--answer", "code=" + "a" * 31 + "!", prompt, env=LIVE)
        assert answered(proc.stdout) == "ANSWER decline null"
        assert form_lines(proc.stderr)[0].endswith("the agent's pattern for it could not be checked in time")
        prompt = ask({"code": {"type": "string", "pattern": "^(a+)+$"}})
        proc = cli.ok("prompt", "--session", sid, "--answer", "code=" + "a" * 29, prompt, env=LIVE)
        assert answered(proc.stdout) == 'ANSWER accept {"code": "' + "a" * 29 + '"}'
    finally:
        stopped = cli.run("stop", "--all")
    assert stopped.returncode == 0, stopped.stderr


EVIL = "\x1b]2;PWNED\x07\u202e"  # (no "[": it goes into a pattern)


def test_what_the_agent_chose_is_shown_escaped_in_the_lines(cli: Cli) -> None:
    prompt = ask({"pin" + EVIL: {"type": "string", "pattern": "^[0-9]+" + EVIL}}, message="Say " + EVIL)
    proc = cli.ok("prompt", "--cmd", CMD, "--answer", "pin" + EVIL + "=12ab", prompt)
    assert answered(proc.stdout) == "ANSWER decline null"
    (line,) = form_lines(proc.stderr)
    assert line.endswith(": does not match ^[0-9]+^[]2;PWNED^G\\u202e"), line
    assert "'Say ^[]2;PWNED^G\\\\u202e'" in line  # the message, shown with repr's quotes
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in proc.stderr
    # a link with a right-to-left override: never shown as its letters would read
    params = {"mode": "url", "message": "Open " + EVIL, "elicitationId": "e-9",
              "url": "https://example.com/\u202egpj.exe"}  # fmt: skip
    proc = cli.ok("prompt", "--cmd", CMD, "ask " + json.dumps(params))
    assert answered(proc.stdout) == "ANSWER decline null"
    (line,) = form_lines(proc.stderr)
    assert "invisible formatting characters" in line, line
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in proc.stderr


def test_answers_that_name_no_field_do_not_accept_a_form(cli: Cli, tmp_path: Path) -> None:
    prompt = ask({"size": {"type": "string", "enum": ["s", "m"], "default": "m"},
                  "cups": {"type": "integer", "default": 2}})  # fmt: skip
    proc = cli.ok("prompt", "--cmd", CMD, "--answer", "zz=1", prompt)
    assert answered(proc.stdout) == "ANSWER decline null"
    (line,) = form_lines(proc.stderr)
    assert line.startswith("acpcli: declined the agent's form 'Fill me in' (fields: size, cups)")
    assert line.endswith(": no field of this form is called zz")
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"colour": "red", "mood": "fine"}))
    proc = cli.ok("prompt", "--cmd", CMD, "--answers", str(answers), prompt)
    assert answered(proc.stdout) == "ANSWER decline null"
    assert form_lines(proc.stderr)[0].endswith(": no field of this form is called colour, mood")
    # one name of the form is enough: the defaults fill the rest
    proc = cli.ok("prompt", "--cmd", CMD, "--answer", "zz=1", "--answer", "cups=3", prompt)
    assert answered(proc.stdout) == 'ANSWER accept {"cups": 3, "size": "m"}'
