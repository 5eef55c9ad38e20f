"""The agent's requests for input in scripts (elicitation, issue 25), against
``tests/peers/sdk_elicit_agent.py`` (official SDK), driving the real CLI in subprocesses:

* acpcli offers ``elicitation`` with both modes explicit in ``initialize``;
* nobody to ask: a form or a link is declined, with one stderr line saying how to answer;
* ``--answer FIELD=VALUE`` / ``--answers FILE.json`` fill a form in, each value converted to its
  field's type, defaults for the rest; a required field left out, or a value the schema
  refuses, declines it with a line naming the field;
* ``--format jsonl`` shows the request and the answer; a sensitive field's value is ``***``
  there, on stderr and in the wire log, and only the agent gets it;
* a request acpcli cannot read gets a clean ``-32602``, one it will not draw a ``decline``
  with one line, and the turn goes on;
* a warm ``prompt --session`` (a live session's host) answers the same way.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from acpcli.errors import ExitCode

from .conftest import Cli

AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_elicit_agent.py"
CMD = shlex.join([sys.executable, str(AGENT)])
LIVE = {"ACPCLI_KEEP_ALIVE": "300"}


def said(stdout: str) -> str:
    """What the agent reported (``ANSWER …``, ``ERROR …``, ``CAPS …``): the rest of its line."""
    for marker in ("ANSWER ", "ERROR ", "CAPS ", "NO-CAPABILITY"):
        if marker in stdout:
            return stdout[stdout.index(marker) :].splitlines()[0]
    raise AssertionError(f"the agent said nothing expected:\n{stdout}")


def elicitation_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "the agent's" in line and "acpcli:" in line]


def test_the_capability_is_offered_with_both_modes(cli: Cli) -> None:
    proc = cli.ok("prompt", "--cmd", CMD, "caps")
    assert said(proc.stdout) == 'CAPS {"form": {}, "url": {}}'


def test_a_script_declines_forms_and_links_by_default_with_one_line(cli: Cli) -> None:
    proc = cli.ok("prompt", "--cmd", CMD, "form")
    assert said(proc.stdout) == "ANSWER decline null"
    (line,) = elicitation_lines(proc.stderr)
    assert line.startswith(
        "acpcli: declined the agent's form 'Tell me about you' (fields: name*, age,"
    )
    assert line.endswith("nobody can answer here; give --answer FIELD=VALUE or --answers FILE.json")
    proc = cli.ok("prompt", "--cmd", CMD, "url")
    assert said(proc.stdout) == "ANSWER decline null"
    (line,) = elicitation_lines(proc.stderr)
    assert "link https://auth.example.com/connect?elicitationId=e-1 (host auth.example.com;" in line
    assert line.endswith("nobody can open it here")


def test_answers_fill_a_form_in_typed_with_defaults_and_the_secret_masked(
    cli: Cli, tmp_path: Path
) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(
        json.dumps({"name": "Grace", "ratio": 0.75, "tags": ["y"], "subscribe": False})
    )
    proc = cli.ok(
        "prompt", "--cmd", CMD, "--answers", str(answers),
        "--answer", "name=Ada", "--answer", "colour=b", "--answer", "age=36", "--answer", "tags=x,z",
        "--answer", "api_token=s3cret-value", "--answer", "email=ada@example.com", "form",
    )  # fmt: skip
    content = json.loads(said(proc.stdout).split(" ", 2)[2])
    assert said(proc.stdout).startswith("ANSWER accept ")
    assert content == {
        "name": "Ada",  # --answer wins over the file
        "age": 36,  # an integer
        "ratio": 0.75,  # a number, from the file
        "subscribe": False,  # a boolean, from the file (its default is true)
        "colour": "b",
        "size": "m",  # the default
        "tags": ["x", "z"],
        "email": "ada@example.com",
        "api_token": "s3cret-value",  # the agent gets it
    }
    (line,) = elicitation_lines(proc.stderr)
    assert "from --answer: accepted: name='Ada', age=36," in line and "api_token=***" in line
    assert "s3cret-value" not in proc.stderr


def test_a_required_field_left_out_or_a_refused_value_declines_naming_the_field(cli: Cli) -> None:
    proc = cli.ok("prompt", "--cmd", CMD, "--answer", "colour=r", "form")
    assert said(proc.stdout) == "ANSWER decline null"
    (line,) = elicitation_lines(proc.stderr)
    assert line.endswith(": field 'name': required")
    proc = cli.ok(
        "prompt",
        "--cmd",
        CMD,
        "--answer",
        "name=Ada",
        "--answer",
        "colour=r",
        "--answer",
        "age=151",
        "form",
    )
    assert said(proc.stdout) == "ANSWER decline null"
    assert elicitation_lines(proc.stderr)[0].endswith(": field 'age': at most 150")
    proc = cli.ok(
        "prompt", "--cmd", CMD, "--answer", "name=Ada", "--answer", "colour=purple", "form"
    )
    assert elicitation_lines(proc.stderr)[0].endswith(
        ": field 'colour': not one of the choices: r, g, b"
    )
    proc = cli.ok(
        "prompt",
        "--cmd",
        CMD,
        "--answer",
        "name=Ada",
        "--answer",
        "colour=r",
        "--answer",
        "age=old",
        "form",
    )
    assert elicitation_lines(proc.stderr)[0].endswith(": field 'age': not an integer")


def test_bad_answer_flags_are_usage_errors(cli: Cli, tmp_path: Path) -> None:
    proc = cli.run("prompt", "--cmd", CMD, "--answer", "name", "form")
    assert proc.returncode == ExitCode.USAGE
    assert (
        proc.stderr.strip().splitlines()[0]
        == "acpcli: error: --answer takes FIELD=VALUE (got 'name')"
    )
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    proc = cli.run("prompt", "--cmd", CMD, "--answers", str(bad), "form")
    assert proc.returncode == ExitCode.USAGE
    assert "must hold a JSON object of FIELD: VALUE" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_jsonl_shows_the_request_and_the_answer_masked(cli: Cli) -> None:
    proc = cli.ok(
        "prompt", "--cmd", CMD, "--format", "jsonl", "--answer", "name=Ada", "--answer", "colour=g",
        "--answer", "api_token=s3cret-value", "form",
    )  # fmt: skip
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    asked = next(e for e in events if e["type"] == "elicitation")
    answered = next(e for e in events if e["type"] == "elicitation_answer")
    assert asked["mode"] == "form" and asked["message"] == "Tell me about you"
    assert asked["requestedSchema"]["required"] == ["name", "colour"]
    assert answered["action"] == "accept"
    assert answered["content"]["api_token"] == "***" and answered["content"]["name"] == "Ada"
    # the one place the secret appears is the agent's own echo of it
    assert [e["type"] for e in events if "s3cret-value" in json.dumps(e)] == [
        "message_chunk",
        "message",
    ]
    proc = cli.ok("prompt", "--cmd", CMD, "--format", "jsonl", "url")
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    asked = next(e for e in events if e["type"] == "elicitation")
    assert (
        asked["url"] == "https://auth.example.com/connect?elicitationId=e-1"
        and asked["elicitationId"] == "e-1"
    )
    assert next(e for e in events if e["type"] == "elicitation_answer")["action"] == "decline"


def test_the_wire_log_and_raw_frames_mask_a_sensitive_value(cli: Cli, tmp_path: Path) -> None:
    log = tmp_path / "wire.log"
    args = [
        "--answer",
        "name=Ada",
        "--answer",
        "colour=g",
        "--answer",
        "api_token=s3cret-value",
        "form",
    ]
    cli.ok("prompt", "--cmd", CMD, "--log-file", str(log), *args)
    frames = [json.loads(line.split(" ", 2)[2]) for line in log.read_text().splitlines()]
    (answer,) = [f for f in frames if isinstance(f.get("result"), dict) and "action" in f["result"]]
    assert answer["result"]["content"]["api_token"] == "***"
    assert answer["result"]["content"]["name"] == "Ada"
    proc = cli.ok("prompt", "--cmd", CMD, "--raw", *args)
    raw = [json.loads(line)["message"] for line in proc.stdout.splitlines()]
    (answer,) = [f for f in raw if isinstance(f.get("result"), dict) and "action" in f["result"]]
    assert answer["result"]["content"]["api_token"] == "***"


def test_malformed_and_undrawable_requests_get_clean_answers(cli: Cli) -> None:
    proc = cli.ok("prompt", "--cmd", CMD, "malformed")
    assert said(proc.stdout) == (
        "ERROR -32602 elicitation/create: invalid params: message: missing or not a string"
    )
    (line,) = elicitation_lines(proc.stderr)
    assert line.startswith("acpcli: warning: the agent's request for input is not valid ACP")
    proc = cli.ok("prompt", "--cmd", CMD, "othermode")
    assert said(proc.stdout).startswith(
        "ERROR -32602 elicitation/create: invalid params: mode: '_custom'"
    )
    proc = cli.ok("prompt", "--cmd", CMD, "bad")
    assert said(proc.stdout) == "ANSWER decline null"
    (line,) = elicitation_lines(proc.stderr)
    assert line == (
        "acpcli: declined the agent's request for input: "
        "field 'deep' is of type 'object', which acpcli cannot show as a form field"
    )
    assert "Traceback" not in proc.stderr


def test_a_warm_prompt_answers_through_the_host(cli: Cli) -> None:
    sid = cli.ok("new", "--no-repl", "--cmd", CMD, env=LIVE).stdout.strip()
    try:
        proc = cli.ok("prompt", "--session", sid, "short", env=LIVE)
        assert said(proc.stdout) == "ANSWER decline null"
        assert len(elicitation_lines(proc.stderr)) == 1
        proc = cli.ok(
            "prompt",
            "--session",
            sid,
            "--format",
            "jsonl",
            "--answer",
            "name=Zed",
            "short",
            env=LIVE,
        )
        events = [json.loads(line) for line in proc.stdout.splitlines()]
        answered = next(e for e in events if e["type"] == "elicitation_answer")
        assert answered["content"] == {"name": "Zed"}
        agent = "".join(
            e.get("text") or "" for e in events if e["type"] == "message" and e["role"] == "agent"
        )
        assert 'ANSWER accept {"name": "Zed"}' in agent
        status = cli.ok("sessions", "--live", "--json").stdout
        assert sid in status  # the same host answered both
    finally:
        cli.run("stop", "--all")
    cli.trace.assert_all_gone()


def test_an_answer_for_no_field_is_named_in_the_line(cli: Cli) -> None:
    proc = cli.ok("prompt", "--cmd", CMD, "--answer", "name=Ada", "--answer", "nmae=Bo", "short")
    assert said(proc.stdout) == 'ANSWER accept {"name": "Ada"}'
    (line,) = elicitation_lines(proc.stderr)
    assert line.endswith("accepted: name='Ada' (no field of this form is called nmae)")
