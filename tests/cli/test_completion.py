"""Shell completion, end to end: the committed scripts, the answers, and real shells.

* The scripts in ``completions/`` are what the program generates now (the drift test).
* Answers are asked for the way the scripts ask (a subprocess of the real program with
  ``_ACPCLI_COMPLETE``, ``COMP_WORDS`` and ``COMP_CWORD`` set) for every kind of candidate:
  commands, options, agents, session ids, directories, files, fixed choices.
* A TAB has no side effects: no state directory or database appears, no agent starts, no
  option callback runs, and a broken config or index answers nothing rather than an error.
* Real shells: bash at a pseudo-terminal (TAB typed by pexpect), fish's own completion
  engine (``complete -C``), zsh at a pseudo-terminal (descriptions shown).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acpcli.cli.completion import COMPLETE_VAR, SHELLS, script
from acpcli.errors import ExitCode
from acpcli.history.index import Index, SessionRecord

REPO = Path(__file__).resolve().parents[2]
COMPLETIONS = REPO / "completions"
VENV_BIN = Path(sys.executable).parent
TIMEOUT = 60  # a guard against hangs; every call here takes a fraction of a second

# Recorded sessions, oldest first. No common prefix, so a double TAB in bash lists them.
SESSIONS = (
    ("3f2a9c1e-7b1d-4c55-9a0e-2d8f4b6c1a01", "codex", "fix the parser. Then run the tests"),
    ("a91c44d0-52e8-4f3b-8c6d-0e1f2a3b4c02", "claude", None),
    ("demo-0123456789abcdef0123456789abcdef", "demo", "say hello"),
)
NEWEST_FIRST = [sid for sid, _, _ in reversed(SESSIONS)]


def registered_commands() -> list[str]:
    """The subcommands typer builds from the app, in their order (the ground truth)."""
    import typer.main
    from typer._click import Context

    from acpcli.cli import app

    built = typer.main.get_command(app)
    return built.list_commands(Context(built, info_name="acpcli"))


COMMANDS = registered_commands()


def record_sessions(closed: str | None = None) -> None:
    """SESSIONS in the test's index, each used later than the one before."""
    with Index.open() as index:
        for n, (sid, agent, title) in enumerate(SESSIONS):
            state = "closed" if sid == closed else "active"
            index.upsert_session(
                SessionRecord(id=sid, agent=agent, cwd="/", title=title, last_used_at=1_700_000_000 + n, state=state)
            )


