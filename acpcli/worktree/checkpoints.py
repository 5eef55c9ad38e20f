"""The checkpoints of one session's working tree: take, list, diff, rewind, undo, remove, check.

:class:`Checkpoints` is the whole API (see ``acpcli/worktree/__init__.py`` for the invariants).
Every method is blocking (git runs as child processes): from async code, call it in a worker
thread. Every method that changes the store holds the store's lock, so two acpcli processes on
one session take turns (:class:`~acpcli.errors.CheckpointsBusy` after ``lock_wait`` seconds).
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from acpcli.errors import CheckpointError, CheckpointsOff, NoCheckpoint, RewindRefused
from acpcli.text.safe import safe_line
from acpcli.worktree.git import Git, GitError, GitTimeout, find_git
from acpcli.worktree.restore import Change, Restorer
from acpcli.worktree.snapshot import (
    Bounds,
    RootSnapshot,
    RootSpec,
    TooLarge,
    snapshot,
    snapshot_paths,
)
from acpcli.worktree.store import Store, checkpoints_dir

log = logging.getLogger("acpcli.worktree")

#: A root (or repository) holding more files than this is not checkpointed.
DEFAULT_MAX_FILES = 100_000
#: Seconds a checkpoint may take before it gives up (the tree is too large or too slow).
DEFAULT_TIME_LIMIT = 10.0
#: Seconds a change to the store waits for another acpcli holding it.
DEFAULT_LOCK_WAIT = 30.0
#: Seconds a git command of a rewind, a listing or a check may run.
SLOW_GIT = 300.0
#: The most characters of a label (the prompt's first line) kept.
LABEL_CHARS = 200
#: How many names a note lists before "…".
NOTE_NAMES = 3


@dataclass(frozen=True)
class FileChange:
    """One file a turn (or a rewind) changes. ``path`` is relative to ``root``, decoded with
    :func:`os.fsdecode` (bytes that are not UTF-8 as surrogate escapes: ``os.fsencode`` gives the
    name back; show it through :func:`acpcli.text.safe.safe_line`).

    ``status``: ``A`` added, ``M`` modified (content or exec bit), ``D`` deleted, ``R`` renamed
    from ``old_path``, ``T`` changed kind (a file became a link). ``added``/``removed``: lines,
    None for a binary file (and in a rewind plan)."""

    root: Path
    path: str
    status: str
    added: int | None = None
    removed: int | None = None
    old_path: str | None = None

    @property
    def full(self) -> Path:
        """The file's absolute path."""
        return self.root / self.path


