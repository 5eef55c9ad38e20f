"""Running a race: every candidate's turn at once, each its own ``acpcli prompt`` process.

A candidate is the real command a user would type, ``acpcli prompt --agent A --cwd TREE
--format jsonl …``, run in its own process group: it records its session in the history as
any prompt does (live in a host when the race keeps its trees, so ``prompt --session`` and
``attach`` continue it there), and whatever one candidate does (crash, hang, refuse) cannot
stop the others. Its jsonl stream tells the board what it does (tool calls, usage, the stop
reason); its exit code and last stderr line say how it ended.

After its turn, a candidate's tree is measured against its baseline (files changed, lines
added and removed) and the ``--check`` command runs in it, bounded by ``--check-timeout``;
checks of candidates that finish together run together.

:meth:`Runner.cancel` (Ctrl-C) ends every candidate: SIGTERM to its process group (the
prompt cancels its turn and kills its agent), SIGKILL after a grace.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acpcli.racing import worktrees
from acpcli.racing.asking import Questions
from acpcli.racing.record import Candidate, Check, Race
from acpcli.text.safe import safe_line
from acpcli.worktree.git import GitError

#: The net under a candidate's own turn control: its ``acpcli prompt`` cancels the turn at
#: ``--timeout`` and stops its agent a grace later; a candidate process still running this
#: long past ``--timeout`` (hung itself) is killed.
PROCESS_SLACK = 15.0
#: After SIGTERM, how long a candidate's process has before SIGKILL.
STOP_GRACE = 5.0
#: How often a running candidate's files are counted for the board.
MEASURE_EVERY = 2.0
#: The last lines of a check that are kept.
CHECK_LINES = 5
#: At most this much of a check's output is read (the rest is skipped, not held).
CHECK_OUTPUT = 1 << 20

#: Exit codes of ``acpcli prompt`` and the state a candidate ends in.
_STATES = {0: "done", 11: "cancelled", 12: "refused", 13: "failed", 14: "failed", 15: "timed out"}


@dataclass
class Settings:
    """How the candidates run: the prompt's own options passed on to each."""

    permissions: str | None = None
    timeout: float | None = None
    check: str | None = None
    check_timeout: float = 600.0
    keep_alive: str | None = None  # None: 0 (the trees are removed at the end, and the agents)
    extra: Sequence[str] = ()


def program() -> list[str]:
    """How a candidate's ``acpcli`` is started (this acpcli, whatever the folder holds)."""
    from acpcli.processes import python_module_argv

    return python_module_argv("acpcli")


