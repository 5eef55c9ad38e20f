"""The REPL's input history: one private file per working directory, and typing goes on when
the home cannot be written."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from prompt_toolkit.history import FileHistory, InMemoryHistory

from acpcli.repl.input_history import history, history_file


def test_one_private_file_per_directory(acpcli_home: Path) -> None:
    here, there = history_file("/work/a"), history_file("/work/b")
    assert here != there and here == history_file("/work/a")
    assert here.parent == acpcli_home / "history"
    assert stat.S_IMODE(here.stat().st_mode) == 0o600  # what was typed
    kept = history("/work/a")
    assert isinstance(kept, FileHistory)
    kept.append_string("hello")
    assert "hello" in here.read_text()


def test_an_unwritable_home_keeps_the_history_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("ACPCLI_HOME", str(blocker))  # history/ cannot be made under a file
    kept = history("/work/a")
    assert isinstance(kept, InMemoryHistory)
    kept.append_string("still typed")
    assert list(kept.load_history_strings()) == ["still typed"]
