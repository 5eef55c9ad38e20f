"""``@path`` mentions, ``acpcli auth`` and ``auth_required`` in scripts: real subprocesses
against the demo agent (which lists the non-text blocks it receives in its answer) and the
SDK config agent (which requires a login before ``session/new``)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import AgentTrace, Cli

SDK_CONFIG_AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_config_agent.py"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 17


def _frames(log: Path) -> list[dict]:
    """The frames of a ``--log-file`` (``TIMESTAMP -> FRAME`` / ``TIMESTAMP <- FRAME`` lines)."""
    return [json.loads(line.split(" ", 2)[2]) for line in log.read_text().splitlines() if line.strip()]


def _sent_prompts(log: Path) -> list[list[dict]]:
    out = []
    for frame in _frames(log):
        message = frame
        if message.get("method") == "session/prompt":
            out.append(message["params"]["prompt"])
    return out


# -- @path mentions ---------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", [1, 2])
def test_a_text_file_is_embedded_when_the_agent_accepts_embedded_context(
    cli: Cli, trace: AgentTrace, workdir: Path, tmp_path: Path, protocol: int
) -> None:
    (workdir / "notes.txt").write_text("twelve chars")
    log = tmp_path / "wire.jsonl"
    proc = cli.ok("prompt", "--cmd", trace.demo_cmd(protocol=protocol), "--log-file", str(log), "summarize @notes.txt please")
    uri = (workdir / "notes.txt").resolve().as_uri()
    assert f"received resource {uri} (12 chars)" in proc.stdout
    (blocks,) = _sent_prompts(log)
    assert blocks[0] == {"type": "text", "text": "summarize @notes.txt please"}
    assert blocks[1]["type"] == "resource" and blocks[1]["resource"]["text"] == "twelve chars"
    trace.assert_no_unadvertised()


def test_without_embedded_context_a_mention_is_a_resource_link(cli: Cli, trace: AgentTrace, workdir: Path) -> None:
    (workdir / "notes.txt").write_text("some text")
    proc = cli.ok("prompt", "--cmd", trace.demo_cmd(protocol=1, without=["embedded-context"]), "see @notes.txt")
    assert f"received resource_link {(workdir / 'notes.txt').resolve().as_uri()}" in proc.stdout
    trace.assert_no_unadvertised()


@pytest.mark.parametrize(("advertised", "said"), [(True, "received image image/png"), (False, "received resource_link")])
def test_images_only_when_advertised(cli: Cli, trace: AgentTrace, workdir: Path, advertised: bool, said: str) -> None:
    (workdir / "shot.png").write_bytes(PNG)
    extra = ("--with", "image") if advertised else ()
    proc = cli.ok("prompt", "--cmd", trace.demo_cmd(protocol=1, extra=extra), "what is in @shot.png")
    assert said in proc.stdout
    trace.assert_no_unadvertised()  # the demo agent logs an image it never advertised


def test_a_mention_outside_the_session_directories_is_refused_before_any_session(
    cli: Cli, trace: AgentTrace, workdir: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("no")
    (workdir / "escape").symlink_to(secret)
    for mention in ("@../secret.txt", "@escape", f"@{secret}"):
        proc = cli.run("prompt", "--cmd", trace.demo_cmd(), f"read {mention}")
        assert proc.returncode == ExitCode.USAGE, proc.stderr
        assert proc.stderr.startswith("acpcli: error: ") and "outside the session's directories" in proc.stderr
        assert proc.stdout == ""
    assert cli.index() == []  # no session was created for a prompt that was never sent
    assert "session/new" not in trace.stderr()


def test_an_at_word_that_names_no_file_stays_text_in_scripts(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    log = tmp_path / "wire.jsonl"
    code = "@dataclass\nclass A: pass\n"
    proc = subprocess_run(cli, ["prompt", "--cmd", trace.demo_cmd(), "--log-file", str(log), "-f", "-"], code)
    assert proc.returncode == 0, proc.stderr
    assert _sent_prompts(log) == [[{"type": "text", "text": code}]]


def subprocess_run(cli: Cli, args: list[str], stdin: str):  # type: ignore[no-untyped-def]
    import subprocess

    return subprocess.run(cli.argv(*args), env=cli.env(), cwd=cli.cwd, input=stdin, capture_output=True, text=True, timeout=60)


# -- acpcli auth --------------------------------------------------------------------------------


def _auth_agent(trace: AgentTrace, state: Path, protocol: int = 1) -> str:
    return trace.demo_cmd(protocol=protocol, extra=("--require-auth", "--state-dir", str(state)))


@pytest.mark.parametrize("protocol", [1, 2])
def test_auth_required_in_a_script_exits_10_with_the_login_to_run(
    cli: Cli, trace: AgentTrace, tmp_path: Path, protocol: int
) -> None:
    cmd = _auth_agent(trace, tmp_path / "state", protocol)
    proc = cli.run("new", "--no-repl", "--cmd", cmd)
    assert proc.returncode == ExitCode.AUTH_REQUIRED
    assert "Authentication required" in proc.stderr
    assert f"acpcli: hint: log in with `acpcli auth --cmd {shlex.quote(cmd)}`" in proc.stderr
    assert cli.index() == []

    # the login it names works, and is kept by the agent for its next processes
    login = cli.run("auth", "--cmd", cmd)
    assert login.returncode == 0, login.stderr
    assert "logged in to acpcli demo agent" in login.stderr and "with Demo login" in login.stderr
    session = cli.new(cmd)
    assert session.startswith("demo-")
    expected = "authenticate" if protocol == 1 else "auth/login"
    assert trace.stderr().count("UNADVERTISED") == 0
    log = tmp_path / "again.jsonl"
    cli.ok("auth", "--cmd", cmd, "--log-file", str(log))
    assert [f.get("method") for f in _frames(log) if f.get("method")][:2] == [
        "initialize", expected,
    ]


def test_auth_list_prints_the_methods_as_tsv(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    proc = cli.ok("auth", "--cmd", _auth_agent(trace, tmp_path / "state"), "--list")
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    assert rows and rows[0][:2] == ["demo-login", "agent"]


def test_auth_with_an_unknown_method_or_none_offered(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    bad = cli.run("auth", "--cmd", _auth_agent(trace, tmp_path / "state"), "--method", "nope")
    assert bad.returncode == ExitCode.USAGE and "no login method 'nope'" in bad.stderr
    none = cli.run("auth", "--cmd", trace.demo_cmd())
    assert none.returncode == ExitCode.CAPABILITY and "advertises no login methods" in none.stderr


def test_logout_is_refused_unless_advertised_on_v1(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    proc = cli.run("auth", "--cmd", trace.demo_cmd(protocol=1), "--logout")
    assert proc.returncode == ExitCode.CAPABILITY and "auth.logout" in proc.stderr
    assert "UNADVERTISED" not in trace.stderr()


def test_a_terminal_login_runs_the_agents_own_command(cli: Cli, tmp_path: Path, workdir: Path) -> None:
    """A v1 agent offering only a terminal login: acpcli runs the agent's command line plus the
    method's args and env (never `authenticate`), and its exit status decides."""
    agent = tmp_path / "term_agent.py"
    agent.write_text(TERMINAL_AGENT)
    marker = tmp_path / "login-ran"
    cmd = shlex.join([sys.executable, str(agent), str(marker)])
    proc = cli.run("auth", "--cmd", cmd)
    assert proc.returncode == 0, proc.stderr
    assert marker.read_text() == "--login yes"
    marker.write_text("fail")
    failed = cli.run("auth", "--cmd", cmd)
    assert failed.returncode == ExitCode.AUTH_REQUIRED and "exited with status 5" in failed.stderr


