"""The terminal view's tests: a pinned terminal environment."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _pinned_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """rich draws no live frames on TERM=dumb; colours must not depend on the caller's env."""
    monkeypatch.setenv("TERM", "xterm-256color")
    for var in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES"):
        monkeypatch.delenv(var, raising=False)
