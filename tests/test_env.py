"""``acpcli.env.program``: the commands we print run as printed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acpcli.env import program


def _script(folder: Path) -> Path:
    folder.mkdir(parents=True)
    script = folder / "acpcli"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    return script


def test_the_program_on_the_path_is_named_acpcli(tmp_path: Path) -> None:
    script = _script(tmp_path / "bin")
    assert program(str(script), cwd=str(tmp_path), path=str(tmp_path / "bin")) == "acpcli"


def test_a_program_off_the_path_is_named_by_its_path_relative_to_here(tmp_path: Path) -> None:
    script = _script(tmp_path / ".venv" / "bin")
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    assert program(str(script), cwd=str(tmp_path), path=str(elsewhere)) == os.path.join(".venv", "bin", "acpcli")
    # from another folder: the whole path
    assert program(str(script), cwd=str(elsewhere), path=str(elsewhere)) == str(script)
    # another acpcli on the PATH is not this one: still named by its path
    other = _script(tmp_path / "other-bin")
    assert other.exists()
    assert program(str(script), cwd=str(tmp_path), path=str(tmp_path / "other-bin")) == os.path.join(".venv", "bin", "acpcli")


def test_python_dash_m_and_other_launchers_are_named_acpcli(tmp_path: Path) -> None:
    assert program("/usr/lib/python3/site-packages/acpcli/__main__.py", cwd=str(tmp_path), path="") == "acpcli"
    assert program("acpcli", cwd=str(tmp_path), path="") == "acpcli"


def test_the_way_back_after_the_repl_names_the_program_as_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from acpcli.repl.banner import come_back
    from acpcli.wire.negotiate import AgentFeatures

    script = _script(tmp_path / ".venv" / "bin")
    monkeypatch.setattr(sys, "argv", [str(script)])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    features = AgentFeatures(protocol_version=1, reading="v1", resume=True)
    assert come_back(features, "demo-0123456789abcdef").startswith(os.path.join(".venv", "bin", "acpcli") + " resume ")


def test_errors_and_hints_quote_commands_as_the_program_can_be_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    import acpcli.env
    from acpcli.cli import as_typed

    monkeypatch.setattr(acpcli.env, "program", lambda: ".venv/bin/acpcli")
    said = "run `acpcli doctor --repair`, or 'acpcli sessions'; acpcli refused a write"
    assert as_typed(said) == "run `.venv/bin/acpcli doctor --repair`, or '.venv/bin/acpcli sessions'; acpcli refused a write"
    monkeypatch.setattr(acpcli.env, "program", lambda: "acpcli")
    assert as_typed(said) == said
