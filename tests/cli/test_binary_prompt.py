"""A binary prompt is refused the same way whether it comes from ``-f FILE``, ``-f -`` or a piped
standard input: the same check, the same words, exit 2, before any agent starts or any session
is recorded."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import TIMEOUT, AgentTrace, Cli, error_line

ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(8) + b"\x02\x00\x3e\x00" + bytes(range(256))
LATIN1 = "caf\xe9 au lait".encode("latin-1")  # no NUL, but not UTF-8


def run_with_stdin(cli: Cli, data: bytes, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        cli.argv(*args), env=cli.env(), cwd=cli.cwd, input=data, capture_output=True, timeout=TIMEOUT, check=False
    )
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.mark.parametrize(("data", "words"), [(ELF, "binary data, not text (a NUL byte at offset 7)"),
                                             (LATIN1, "not UTF-8 text (byte 0xe9 at offset 3)")],
                         ids=["elf", "latin-1"])
def test_binary_prompts_are_refused_alike(cli: Cli, trace: AgentTrace, tmp_path: Path, data: bytes, words: str) -> None:
    path = tmp_path / "prompt.bin"
    path.write_bytes(data)
    demo = trace.demo_cmd()
    from_file = error_line(cli.run("prompt", "--cmd", demo, "-f", str(path)), ExitCode.USAGE)
    piped = error_line(run_with_stdin(cli, data, "prompt", "--cmd", demo), ExitCode.USAGE)
    dash = error_line(run_with_stdin(cli, data, "prompt", "--cmd", demo, "-f", "-"), ExitCode.USAGE)
    assert from_file == f"cannot read prompt file {path}: {words}"
    assert piped == dash == f"cannot read the prompt from standard input: {words}"
    assert trace.pids() == []  # no agent started
    assert not (cli.home / "acpcli.db").exists() or cli.index() == []


def test_text_on_stdin_still_works(cli: Cli, trace: AgentTrace) -> None:
    proc = run_with_stdin(cli, "h\u00e9llo \u2713\n".encode(), "prompt", "--cmd", trace.demo_cmd())
    assert proc.returncode == 0, proc.stderr
    assert "h\u00e9llo \u2713" in proc.stdout
