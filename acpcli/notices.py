"""Warnings for the person running acpcli about what the agent sent and acpcli skipped.

The layers below the CLI never print. They call :func:`warn` with a *kind* (``"bad-line"``,
``"too-deep"``, ``"too-long"`` ...) and one line of text; the CLI installs a sink
(:func:`set_sink`) that writes ``acpcli: warning: <text>`` on stderr. Every warning is
logged; the sink sees at most :data:`SHOWN_PER_KIND` of each kind per process (an agent
that floods garbage must not flood the terminal), the last of them saying so. The text is
passed through :func:`~acpcli.text.safe.safe_line`: it may quote the agent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from acpcli.text.safe import safe_line

if TYPE_CHECKING:
    import logging

#: How many warnings of one kind reach the sink (the rest are only logged).
SHOWN_PER_KIND = 3

_sink: Callable[[str], None] | None = None
_counts: dict[str, int] = {}


def set_sink(sink: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """Send warnings to ``sink`` (one line each, without newline); return the previous sink."""
    global _sink
    previous, _sink = _sink, sink
    return previous


def reset() -> None:
    """Forget how many warnings of each kind were shown (tests)."""
    _counts.clear()


def warn(kind: str, text: str, *, log: bool = True) -> None:
    """Log ``text`` (unless ``log`` is false: the caller did); show it through the sink
    unless ``kind`` was shown often enough."""
    count = _counts.get(kind, 0) + 1
    _counts[kind] = count
    if log:
        _logger().warning("%s", text)
    sink = _sink
    if sink is None or count > SHOWN_PER_KIND:
        return
    line = safe_line(text)
    if count == SHOWN_PER_KIND:
        line += " (further ones are only logged)"
    try:
        sink(line)
    except Exception:  # noqa: BLE001 - a closed or full stderr must not stop the turn
        _logger().debug("could not show a warning", exc_info=True)


def _logger() -> logging.Logger:
    """This module's logger, imported on first use: every command sets the sink
    (:func:`set_sink`) before it runs, and ``acpcli --help`` must not pay for logging."""
    import logging

    return logging.getLogger("acpcli.notices")


def stderr_sink(stream: TextIO | None = None) -> Callable[[str], None]:
    """A sink writing ``acpcli: warning: <line>`` to ``stream`` (default: ``sys.stderr`` at the time)."""
    import sys

    def write(line: str) -> None:
        out = stream if stream is not None else sys.stderr
        out.write(f"acpcli: warning: {line}\n")
        out.flush()

    return write
