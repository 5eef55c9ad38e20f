"""Authentication (``--require-auth``): the advertised method, and credentials kept on disk.

Like a real agent, the demo agent remembers a login in a file, ``<state-dir>/credentials.json``,
so a later process started with the same state dir is already logged in. ``--forget-auth``
deletes it at start-up; v1 ``logout`` / v2 ``auth/logout`` delete it too.

Invariant: "logged in" is read from the file on every check, never cached, so two processes
sharing a state dir agree (one logging out logs the other out).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acpcli.demo_agent.rpc import log
from acpcli.demo_agent.storage import now_iso, write_private
from acpcli.errors import RpcError

METHOD_ID = "demo-login"
METHOD_NAME = "Demo login"
METHOD_DESCRIPTION = "Pretend to sign in (no password; remembered in the agent's state dir)"

#: What fails with -32000 until logged in (when ``--require-auth``).
GATED_METHODS = frozenset({"session/new", "session/load", "session/resume", "session/prompt"})


def auth_methods(version: int, required: bool) -> list[dict[str, Any]]:
    """The ``authMethods`` of the initialize answer: empty unless ``--require-auth``."""
    if not required:
        return []
    if version >= 2:
        return [{"methodId": METHOD_ID, "type": "agent", "name": METHOD_NAME, "description": METHOD_DESCRIPTION}]
    return [{"id": METHOD_ID, "name": METHOD_NAME, "description": METHOD_DESCRIPTION}]


def auth_required_error() -> RpcError:
    """The error real agents (claude) answer with before a login."""
    return RpcError(RpcError.AUTH_REQUIRED, "Authentication required")


class Credentials:
    """The credentials file in one state dir."""

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / "credentials.json"

    def logged_in(self) -> bool:
        """Whether a login is on record (read from disk every time: see the module docstring)."""
        return self.path.is_file()

    def login(self, method_id: Any, required: bool) -> None:
        """Record a login with ``method_id``; -32602 unless it is an advertised method."""
        if not required or method_id != METHOD_ID:
            raise RpcError(RpcError.INVALID_PARAMS, f"unknown authentication method {method_id!r}")
        write_private(self.path, json.dumps({"methodId": method_id, "loggedInAt": now_iso()}))
        log(f"logged in with {method_id}; credentials in {self.path}")

    def forget(self) -> bool:
        """Delete the credentials. Returns whether there were any."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        log(f"logged out: removed {self.path}")
        return True
