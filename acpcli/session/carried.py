"""A rewound conversation's transcript, carried to the new session's first prompt.

:func:`acpcli.session.rewinding.rewind_conversation` keeps it (:func:`keep`) for a new session
whose agent could not fork it; :meth:`~acpcli.session.link.AgentLink.prompt` adds it to the next
prompt sent on that session (:func:`pending`, :func:`block`), by whichever acpcli sends it (a
one-shot ``prompt --session``, a live session's host, the REPL, the Python API), and drops it
once the agent took that prompt (:func:`sent`). A private file under ``ACPCLI_HOME/carried/``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: The lines around the carried transcript when the agent takes no embedded context.
CARRIED_HEADER = "--- the conversation so far (from an earlier session; continue from it) ---"
CARRIED_FOOTER = "--- end of the conversation so far ---"
#: The URI of the ``resource`` block holding the carried transcript (embedded context).
CARRIED_URI = "acpcli:conversation-so-far"


def _carried_path(session_id: str) -> Path:
    from acpcli.history.lock import lock_name
    from acpcli.paths import home_dir

    return home_dir() / "carried" / (lock_name(session_id).removesuffix(".lock") + ".txt")


def keep(session_id: str, text: str) -> None:
    """Keep ``text`` to send with ``session_id``'s next prompt (a private file, written whole)."""
    from acpcli.paths import create_private, ensure_dir

    path = _carried_path(session_id)
    ensure_dir(path.parent)
    tmp = path.with_name(path.name + ".tmp")
    fd = create_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.write(fd, text.encode("utf-8", "surrogatepass"))
    finally:
        os.close(fd)
    os.replace(tmp, path)


def pending(session_id: str) -> str | None:
    """The transcript waiting to be sent with ``session_id``'s next prompt, if any (one failed
    ``open`` for every other session)."""
    try:
        return _carried_path(session_id).read_bytes().decode("utf-8", "surrogatepass")
    except (OSError, UnicodeDecodeError):
        return None


def sent(session_id: str) -> None:
    """The agent took the prompt that carried the transcript: it is not sent again."""
    try:
        _carried_path(session_id).unlink()
    except OSError:
        pass


def block(text: str, embed: bool) -> dict[str, Any]:
    """The block carrying the transcript: a ``resource`` (:data:`CARRIED_URI`) when the agent
    takes embedded context, else a ``text`` block between a header and an end line."""
    if embed:
        return {"type": "resource", "resource": {"uri": CARRIED_URI, "mimeType": "text/plain", "text": text}}
    ending = "" if text.endswith("\n") else "\n"
    return {"type": "text", "text": f"{CARRIED_HEADER}\n{text}{ending}{CARRIED_FOOTER}"}
