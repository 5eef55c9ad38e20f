"""Inputs without an end, or far too large, are refused or capped in bounded memory and time:
one error line and a documented exit code, never a traceback, never the machine's memory.

Every command runs the real ``acpcli`` in a subprocess under an address-space limit
(:data:`MEMORY`, ``RLIMIT_AS``, inherited by the agents it starts) and the usual timeout, so a
regression ends in a MemoryError within seconds instead of eating the machine.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import TIMEOUT, AgentTrace, Cli, error_line

#: Address space allowed to acpcli (and its agent): several times what a command needs, far
#: below what reading /dev/zero, a FIFO fed by `yes` or a 2 GiB line whole takes.
MEMORY = 1024 * 1024 * 1024
AGENTS = Path(__file__).resolve().parent.parent / "peers"
FS_AGENT = shlex.join([sys.executable, str(AGENTS / "sdk_fs_agent.py")])
HOSTILE = shlex.join([sys.executable, str(AGENTS / "hostile_agent.py")])


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def limited(
    cli: Cli, *args: str, stdin: int | None = subprocess.DEVNULL, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``acpcli ARGS`` under :data:`MEMORY`, stdin from ``stdin`` (a file descriptor)."""
    return subprocess.run(
        cli.argv(*args), env=cli.env(env), cwd=cli.cwd, stdin=stdin, capture_output=True, text=True,
        timeout=TIMEOUT, check=False, preexec_fn=_limit_memory,
    )


