"""Checkpoints around a session's turns: one before its first turn, one after each turn.

The turn runner calls :func:`before_turn` before it sends a prompt and :func:`after_turn`
once the agent has ended the turn (its answer already drawn). Each takes a checkpoint of the
session's roots (:class:`acpcli.worktree.Checkpoints`) in a worker thread, so the event loop
(the view, the host's other clients) goes on meanwhile. A checkpoint never fails a turn:
checkpoints that cannot be taken here (no git, a tree over the bounds) are off for the session
with one line, said once; any other failure (a full disk, a damaged store) is one warning line,
once a session in a process.

Off with ``checkpoints = false`` in the config, ``--no-checkpoints``
(:attr:`~acpcli.session.feed.SessionFeed.checkpoints` False), and for sessions whose roots are
unknown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acpcli.session.feed import SessionFeed

#: Sessions of this process whose checkpoints were found off (said once each).
_OFF: set[str] = set()
#: Sessions of this process whose checkpoint the disk had no room for, and what was said: the
#: command ends with exit 16 (:func:`verdict`).
_UNSAVED: dict[str, str] = {}
#: Sessions of this process told that a checkpoint could not be taken (a full disk: said once,
#: not before and after every turn).
_WARNED: set[str] = set()


def enabled(live: SessionFeed) -> bool:
    """Whether turns of ``live`` take checkpoints: not turned off for it, nor in the config."""
    if getattr(live, "checkpoints", None) is False or live.session_id in _OFF or not live.cwd:
        return False
    from acpcli.config import load_config
    from acpcli.errors import ConfigError

    try:
        return bool(getattr(load_config(), "checkpoints", True))
    except ConfigError:
        return True  # a broken config is said elsewhere; checkpoints are harmless


def _store(live: SessionFeed) -> Any:
    from acpcli.config import (
        DEFAULT_CHECKPOINT_MAX_FILES,
        DEFAULT_CHECKPOINT_TIME_LIMIT,
        load_config,
    )
    from acpcli.errors import ConfigError
    from acpcli.worktree import Checkpoints


    max_files, time_limit = DEFAULT_CHECKPOINT_MAX_FILES, DEFAULT_CHECKPOINT_TIME_LIMIT
    try:
        config = load_config()
        max_files, time_limit = config.checkpoint_max_files, config.checkpoint_time_limit
    except ConfigError:
        pass  # (said elsewhere) the default bounds
    roots = [live.cwd or ".", *live.additional_directories]
    return Checkpoints(live.session_id, roots, max_files=max_files, time_limit=time_limit)


async def before_turn(live: SessionFeed, say: Callable[[str], None]) -> None:
    """The first checkpoint of a session that has none yet: the files before its next turn,
    numbered by the turns its record holds already (0 for a new session; for a fork, or a
    conversation rewound to turn N, the turns it started with), so that checkpoint N is always
    the files after the transcript's turn N. For a later turn, what the user changed by hand
    since the last one (nothing recorded when nothing did), so that the turn's diff is the
    agent's own and a rewind to it keeps those edits."""
    if not enabled(live):
        return

    def take() -> list[str]:
        store = _store(live)
        latest = store.latest()
        if latest is None:
            first = _turns_so_far(live.session_id)
            label = f"(the files before turn {first + 1})" if first else ""
            return list(store.take(first, label, files=False).notes)
        taken = store.take_before(latest + 1)
        return list(taken.notes) if taken is not None else []

    await _guarded(live, take, say)


def _turns_so_far(session_id: str) -> int:
    """How many turns the session's record holds (its turn starts); 0 when it cannot be read."""
    from acpcli.history.index import Index
    from acpcli.history.records import TURN_START

    try:
        with Index.existing() as index:
            if index is None:
                return 0
            return sum(1 for _, kind, _ in index.events_raw(session_id) if kind == TURN_START)
    except Exception:  # noqa: BLE001 - a checkpoint never fails a turn: number it from 0
        return 0


async def after_turn(live: SessionFeed, prompt: str, say: Callable[[str], None]) -> None:
    """A checkpoint of the files as the turn left them, labelled with the prompt's first line."""
    if not enabled(live):
        return
    label = next((line.strip() for line in prompt.splitlines() if line.strip()), "")[:200]

    def take() -> list[str]:
        store = _store(live)
        latest = store.latest()
        if latest is None:  # (a session whose first checkpoint could not be taken before)
            latest = 0
        return list(store.take(latest + 1, label, files=False).notes)

    await _guarded(live, take, say)


async def _guarded(live: SessionFeed, take: Callable[[], list[str]], say: Callable[[str], None]) -> None:
    import anyio.to_thread

    from acpcli.errors import CheckpointError, CheckpointsOff
    from acpcli.text.safe import safe_line

    try:
        notes = await anyio.to_thread.run_sync(take)
    except CheckpointsOff as off:
        _OFF.add(live.session_id)
        say(f"acpcli: {safe_line(str(off))}")
    except CheckpointError as err:
        if err.disk_full:  # the command ends with exit 16 (verdict), the transcript whole
            _UNSAVED.setdefault(live.session_id, safe_line(str(err)))
        if live.session_id not in _WARNED:
            _WARNED.add(live.session_id)
            say(f"acpcli: warning: no checkpoint of this turn: {safe_line(str(err))}")
    else:
        for note in notes:  # (what was left out, said the first time only)
            say(f"acpcli: checkpoints: {safe_line(note)}")


def verdict() -> None:
    """At the end of a command that took checkpoints itself: a checkpoint the disk had no room
    for is :class:`~acpcli.errors.StorageError` (exit 16: what the turn did to the files was
    not all saved; the answer and the transcript are whole), said once. Nothing otherwise."""
    from acpcli.errors import StorageError
    from acpcli.text.safe import shown_id

    if not _UNSAVED:
        return
    sid, why = next(iter(_UNSAVED.items()))
    _UNSAVED.clear()
    raise StorageError(
        f"not every checkpoint of {shown_id(sid)} was saved ({why}); the answer and the transcript are whole",
        hint="free some disk space: the next turn's checkpoint takes what this one missed",
    )


#: The names the live-session host calls them by.
checkpoint_before_turn = before_turn
checkpoint_after_turn = after_turn
