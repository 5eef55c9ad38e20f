"""The REPL's bottom toolbar, as a pure function of the session's state."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acpcli.protocol.settings import MODE, MODEL, Choice
from acpcli.render.usage import usage_text


def status_line(
    agent: str,
    title: str | None,
    state: str | None,
    choices: Sequence[Choice],
    usage: dict[str, Any] | None,
    *,
    waiting: bool = False,
) -> str:
    """agent · title · state · mode · model · tokens, leaving out what the agent never said."""
    shown_state = "waiting for you" if waiting else (state or "idle").replace("_", " ")
    parts = [agent, title or "(untitled)", shown_state]
    for category in (MODE, MODEL):
        found = next((c for c in choices if c.category == category), None)
        if found is not None:
            parts.append(f"{category}: {found.current}")
    tokens = usage_text(usage)
    if tokens:
        parts.append(tokens)
    return " " + " · ".join(parts) + " "
