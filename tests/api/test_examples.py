"""The scripts in examples/ run against the demo agent (each a real process, ACPCLI_HOME a
temporary directory) and type-check under ``mypy --strict`` as a user's script would: from
outside the checkout, seeing only ``acpcli``'s public names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
EXAMPLES = REPO / "examples"
TIMEOUT = 120


def example(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def recorded(cwd: Path) -> list[str]:
    """The session ids ``acpcli sessions`` lists (newest first)."""
    proc = subprocess.run(
        [sys.executable, "-m", "acpcli", "sessions"], capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    return [line.split("\t")[0] for line in proc.stdout.splitlines()[1:] if line.strip()]


def show(session_id: str, cwd: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "acpcli", "show", session_id], capture_output=True, text=True, timeout=TIMEOUT,
        cwd=cwd, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_examples_are_the_ones_tested() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == [
        "one_shot.py", "prompt_with_permissions.py", "show_session.py",
    ]


def test_prompt_with_permissions(tmp_path: Path) -> None:
    proc = example("prompt_with_permissions.py", "demo", "hello", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (sid,) = recorded(tmp_path)
    assert proc.stdout.rstrip().endswith(f"[end_turn] session {sid}")
    assert "[permission for Edit DEMO.md: Allow once]" in proc.stderr  # the callback allowed the edit
    assert "[tool] Edit DEMO.md (edit): completed" in show(sid, tmp_path)  # and the demo agent went on


def test_one_shot_then_show_session(tmp_path: Path) -> None:
    proc = example("one_shot.py", "demo", "hello there", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (sid,) = recorded(tmp_path)
    assert f"stop reason: end_turn; session: {sid}" in proc.stderr
    assert "Keywords to try" in proc.stdout  # the demo agent's answer
    assert "[tool] Edit DEMO.md (edit): failed" in show(sid, tmp_path)  # read-only: the edit was refused

    shown = example("show_session.py", sid, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("# hello there\n")
    assert "## User\n\nhello there" in shown.stdout and "Keywords to try" in shown.stdout


def test_an_unknown_agent_is_an_acpcli_error(tmp_path: Path) -> None:
    proc = example("one_shot.py", "no-such-agent", "hi", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("failed: "), proc.stderr
    assert "Traceback" not in proc.stderr


def mypy_strict(tmp_path: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    # As a user's own script: outside the checkout, no MYPYPATH; mypy finds acpcli where the
    # venv's install put it (the Makefile's plain .pth of the checkout).
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
         "--cache-dir", str(tmp_path / "mypy-cache"), *map(str, files)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env,
    )


@pytest.mark.slow
def test_the_examples_type_check_strictly(tmp_path: Path) -> None:
    proc = mypy_strict(tmp_path, *sorted(EXAMPLES.glob("*.py")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # ...and the check sees the API's real types: a misuse of each kind is an error
    wrong = tmp_path / "wrong.py"
    wrong.write_text(
        "import acpcli\n"
        "acpcli.no_such_name\n"
        "async def f() -> None:\n"
        "    async with acpcli.connect('demo', permissions=3) as agent:\n"
        "        session = await agent.new_session()\n"
        "        n: int = session.id\n",
        encoding="utf-8",
    )
    proc = mypy_strict(tmp_path, wrong)
    assert proc.returncode == 1
    assert "wrong.py:2: error: Module has no attribute \"no_such_name\"" in proc.stdout, proc.stdout
    assert "wrong.py:4: error: Argument \"permissions\" to \"connect\"" in proc.stdout, proc.stdout
    assert "wrong.py:6: error: Incompatible types in assignment" in proc.stdout, proc.stdout
