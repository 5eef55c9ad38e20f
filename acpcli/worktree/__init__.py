"""Checkpoints of a session's working tree: what each turn did to the files, and undoing it.

One private git store per session under ``ACPCLI_HOME/checkpoints/`` (:mod:`.store`) holds a
commit per checkpoint: before the first turn (turn 0) and after every turn, of every root of
the session (the cwd and the extra roots). :class:`Checkpoints` is the API the session layer
and the commands use::

    cps = Checkpoints(session_id, [cwd, *extra_roots])   # CheckpointsOff: no git on PATH
    cps.take(0, "")                                      # before the first turn
    cps.take(1, prompt)                                  # after turn 1 (a CheckpointError: warn)
    cps.list(); cps.diff(1); cps.rewind(1); cps.undo()

Invariants this package keeps:

* **The user's repository is never touched.** git runs with its own ``GIT_DIR``,
  ``GIT_INDEX_FILE`` and ``GIT_WORK_TREE``, in an environment without the user's ``GIT_*``
  variables, without system or global config, hooks, filters or line-ending conversions
  (:mod:`.git`). The user's index is copied (never written) to start from what it knows; the
  user's objects are borrowed read-only through ``objects/info/alternates``.
* **Byte for byte.** Files are stored as they are (no conversion), links as links (never
  followed, wherever they point), exec bits kept, names of any bytes (``-z`` everywhere).
  ``.gitignore`` and the user's ``info/exclude`` are honoured; ``.git`` and ACPCLI_HOME are
  never stored; files over the size limit, unreadable files and nested repositories are left
  out, said once in :attr:`Checkpoint.notes`.
* **Bounded.** A checkpoint costs about one ``git status`` (only changed files are hashed); a
  tree over ``max_files`` or a checkpoint over ``time_limit`` gives up for the session with one
  line (:class:`~acpcli.errors.CheckpointsOff`), never delaying a turn past the bound.
* **Nothing lost.** A rewind checkpoints the present state first (:meth:`Checkpoints.undo`
  puts it back), refuses to overwrite files changed by hand since the last checkpoint unless
  forced, never overwrites or removes a file that is in no checkpoint, and writes each file
  whole (:mod:`.restore`): stopped at any point, every path is old or new, and undo works.
* **One at a time.** Every change to a store holds its lock (:mod:`acpcli.history.lock`), so two
  acpcli processes on one session never race on it. A damaged store is reported by
  :meth:`Checkpoints.check` / :func:`check_all` and, in a turn, is only a
  :class:`~acpcli.errors.CheckpointError` (a warning).

Errors (in :mod:`acpcli.errors`): ``CheckpointError`` and its subclasses ``CheckpointsOff``,
``CheckpointsBusy``, ``NoCheckpoint``, ``RewindRefused``.
"""

from __future__ import annotations

from acpcli.worktree.checkpoints import (
    DEFAULT_LOCK_WAIT,
    DEFAULT_MAX_FILES,
    DEFAULT_TIME_LIMIT,
    Checkpoint,
    Checkpoints,
    FileChange,
    RewindPlan,
    StoreReport,
    check_all,
    count,
    remove_checkpoints,
)
from acpcli.worktree.git import find_git

__all__ = [
    "DEFAULT_LOCK_WAIT",
    "DEFAULT_MAX_FILES",
    "DEFAULT_TIME_LIMIT",
    "Checkpoint",
    "Checkpoints",
    "FileChange",
    "RewindPlan",
    "StoreReport",
    "check_all",
    "count",
    "find_git",
    "remove_checkpoints",
]
