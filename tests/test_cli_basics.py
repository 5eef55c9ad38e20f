"""The real program in a subprocess: help, version, usage errors."""

from __future__ import annotations

import subprocess
import sys

from acpcli import __version__
from acpcli.errors import ExitCode


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acpcli", *args], capture_output=True, text=True, timeout=60
    )


def test_help_lists_usage() -> None:
    proc = run("--help")
    assert proc.returncode == 0
    assert "Usage: acpcli" in proc.stdout
    assert proc.stderr == ""


def test_version() -> None:
    proc = run("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"acpcli {__version__}"


def test_unknown_command_is_usage_error() -> None:
    proc = run("no-such-command")
    assert proc.returncode == ExitCode.USAGE
    assert "no-such-command" in proc.stderr
    assert proc.stdout == ""