TERMINAL_AGENT = r"""
import json, os, sys
marker = sys.argv[1]
if "--login" in sys.argv:  # the login program: succeed once, fail when told to
    if os.path.exists(marker) and open(marker).read() == "fail":
        sys.exit(5)
    open(marker, "w").write("--login " + os.environ.get("LOGIN_FLAG", "no"))
    sys.exit(0)
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        assert msg["params"]["clientCapabilities"]["auth"]["terminal"] is True
        result = {"protocolVersion": 1, "agentCapabilities": {},
                  "authMethods": [{"id": "tty", "name": "Terminal login", "type": "terminal",
                                   "args": ["--login"], "env": {"LOGIN_FLAG": "yes"}}]}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
    elif "id" in msg:
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}), flush=True)
"""


# -- a peer we did not write: the official SDK ----------------------------------------------


def test_sdk_agent_requiring_auth_exits_10_then_logs_in(cli: Cli, tmp_path: Path) -> None:
    record = tmp_path / "sdk.jsonl"
    cmd = shlex.join([sys.executable, str(SDK_CONFIG_AGENT)])
    env = {"SDK_RECORD_FILE": str(record)}
    first = cli.run("prompt", "--cmd", cmd, "hello", env=env)
    assert first.returncode == ExitCode.AUTH_REQUIRED, first.stderr
    assert cli.run("auth", "--cmd", cmd, env=env).returncode == 0
    methods = [json.loads(line).get("method") for line in record.read_text().splitlines()]
    assert "authenticate" in methods


# -- session settings from the command line ---------------------------------------------------


@pytest.mark.parametrize("protocol", [1, 2])
def test_mode_model_and_set_apply_before_the_prompt(cli: Cli, trace: AgentTrace, tmp_path: Path, protocol: int) -> None:
    log = tmp_path / "wire.jsonl"
    proc = cli.ok(
        "prompt", "--cmd", trace.demo_cmd(protocol=protocol), "--log-file", str(log),
        "--mode", "Code", "--model", "smart", "--set", "effort=high", "status",
    )
    assert "mode=code model=demo-smart effort=high" in proc.stdout
    methods = [f.get("method") for f in _frames(log) if f.get("method")]
    assert methods.count("session/set_config_option") == 3
    assert methods.index("session/prompt") > max(i for i, m in enumerate(methods) if m == "session/set_config_option")
    trace.assert_no_unadvertised()


def test_a_bad_setting_is_a_usage_error_and_no_prompt_is_sent(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    log = tmp_path / "wire.jsonl"
    bad_value = cli.run("prompt", "--cmd", trace.demo_cmd(), "--log-file", str(log), "--set", "effort=turbo", "hi")
    assert bad_value.returncode == ExitCode.USAGE
    assert "'turbo' is not a value of effort (choose from: low, medium, high)" in bad_value.stderr
    # the session exists by then (settings are the agent's, per session): its id is said first
    (made,) = cli.index()
    assert bad_value.stderr.startswith(f"session {made['id']}\n")
    no_such = cli.run("prompt", "--cmd", trace.demo_cmd(protocol=1, without=["config-options", "modes"]), "--model", "x", "hi")
    assert no_such.returncode == ExitCode.USAGE and "offers no model setting" in no_such.stderr
    assert "session/prompt" not in [f.get("method") for f in _frames(log)]
    pids = len(trace.pids())
    malformed = cli.run("prompt", "--cmd", trace.demo_cmd(), "--set", "effort", "hi")
    assert malformed.returncode == ExitCode.USAGE and "--set wants NAME=VALUE" in malformed.stderr
    assert len(trace.pids()) == pids  # refused before any agent started
