"""The REPL's prompt queue: what was typed while a turn ran, waiting to be sent.

While a turn runs the input line stays open (:mod:`acpcli.repl.typeahead`); Enter puts the
line at the end of the queue. When a turn ends normally the queue is sent one prompt at a
time, in order, each a turn of its own (a queued slash command runs in its place in line).
A cancelled turn *holds* the queue: nothing more is sent until the person says so (Enter on
an empty line sends the next one and resumes the queue; ``/queue clear`` drops it all).

"Send now" (Alt-Enter, ``/now TEXT``) hands a prompt to the running turn instead, only with
an agent that says it takes one (:func:`send_now_way`): claude-agent-acp advertises
``agentCapabilities._meta.claudeCode.promptQueueing`` (a ``session/prompt`` sent during a
turn joins it), and agents of the ``_session/steering`` extension advertise
``_meta.steering.supported`` in their ``initialize`` answer. Neither is ever probed: some
agents answer unknown methods with ``{}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from acpcli.wire.negotiate import QUEUEING, STEERING, send_now_way

__all__ = ["QUEUEING", "STEERING", "PromptQueue", "one_line", "queue_lines", "send_now_way"]

@dataclass
class PromptQueue:
    """The prompts waiting for the turn to end (see the module docstring)."""

    items: list[str] = field(default_factory=list)
    held: bool = False  # after a cancelled turn: wait for the person

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def add(self, text: str) -> None:
        self.items.append(text)

    def next(self) -> str | None:
        """The prompt to send now, or ``None`` (empty, or held)."""
        if self.held or not self.items:
            return None
        return self.items.pop(0)

    def take_last(self) -> str | None:
        """Take the last queued prompt back (to edit it on the input line)."""
        return self.items.pop() if self.items else None

    def take_first(self) -> str | None:
        return self.items.pop(0) if self.items else None

    def clear(self) -> int:
        count, self.items, self.held = len(self.items), [], False
        return count

    def drop(self, number: int) -> str | None:
        """Remove the ``number``-th (1-based) queued prompt; ``None`` when there is none."""
        if 1 <= number <= len(self.items):
            return self.items.pop(number - 1)
        return None

    def hold(self) -> None:
        """A turn was cancelled: keep what is queued, send nothing until asked."""
        self.held = bool(self.items)

    def release(self) -> None:
        self.held = False


def one_line(text: str, width: int) -> str:
    """``text`` on one line of at most ``width`` characters (newlines shown as ``⏎``)."""
    flat = text.replace("\r\n", "\n").replace("\n", " ⏎ ")
    if len(flat) <= width:
        return flat
    cut = flat[: max(1, width - 1)]
    space = cut.rfind(" ")
    if space > width // 2:  # at a word, when one ends near enough
        cut = cut[:space]
    return cut.rstrip() + "…"


def queue_lines(queue: PromptQueue, width: int) -> str:
    """What the idle input line shows above itself: the queued prompts (and, when held,
    how to send or drop them); empty when nothing is queued."""
    if not queue:
        return ""
    from acpcli.text.safe import safe_line

    width = max(30, width)
    lines = [f"  queued {n}: {safe_line(one_line(item, width - 14))}" for n, item in enumerate(queue.items, 1)]
    if queue.held:
        lines.append("  " + one_line("held (the turn was cancelled): Enter sends them · /queue clear drops them", width - 3))
    return "\n".join(lines) + "\n"
