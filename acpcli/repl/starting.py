"""The line a person sees while their agent starts: a spinner and ``starting NAME…``.

Shown at once on a terminal (stderr), before the agent is spawned, so the seconds a slow
agent takes to start (claude, gemini: 2–4 s) are not a blank screen; replaced by whatever is
drawn next (the banner, a login offer, a note) and leaving nothing of itself behind. Nothing
at all when stderr is not a terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acpcli.env import Environment


class Starting:
    """``show(name)`` draws or renames the line; ``stop()`` erases it for good."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self._status: Any = None  # a rich Status while the line is drawn
        self._done = False

    def show(self, name: str) -> None:
        """Say that ``name`` (an agent's name: untrusted text) is starting."""
        if self._done:
            return
        from rich.text import Text

        from acpcli.text.safe import clip, safe_line

        text = Text(f"starting {clip(safe_line(name), 60)}…", style="dim")
        if self._status is not None:
            self._status.update(text)
            return
        console = self.env.err
        if not console.is_terminal:
            self._done = True
            return
        from rich.status import Status

        self._status = Status(
            text, console=console, spinner="dots", spinner_style="dim", refresh_per_second=12.5
        )
        self._status.start()

    def stop(self) -> None:
        """Erase the line (idempotent); it is not drawn again."""
        self._done = True
        status, self._status = self._status, None
        if status is not None:
            status.stop()