@dataclass(frozen=True)
class Checkpoint:
    """The working tree after turn ``turn`` (0: before the first turn).

    ``label`` is the prompt's first line; ``time`` when it was taken (seconds since the epoch);
    ``files`` what changed since the checkpoint before it (empty for turn 0, or when there is
    none before it: ``base`` is then None); ``notes`` (from :meth:`Checkpoints.take` only) one
    line per new kind of thing left out (files over the size limit, unreadable files, nested
    repositories), to be shown to the user as warnings."""

    turn: int
    label: str
    time: float
    commit: str
    base: str | None = None
    files: tuple[FileChange, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def added(self) -> int:
        """Lines added by the turn (binary files count none)."""
        return sum(f.added or 0 for f in self.files)

    @property
    def removed(self) -> int:
        """Lines removed by the turn."""
        return sum(f.removed or 0 for f in self.files)


@dataclass
class RewindPlan:
    """What a rewind (or an undo) does, or would do with ``dry_run``.

    ``changes``: ``M`` the file is written back, ``A`` it is brought back (it is absent now),
    ``D`` it is removed (it did not exist then). ``conflicts``: those of ``changes`` whose file
    was changed by hand since the last checkpoint (a rewind refuses them unless ``force``).
    ``skipped``: paths left alone, with why (a file that is in no checkpoint — ignored or too
    large — is never overwritten or removed; a folder on the way that is a link now...).
    ``done``: whether files were written (False for a dry run)."""

    to_turn: int | None  # None: an undo
    changes: list[FileChange] = field(default_factory=list)
    conflicts: list[FileChange] = field(default_factory=list)
    skipped: list[tuple[FileChange, str]] = field(default_factory=list)
    dry_run: bool = False
    done: bool = False


def _label(text: str) -> str:
    """The first non-blank line of ``text``, one safe line of at most :data:`LABEL_CHARS`."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = safe_line(line)
    return line if len(line) <= LABEL_CHARS else line[: LABEL_CHARS - 1] + "…"


def _names(paths: list[bytes]) -> str:
    shown = ", ".join(safe_line(os.fsdecode(p)) for p in paths[:NOTE_NAMES])
    return shown + (f" and {len(paths) - NOTE_NAMES} more" if len(paths) > NOTE_NAMES else "")


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}" if unit == "bytes" else f"{n:.3g} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _failed(what: str, exc: BaseException) -> CheckpointError:
    """A :class:`CheckpointError` for git (or the file system) failing at ``what``."""
    if (isinstance(exc, GitError) and exc.disk_full) or getattr(exc, "errno", None) in (28, 122):
        full = CheckpointError(f"{what}: the disk is full")
        full.disk_full = True
        return full
    detail = exc.detail if isinstance(exc, GitError) else (getattr(exc, "strerror", None) or str(exc))
    return CheckpointError(f"{what}: {detail}")


class Checkpoints:
    """The checkpoints of session ``session_id``'s working tree: ``roots`` (the cwd first, then
    the extra roots; None: the roots already recorded for the session, for the commands that
    read or rewind a past session).

    ``max_file_size``: bytes; larger files are left out (0: no limit; None: the config's
    ``checkpoint_max_file_size``, 10 MiB by default). ``max_files``, ``time_limit``: the bounds
    past which checkpoints give up on the session (:class:`~acpcli.errors.CheckpointsOff`, said
    once; later takes raise it at once). ``lock_wait``: seconds to wait for another acpcli.

    Raises :class:`~acpcli.errors.CheckpointsOff` when there is no usable git on PATH (one line
    saying why). Nothing is created on disk until the first :meth:`take`.
    """

    def __init__(
        self,
        session_id: str,
        roots: Sequence[Path | str] | None = None,
        *,
        max_file_size: int | None = None,
        max_files: int = DEFAULT_MAX_FILES,
        time_limit: float = DEFAULT_TIME_LIMIT,
        lock_wait: float = DEFAULT_LOCK_WAIT,
        home: Path | None = None,
    ) -> None:
        exe, why = find_git()
        if exe is None:
            raise CheckpointsOff(f"checkpoints are off: {why}")
        self.session_id = session_id
        self._store = Store(session_id, home)
        self._git = Git(exe, self._store.git_dir)
        if max_file_size is None:
            max_file_size = _configured_max_file_size()
        self.max_file_size = max_file_size
        self.max_files = max_files
        self.time_limit = time_limit
        self.lock_wait = lock_wait
        given = [Path(r) for r in roots] if roots is not None else self._store.roots()
        self.roots: builtins.list[Path] = _distinct([_resolved(r) for r in given])
        self._specs: builtins.list[RootSpec] = []

    # -- reading -------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The store's folder (``<home>/checkpoints/<key>/``)."""
        return self._store.dir

    def exists(self) -> bool:
        """Whether any checkpoint was ever taken for the session."""
        return self._store.exists()

    def turns(self) -> builtins.list[int]:
        """The turns that have a checkpoint, in order (no git process: read from the refs)."""
        return sorted(self._turn_refs())

    def latest(self) -> int | None:
        """The last turn that has a checkpoint (0: only the one before the first turn), or None."""
        turns = self.turns()
        return turns[-1] if turns else None

    def list(self) -> builtins.list[Checkpoint]:
        """Every checkpoint, by turn, with what each turn changed (one git process for all).

        Raises :class:`~acpcli.errors.CheckpointError` when the store cannot be read."""
        refs = self._turn_refs()
        if not refs:
            return []
        order = sorted(refs)
        commits = list(dict.fromkeys(refs[n] for n in order))
        try:
            out = self._git.run(
                "log", "--no-walk=unsorted", "-z", "-M", "--raw", "--numstat", "--format=%x01%H%x02%P%x02%ct%x02%s%x00",
                *commits, timeout=SLOW_GIT,
            )
        except GitError as exc:
            raise _failed("cannot read the checkpoints", exc) from None
        parsed = dict(self._parse_log(out))
        result = []
        for n in order:
            entry = parsed.get(refs[n])
            if entry is None:
                continue
            base, when, label, files = entry
            result.append(Checkpoint(turn=n, label=label, time=when, commit=refs[n], base=base, files=tuple(files) if base else ()))
        return result

    def get(self, turn: int) -> Checkpoint:
        """The checkpoint after ``turn`` (:class:`~acpcli.errors.NoCheckpoint` when there is none)."""
        for checkpoint in self.list():
            if checkpoint.turn == turn:
                return checkpoint
        raise NoCheckpoint(f"session {self.session_id} has no checkpoint of turn {turn}")

    def diff(self, turn: int | None = None, *, stat: bool = False, name_only: bool = False) -> str:
        """What ``turn`` changed (default: the last turn) as a unified diff: its checkpoint against
        the one before it, renames found (``stat``: git's ``--stat`` instead; ``name_only``: the
        changed paths, one a line). Paths are relative to the root (other roots' paths start with
        the root, relative to the first); git quotes unusual names (``"a\\nb"``). The text holds
        the files' lines as they are: pass it through :func:`acpcli.text.safe.safe_text` before a
        terminal. "" when the turn changed nothing.

        Raises :class:`~acpcli.errors.NoCheckpoint` (no such turn, or no checkpoint before it),
        :class:`~acpcli.errors.CheckpointError` (the store cannot be read)."""
        refs = self._turn_refs()
        if turn is None:
            turns = [n for n in sorted(refs) if n > 0]
            if not turns:
                raise NoCheckpoint(f"session {self.session_id} has no turn with a checkpoint yet")
            turn = turns[-1]
        if turn not in refs:
            raise NoCheckpoint(f"session {self.session_id} has no checkpoint of turn {turn}")
        commit = refs[turn]
        try:
            parents = self._git.run("rev-parse", f"{commit}^@", timeout=SLOW_GIT).split()
        except GitError as exc:
            raise _failed("cannot read the checkpoints", exc) from None
        if not parents:
            raise NoCheckpoint(f"session {self.session_id} has no checkpoint from before turn {turn}")
        return self._diff(parents[0].decode(), commit, stat=stat, name_only=name_only)

    def diff_since(self, turn: int, *, stat: bool = False) -> str:
        """What the turns from ``turn`` on changed, together: the files as ``turn`` found them
        (what :meth:`rewind` goes back to) against the last checkpoint of a turn, as :meth:`diff`
        gives it. Raises :class:`~acpcli.errors.NoCheckpoint` (no checkpoint before ``turn``),
        :class:`~acpcli.errors.CheckpointError` (the store cannot be read)."""
        refs = self._turn_refs()
        start = self._refs_now().get(f"before-{turn}") or refs.get(turn - 1) if turn >= 1 else None
        if start is None:
            raise NoCheckpoint(f"session {self.session_id} has no checkpoint from before turn {turn}")
        return self._diff(start, refs[max(refs)], stat=stat, name_only=False)

    def _diff(self, old: str, new: str, *, stat: bool, name_only: bool) -> str:
        mode = ["--stat"] if stat else ["--name-only"] if name_only else ["-p"]
        out: builtins.list[str] = []
        first = self.roots[0] if self.roots else None
        try:
            for number, root in self._numbered():
                label = "" if root == first or first is None else os.path.relpath(root, first) + "/"
                text = self._git.run(
                    "diff-tree", "-r", "-M", "--no-color", f"--relative={number}/",
                    f"--src-prefix=a/{label}", f"--dst-prefix=b/{label}", *mode, old, new, timeout=SLOW_GIT,
                )
                if name_only and label:
                    text = b"".join(_in_root(label, line) + b"\n" for line in text.splitlines())
                out.append(text.decode("utf-8", "replace"))
        except GitError as exc:
            raise _failed("cannot read the checkpoints", exc) from None
        return "".join(out)

    # -- taking --------------------------------------------------------------------------

    def take(self, turn: int, label: str = "", *, files: bool = True) -> Checkpoint:
        """Record the roots as the checkpoint after ``turn`` (0: before the first turn; taking a
        turn again replaces its checkpoint). ``label``: the prompt (its first line is kept).
        ``files=False``: the result's :attr:`~Checkpoint.files` are left empty (one git process
        less, for a caller that does not show them: the turns of a session).

        Costs about one ``git status`` of the roots (only changed files are hashed), and never
        more than ``time_limit`` seconds. Never touches the user's repository.

        Raises (all :class:`~acpcli.errors.CheckpointError`; around a turn, a warning):
        :class:`~acpcli.errors.CheckpointsOff` over the bounds (then on every later take, at
        once), :class:`~acpcli.errors.CheckpointsBusy` (another acpcli held the store past
        ``lock_wait``), :class:`~acpcli.errors.CheckpointError` (a full disk, a damaged store)."""
        if turn < 0:
            raise ValueError("turn must be 0 or more")
        with self._taking(f"checkpoint of turn {turn}") as (tree, notes):
            base = self._ref("head")
            commit = self._commit(tree, base, _label(label))
            updates: dict[str, str | None] = {str(turn): commit, "head": commit}
            if self._ref("rewinding"):  # a rewind stopped half way is behind us now
                updates["rewinding"] = None
            self._update_refs(updates)
            changed = self._changes(base, commit) if base and files else []
        return Checkpoint(
            turn=turn, label=_label(label), time=time.time(), commit=commit, base=base, files=tuple(changed), notes=tuple(notes)
        )

    def take_before(self, turn: int) -> Checkpoint | None:
        """Before turn ``turn`` (1 or more): record what changed since the last checkpoint --
        the user's own edits between turns -- as the state before that turn, so the turn's diff
        holds what the agent did alone and a rewind to the turn keeps those edits. None (and
        nothing recorded) when nothing changed, the usual case. Same cost and raises as
        :meth:`take`."""
        if turn < 1:
            raise ValueError("turn must be 1 or more")
        label = _label(f"(changed before turn {turn})")
        with self._taking(f"checkpoint before turn {turn}") as (tree, notes):
            base = self._ref("head")
            if base is None or self._tree_of(base) == tree:
                return None
            commit = self._commit(tree, base, label)
            self._update_refs({f"before-{turn}": commit, "head": commit})
            files = self._changes(base, commit)
        return Checkpoint(
            turn=turn, label=label, time=time.time(), commit=commit, base=base, files=tuple(files), notes=tuple(notes)
        )

    @contextlib.contextmanager
    def _taking(self, what: str) -> Iterator[tuple[str, builtins.list[str]]]:
        """The store locked and ready, the roots recorded (their tree and the notes of what was
        left out), for the body to commit; its failures are one :class:`CheckpointError`
        naming ``what`` (a turn never fails for its checkpoint: a warning, and the log)."""
        self._still_on()
        with self._store.locked(self.lock_wait):
            self._prepare()
            try:
                yield self._record(time.monotonic() + self.time_limit)
            except (GitError, OSError) as exc:
                raise _failed(f"{what} not taken", exc) from None
            except CheckpointError:
                raise
            except Exception as exc:
                log.exception("%s of %s", what, self.session_id)
                raise CheckpointError(f"{what} not taken: {type(exc).__name__}: {exc}") from None

    def _still_on(self) -> None:
        reason = self._store.off_reason(self.max_files, self.time_limit)
        if reason is not None:
            raise CheckpointsOff(f"checkpoints are off for this session: {reason}")
        if not self.roots:
            raise NoCheckpoint(f"session {self.session_id} has no checkpoints")

    def _prepare(self) -> None:
        """Make the store if needed, number the roots, borrow the user's objects, and clean up
        after a restore that was stopped."""
        try:
            self._store.create()
            numbers = self._store.number_roots(self.roots)
            specs = [RootSpec.of(n, r) for n, r in zip(numbers, self.roots, strict=True)]
            self._specs = specs
            self._store.borrow([s.repo.objects for s in specs if s.repo is not None and s.repo.objects.is_dir()])
            self._store.clean_journal()
        except OSError as exc:
            raise _failed("checkpoints cannot be kept", exc) from None

    def _record(self, deadline: float) -> tuple[str, builtins.list[str]]:
        """Record every root; the top tree and the notes about what was newly left out.
        Over the bounds: give up on the session (:class:`CheckpointsOff`)."""
        bounds = Bounds(max_file_size=self.max_file_size, max_files=self.max_files, deadline=deadline)
        snaps: builtins.list[tuple[RootSpec, RootSnapshot]] = []
        try:
            for spec in self._specs:
                if not spec.root.is_dir():
                    continue  # a root that went away: absent from this checkpoint
                snaps.append((spec, snapshot(self._git, self._store, spec, bounds)))
        except (TooLarge, GitTimeout) as exc:
            reason = (
                f"the working tree is too large ({exc})" if isinstance(exc, TooLarge)
                else f"a checkpoint took more than {self.time_limit:g} s"
            )
            self._store.give_up(reason, self.max_files, self.time_limit)
            raise CheckpointsOff(f"checkpoints are off for this session: {reason}") from None
        return self._top_tree(snaps), self._notes(snaps)

    def _top_tree(self, snaps: builtins.list[tuple[RootSpec, RootSnapshot]]) -> str:
        return self._store.tree([(str(spec.number).encode(), snap.tree) for spec, snap in snaps])

    def _notes(self, snaps: builtins.list[tuple[RootSpec, RootSnapshot]]) -> builtins.list[str]:
        """One line per kind of thing left out, when something of that kind is newly left out
        (the names left out last time are in the store's ``left-out`` file)."""
        kinds: dict[str, list[bytes]] = {"too-large": [], "unreadable": [], "nested": []}
        for spec, snap in snaps:
            prefix = b"" if spec.root == self.roots[0] else os.fsencode(os.path.relpath(spec.root, self.roots[0])) + b"/"
            kinds["too-large"] += [prefix + p for p in snap.too_large]
            kinds["unreadable"] += [prefix + p for p in snap.unreadable]
            kinds["nested"] += [prefix + p for p in snap.nested]
        record = self._store.dir / "left-out"
        lines = {line for kind, paths in kinds.items() for line in (kind.encode() + b" " + p.hex().encode() for p in paths)}
        try:
            before = set(record.read_bytes().split(b"\n"))
        except OSError:
            before = set()
        with contextlib.suppress(OSError):
            self._store.write_if_changed(record, b"\n".join(sorted(lines)))
        notes = []
        for kind, paths in kinds.items():
            fresh = [p for p in paths if kind.encode() + b" " + p.hex().encode() not in before]
            if not fresh:
                continue
            n = len(paths)
            if kind == "too-large":
                notes.append(f"{n} file{'s' if n > 1 else ''} over {_size(self.max_file_size)} left out of checkpoints: {_names(paths)}")
            elif kind == "unreadable":
                notes.append(f"{n} unreadable file{'s' if n > 1 else ''} left out of checkpoints: {_names(paths)}")
            else:
                notes.append(f"{n} nested git repositor{'ies' if n > 1 else 'y'} left out of checkpoints: {_names(paths)}")
        return notes

    def _tree_of(self, commit: str) -> str:
        """The tree of one of the store's commits (read from the object: no git process, unless
        it is not one of ours)."""
        tree = self._store.commit_tree(commit)
        if tree is None:
            tree = self._git.run("rev-parse", f"{commit}^{{tree}}", timeout=SLOW_GIT).strip().decode()
        return tree

    def _commit(self, tree: str, parent: str | None, message: str) -> str:
        return self._store.commit(tree, parent, message)

    def _update_refs(self, updates: dict[str, str | None]) -> None:
        """Set (or, with None, delete) refs of the session, in order."""
        self._store.set_refs(updates)

    def _ref(self, name: str) -> str | None:
        return self._store.refs_now().get(name)

    def _refs_now(self) -> dict[str, str]:
        return self._store.refs_now()

    def _turn_refs(self) -> dict[int, str]:
        return {int(name): oid for name, oid in self._refs_now().items() if name.isdigit()}

    def _numbered(self) -> Iterator[tuple[int, Path]]:
        """(number, root) of every root recorded in the store (this session's roots first)."""
        known = self._store.roots()
        ordered = [r for r in self.roots if r in known] + [r for r in known if r not in self.roots]
        for root in ordered:
            yield known.index(root), root

    def _changes(self, old: str, new: str) -> builtins.list[FileChange]:
        out = self._git.run("diff-tree", "-r", "-z", "-M", "--raw", "--numstat", old, new, timeout=SLOW_GIT)
        return self._parse_numstat(out)

    def _root_of(self, name: bytes) -> tuple[Path, str] | None:
        number, _, rest = name.partition(b"/")
        known = self._store.roots()
        if not number.isdigit() or int(number) >= len(known):
            return None
        return known[int(number)], os.fsdecode(rest)

    def _parse_numstat(self, data: bytes) -> builtins.list[FileChange]:
        """``--raw --numstat -z`` output (raw lines first, then numstat lines) as changes."""
        statuses: dict[bytes, str] = {}
        files: builtins.list[FileChange] = []
        tokens = data.split(b"\0")
        i = 0
        while i < len(tokens):
            token = tokens[i].lstrip(b"\n")
            i += 1
            if not token:
                continue
            if token.startswith(b":"):  # raw: ":mode mode oid oid STATUS", then one path or two
                status = token.split()[-1][:1].decode("ascii", "replace")
                names = 2 if status in ("R", "C") else 1
                if i + names <= len(tokens):
                    statuses[tokens[i + names - 1]] = status
                i += names
                continue
            fields = token.split(b"\t", 2)
            if len(fields) != 3:
                continue
            added = None if fields[0] == b"-" else int(fields[0])
            removed = None if fields[1] == b"-" else int(fields[1])
            old_name = None
            if fields[2]:
                name = fields[2]
            elif i + 1 < len(tokens):
                old_name, name = tokens[i], tokens[i + 1]
                i += 2
            else:
                continue
            where, old = self._root_of(name), self._root_of(old_name) if old_name else None
            if where is not None:
                status = statuses.get(name, "R" if old_name else "M")
                files.append(FileChange(where[0], where[1], status, added, removed, old[1] if old else None))
        return files

    def _parse_log(self, out: bytes) -> Iterator[tuple[str, tuple[str | None, float, str, builtins.list[FileChange]]]]:
        for record in out.split(b"\x01"):
            if not record:
                continue
            header, _, rest = record.partition(b"\0")
            parts = header.split(b"\x02", 3)
            if len(parts) != 4:
                continue
            oid, parents, when, subject = (p.decode("utf-8", "replace") for p in parts)
            base = parents.split()[0] if parents.split() else None
            yield oid, (base, float(when or 0), subject, self._parse_numstat(rest))

    # -- rewinding -----------------------------------------------------------------------

    def rewind(self, to_turn: int, *, dry_run: bool = False, force: bool = False) -> RewindPlan:
        """Bring the files back to their state before turn ``to_turn`` (as that turn found them:
        the checkpoint of turn ``to_turn - 1`` with what the user changed by hand before the turn
        began, see :meth:`take_before`): the paths the turns since changed (that checkpoint against the last
        one) and that differ now are written, files they created are removed, files they
        deleted come back, each written whole (a temporary file, fsync, rename). Paths only the
        user changed since are left as they are. The present state is checkpointed first, so
        :meth:`undo` puts it back.

        ``dry_run``: say what would change, change nothing. Files in no checkpoint (ignored, too
        large) are never overwritten nor removed (``skipped``).

        Raises :class:`~acpcli.errors.RewindRefused` (naming the files, nothing written) when
        paths to restore were changed by hand since the last checkpoint, unless ``force``;
        :class:`~acpcli.errors.NoCheckpoint` (no checkpoint before that turn),
        :class:`~acpcli.errors.CheckpointsOff`, :class:`~acpcli.errors.CheckpointsBusy`,
        :class:`~acpcli.errors.CheckpointError` (the disk, the store)."""
        if to_turn < 1:
            raise NoCheckpoint("a rewind goes back to a turn, 1 or more (the files before it come back)")
        # The files as the turn found them: the user's edits made between turns are kept.
        target = self._refs_now().get(f"before-{to_turn}") or self._turn_refs().get(to_turn - 1)
        if target is None:
            what = "before the first turn" if to_turn == 1 else f"of turn {to_turn - 1}"
            raise NoCheckpoint(f"session {self.session_id} has no checkpoint {what} to rewind to")
        return self._restore(target, to_turn, dry_run=dry_run, force=force)

    def undo(self, *, dry_run: bool = False, force: bool = False) -> RewindPlan:
        """Put back the files as they were before the last rewind (or undo: undo twice is a
        redo). Same checks and raises as :meth:`rewind`; :class:`~acpcli.errors.NoCheckpoint`
        when nothing was rewound."""
        target = self._ref("undo")
        if target is None:
            raise NoCheckpoint(f"session {self.session_id} has no rewind to undo")
        return self._restore(target, None, dry_run=dry_run, force=force)

    def _restore(self, target: str, to_turn: int | None, *, dry_run: bool, force: bool) -> RewindPlan:
        self._still_on()
        plan = RewindPlan(to_turn=to_turn, dry_run=dry_run)
        what = "rewind" if to_turn is not None else "undo"
        with self._store.locked(self.lock_wait):
            self._prepare()
            try:
                tree, _ = self._record(time.monotonic() + max(self.time_limit, 60.0))
                head = self._ref("head")
                now = self._commit(tree, head, f"before {what}" + (f" to turn {to_turn}" if to_turn else ""))
                # The paths to restore: those the turns changed (the last checkpoint against the
                # target), and those a rewind stopped half way may have written. A path changed
                # by hand only is not the rewind's business: it stays as it is.
                known = [head] if head else []
                scope = self._changed_paths(head, target) if head else None
                stopped = self._ref("rewinding")
                if stopped and scope is not None:
                    undo = self._ref("undo")
                    known += [oid for oid in (undo, stopped) if oid]
                    if undo:
                        scope |= self._changed_paths(undo, stopped)
                changes = [c for c in self._raw_diff(now, target) if scope is None or (c.root, c.path) in scope]
                # Changed by hand: differs now from every state acpcli recorded for it.
                by_hand: set[tuple[int, bytes]] | None = None
                for state in known:
                    paths = self._changed_paths(state, now)
                    by_hand = paths if by_hand is None else by_hand & paths
                by_hand = by_hand or set()
            except (GitError, OSError) as exc:
                raise _failed(f"cannot {what}", exc) from None
            roots = dict(self._numbered())
            apply: builtins.list[Change] = []
            for change in changes:
                root = roots.get(change.root)
                shown = self._shown(change, roots)
                if root is None or not root.is_dir():
                    plan.skipped.append((shown, "its root is not a root of this session now"))
                    continue
                full = os.path.join(os.fsencode(root), change.path)
                # a path to bring back that is there but in no checkpoint (ignored, too large)
                # is left alone; a folder there may empty with the rewind's own deletions
                if change.status == "A" and os.path.lexists(full) and (os.path.islink(full) or not os.path.isdir(full)):
                    plan.skipped.append((shown, "in no checkpoint (ignored, or too large): left alone"))
                    continue
                plan.changes.append(shown)
                if (change.root, change.path) in by_hand:
                    plan.conflicts.append(shown)
                apply.append(change)
            if dry_run:
                return plan
            if plan.conflicts and not force:
                names = _names([os.fsencode(c.path) for c in plan.conflicts])
                raise RewindRefused(
                    f"not rewinding: changed by hand since the last checkpoint: {names}",
                    paths=[c.full for c in plan.conflicts],
                    plan=plan,
                    hint="--force overwrites them (the present files are checkpointed first: undo brings them back)",
                )
            if not apply:
                plan.done = True
                return plan
            try:
                self._update_refs({"undo": now, "rewinding": target})
                restorer = Restorer(self._git, roots, self._store.write_journal)
                try:
                    restorer.apply(apply)
                finally:
                    left = [(self._shown(c, roots), why) for c, why in restorer.skipped]
                    plan.skipped += left
                    gone = {(shown.root, shown.path) for shown, _ in left}
                    plan.changes = [c for c in plan.changes if (c.root, c.path) not in gone]
                    plan.conflicts = [c for c in plan.conflicts if (c.root, c.path) not in gone]
                done = self._record_paths(restorer.done, tree)
                after = self._commit(done, now, f"after {what}" + (f" to turn {to_turn}" if to_turn else ""))
                self._update_refs({"head": after, "rewinding": None})
                self._store.clean_journal()
            except (GitError, OSError) as exc:
                raise _failed(f"{what} stopped", exc) from None
        plan.done = True
        return plan

    def _shown(self, change: Change, roots: dict[int, Path]) -> FileChange:
        return FileChange(roots.get(change.root, Path("?")), os.fsdecode(change.path), {"A": "A", "D": "D"}.get(change.status, "M"))

    def _record_paths(self, done: builtins.list[Change], fallback: str) -> str:
        """The top tree after a restore: the paths written added to the private indexes."""
        by_root: dict[int, list[bytes]] = {}
        for change in done:
            by_root.setdefault(change.root, []).append(change.path)
        if not by_root:
            return fallback
        snaps: builtins.list[tuple[RootSpec, RootSnapshot]] = []
        bounds = Bounds(self.max_file_size, self.max_files, time.monotonic() + max(self.time_limit, 60.0))
        for spec in self._specs:
            if spec.root.is_dir():
                snaps.append((spec, snapshot_paths(self._git, self._store, spec, by_root.get(spec.number, []), bounds)))
        return self._top_tree(snaps)

    def _raw_diff(self, old: str, new: str) -> builtins.list[Change]:
        out = self._git.run("diff-tree", "-r", "-z", "--no-renames", "--raw", old, new, timeout=SLOW_GIT)
        tokens = out.split(b"\0")
        changes = []
        for meta, name in zip(tokens[0::2], tokens[1::2], strict=False):
            fields = meta.lstrip(b":").split()
            number, _, path = name.partition(b"/")
            if len(fields) != 5 or not number.isdigit() or not path:
                continue
            old_mode, new_mode, old_oid, new_oid, status = (f.decode() for f in fields)
            changes.append(Change(int(number), path, status[:1], old_mode, new_mode, old_oid, new_oid))
        return changes

    def _changed_paths(self, old: str, new: str) -> set[tuple[int, bytes]]:
        out = self._git.run("diff-tree", "-r", "-z", "--no-renames", "--name-only", old, new, timeout=SLOW_GIT)
        paths = set()
        for name in out.split(b"\0"):
            number, _, path = name.partition(b"/")
            if number.isdigit() and path:
                paths.add((int(number), path))
        return paths

    # -- housekeeping --------------------------------------------------------------------

    def remove(self) -> bool:
        """Delete the session's checkpoints (``sessions rm``, ``prune``); whether there were any.
        Raises :class:`~acpcli.errors.CheckpointsBusy` while another acpcli uses them."""
        return remove_checkpoints(self.session_id, lock_wait=self.lock_wait, home=self._store.base)

    def check(self) -> builtins.list[str]:
        """What is wrong with the store (``doctor``), one line each; [] when it is sound or
        absent. Reads only; never raises for a damaged store."""
        return _check_store(self._store, self._git)