def ask(line: str, shell: str = "bash", *, words: str | None = None, cword: int | None = None,
        env: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    """The answer of ``acpcli`` for a TAB at the end of ``line``, as ``(kind, value, help)``.

    COMP_WORDS/COMP_CWORD are what the scripts pass for such a line: the words joined by
    spaces (the last one empty when the line ends with a space) and the last word's index.
    ``words``/``cword`` override them (bash's own splitting at ``=``).
    """
    split = line.split(" ")
    environ = {
        **os.environ,
        COMPLETE_VAR: f"complete_{shell}",
        "COMP_WORDS": " ".join(split) if words is None else words,
        "COMP_CWORD": str(len(split) - 1 if cword is None else cword),
        **(env or {}),
    }
    proc = subprocess.run([sys.executable, "-m", "acpcli"], env=environ, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # a TAB must never write into the user's command line
    answer = []
    for row in proc.stdout.splitlines():
        kind, value, help_text = row.split("\t")
        answer.append((kind, value, help_text))
    return answer


def values(line: str, shell: str = "bash", **kw) -> list[str]:
    return [value for kind, value, _ in ask(line, shell, **kw) if kind == "plain"]


# ------------------------------------------------------------------------------------------
# The scripts do not drift from the program
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shell", SHELLS)
def test_committed_script_is_what_the_program_generates(shell: str) -> None:
    committed = (COMPLETIONS / f"acpcli.{shell}").read_text(encoding="utf-8")
    assert committed == script(shell), f"completions/acpcli.{shell} is stale: run python tools/gen_completions.py"


@pytest.mark.parametrize("shell", SHELLS)
def test_the_program_prints_the_committed_script(shell: str) -> None:
    committed = (COMPLETIONS / f"acpcli.{shell}").read_text(encoding="utf-8")
    by_command = subprocess.run(
        [sys.executable, "-m", "acpcli", "completion", shell], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert by_command.returncode == 0, by_command.stderr
    assert by_command.stdout == committed
    by_variable = subprocess.run(
        [sys.executable, "-m", "acpcli"], env={**os.environ, COMPLETE_VAR: f"source_{shell}"},
        capture_output=True, text=True, timeout=TIMEOUT,
    )
    assert by_variable.stdout == committed


def test_the_generator_writes_the_scripts_and_its_check_sees_drift(tmp_path: Path) -> None:
    tool = [sys.executable, str(REPO / "tools" / "gen_completions.py")]
    assert subprocess.run([*tool, "--check"], capture_output=True, timeout=TIMEOUT).returncode == 0
    subprocess.run([*tool, "--out", str(tmp_path)], check=True, capture_output=True, timeout=TIMEOUT)
    for shell in SHELLS:
        assert (tmp_path / f"acpcli.{shell}").read_text(encoding="utf-8") == script(shell)
    (tmp_path / "acpcli.zsh").write_text(script("zsh").replace("_describe", "_describe_old"), encoding="utf-8")
    check = subprocess.run([*tool, "--check", "--out", str(tmp_path)], capture_output=True, text=True, timeout=TIMEOUT)
    assert check.returncode == 1
    assert "acpcli.zsh" in check.stderr and "acpcli.bash" not in check.stderr


def test_an_unknown_shell_is_a_usage_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "acpcli", "completion", "tcsh"], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert proc.returncode == ExitCode.USAGE
    assert "bash, zsh, fish" in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("shell", SHELLS)
def test_each_script_is_valid_for_its_shell(shell: str) -> None:
    exe = shutil.which(shell)
    if exe is None:
        pytest.skip(f"{shell} is not installed")
    proc = subprocess.run([exe, "-n", str(COMPLETIONS / f"acpcli.{shell}")], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr


# ------------------------------------------------------------------------------------------
# The answers
# ------------------------------------------------------------------------------------------


def test_command_names() -> None:
    assert values("acpcli lo") == ["load"]
    answer = ask("acpcli ", "zsh")
    assert [value for _, value, _ in answer] == COMMANDS
    assert {"new", "load", "resume", "close", "sessions", "show", "prompt", "agents", "completion"} <= set(COMMANDS)
    assert all(kind == "plain" and help_text for kind, _, help_text in answer)
    assert ("plain", "show", "Print a session's stored transcript; no agent is started") in answer


def test_option_names_leave_out_those_already_given() -> None:
    options = values("acpcli load --")
    for name in ("--agent", "--cmd", "--cwd", "--add-dir", "--mcp-config", "--protocol", "--new-if-missing", "--help"):
        assert name in options
    assert "--title" not in options  # that one belongs to `new`
    assert "--agent" not in values("acpcli load --agent demo --")
    assert values("acpcli new --add-dir x --add", "fish") == ["--add-dir"]  # repeatable
    assert values("acpcli --ver") == ["--version"]
    described = ask("acpcli prompt --", "fish")
    assert ("plain", "--session", "Continue this session (resume, or load without printing the replay)") in described
    assert all(help_text for _, _, help_text in described)


def test_agent_names_builtin_and_configured(acpcli_home: Path) -> None:
    assert ask("acpcli new --agent de", "zsh") == [("plain", "demo", "built-in demo agent (offline)")]
    (acpcli_home / "config.toml").write_text(
        '[agents.mine]\ncommand = ["my-agent", "--acp"]\n\n[agents.minimal]\ncommand = "other-agent"\n'
        'description = "the small one"\n'
    )
    assert ask("acpcli prompt --agent mi", "fish") == [
        ("plain", "mine", "my-agent --acp"),
        ("plain", "minimal", "the small one"),
    ]
    assert values("acpcli sessions -a mi") == ["mine", "minimal"]
    assert "demo" in values("acpcli load x --agent ")


@pytest.mark.parametrize(
    "line",
    ["acpcli load ", "acpcli resume ", "acpcli close ", "acpcli show ", "acpcli export ",
     "acpcli prompt --session ", "acpcli prompt -s "],
)
def test_session_ids_newest_first(line: str) -> None:
    record_sessions()
    assert values(line) == NEWEST_FIRST


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_session_ids_are_described_by_title_and_agent(shell: str) -> None:
    record_sessions(closed=SESSIONS[0][0])
    assert ask("acpcli load ", shell) == [
        ("plain", "demo-0123456789abcdef0123456789abcdef", "say hello [demo]"),
        ("plain", "a91c44d0-52e8-4f3b-8c6d-0e1f2a3b4c02", "(untitled) [claude]"),
        ("plain", "3f2a9c1e-7b1d-4c55-9a0e-2d8f4b6c1a01", "fix the parser. Then run the tests [codex, closed]"),
    ]
    assert values("acpcli prompt hi -s a9", shell) == ["a91c44d0-52e8-4f3b-8c6d-0e1f2a3b4c02"]


def test_session_ids_once_given_are_not_offered_again() -> None:
    record_sessions()
    assert values(f"acpcli show {NEWEST_FIRST[0]} ") == []


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("acpcli new --cwd ", "dir"),
        ("acpcli new -C sr", "dir"),
        ("acpcli load x --add-dir ", "dir"),
        ("acpcli prompt --add-dir a --add-dir ", "dir"),
        ("acpcli sessions --cwd ", "dir"),
        ("acpcli new --mcp-config ", "file"),
        ("acpcli prompt -f ", "file"),
        ("acpcli prompt --file notes", "file"),
        ("acpcli export x -o ", "file"),
        ("acpcli new --log-file ", "file"),
    ],
)
def test_directories_and_files_are_left_to_the_shell(line: str, kind: str) -> None:
    assert ask(line) == [(kind, "", "")]


def test_option_equals_value() -> None:
    # bash splits at "=" (COMP_WORDBREAKS): `acpcli new --cwd=sr` arrives as five words
    assert ask("", words="acpcli new --cwd = sr", cword=4) == [("dir", "", "")]
    assert values("", words="acpcli prompt --format = m", cword=4) == ["markdown"]
    assert values("", words="acpcli prompt --format =", cword=3) == ["text", "markdown", "jsonl"]
    # zsh and fish keep the word whole
    assert values("acpcli new --protocol=", "zsh") == ["auto", "1", "2", "2-latest"]
    assert ask("acpcli new --mcp-config=se", "fish") == [("file", "", "")]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("acpcli new --protocol ", ["auto", "1", "2", "2-latest"]),
        ("acpcli resume x --permissions ", ["ask", "allow", "deny", "read-only"]),
        ("acpcli prompt --permissions r", ["read-only"]),
        ("acpcli prompt --format ", ["text", "markdown", "jsonl"]),
        ("acpcli export x --format j", ["jsonl"]),
        ("acpcli completion ", ["bash", "zsh", "fish"]),
    ],
)
def test_fixed_choices(line: str, expected: list[str]) -> None:
    assert values(line) == expected