class Runner:
    """Prepares, runs, measures and checks a race's candidates. ``on_change`` is called
    (from any thread) whenever a candidate's row changes."""

    def __init__(
        self,
        race: Race,
        source: worktrees.Source,
        settings: Settings,
        *,
        on_change: Callable[[], None] | None = None,
        env: dict[str, str] | None = None,
        questions: Questions | None = None,
    ) -> None:
        self.race = race
        self.source = source
        self.settings = settings
        self.on_change = on_change or (lambda: None)
        self.env = env
        #: Where candidates' permission questions go (None: nobody is asked, as in a script).
        self.questions = questions
        self.git: Any = None
        self.prepared: dict[str, worktrees.Prepared] = {}
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()
        self._cancelled = threading.Event()
        self._removed = False
        self._threads: list[threading.Thread] = []
        self.prompt_file = race.folder / "prompt.txt"
        self.task_file = race.folder / "task.txt"

    # -- preparing ----------------------------------------------------------------------

    def prepare(self) -> None:
        """Make the store and every candidate's tree (at once). On any failure what was made
        is removed and the error raised (a full disk: :class:`~worktrees.DiskFull`)."""
        from acpcli.paths import ensure_dir, home_dir

        ensure_dir(self.race.folder)
        try:
            self.prompt_file.write_text(self.race.prompt, encoding="utf-8")
            if self.race.task is not None:
                self.task_file.write_text(self.race.task, encoding="utf-8")
            self.git = worktrees.make_store(self.race.store, self.source)
            self.race.save()
        except OSError as exc:
            self.remove()
            if exc.errno in worktrees.FULL:
                raise worktrees.DiskFull(f"the disk is full: the race could not be prepared under {self.race.folder} (nothing is left of it)") from None
            raise
        except BaseException:
            self.remove()
            raise
        home = home_dir()

        def one(cand: Candidate) -> worktrees.Prepared:
            cand.state = "preparing"
            self.on_change()
            folder = self.race.folder
            return worktrees.prepare(
                self.source, self.git, folder / f"{self.race.id}-{cand.name}", folder / f"{cand.name}.index",
                folder / f"{cand.name}.exclude", home,
            )

        errors: list[BaseException] = []
        with ThreadPoolExecutor(max_workers=min(4, len(self.race.candidates))) as pool:
            futures = [(cand, pool.submit(one, cand)) for cand in self.race.candidates]
            for cand, future in futures:
                try:
                    made = future.result()
                except BaseException as exc:  # noqa: BLE001 - the first is raised below, all are cleaned up
                    errors.append(exc)
                    continue
                self.prepared[cand.name] = made
                cand.tree, cand.cwd, cand.base = str(made.tree), str(made.cwd), made.base
                cand.state = "waiting"
        if errors:
            self.remove()
            full = [e for e in errors if isinstance(e, worktrees.DiskFull)]
            raise (full or errors)[0]
        self.race.save()
        self.on_change()

    # -- running ------------------------------------------------------------------------

    def start(self) -> None:
        """Start every candidate's turn (each in a thread of its own)."""
        for cand in self.race.candidates:
            thread = threading.Thread(target=self._run_one, args=(cand,), name=f"race-{cand.name}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def wait(self, tick: Callable[[], None] | None = None, every: float = 0.1) -> None:
        """Wait for every candidate (and its check); ``tick`` is called every ``every`` s."""
        while self.running():
            time.sleep(every)
            if tick is not None:
                tick()
        self.race.ended = time.time()
        self.race.save()

    def _policy(self, cand: Candidate) -> str | None:
        policy = self.settings.permissions
        if policy is None and self.questions is not None:
            from acpcli.config import configured_permissions

            policy = configured_permissions(cand.agent) or "ask"  # the person at the race's terminal
        return policy

    def _fork(self, cand: Candidate, prepared: worktrees.Prepared, env: dict[str, str]) -> str | None:
        """The id of a fork of ``cand.fork_of`` made in the candidate's tree (session/fork),
        or None when its agent does not offer it (the transcript is sent instead)."""
        argv = [*program(), "fork", cand.fork_of or "", "--no-repl", "--cwd", str(prepared.cwd)]
        argv += ["--agent", cand.agent] if cand.agent is not None else ["--cmd", cand.cmd or ""]
        policy = self._policy(cand)
        if policy is not None and policy != "ask":
            argv += ["--permissions", policy]
        if self.settings.timeout:
            argv += ["--timeout", f"{self.settings.timeout:g}"]
        try:
            done = subprocess.run(
                argv, stdin=subprocess.DEVNULL, capture_output=True, cwd=prepared.cwd, env=env, start_new_session=True,
                timeout=(self.settings.timeout or 120) + PROCESS_SLACK, check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        made = done.stdout.decode("utf-8", "replace").strip()
        return made if done.returncode == 0 and made and "\n" not in made else None

    def _argv(self, cand: Candidate, prepared: worktrees.Prepared, forked: str | None = None) -> list[str]:
        s = self.settings
        if forked is not None:  # the fork goes on where it was made (its cwd, its agent)
            argv = [*program(), "prompt", "--format", "jsonl", "--session", forked, "-f", str(self.task_file)]
        else:
            argv = [*program(), "prompt", "--format", "jsonl", "--cwd", str(prepared.cwd), "-f", str(self.prompt_file)]
            argv += ["--agent", cand.agent] if cand.agent is not None else ["--cmd", cand.cmd or ""]
        argv += ["--keep-alive", s.keep_alive if s.keep_alive is not None else "0"]
        policy = self._policy(cand)
        if policy is not None:
            argv += ["--permissions", policy]
        if s.timeout:
            argv += ["--timeout", f"{s.timeout:g}"]
        argv += list(s.extra)
        return argv

    def _run_one(self, cand: Candidate) -> None:
        try:
            self._turn(cand)
            if self._cancelled.is_set():
                return
            self._measure(cand, final=True)
            if self.settings.check and cand.state == "done":
                cand.state = "checking"
                self.on_change()
                cand.check = run_check(self.settings.check, Path(cand.cwd or "."), self.settings.check_timeout, self._cancelled)
                cand.state = "done"
        except Exception as exc:  # noqa: BLE001 - one candidate's failure is its row, never the race's
            cand.state = "failed"
            cand.error = safe_line(f"{type(exc).__name__}: {exc}")[:300]
        finally:
            if cand.ended is None:
                cand.ended = time.time()
            self.save()
            self.on_change()

    def _turn(self, cand: Candidate) -> None:
        prepared = self.prepared[cand.name]
        stderr_path = self.race.folder / f"{cand.name}.stderr"
        env = dict(self.env if self.env is not None else os.environ)
        env.pop("COLUMNS", None)
        cand.state = "starting"
        cand.started = time.time()
        self.on_change()
        forked = None
        if cand.fork_of is not None and self.race.task is not None:
            forked = self._fork(cand, prepared, env)
            if self._cancelled.is_set():
                cand.state = "cancelled"
                return
            cand.started_from = "fork" if forked is not None else "transcript"
            if forked is not None:
                cand.session = forked
                self._record_session(cand)
        elif self.race.from_session is not None:
            cand.started_from = "transcript"
        passed: tuple[int, ...] = ()
        kept: tuple[int, int] | None = None
        if self.questions is not None:
            entry, passed, kept = self.questions.pipes()
            env.update(entry)
        try:
            with open(stderr_path, "wb") as err:
                proc = subprocess.Popen(
                    self._argv(cand, prepared, forked), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                    cwd=prepared.cwd, env=env, start_new_session=True, pass_fds=passed,
                )
        except BaseException:
            for fd in (*passed, *(kept or ())):
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise
        for fd in passed:
            os.close(fd)
        if kept is not None and self.questions is not None:
            self.questions.follow(cand.name, *kept)
        with self._lock:
            self._procs[cand.name] = proc
        if self._cancelled.is_set():
            self._stop(proc)
        reader = threading.Thread(target=self._read, args=(cand, proc), daemon=True)
        reader.start()
        limit = (self.settings.timeout + PROCESS_SLACK) if self.settings.timeout else None
        next_measure = time.monotonic() + MEASURE_EVERY
        killed_late = False
        while True:
            try:
                proc.wait(timeout=0.25)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if limit is not None and not killed_late and time.time() - cand.started > limit:
                killed_late = True
                self._stop(proc)
            if now >= next_measure and not self._cancelled.is_set():
                next_measure = now + MEASURE_EVERY
                with contextlib.suppress(Exception):
                    self._measure(cand, final=False)
        reader.join(timeout=10)
        cand.ended = time.time()
        cand.exit = proc.returncode
        with self._lock:
            self._procs.pop(cand.name, None)
        self._record_session(cand)
        if self._cancelled.is_set():
            cand.state = "cancelled"
        elif killed_late:
            cand.state = "timed out"
        elif proc.returncode in _STATES:
            cand.state = _STATES[proc.returncode]
            if proc.returncode == 0 and cand.stop is None:
                cand.stop = "end_turn"
        else:
            cand.state = "failed"
        if cand.state != "done":
            cand.error = _last_line(stderr_path) or (f"exit status {proc.returncode}" if proc.returncode else None)

    def _read(self, cand: Candidate, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if isinstance(event, dict):
                self._event(cand, event)
        proc.stdout.close()

    def _event(self, cand: Candidate, event: dict[str, Any]) -> None:
        changed = False
        sid = event.get("sessionId")
        if isinstance(sid, str) and cand.session is None:
            cand.session = sid
            self._record_session(cand)
            self.save()
            changed = True
        kind = event.get("type")
        if cand.state == "starting" and kind not in (None, "session"):
            cand.state = "running"
            changed = True
        if kind == "tool_call":
            title = event.get("title")
            if isinstance(title, str) and title:
                cand.last_tool = safe_line(" ".join(title.split()))[:200]
                changed = True
        elif kind == "session" and event.get("field") == "usage" and isinstance(event.get("usage"), dict):
            cand.usage = event["usage"]
            changed = True
        elif kind == "turn_end":
            stop = event.get("stopReason")
            cand.stop = stop if isinstance(stop, str) else None
            changed = True
        if changed:
            self.on_change()

    def _record_session(self, cand: Candidate) -> None:
        """Mark the candidate's session with the race's id in the history (found by its
        cwd when the jsonl stream never named it: a candidate that failed early)."""
        from acpcli.history.index import Index

        with contextlib.suppress(Exception), Index.open() as index:
            if cand.session is None and cand.cwd is not None:
                found = index.list_sessions(cwd=cand.cwd, limit=1)
                if not found:
                    return
                cand.session = found[0].id
            if cand.session is not None:
                index.set_race(cand.session, self.race.id)

    def _measure(self, cand: Candidate, *, final: bool) -> None:
        prepared = self.prepared[cand.name]
        result = worktrees.snapshot(self.git, prepared.tree, prepared.index, prepared.excludes)
        files = worktrees.changes(self.git, prepared.base, result)
        cand.files_so_far = len(files)
        if final:
            cand.result = result
            cand.files = [vars(f) for f in files]
        self.on_change()

    def save(self) -> None:
        """Write race.json now (one thread at a time; never again once the race is removed)."""
        with self._lock, contextlib.suppress(OSError):
            if not self._removed:
                self.race.save()

    # -- ending -------------------------------------------------------------------------

    def cancel(self) -> None:
        """Cancel every candidate (Ctrl-C): SIGTERM now, SIGKILL after :data:`STOP_GRACE`."""
        self._cancelled.set()
        with self._lock:
            procs = list(self._procs.values())
        for proc in procs:
            self._stop(proc)
        deadline = time.monotonic() + STOP_GRACE + 2
        for thread in self._threads:
            thread.join(timeout=max(0.1, deadline - time.monotonic()))

    def _stop(self, proc: subprocess.Popen[bytes]) -> None:
        def kill() -> None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)

        threading.Thread(target=kill, daemon=True).start()

    def remove(self) -> None:
        """Remove every tree and the race's folder (nothing of it is left)."""
        with self._lock:
            self._removed = True
        remove_race_files(self.race, self.source)


def new_race(
    cwd: Path, agents: Sequence[str], cmds: Sequence[str], prompt: str, *, check: str | None = None, keep: bool = False,
    from_session: str | None = None,
) -> tuple[Race, worktrees.Source]:
    """A race about to start in ``cwd`` (nothing made yet): one candidate an agent or command.
    :class:`~acpcli.errors.UsageError` for a place no race can start from (one line)."""
    from acpcli.errors import UsageError
    from acpcli.paths import home_dir
    from acpcli.racing.record import Candidate, candidate_names, new_id

    if not agents and not cmds:
        raise UsageError("a race needs its candidates: an agent or a command, at least once")
    source = worktrees.inspect(cwd)
    worktrees.check_copyable(source, home_dir())
    race = Race(
        id=new_id(), cwd=str(source.cwd), kind=source.kind, top=str(source.top), rel=source.rel, head=source.head,
        prompt=prompt, check=check, keep=keep, from_session=from_session,
    )
    for name, agent, cmd in candidate_names(list(agents), list(cmds)):
        race.candidates.append(Candidate(name=name, agent=agent, cmd=cmd))
    return race, source


def remove_trees(race: Race, source: worktrees.Source) -> None:
    """The end without --keep: the trees go; the store and race.json stay for show and apply."""
    for cand in race.candidates:
        if cand.tree:
            with contextlib.suppress(OSError, GitError):
                worktrees.remove_tree(source, Path(cand.tree))
        for suffix in (".index", ".exclude"):
            with contextlib.suppress(OSError):
                (race.folder / f"{cand.name}{suffix}").unlink()


def remove_race_files(race: Race, source: worktrees.Source | None) -> None:
    """Remove a race's trees (worktrees of the user's repository too), store and folder."""
    import shutil

    for cand in race.candidates:
        tree = race.folder / f"{race.id}-{cand.name}"
        with contextlib.suppress(OSError, GitError):
            worktrees.remove_tree(source, tree)
    shutil.rmtree(race.folder, ignore_errors=True)


def run_check(command: str, cwd: Path, seconds: float, cancelled: threading.Event | None = None) -> Check:
    """Run ``command`` with the shell in ``cwd`` (its own process group), at most ``seconds``;
    its exit code, time and last lines (made safe for a terminal)."""
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )
    tail = bytearray()

    def read() -> None:
        assert proc.stdout is not None
        while True:
            chunk = proc.stdout.read1(65536) if hasattr(proc.stdout, "read1") else proc.stdout.read(65536)
            if not chunk:
                break
            tail.extend(chunk)
            del tail[: max(0, len(tail) - CHECK_OUTPUT)]

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    timed_out = False
    deadline = started + seconds
    while True:
        try:
            proc.wait(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline or (cancelled is not None and cancelled.is_set()):
                timed_out = time.monotonic() >= deadline
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                break
    with contextlib.suppress(OSError):  # what it left running in its group
        os.killpg(proc.pid, signal.SIGKILL)
    reader.join(timeout=2)
    if proc.stdout is not None and not reader.is_alive():
        proc.stdout.close()
    lines = [safe_line(line)[:300] for line in bytes(tail).decode("utf-8", "replace").splitlines() if line.strip()]
    return Check(
        exit=None if timed_out else proc.returncode, seconds=round(time.monotonic() - started, 3),
        tail=lines[-CHECK_LINES:], timed_out=timed_out,
    )


def _last_line(path: Path) -> str | None:
    """The last line of a candidate's stderr that says something (an error line first)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("acpcli: error:")]
    if not lines:
        return None
    pick = (errors or lines)[-1]
    return safe_line(pick.removeprefix("acpcli: error: ").removeprefix("acpcli: "))[:300]