def _in_root(label: str, line: bytes) -> bytes:
    """A path git printed (quoted when unusual) under another root's ``label``."""
    if line.startswith(b'"'):
        return b'"' + os.fsencode(label) + line[1:]
    return os.fsencode(label) + line


def _resolved(path: Path) -> Path:
    try:
        return path.expanduser().resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def _distinct(roots: list[Path]) -> list[Path]:
    """The roots without repeats and without those inside another one (in their order)."""
    unique = list(dict.fromkeys(roots))
    return [r for r in unique if not any(other in r.parents for other in unique)]


def _configured_max_file_size() -> int:
    from acpcli.config import DEFAULT_CHECKPOINT_MAX_FILE_SIZE, load_config
    from acpcli.errors import ConfigError

    try:
        return load_config().checkpoint_max_file_size
    except ConfigError:
        return DEFAULT_CHECKPOINT_MAX_FILE_SIZE


# -- every store (sessions rm, prune, doctor, sessions --json) ----------------------------


def count(session_id: str, *, home: Path | None = None) -> int:
    """How many turns of ``session_id`` have a checkpoint (no git process: cheap enough for a
    listing of every session)."""
    store = Store(session_id, home)
    folder = store.git_dir / store.refs
    try:
        names = {e.name for e in os.scandir(folder) if e.name.isdigit()}
    except OSError:
        names = set()
    with contextlib.suppress(OSError):
        prefix = store.refs + "/"
        for line in (store.git_dir / "packed-refs").read_text("ascii", "replace").splitlines():
            ref = line.partition(" ")[2]
            if ref.startswith(prefix) and ref[len(prefix) :].isdigit():
                names.add(ref[len(prefix) :])
    return len(names)