def test_choices_carry_descriptions() -> None:
    assert ask("acpcli new --protocol 1", "zsh") == [("plain", "1", "ACP v1 only")]


def test_the_on_demand_tree_agrees_with_typers() -> None:
    # completion builds only the subcommand on the line, and lists names from declarations
    import typer.main
    from typer._click import Context

    from acpcli.cli import app
    from acpcli.cli.typer_compat import OnDemandGroup, command_tree

    built = typer.main.get_command(app)
    lazy = command_tree(app)
    assert isinstance(lazy, OnDemandGroup)
    ctx = Context(built, info_name="acpcli")
    assert lazy.list_commands(ctx) == built.list_commands(ctx) == COMMANDS
    assert lazy.commands == {}  # listing built nothing
    for name in COMMANDS:
        command = built.get_command(ctx, name)
        assert lazy.summary(name) == (command.hidden, command.short_help or command.help)
        again = lazy.get_command(ctx, name)
        assert [(p.name, p.opts) for p in again.params] == [(p.name, p.opts) for p in command.params]
    assert [p.name for p in lazy.params] == [p.name for p in built.params]


# ------------------------------------------------------------------------------------------
# A TAB has no side effects and never fails loudly
# ------------------------------------------------------------------------------------------

LINES = ["acpcli ", "acpcli load ", "acpcli prompt -s ", "acpcli new --agent ", "acpcli new --cwd ", "acpcli load --"]


