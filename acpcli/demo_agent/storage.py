"""Sessions on disk: one JSON file per session under ``<state-dir>/sessions/<sessionId>.json``.

Invariants:

- A file holds cwd, additionalDirectories, the *names* of the MCP servers (never their
  commands, env or headers: those may carry secrets), title, timestamps, the settings
  (``config``: mode, model, ...; absent in older files, meaning defaults), and ``history``:
  every session update the agent sent, in order, in the canonical (v2-shaped, always with
  ``messageId``) form that :mod:`acpcli.demo_agent.translate` translates per protocol version.
  ``session/load`` replays from it, so it works from a new process.
- Files are replaced atomically (write a sibling, then ``os.replace``).
- Session ids look like ``demo-<uuid hex>`` and nothing else is accepted as a file name.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import sys
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from acpcli.demo_agent.rpc import log

_ID_RE = re.compile(r"^demo-[0-9a-f]{32}$")
_FORMAT = 1


def new_session_id() -> str:
    """A fresh ``demo-<uuid hex>`` id."""
    return f"demo-{uuid.uuid4().hex}"


def now_iso() -> str:
    """UTC ISO 8601 with microseconds, so timestamps order sessions even within a second."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class SessionRecord:
    """What the agent remembers about one session."""

    sessionId: str
    cwd: str
    additionalDirectories: list[str] = field(default_factory=list)
    mcpServers: list[str] = field(default_factory=list)
    title: str | None = None
    createdAt: str = field(default_factory=now_iso)
    updatedAt: str = field(default_factory=now_iso)
    turns: int = 0
    # "allow_always" / "reject_always" once the user chose one: later edits are not asked again.
    permission: str | None = None
    # The session's settings (mode, model, effort, brave): see acpcli.demo_agent.session_config.
    config: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)


def _private_dirs(path: Path) -> None:
    """Create ``path`` and its missing parents with mode 0700 whatever the umask."""
    missing = []
    while not path.exists():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(d, 0o700)


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` atomically with ``text``; the file is 0600 whatever the umask (a stored
    session is a transcript; the demo agent imports nothing of acpcli, so this is its own)."""
    _private_dirs(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        os.fchmod(out.fileno(), 0o600)
        out.write(text)
    os.replace(tmp, path)


class SessionStore:
    """Load, save and page through :class:`SessionRecord` files in one directory."""

    def __init__(self, state_dir: Path) -> None:
        self.dir = Path(state_dir) / "sessions"

    def path(self, session_id: str) -> Path | None:
        """The file for ``session_id``, or None when the id is not one of ours."""
        if not _ID_RE.match(session_id):
            return None
        return self.dir / f"{session_id}.json"

    def load(self, session_id: str) -> SessionRecord | None:
        """The stored session, or None if unknown (or unreadable: logged)."""
        path = self.path(session_id) if isinstance(session_id, str) else None
        if path is None or not path.is_file():
            return None
        return self._read(path)

    def save(self, record: SessionRecord) -> None:
        """Write ``record`` atomically, creating the directory on first use."""
        path = self.path(record.sessionId)
        if path is None:  # pragma: no cover - we only mint valid ids
            raise ValueError(f"bad session id {record.sessionId!r}")
        data = {"format": _FORMAT, **asdict(record)}
        try:
            write_private(path, json.dumps(data, ensure_ascii=False, indent=1))
        except OSError as exc:
            # A full or read-only disk: the session lives on in memory for this process; a
            # later load will not find what was not saved. Say so, do not fail the request.
            sys.stderr.write(f"demo agent: cannot save session {record.sessionId}: {exc.strerror or exc}\n")
            with contextlib.suppress(OSError):
                path.with_name(f".{path.name}.{os.getpid()}.tmp").unlink()

    def page(
        self, *, cwd: str | None, cursor: str | None, page_size: int
    ) -> tuple[list[SessionRecord], str | None]:
        """One page of sessions, most recently updated first, optionally only those in ``cwd``.

        The cursor is opaque to clients: base64 of the sort key of the last item returned, so
        paging stays stable when other sessions are added meanwhile. Raises ValueError for a
        cursor we did not mint.
        """
        after = _decode_cursor(cursor) if cursor else None
        records = [r for r in self._all() if cwd is None or r.cwd == cwd]
        records.sort(key=_sort_key, reverse=True)
        if after is not None:
            records = [r for r in records if _sort_key(r) < after]
        page = records[:page_size]
        more = len(records) > page_size
        return page, (_encode_cursor(_sort_key(page[-1])) if more and page else None)

    def _all(self) -> list[SessionRecord]:
        if not self.dir.is_dir():
            return []
        out = []
        for path in self.dir.glob("demo-*.json"):
            record = self._read(path)
            if record is not None:
                out.append(record)
        return out

    def _read(self, path: Path) -> SessionRecord | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            data.pop("format", None)
            return SessionRecord(**data)
        except (OSError, ValueError, TypeError) as exc:
            log(f"ignoring unreadable session file {path}: {exc}")
            return None


def _sort_key(record: SessionRecord) -> tuple[str, str]:
    # Fixed-width UTC timestamps sort as strings; the id breaks ties deterministically.
    return (record.updatedAt, record.sessionId)


def _encode_cursor(key: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode("utf-8")).decode("ascii")


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")).decode("utf-8"))
    except (ValueError, UnicodeError) as exc:
        raise ValueError(f"invalid cursor {cursor!r}") from exc
    if not (isinstance(key, list) and len(key) == 2 and all(isinstance(k, str) for k in key)):
        raise ValueError(f"invalid cursor {cursor!r}")
    return (key[0], key[1])
