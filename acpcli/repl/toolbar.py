"""The REPL's bottom toolbar: its text, a pure function of the session's state
(:func:`status_line`, :func:`shown_title`), and the callable prompt-toolkit draws it with
(:func:`bottom_toolbar`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from acpcli.protocol.settings import MODE, MODEL, Choice
from acpcli.render.fit import shorten
from acpcli.render.usage import usage_text
from acpcli.text.safe import safe_line

if TYPE_CHECKING:
    from acpcli.history.index import SessionRecord
    from acpcli.session.feed import SessionFeed

#: The most characters of the agent's session title the toolbar shows (one line, cut with "…").
TITLE_CHARS = 60


def shown_title(agent_title: str | None, record: SessionRecord | None, first_prompt: str | None) -> str | None:
    """The session's title as ``acpcli sessions`` shows it: a ``--title`` of the user's, else
    the agent's (``agent_title``, the live one, first), else the first line of its first
    prompt (``first_prompt``, sent but not stored yet, or the one ``record`` holds)."""
    if record is not None and record.titled_by_user and record.title:
        return record.title
    if agent_title:
        return agent_title
    if record is not None and record.shown_title:
        return record.shown_title
    if first_prompt:
        from acpcli.history.index import prompt_title

        return prompt_title(first_prompt)
    return None


def status_line(
    agent: str,
    title: str | None,
    state: str | None,
    choices: Sequence[Choice],
    usage: dict[str, Any] | None,
    *,
    waiting: bool = False,
    policy: str | None = None,
) -> str:
    """agent · title · state · mode · model · tokens · permissions, leaving out what the agent
    never said. ``policy`` (the run's ``--permissions``) shows when it is not ``ask``: the
    person should see that acpcli answers permission requests for them."""
    shown_state = "waiting for you" if waiting else (state or "idle").replace("_", " ")
    parts = [agent, shorten(title, TITLE_CHARS) if title else "(untitled)", shown_state]
    for category in (MODE, MODEL):
        found = next((c for c in choices if c.category == category), None)
        if found is not None:
            parts.append(f"{category}: {shorten(str(found.current), TITLE_CHARS)}")
    tokens = usage_text(usage)
    if tokens:
        parts.append(tokens)
    if policy is not None and policy != "ask":
        parts.append(f"permissions: {policy}")
    return " " + " · ".join(parts) + " "


def bottom_toolbar(
    agent: str,
    live: SessionFeed,
    choices: Callable[[], Sequence[Choice]],
    record: Callable[[], SessionRecord | None],
    policy: str | None,
) -> Callable[[], str]:
    """The toolbar prompt-toolkit draws under the input line (and the permission picker under
    its question): :func:`status_line` of ``live`` as it is at each redraw, on one row of the
    terminal. ``choices``: the session's settings now; ``record``: its index record as last
    read (for its titles); ``policy``: the run's ``--permissions``, resolved."""

    def toolbar() -> str:
        from prompt_toolkit.application.current import get_app

        title = shown_title(live.store.title, record(), live.first_prompt)
        line = safe_line(status_line(
            agent, title, live.store.state, choices(), live.store.usage,
            waiting=bool(live.pending_permissions), policy=policy,
        ))
        # One row, cut at a word (never inside a number like 23.7k/200k), not at the edge.
        return shorten(line, get_app().output.get_size().columns)

    return toolbar
