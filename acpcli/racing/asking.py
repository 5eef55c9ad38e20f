"""Permission questions of a race's candidates, asked at the race's terminal one at a time.

A candidate runs as an ``acpcli prompt`` process of its own, with no terminal. When the race
runs on one (its board drawn), each candidate gets two pipes: it writes each permission
request of its agent, one JSON line ``{"params": …}``, to the first and reads the answer,
one JSON line ``{"result": …}``, from the second (:func:`candidate_asker`, installed by
``prompt`` when :data:`ENV` names the two descriptors). The race reads every candidate's
questions (:class:`Questions`) and asks them at its terminal one after another, each naming
its candidate (:func:`ask_at_terminal`); what agents wrote is made safe first.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TextIO

from acpcli.text.safe import safe_line

#: ``WRITE_FD,READ_FD`` of a candidate's question and answer pipes.
ENV = "ACPCLI_RACE_ASKS"
#: The longest question line read (a bigger one is refused).
MAX_LINE = 1 << 20


def candidate_asker() -> Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any] | None]] | None:
    """The asker of a race's candidate (None when this process is not one). The variable is
    taken out of the environment, so the agent and its children never see it."""
    raw = os.environ.pop(ENV, None)
    if not raw:
        return None
    try:
        write_fd, read_fd = (int(x) for x in raw.split(","))
        os.fstat(write_fd)
        os.fstat(read_fd)
    except (ValueError, OSError):
        return None
    lock = threading.Lock()
    answers = os.fdopen(read_fd, "rb", buffering=0)

    def exchange(params: dict[str, Any]) -> dict[str, Any] | None:
        with lock:
            try:
                os.write(write_fd, (json.dumps({"params": params}) + "\n").encode())
                line = answers.readline(MAX_LINE)
            except OSError:
                return None
        try:
            result = json.loads(line).get("result")
        except (ValueError, AttributeError):
            return None
        return result if isinstance(result, dict) else None

    async def ask(live: Any, params: dict[str, Any]) -> dict[str, Any] | None:
        import anyio

        return await anyio.to_thread.run_sync(exchange, params, abandon_on_cancel=True)

    return ask


@dataclass
class Question:
    """One candidate's permission request, waiting for its answer."""

    name: str
    params: dict[str, Any]
    answer_fd: int


class Questions:
    """Every candidate's questions, in the order they came (read by a thread a candidate)."""

    def __init__(self) -> None:
        self.waiting: queue.Queue[Question] = queue.Queue()

    def pipes(self) -> tuple[dict[str, str], tuple[int, int], tuple[int, int]]:
        """For one candidate: its environment entry, the fds it keeps (to pass), the fds the
        race keeps (questions to read, answers to write)."""
        ask_r, ask_w = os.pipe()
        ans_r, ans_w = os.pipe()
        return {ENV: f"{ask_w},{ans_r}"}, (ask_w, ans_r), (ask_r, ans_w)

    def follow(self, name: str, ask_r: int, ans_w: int) -> None:
        """Read one candidate's questions until it ends (in a thread of its own)."""

        def read() -> None:
            with os.fdopen(ask_r, "rb") as stream:
                for line in iter(lambda: stream.readline(MAX_LINE), b""):
                    try:
                        params = json.loads(line).get("params")
                    except (ValueError, AttributeError):
                        params = None
                    if isinstance(params, dict):
                        self.waiting.put(Question(name, params, ans_w))
                    else:
                        answer(ans_w, None)
            with contextlib.suppress(OSError):
                os.close(ans_w)

        threading.Thread(target=read, daemon=True, name=f"race-asks-{name}").start()

    def next(self) -> Question | None:
        try:
            return self.waiting.get_nowait()
        except queue.Empty:
            return None


def answer(fd: int, result: dict[str, Any] | None) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, (json.dumps({"result": result}) + "\n").encode())


def ask_at_terminal(question: Question, out: TextIO, read_line: Callable[[], str]) -> dict[str, Any] | None:
    """Ask one question: the candidate's name, what its agent wants, the options numbered;
    the person types a number (Enter alone: the first option that rejects)."""
    from acpcli.services.permissions import CANCELLED, selected

    params = question.params
    options = [o for o in params.get("options") or [] if isinstance(o, dict) and isinstance(o.get("optionId"), str)]
    if not options:
        return CANCELLED
    found = params.get("toolCall")
    call: dict[str, Any] = found if isinstance(found, dict) else {}
    title = safe_line(str(call.get("title") or "a tool call"))[:200]
    kind = safe_line(str(call.get("kind") or "other"))[:40]
    out.write(f"\n{safe_line(question.name)} asks: {title} (kind {kind})\n")
    for i, option in enumerate(options, 1):
        out.write(f"  {i}. {safe_line(str(option.get('name') or option['optionId']))[:80]}\n")
    rejects = [i for i, o in enumerate(options, 1) if str(o.get("kind", "")).startswith("reject")]
    default = rejects[0] if rejects else None
    while True:
        hint = f" (Enter: {default})" if default is not None else ""
        out.write(f"{safe_line(question.name)}: choose 1-{len(options)}{hint}: ")
        out.flush()
        line = read_line()
        if line == "":  # end of input: nobody answers
            return CANCELLED
        text = line.strip()
        if not text and default is not None:
            return selected(options[default - 1])
        if text.isdigit() and 1 <= int(text) <= len(options):
            return selected(options[int(text) - 1])