@pytest.fixture
def yes_fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO that `yes` writes into for as long as anyone reads it."""
    fifo = tmp_path / "endless"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"exec yes > {shlex.quote(str(fifo))}"], stderr=subprocess.DEVNULL)
    try:
        yield fifo
    finally:
        writer.kill()
        if writer.poll() is None:
            # Still blocked opening the FIFO (nobody read it): a reader lets the open finish.
            fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            os.close(fd)
        writer.wait(timeout=10)


# -- the prompt -----------------------------------------------------------------------------------


def test_prompt_from_dev_zero_is_refused_as_binary_at_once(cli: Cli, trace: AgentTrace) -> None:
    message = error_line(limited(cli, "prompt", "--cmd", trace.demo_cmd(), "-f", "/dev/zero"), ExitCode.USAGE)
    assert message == "cannot read prompt file /dev/zero: binary data, not text (a NUL byte at offset 0)"
    with open("/dev/zero", "rb") as zero:
        piped = limited(cli, "prompt", "--cmd", trace.demo_cmd(), stdin=zero.fileno())
    assert error_line(piped, ExitCode.USAGE).endswith("binary data, not text (a NUL byte at offset 0)")
    assert trace.pids() == []  # refused before any agent started


def test_prompt_from_an_endless_fifo_is_refused_at_the_cap(cli: Cli, trace: AgentTrace, yes_fifo: Path) -> None:
    proc = limited(cli, "prompt", "--cmd", trace.demo_cmd(), "-f", str(yes_fifo))
    message = error_line(proc, ExitCode.USAGE)
    assert message == f"prompt file {yes_fifo} is too large: more than 8 MiB, the most a prompt may hold"
    assert "acpcli: hint: mention a large file with @PATH" in proc.stderr
    assert trace.pids() == []


def test_an_endless_prompt_on_stdin_is_refused_at_the_cap(cli: Cli, trace: AgentTrace) -> None:
    yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert yes.stdout is not None
        piped = limited(cli, "prompt", "--cmd", trace.demo_cmd(), stdin=yes.stdout.fileno())
        dash = limited(cli, "prompt", "--cmd", trace.demo_cmd(), "-f", "-", stdin=yes.stdout.fileno())
    finally:
        yes.kill()
        yes.wait(timeout=10)
        if yes.stdout is not None:
            yes.stdout.close()
    for proc in (piped, dash):
        assert error_line(proc, ExitCode.USAGE) == (
            "the prompt from standard input is too large: more than 8 MiB, the most a prompt may hold"
        )
    assert trace.pids() == []


def test_a_prompt_file_under_the_cap_is_still_sent(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    text = tmp_path / "prompt.txt"
    text.write_text("hello " * 20000)  # 120 kB: larger than one chunk of the capped read
    proc = limited(cli, "prompt", "--cmd", trace.demo_cmd(), "-f", str(text))
    assert proc.returncode == 0, proc.stderr
    assert "hello hello" in proc.stdout


# -- MCP files and the config ---------------------------------------------------------------------


def test_mcp_config_from_dev_zero_is_a_config_error(cli: Cli, trace: AgentTrace) -> None:
    proc = limited(cli, "new", "--no-repl", "--cmd", trace.demo_cmd(), "--mcp-config", "/dev/zero")
    assert error_line(proc, ExitCode.CONFIG) == "/dev/zero is too large for an MCP server file (more than 1 MiB)"
    assert trace.pids() == []


def test_mcp_config_from_an_endless_fifo_is_a_config_error(cli: Cli, trace: AgentTrace, yes_fifo: Path) -> None:
    proc = limited(cli, "new", "--no-repl", "--cmd", trace.demo_cmd(), "--mcp-config", str(yes_fifo))
    assert "too large for an MCP server file" in error_line(proc, ExitCode.CONFIG)


def test_a_fifo_nobody_writes_to_is_given_up_with_one_line(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    """``-f``, ``--answers`` and ``--mcp-config`` on a FIFO with no writer: opening one waits for
    a writer forever; each is given up after a while of silence, one line, nothing started."""
    commands = {
        "-f": (["prompt", "--cmd", trace.demo_cmd(), "-f"], ExitCode.USAGE, "cannot read prompt file"),
        "--answers": (["prompt", "--cmd", trace.demo_cmd(), "--answers"], ExitCode.USAGE, "cannot read --answers"),
        "--mcp-config": (["new", "--no-repl", "--cmd", trace.demo_cmd(), "--mcp-config"], ExitCode.CONFIG,
                         "cannot read MCP server file"),
    }  # fmt: skip
    procs = {}
    for option, (args, _, _) in commands.items():
        fifo = tmp_path / option.strip("-")
        os.mkfifo(fifo)
        argv = cli.argv(*args, str(fifo), *(["hello"] if args[0] == "prompt" and option != "-f" else []))
        procs[option] = (fifo, subprocess.Popen(  # at once: each waits its while of silence
            argv, env=cli.env(), cwd=cli.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, preexec_fn=_limit_memory,
        ))  # fmt: skip
    try:
        for option, (fifo, proc) in procs.items():
            out, err = proc.communicate(timeout=TIMEOUT)
            done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
            _, code, lead = commands[option]
            message = error_line(done, code)
            assert message == f"{lead} {fifo}: nothing was written to it for 10 seconds (a FIFO with no writer?)"
    finally:
        for _, proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert trace.pids() == []


def test_a_fifo_written_a_moment_later_is_read(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    fifo = tmp_path / "prompt"
    os.mkfifo(fifo)
    # the writer opens it only after acpcli has (a shell's open waits for a reader), then waits
    writer = subprocess.Popen(["sh", "-c", f"sleep 1; printf 'say hello late' > {shlex.quote(str(fifo))}"])
    try:
        proc = limited(cli, "prompt", "--cmd", trace.demo_cmd(), "-f", str(fifo))
    finally:
        writer.wait(timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert "say hello late" in proc.stdout


def test_a_config_file_that_is_dev_zero_is_a_config_error(cli: Cli, acpcli_home: Path) -> None:
    (acpcli_home / "config.toml").symlink_to("/dev/zero")
    proc = limited(cli, "new", "--no-repl", "--agent", "demo")
    line = error_line(proc, ExitCode.CONFIG)
    # (as root /dev/zero is root's and writable by all: refused as a shared config before it is read)
    assert line == f"{acpcli_home / 'config.toml'} is too large for a config file (more than 1 MiB)" or (
        "config file" in line and "writable by group and others" in line
    ), line
    assert cli.index() == []


@pytest.mark.parametrize(
    "text",
    [
        "a = " + "[" * 100_000 + "]" * 100_000,  # deeper than the parser's recursion
        "a = " + "[" * 500 + "]" * 500,  # parsed, but deeper than any config
        "a = " + "{b = " * 3000 + "1" + "}" * 3000,
        "[" + ".".join(["t"] * 200) + "]",
    ],
    ids=["arrays-100000", "arrays-500", "inline-tables", "dotted-table"],
)
def test_a_deeply_nested_config_is_one_line(cli: Cli, acpcli_home: Path, text: str) -> None:
    (acpcli_home / "config.toml").write_text(text + "\n")
    message = error_line(limited(cli, "new", "--no-repl", "--agent", "demo"), ExitCode.CONFIG)
    assert message == f"{acpcli_home / 'config.toml'}: nested too deeply (more than 64 levels of arrays, tables or objects)"


@pytest.mark.parametrize("depth", [100_000, 900], ids=["beyond-the-parser", "parsed"])
def test_a_deeply_nested_mcp_file_is_one_line(cli: Cli, trace: AgentTrace, tmp_path: Path, depth: int) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"mcpServers": {"x": {"type": "_x", "deep": ' + "[" * depth + "]" * depth + "}}}")
    proc = limited(cli, "new", "--no-repl", "--cmd", trace.demo_cmd(), "--mcp-config", str(deep))
    assert error_line(proc, ExitCode.CONFIG) == f"{deep}: nested too deeply (more than 64 levels of arrays, tables or objects)"
    assert trace.pids() == []


# -- fs/read_text_file on a huge file --------------------------------------------------------------


@pytest.fixture
def huge_file(workdir: Path) -> Path:
    """2 GiB: ``one``, ``two``, a 2 GiB line of NUL bytes (a hole), ``three``, ``four``."""
    path = workdir / "huge.txt"
    with open(path, "wb") as out:
        out.write(b"one\ntwo\n")
        out.truncate(2 * 1024**3)
        out.seek(0, os.SEEK_END)
        out.write(b"\nthree\nfour\n")
    if os.stat(path).st_blocks * 512 > 64 * 1024**2:
        path.unlink()
        pytest.skip("this file system does not keep sparse files sparse")
    return path


def fs_read(cli: Cli, *words: str | int) -> dict[str, object]:
    """What the SDK agent got for ``read WORDS`` (acpcli under :data:`MEMORY`)."""
    proc = limited(cli, "prompt", "--cmd", FS_AGENT, " ".join(["read", *map(str, words)]))
    assert proc.returncode == 0, proc.stderr
    answer: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return answer


def test_reading_lines_of_a_huge_file_reads_only_what_is_asked(cli: Cli, huge_file: Path) -> None:
    assert fs_read(cli, huge_file, 1, 2) == {"ok": {"content": "one\ntwo\n"}}
    # Past the 2 GiB line: reached without holding it.
    assert fs_read(cli, huge_file, 4, 1) == {"ok": {"content": "three\n"}}
    assert fs_read(cli, huge_file, 5) == {"ok": {"content": "four\n"}}
    assert fs_read(cli, huge_file, 6) == {"ok": {"content": ""}}
    # The 2 GiB line itself, or the whole file: refused after reading just past the cap.
    for words in ((3, 1), ()):
        answer = fs_read(cli, huge_file, *words)
        error = answer["error"]
        assert isinstance(error, dict) and error["code"] == -32602, answer
        assert "read it in parts with line and limit" in error["message"]


# -- integer options ------------------------------------------------------------------------------


def test_huge_limits_and_ages_are_no_limit_not_a_traceback(cli: Cli, trace: AgentTrace) -> None:
    cli.ok("prompt", "--cmd", trace.demo_cmd(), "hello")
    (sid,) = [row["id"] for row in cli.index()]
    huge = "99999999999999999999"
    for args in (
        ("sessions", "--limit", huge),
        ("sessions", "--all", "--limit", "9" * 5000),
        ("sessions", "--since", "9" * 5000 + "d"),
        ("sessions", "--since", huge + "w"),
        ("search", "--limit", huge, "hello"),
    ):
        proc = cli.run(*args)
        assert proc.returncode == 0, (args[:2], proc.stderr[-500:])
        assert sid in proc.stdout, args[:2]
    dry = cli.run("sessions", "prune", "--older-than", huge + "d", "--dry-run")
    assert dry.returncode == 0 and "nothing to delete" in dry.stderr, dry.stderr[-500:]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("sessions", "--limit", "\u00b2"), "--limit must be a number"),  # a digit to str.isdigit, not to int()
        (("search", "--limit", "\u0661\u0662", "x"), "--limit must be a number"),  # Arabic-Indic digits
        (("sessions", "--limit", "-1"), "--limit must be"),
        (("sessions", "--since", "99999-01-01"), "--since must be"),
    ],
)
def test_bad_numbers_are_usage_errors(cli: Cli, trace: AgentTrace, args: tuple[str, ...], words: str) -> None:
    cli.new(trace.demo_cmd())
    assert words in error_line(cli.run(*args), ExitCode.USAGE)


# -- long session ids -----------------------------------------------------------------------------


def test_a_huge_session_id_is_cut_where_it_is_echoed(cli: Cli, trace: AgentTrace) -> None:
    cli.new(trace.demo_cmd())
    huge = "a" * 100_000  # about the most one argument may hold (MAX_ARG_STRLEN is 128 KiB)
    for args in (
        ("show", huge),
        ("export", huge),
        ("close", huge),
        ("prompt", "--session", huge, "hi"),
        ("sessions", "rm", "--yes", huge),
        ("load", huge, "--no-repl"),
        ("load", huge, "--no-repl", "--cmd", trace.demo_cmd()),  # the agent's own "not found"
    ):
        proc = limited(cli, *args)
        error_line(proc, ExitCode.SESSION_NOT_FOUND)
        assert len(proc.stderr) < 3000, (args[0], len(proc.stderr))
        assert "(100,000 characters)" in proc.stderr, proc.stderr


def test_a_huge_session_id_from_an_agent_is_stored_whole_and_echoed_cut(cli: Cli) -> None:
    proc = limited(cli, "prompt", "--cmd", HOSTILE, "hello", env={"HOSTILE_ID_BYTES": str(1024 * 1024)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(proc.stderr) < 3000, len(proc.stderr)
    assert f"session {'x' * 80}… (1,048,576 characters)" in proc.stderr
    # Stored as the agent gave it: the JSON listing and a prefix find it whole.
    (listed,) = cli.index()
    assert listed["id"] == "x" * 1024 * 1024
    shown = cli.ok("show", "x" * 40)
    assert "hello" in shown.stdout