def test_nothing_is_created(tmp_path: Path) -> None:
    home = tmp_path / "not-yet"
    answers = {line: ask(line, env={"ACPCLI_HOME": str(home)}) for line in LINES}
    assert answers["acpcli load "] == answers["acpcli prompt -s "] == []  # no index, no ids
    assert ("plain", "demo", "built-in demo agent (offline)") in answers["acpcli new --agent "]
    assert not home.exists()  # no state directory, no database


def test_no_agent_starts_and_no_callback_runs(acpcli_home: Path, tmp_path: Path) -> None:
    marker = tmp_path / "agent-ran"
    argv = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    (acpcli_home / "config.toml").write_text(f"[agents.boom]\ncommand = {json.dumps(argv)}\n")
    record_sessions()
    assert values("acpcli new --agent bo") == ["boom"]
    assert values("acpcli prompt --agent boom --last --session ") == NEWEST_FIRST
    assert ask("acpcli new --agent boom --no-repl --cwd ") == [("dir", "", "")]
    assert values("acpcli --version lo") == ["load"]  # --version would have printed and exited
    assert not marker.exists()


def test_a_broken_config_or_index_answers_nothing(acpcli_home: Path) -> None:
    (acpcli_home / "config.toml").write_text("[agents.x\n")
    assert values("acpcli new --agent ") == []
    (acpcli_home / "acpcli.db").write_bytes(b"this is not a database" * 100)
    assert values("acpcli load ") == []
    assert values("acpcli lo") == ["load"]  # the rest still works


@pytest.mark.parametrize(
    "env",
    [
        {COMPLETE_VAR: "complete_tcsh"},
        {COMPLETE_VAR: "frobnicate_bash"},
        {"COMP_CWORD": "not a number"},
        {"COMP_WORDS": 'acpcli load "unterminated'},
    ],
    ids=["unknown shell", "unknown instruction", "bad COMP_CWORD", "open quote"],
)
def test_odd_requests_are_answered_quietly(env: dict[str, str]) -> None:
    ask("acpcli lo", env=env)  # exit 0, nothing on stderr


