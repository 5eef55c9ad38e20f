"""The REPL's bottom toolbar, as a pure function of the session's state."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acpcli.protocol.settings import MODE, MODEL, Choice


def _tokens(n: int) -> str:
    for scale, suffix in ((1_000_000, "M"), (1000, "k")):
        if n >= scale:
            return f"{n / scale:.1f}".removesuffix(".0") + suffix
    return str(n)


def usage_text(usage: dict[str, Any] | None) -> str | None:
    """``12.3k/200k tokens · $0.04`` from a ``usage_update`` (used/size/cost)."""
    if not usage:
        return None
    used, size = usage.get("used"), usage.get("size")
    parts = []
    if isinstance(used, int) and isinstance(size, int) and size > 0:
        parts.append(f"{_tokens(used)}/{_tokens(size)} tokens ({100 * used // size}%)")
    elif isinstance(used, int):
        parts.append(f"{_tokens(used)} tokens")
    cost = usage.get("cost")
    if isinstance(cost, dict) and isinstance(cost.get("amount"), (int, float)):
        currency = cost.get("currency")
        amount = float(cost["amount"])
        parts.append(f"${amount:.2f}" if currency in (None, "USD") else f"{amount:.2f} {currency}")
    return " · ".join(parts) or None


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
