"""Shared fixtures. Every test runs with ACPCLI_HOME pointing at its own temp dir."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from acpcli.history.index import Index

REPO = Path(__file__).resolve().parent.parent

#: The upstream ACP spec folder (schemas, the seed page), only when ``ACPCLI_SPEC_DIR`` names
#: it. The suite stands on the repository alone: checks that need the upstream files skip
#: without it, and ``.ci/run`` sets it for them when the folder is there.
SPEC_DIR: Path | None = (
    Path(os.environ["ACPCLI_SPEC_DIR"]) if os.environ.get("ACPCLI_SPEC_DIR") else None
)
needs_spec = pytest.mark.skipif(
    SPEC_DIR is None or not SPEC_DIR.is_dir(),
    reason="needs the upstream ACP schemas: set ACPCLI_SPEC_DIR to the spec folder (.ci/run does)",
)


@pytest.fixture(autouse=True)
def acpcli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Isolate all acpcli state (config, index, logs) per test."""
    from acpcli.paths import ensure_dir

    home = ensure_dir(tmp_path / "acpcli-home")  # 0700, as acpcli makes it: refused if others may write it
    monkeypatch.setenv("ACPCLI_HOME", str(home))
    monkeypatch.delenv("ACPCLI_LOG_FILE", raising=False)
    # No live-session hosts unless a test asks for them (tests/host/): a command's agent ends
    # with the command, as each test's process checks expect.
    monkeypatch.setenv("ACPCLI_KEEP_ALIVE", "0")
    # No test reaches the real ACP registry: an unknown --agent name asks a closed loopback port.
    monkeypatch.setenv("ACPCLI_REGISTRY_URL", "http://127.0.0.1:9/registry.json")
    return home


@pytest.fixture
def python_exe() -> str:
    """The interpreter running the tests (the venv's), for spawning test agents."""
    return sys.executable


@pytest.fixture
def index() -> Iterator[Index]:
    """A session index in the test's own ACPCLI_HOME, closed after the test."""
    from acpcli.history.index import Index

    idx = Index()
    yield idx
    idx.close()
