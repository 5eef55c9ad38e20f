"""Plan blocks: a plan as a checklist, printed again (``(updated)``) when it changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from acpcli.model import Plan
from acpcli.render.transcript import plan_entry_text
from acpcli.render.tty.blocks import _Block
from acpcli.text.safe import safe_line

if TYPE_CHECKING:
    from rich.console import RenderableType

#: plan entry status -> (mark, mark style, text style)
PLAN_LOOK = {
    "pending": ("○", "", ""),
    "in_progress": ("▸", "bold yellow", "bold"),
    "completed": ("✔", "green", "dim"),
}
_PLAN_OTHER = ("?", "magenta", "")


def plan_renderable(plan: Plan, *, updated: bool = False) -> Text:
    """A plan as a checklist."""
    text = Text("Plan", style="bold")
    if updated:
        text.append(" (updated)", style="dim")
    if plan.plan_type != "items":
        text.append(f" ({safe_line(plan.plan_type)})", style="dim")
        return text
    if not plan.entries:
        text.append(" (empty)", style="dim")
    for entry in plan.entries:
        status = entry.get("status")
        mark, mark_style, text_style = PLAN_LOOK.get(status, _PLAN_OTHER) if isinstance(status, str) else _PLAN_OTHER
        text.append("\n  ")
        text.append(mark, style=mark_style)
        text.append(" ")
        text.append(safe_line(plan_entry_text(entry)), style=text_style)
    return text


class _PlanBlock(_Block):
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.shown: tuple[str, list[Any]] | None = None

    def _state(self) -> tuple[str, list[Any]]:
        return (self.plan.plan_type, [dict(e) for e in self.plan.entries])

    def live(self) -> RenderableType | None:
        return plan_renderable(self.plan)

    def finish(self) -> list[RenderableType]:
        self.shown = self._state()
        return [plan_renderable(self.plan)]

    def changes(self, *, record: bool = True) -> RenderableType | None:
        """After it was printed: the plan again, if it changed."""
        state = self._state()
        if state == self.shown:
            return None
        if record:
            self.shown = state
        return plan_renderable(self.plan, updated=True)
