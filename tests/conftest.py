"""Shared fixtures. Every test runs with ACPCLI_HOME pointing at its own temp dir."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from acpcli.persistence import Index

REPO = Path(__file__).resolve().parent.parent
SPEC_DIR = Path(os.environ.get("ACPCLI_SPEC_DIR", REPO.parent / "shared" / "spec"))


@pytest.fixture(autouse=True)
def acpcli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Isolate all acpcli state (config, index, logs) per test."""
    home = tmp_path / "acpcli-home"
    home.mkdir()
    monkeypatch.setenv("ACPCLI_HOME", str(home))
    monkeypatch.delenv("ACPCLI_LOG_FILE", raising=False)
    return home


@pytest.fixture
def python_exe() -> str:
    """The interpreter running the tests (the venv's), for spawning test agents."""
    return sys.executable


@pytest.fixture
def index() -> Iterator[Index]:
    """A session index in the test's own ACPCLI_HOME, closed after the test."""
    from acpcli.persistence import Index

    idx = Index()
    yield idx
    idx.close()