# ------------------------------------------------------------------------------------------
# Real shells
# ------------------------------------------------------------------------------------------


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A directory where `dir-` could complete to a directory or a file, and `serv` to a file."""
    work = tmp_path / "work"
    (work / "dir-alpha").mkdir(parents=True)
    (work / "dir-file.txt").write_text("")
    (work / "servers.json").write_text("{}")
    return work


def shell_env(home: Path) -> dict[str, str]:
    """The user's environment with this venv's acpcli first on PATH and a plain terminal."""
    return {
        **os.environ,
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "ACPCLI_HOME": str(os.environ["ACPCLI_HOME"]),
        "HOME": str(home),
        "INPUTRC": os.devnull,  # readline defaults, whatever /etc/inputrc says
        "TERM": "dumb",
    }


@pytest.mark.slow
def test_tab_in_a_real_bash(workdir: Path, tmp_path: Path) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    import pexpect

    record_sessions()
    prompt = "[acpcli-test]$ "
    env = {**shell_env(tmp_path), "PS1": prompt}
    env.pop("PROMPT_COMMAND", None)
    sh = pexpect.spawn(bash, ["--norc", "--noprofile"], env=env, cwd=str(workdir), encoding="utf-8",
                       timeout=TIMEOUT, dimensions=(50, 250))
    try:
        sh.expect_exact(prompt)
        sh.sendline(f"source {COMPLETIONS / 'acpcli.bash'}")
        sh.expect_exact(prompt)

        def completed(typed: str) -> str:
            """Type ``typed`` and TAB, then turn the line into `echo LINE`; return what echo printed."""
            sh.send(typed + "\t")
            sh.send("\x01echo \r")  # Ctrl-A: start of line
            sh.expect_exact("\r\n")  # the end of the echoed input line
            sh.expect_exact(prompt)
            return sh.before.strip()

        assert completed("acpcli lo") == "acpcli load"
        assert completed("acpcli new --agent de") == "acpcli new --agent demo"
        assert completed("acpcli new --cwd dir-") == "acpcli new --cwd dir-alpha/"  # not dir-file.txt
        assert completed("acpcli new --cwd=dir-") == "acpcli new --cwd=dir-alpha/"
        assert completed("acpcli new --mcp-config serv") == "acpcli new --mcp-config servers.json"
        assert completed("acpcli load a9") == "acpcli load a91c44d0-52e8-4f3b-8c6d-0e1f2a3b4c02"

        # TAB TAB lists every recorded session id
        sh.send("acpcli load \t\t")
        for sid in NEWEST_FIRST:
            sh.expect_exact(sid)
        sh.sendcontrol("c")  # only once the list is out: ^C would interrupt the completion
        sh.expect_exact(prompt)
        sh.sendline("exit")
        sh.expect(pexpect.EOF)
    finally:
        sh.close(force=True)


def test_fish_completes_with_descriptions(workdir: Path, tmp_path: Path) -> None:
    fish = shutil.which("fish")
    if fish is None:
        pytest.skip("fish is not installed")
    record_sessions()

    def fish_complete(line: str) -> list[str]:
        command = f"source {COMPLETIONS / 'acpcli.fish'}; complete --do-complete '{line}'"
        proc = subprocess.run([fish, "--no-config", "-c", command], env=shell_env(tmp_path), cwd=workdir,
                              capture_output=True, text=True, timeout=TIMEOUT)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()

    assert fish_complete("acpcli lo") == ["load\tReopen a session with its replay, then the prompt opens"]
    assert fish_complete("acpcli load ") == [
        "demo-0123456789abcdef0123456789abcdef\tsay hello [demo]",
        "a91c44d0-52e8-4f3b-8c6d-0e1f2a3b4c02\t(untitled) [claude]",
        "3f2a9c1e-7b1d-4c55-9a0e-2d8f4b6c1a01\tfix the parser. Then run the tests [codex]",
    ]
    assert fish_complete("acpcli new --agent de") == ["demo\tbuilt-in demo agent (offline)"]
    assert fish_complete("acpcli new --cwd dir-") == ["dir-alpha/\tDirectory"]
    assert fish_complete("acpcli new --cwd=dir-") == ["--cwd=dir-alpha/\tDirectory"]
    assert fish_complete("acpcli prompt -f dir-") == ["dir-alpha/", "dir-file.txt"]


@pytest.mark.slow
def test_zsh_shows_descriptions(workdir: Path, tmp_path: Path) -> None:
    zsh = shutil.which("zsh")
    if zsh is None:
        pytest.skip("zsh is not installed")
    import pexpect

    record_sessions()
    prompt = "zsh-test> "
    sh = pexpect.spawn(zsh, ["-f", "-i"], env=shell_env(tmp_path), cwd=str(workdir), encoding="utf-8",
                       timeout=TIMEOUT, dimensions=(50, 250))
    try:
        sh.sendline(f"PS1='{prompt}'; autoload -U compinit; compinit -u -D; source {COMPLETIONS / 'acpcli.zsh'}")
        sh.expect_exact(prompt)
        sh.send("acpcli load \t")
        for sid, agent, title in reversed(SESSIONS):
            sh.expect(rf"{sid}\s+-- {title or '(untitled)'} \[{agent}\]".replace("(", r"\(").replace(")", r"\)"))
        sh.sendcontrol("c")
        sh.expect_exact(prompt)
        sh.send("acpcli new --cwd dir-\t")
        sh.send("\x01echo \r")
        sh.expect(r"\r\nacpcli new --cwd dir-alpha/?\r\n")
        sh.sendline("exit")
        sh.expect(pexpect.EOF)
    finally:
        sh.close(force=True)


def test_sessions_rm_offers_rm_then_the_ids_not_given_yet() -> None:
    record_sessions()
    assert values("acpcli sessions ") == ["rm", "prune"]
    assert values("acpcli sessions --json r") == ["rm"]
    assert values("acpcli sessions p") == ["prune"]
    assert values("acpcli sessions prune ") == []  # prune picks by --older-than, not by id
    assert values("acpcli sessions rm ") == NEWEST_FIRST
    assert values(f"acpcli sessions rm {NEWEST_FIRST[0]} ") == NEWEST_FIRST[1:]
    assert values("acpcli sessions other ") == []
