"""``acpcli.race(...)``: one task given to several agents at once, each in its own worktree
(or copy), from Python; typed results, and the result's :meth:`RaceResult.diff`,
:meth:`RaceResult.apply` and :meth:`RaceResult.drop`. The same race as ``acpcli race`` (the
candidates are ``acpcli prompt`` processes, recorded in the history with the race's id);
it blocks until every candidate (and its check) has ended and prints nothing::

    result = acpcli.race("fix the failing test", agents=["claude", "codex"], check="make test")
    for c in result.candidates:
        print(c.name, c.state, c.seconds, [f.path for f in c.files], c.check and c.check.exit_code)
    if result.winners:
        result.apply(result.winners[0])
    result.drop()

A KeyboardInterrupt cancels every candidate and removes everything (unless ``keep``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acpcli.api.types import ChangedFile

__all__ = ["CheckResult", "RaceCandidate", "RaceResult", "race"]


@dataclass(frozen=True)
class CheckResult:
    """The ``check`` command in a candidate's tree: its exit code (None: stopped at its
    timeout), seconds and last lines."""

    exit_code: int | None
    seconds: float
    tail: tuple[str, ...]
    timed_out: bool

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass(frozen=True)
class RaceCandidate:
    """One candidate's run: ``state`` is ``done``, ``failed``, ``timed out``, ``refused`` or
    ``cancelled``; ``stop_reason`` the turn's (``end_turn`` …) when it ended one."""

    name: str
    agent: str | None
    command: str | None
    state: str
    stop_reason: str | None
    seconds: float | None
    files: tuple[ChangedFile, ...]
    check: CheckResult | None
    usage: dict[str, Any] | None
    session_id: str | None
    error: str | None
    succeeded: bool
    worktree: str | None


@dataclass(frozen=True)
class RaceResult:
    """A race that ended. ``winners``: the candidates that ended their turn (and passed the
    check), in the order given."""

    id: str
    cwd: str
    kind: str
    candidates: tuple[RaceCandidate, ...]
    kept: bool = False

    @property
    def winners(self) -> list[str]:
        return [c.name for c in self.candidates if c.succeeded]

    def diff(self, name: str) -> bytes:
        """The candidate's changes as a binary patch (``git apply`` takes it)."""
        from acpcli.racing import worktrees
        from acpcli.racing.record import load

        race = load(self.id)
        cand = race.candidate(name)
        if not cand.base or not cand.result:
            return b""
        return worktrees.diff(worktrees.open_store(race.store), cand.base, cand.result)

    def apply(self, name: str) -> list[str]:
        """Bring the candidate's changes into the tree the race started from (3-way; an
        :class:`~acpcli.errors.UsageError` naming the files on a conflict with changes made
        there since, and nothing written). The paths written."""
        from acpcli.racing import worktrees
        from acpcli.racing.apply import apply
        from acpcli.racing.record import load

        race = load(self.id)
        cand = race.candidate(name)
        if not cand.base or not cand.result:
            from acpcli.errors import UsageError

            raise UsageError(f"candidate {name} of race {race.id} has no result to apply ({cand.state})")
        written = apply(worktrees.open_store(race.store), Path(race.top), cand.base, cand.result, race.folder / "merge")
        race.applied = name
        race.save()
        return written

    def drop(self) -> None:
        """Remove the race: its worktrees, its store, the hosts of its kept sessions."""
        import subprocess

        from acpcli.processes import python_module_argv

        subprocess.run(
            [*python_module_argv("acpcli"), "race", "drop", self.id], stdin=subprocess.DEVNULL, capture_output=True,
            check=False, timeout=120,
        )


def race(
    prompt: str,
    agents: Sequence[str] = (),
    *,
    commands: Sequence[str] = (),
    cwd: str | os.PathLike[str] | None = None,
    check: str | None = None,
    check_timeout: float = 600.0,
    timeout: float | None = None,
    permissions: str = "deny",
    keep: bool = False,
) -> RaceResult:
    """Race ``agents`` (names; the same one twice runs twice) and ``commands`` (agent command
    lines) on ``prompt`` in ``cwd`` (default: the current directory). ``permissions``:
    ``allow``, ``deny`` or ``read-only`` for every candidate (nobody is asked); ``timeout``
    bounds each turn; ``check`` runs in each tree after its turn, bounded by
    ``check_timeout``; ``keep`` keeps the worktrees and live sessions (continue one with
    ``acpcli prompt --session``). Raises :class:`~acpcli.errors.UsageError` for a place no
    race can start from, :class:`~acpcli.errors.StorageError` for a full disk (nothing left)."""
    from acpcli.errors import UsageError
    from acpcli.racing.run import Runner, Settings, new_race, remove_trees

    if permissions not in ("allow", "deny", "read-only"):
        raise UsageError(f"permissions must be allow, deny or read-only (nobody is asked); got {permissions!r}")
    the_race, source = new_race(Path(cwd) if cwd is not None else Path.cwd(), agents, commands, prompt, check=check, keep=keep)
    keep_alive = "0"
    if keep:
        from acpcli.config import keep_alive as configured

        keep_alive = os.environ.get("ACPCLI_KEEP_ALIVE") or f"{configured(None):g}"
    settings = Settings(
        permissions=permissions, timeout=timeout, check=check, check_timeout=check_timeout, keep_alive=keep_alive
    )
    runner = Runner(the_race, source, settings)
    try:
        runner.prepare()
        runner.start()
        runner.wait()
    except BaseException:
        runner.cancel()
        if keep:
            the_race.save()
        else:
            runner.remove()
        raise
    if not keep:
        remove_trees(the_race, source)
    the_race.save()
    return _result(the_race)


def _result(the_race: Any) -> RaceResult:
    cands = []
    for c in the_race.candidates:
        check = None
        if c.check is not None:
            check = CheckResult(c.check.exit, c.check.seconds, tuple(c.check.tail), c.check.timed_out)
        cands.append(
            RaceCandidate(
                name=c.name, agent=c.agent, command=c.cmd, state=c.state, stop_reason=c.stop, seconds=c.wall,
                files=tuple(
                    ChangedFile(f["path"], f.get("status", "M"), c.tree, f.get("added"), f.get("removed"))
                    for f in c.files
                ),
                check=check, usage=c.usage, session_id=c.session, error=c.error, succeeded=c.succeeded,
                worktree=c.tree if the_race.keep else None,
            )
        )
    return RaceResult(id=the_race.id, cwd=the_race.cwd, kind=the_race.kind, candidates=tuple(cands), kept=the_race.keep)
