"""Token usage and cost as people read them (``usage_update``: used / size / cost)."""

from __future__ import annotations

from typing import Any


def _tokens(n: int) -> str:
    for scale, suffix in ((1_000_000, "M"), (1000, "k")):
        if n >= scale:
            return f"{n / scale:.1f}".removesuffix(".0") + suffix
    return str(n)


def usage_text(usage: dict[str, Any] | None) -> str | None:
    """``12.3k/200k tokens (6%) · $0.04``; ``None`` when nothing is known."""
    if not usage:
        return None
    used, size = usage.get("used"), usage.get("size")
    parts = []
    if isinstance(used, int) and isinstance(size, int) and size > 0:
        parts.append(f"{_tokens(used)}/{_tokens(size)} tokens ({100 * used // size}%)")
    elif isinstance(used, int):
        parts.append(f"{_tokens(used)} tokens")
    cost = cost_text(usage)
    if cost is not None:
        parts.append(cost)
    return " · ".join(parts) or None


def cost_text(usage: dict[str, Any]) -> str | None:
    """``$0.04`` (another currency: ``0.04 EUR``, its code cut to 8 characters and made safe);
    ``None`` when the agent gave no cost."""
    cost = usage.get("cost")
    if not isinstance(cost, dict) or not isinstance(cost.get("amount"), (int, float)):
        return None
    currency = cost.get("currency")
    amount = float(cost["amount"])
    if currency in (None, "USD"):
        return f"${amount:.2f}"
    from acpcli.text.safe import safe_line

    return f"{amount:.2f} {safe_line(str(currency))[:8]}"


#: The share of the context window past which a session warns, once (``usage_update``).
CONTEXT_WARN = 0.9


def context_warning(usage: dict[str, Any] | None) -> str | None:
    """``the context window is 95% full (95k of 100k tokens)`` once ``usage`` has passed
    :data:`CONTEXT_WARN` of its size; None before (or when the size is unknown)."""
    if not usage:
        return None
    used, size = usage.get("used"), usage.get("size")
    if not isinstance(used, int) or not isinstance(size, int) or size <= 0 or used < CONTEXT_WARN * size:
        return None
    return f"the context window is {100 * used // size}% full ({_tokens(used)} of {_tokens(size)} tokens)"
