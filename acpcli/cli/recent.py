"""``acpcli load`` and ``acpcli resume`` without a session id, on a terminal: a picker of the
recent sessions (:mod:`acpcli.repl.picker`), this directory's first, each as a person knows
it -- its title (the agent's, the user's, or its first prompt's first line), its agent, when
it was last used, and the directory of one started elsewhere.

Only active sessions that were prompted are offered (those ``acpcli sessions`` lists); the
newest first, in each group. Enter picks one; Escape, Ctrl-C or Ctrl-D picks none (the
command then starts nothing).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.history.index import SessionRecord

#: The most sessions offered (the most recently used); the picker draws any number at the
#: same cost, this only bounds reading the index.
OFFERED = 500


def recent(here: str, limit: int = OFFERED) -> list[SessionRecord]:
    """The sessions to offer: active and prompted, those whose working directory is ``here``
    first, then the others; most recently used first in each."""
    from acpcli.history.index import Index

    with Index.existing() as index:
        if index is None:
            return []
        rows = index.list_sessions(state="active", prompted=True, limit=limit)
    return [r for r in rows if r.cwd == here] + [r for r in rows if r.cwd != here]


def labels(records: list[SessionRecord], here: str, width: int) -> list[str]:
    """One line a session, in ``width`` cells: the title (cut at a word) in a column, then the
    agent, when it was last used, and the directory when it is not ``here`` (cut from the
    left, ``~`` for home). In a narrow line the title keeps half of it, and the agent's name
    is cut before when and where. Control characters are made visible."""
    from acpcli.cli.history import agent_shown, ago  # (as `acpcli sessions` says them)
    from acpcli.render.fit import cells, pad, shorten, shorten_left
    from acpcli.text.safe import safe_line

    home = os.path.expanduser("~")

    def where(path: str) -> str:
        if path == here:
            return ""
        if home != os.sep and (path == home or path.startswith(home + os.sep)):
            path = "~" + path[len(home) :]
        return " · " + shorten_left(safe_line(path), max(12, width // 4))

    titles = [safe_line(r.shown_title or "(untitled)") for r in records]
    agents = [safe_line(agent_shown(r)) for r in records]
    rests = [f" · {ago(r.last_used_at)}{where(r.cwd)}" for r in records]
    longest = max((2 + cells(a) + cells(r) for a, r in zip(agents, rests, strict=True)), default=0)
    column = min(max((cells(t) for t in titles), default=0), max(width // 2, width - longest))
    return [
        shorten(pad(shorten(title, column), column) + "  " + shorten(agent, max(6, width - column - 2 - cells(rest))) + rest, width)
        for title, agent, rest in zip(titles, agents, rests, strict=True)
    ]


def pick_session(env: Environment, verb: str) -> SessionRecord | None:
    """Let the person at the terminal pick the session to ``verb`` (``load``, ``resume``);
    None when they pick none. :class:`~acpcli.errors.UsageError` when there is none to pick."""
    import asyncio

    from acpcli.errors import UsageError
    from acpcli.repl.asking import choose

    here = os.path.realpath(os.getcwd())
    records = recent(here)
    if not records:
        raise UsageError(
            f"no session to {verb}: none was prompted yet",
            hint=f"start one with `acpcli new --agent NAME`, or pass an id: acpcli {verb} SESSION_ID",
        )
    digits = len(str(len(records)))
    # (the picker's row: its padding, the mark and the number take the rest)
    shown = labels(records, here, max(20, env.err.width - 7 - (digits + 2)))
    picked = asyncio.run(choose(f"choose 1-{len(records)}: the session to {verb} (Esc: none)", shown, erase=True))
    return None if picked is None else records[picked]
