"""What a race keeps on disk: ``ACPCLI_HOME/races/RACE/race.json`` and its folders.

Layout (folders 0700)::

    races/<id>/race.json        the race: where it started, the prompt, each candidate and
                                how it ended (written whole, replaced atomically)
    races/<id>/store.git/       the private git folder: baselines and results (trees)
    races/<id>/<id>-<name>/     a candidate's tree (a git worktree, or a copy)
    races/<id>/<name>.index     its private index; <name>.exclude its exclude file
    races/<id>/<name>.stderr    what its ``acpcli prompt`` said on stderr
    races/<id>/prompt.txt       the prompt

A race's id is ``r`` and 8 hex digits; a unique prefix names it.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from acpcli.errors import UsageError
from acpcli.paths import ensure_dir, home_dir


def races_dir() -> Path:
    """Every race's folder: ``<home>/races/`` (not created here)."""
    return home_dir() / "races"


def new_id() -> str:
    return "r" + secrets.token_hex(4)


@dataclass
class Check:
    """The ``--check`` command's outcome in one candidate's tree."""

    exit: int | None  # None: it outlasted --check-timeout and was stopped
    seconds: float
    tail: list[str] = field(default_factory=list)  # its last lines (stdout and stderr)
    timed_out: bool = False

    @property
    def passed(self) -> bool:
        return self.exit == 0 and not self.timed_out


@dataclass
class Candidate:
    """One agent's run in a race (``name``: the agent's, ``-2`` … for the same agent again)."""

    name: str
    agent: str | None = None
    cmd: str | None = None
    tree: str | None = None
    cwd: str | None = None
    base: str | None = None
    #: waiting, preparing, starting, running, checking, done, failed, timed out, refused,
    #: cancelled
    state: str = "waiting"
    session: str | None = None
    stop: str | None = None
    exit: int | None = None
    error: str | None = None
    started: float | None = None
    ended: float | None = None
    usage: dict[str, Any] | None = None
    last_tool: str | None = None
    result: str | None = None
    files: list[dict[str, Any]] = field(default_factory=list)
    files_so_far: int = 0
    check: Check | None = None
    #: With ``--session``: the session this candidate tries to fork (``session/fork``: the
    #: same agent), and how it started from it: ``fork`` or ``transcript`` (as context).
    fork_of: str | None = None
    started_from: str | None = None

    @property
    def wall(self) -> float | None:
        if self.started is None:
            return None
        return (self.ended or time.time()) - self.started

    @property
    def ended_turn(self) -> bool:
        return self.stop == "end_turn" and self.state in ("done", "checking")

    @property
    def succeeded(self) -> bool:
        """It ended its turn and its check (if any) passed."""
        return self.stop == "end_turn" and self.state == "done" and (self.check is None or self.check.passed)

    @property
    def added(self) -> int:
        return sum(f.get("added") or 0 for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.get("removed") or 0 for f in self.files)


@dataclass
class Race:
    """A race as ``race.json`` holds it."""

    id: str
    cwd: str
    kind: str  # "repo" or "folder"
    top: str
    rel: str
    head: str | None
    prompt: str
    check: str | None = None
    keep: bool = False
    from_session: str | None = None
    #: With ``--session``: the task alone (``prompt`` holds it after the conversation's text),
    #: what a candidate that forked the session is sent.
    task: str | None = None
    created: float = field(default_factory=time.time)
    ended: float | None = None
    candidates: list[Candidate] = field(default_factory=list)
    #: the candidate applied with ``race apply`` (None: none yet)
    applied: str | None = None

    @property
    def folder(self) -> Path:
        return races_dir() / self.id

    @property
    def store(self) -> Path:
        return self.folder / "store.git"

    def candidate(self, name: str) -> Candidate:
        for cand in self.candidates:
            if cand.name == name:
                return cand
        names = ", ".join(c.name for c in self.candidates)
        raise UsageError(f"race {self.id} has no candidate {name!r} (its candidates: {names})")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for cand, raw in zip(self.candidates, data["candidates"], strict=True):
            raw["wall"] = cand.wall
            raw["succeeded"] = cand.succeeded
        return data

    def save(self) -> None:
        ensure_dir(self.folder)
        path = self.folder / "race.json"
        tmp = path.with_name(f".race.json.{os.getpid()}")
        tmp.write_text(json.dumps(self.to_json(), indent=1), encoding="utf-8")
        os.replace(tmp, path)


def _from_json(data: dict[str, Any]) -> Race:
    cands = []
    for raw in data.get("candidates") or []:
        raw = dict(raw)
        raw.pop("wall", None)
        raw.pop("succeeded", None)
        check = raw.pop("check", None)
        cand = Candidate(**{k: v for k, v in raw.items() if k in Candidate.__dataclass_fields__})
        cand.check = Check(**check) if isinstance(check, dict) else None
        cands.append(cand)
    fields = {k: v for k, v in data.items() if k in Race.__dataclass_fields__ and k != "candidates"}
    return Race(**fields, candidates=cands)


def all_ids() -> list[str]:
    try:
        return sorted(p.name for p in races_dir().iterdir() if (p / "race.json").is_file())
    except OSError:
        return []


def load(race_id: str) -> Race:
    """The race ``race_id`` names (a unique prefix is enough); :class:`UsageError` else."""
    ids = all_ids()
    found = [i for i in ids if i == race_id] or [i for i in ids if i.startswith(race_id)] if race_id else []
    if len(found) != 1:
        from acpcli.text.safe import safe_line

        what = "no race" if not found else "more than one race starts with"
        raise UsageError(f"{what} {safe_line(race_id)[:40]!r}", hint="`acpcli race` lists the races kept")
    path = races_dir() / found[0] / "race.json"
    try:
        return _from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as exc:
        raise UsageError(f"race {found[0]} cannot be read ({path}: {exc})") from None


def label(command: str) -> str:
    """A short name for a ``--cmd`` candidate: its program, or the script an interpreter runs
    and the plain word after it (``python3 launch.py codex``: ``launch-codex``)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    interpreters = ("python", "python3", "node", "sh", "bash", "uv", "npx", "env", "deno", "bun")
    pick = ""
    for i, word in enumerate(words):
        base = os.path.basename(word)
        if word.startswith("-") or base.split(".")[0] in interpreters or base.startswith("python"):
            continue
        pick = base
        after = words[i + 1] if i + 1 < len(words) else ""
        if i > 0 and after and after.replace("-", "").replace("_", "").isalnum() and not after.startswith("-"):
            pick = f"{pick.rsplit('.', 1)[0] if '.' in pick else pick}-{after}"
        break
    pick = pick or (os.path.basename(words[0]) if words else "cmd")
    for suffix in (".py", ".js", ".ts", ".sh"):
        pick = pick.removesuffix(suffix)
    keep = "".join(c if c.isalnum() or c in "-_." else "-" for c in pick).strip("-.") or "cmd"
    return keep[:24]


def candidate_names(agents: list[str], cmds: list[str]) -> list[tuple[str, str | None, str | None]]:
    """(name, agent, cmd) of each candidate: the agent's name, ``-2``, ``-3``… for repeats."""
    seen: dict[str, int] = {}
    out = []
    for agent, cmd in [(a, None) for a in agents] + [(None, c) for c in cmds]:
        base = agent if agent is not None else label(cmd or "")
        base = "".join(c if c.isalnum() or c in "-_." else "-" for c in base).strip("-.")[:24] or "agent"
        seen[base] = seen.get(base, 0) + 1
        out.append((base if seen[base] == 1 else f"{base}-{seen[base]}", agent, cmd))
    return out
