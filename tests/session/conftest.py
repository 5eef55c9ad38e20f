"""Fixtures of the session layer's unit tests: a script's run, a writer on the test's index
(the index itself: tests/conftest.py), a project directory. The agent they talk to is the demo
agent served in this process (:mod:`tests.session.demo_peer`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from acpcli.history.eventlog import EventWriter
from acpcli.history.index import Index
from acpcli.session.context import Invocation
from tests.session.demo_peer import quiet_env


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def run() -> Invocation:
    """A script's run (nobody to ask), its streams in buffers."""
    return Invocation(env=quiet_env())


@pytest.fixture
def writer(index: Index) -> Iterator[EventWriter]:
    w = index.writer()
    yield w
    w.close()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A project directory for the session's cwd."""
    path = tmp_path / "project"
    path.mkdir()
    return path