def remove_checkpoints(session_id: str, *, lock_wait: float = DEFAULT_LOCK_WAIT, home: Path | None = None) -> bool:
    """Delete ``session_id``'s checkpoint store; whether there was one. Needs no git.
    Raises :class:`~acpcli.errors.CheckpointsBusy` while another acpcli uses it."""
    store = Store(session_id, home)
    if not store.dir.exists():
        return False
    with store.locked(lock_wait) as lock:
        existed = store.delete()
        lock.discard()
    return existed


@dataclass
class StoreReport:
    """What :func:`check_all` found in one session's store."""

    session_id: str
    path: Path
    checkpoints: int
    problems: list[str]


def check_all(*, home: Path | None = None) -> list[StoreReport]:
    """Check every session's checkpoint store (``doctor``): one report each. Reads only; a store
    that cannot be checked (no git) says so in its problems."""
    base = home if home is not None else checkpoints_dir()
    reports = []
    exe, why = find_git()
    try:
        folders = sorted(p for p in base.iterdir() if p.is_dir())
    except OSError:
        return []
    for folder in folders:
        try:
            session_id = (folder / "session").read_bytes().decode("utf-8", "surrogatepass")
        except (OSError, UnicodeDecodeError):
            reports.append(StoreReport("?", folder, 0, ["the store does not say which session it belongs to"]))
            continue
        store = Store(session_id, base)
        if store.dir != folder:
            reports.append(StoreReport(session_id, folder, 0, ["the store's folder does not match its session"]))
            continue
        problems = _check_store(store, Git(exe, store.git_dir)) if exe else [f"cannot be checked: {why}"]
        reports.append(StoreReport(session_id, folder, count(session_id, home=base), problems))
    return reports


def _check_store(store: Store, git: Git) -> list[str]:
    if not store.dir.exists():
        return []
    if not store.exists():
        return ["the store has no git folder"]
    problems = []
    if not store.roots():
        problems.append("the store does not say which folders it holds")
    try:
        git.run("fsck", "--connectivity-only", "--no-dangling", "--no-progress", timeout=SLOW_GIT)
    except GitError as exc:
        problems.append(f"damaged: {exc.detail}")
    head = store.git_dir / store.refs / "head"
    if store.journal.exists():
        problems.append("a rewind was stopped half way (the next change to the store cleans up)")
    if not head.exists() and count(store.session_id, home=store.base):
        problems.append("the store's head ref is missing")
    return problems


__all__ = [
    "DEFAULT_LOCK_WAIT", "DEFAULT_MAX_FILES", "DEFAULT_TIME_LIMIT", "Checkpoint", "Checkpoints", "FileChange",
    "RewindPlan", "StoreReport", "check_all", "count", "remove_checkpoints",
]
