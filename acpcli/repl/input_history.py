"""The REPL's input history: what was typed, per working directory, under the home's
``history/`` (mode 0600), recalled with Up; kept in memory when the home cannot be written."""

from __future__ import annotations

import hashlib
from typing import Any


def history_file(cwd: str | None) -> Any:
    """The history file of ``cwd`` (made, private, when missing)."""
    import os

    from acpcli.paths import create_private, ensure_dir, history_dir

    key = hashlib.sha256((cwd or "").encode()).hexdigest()[:16]
    path = ensure_dir(history_dir()) / f"{key}.history"
    try:
        os.close(create_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND))  # 0600: what was typed
    except OSError:
        pass  # prompt_toolkit reports an unwritable history itself
    return path


def history(cwd: str | None) -> Any:
    """The REPL's input history file; in memory when the home cannot be written (a full or
    read-only disk must not stop the session: typing goes on, history is just not kept)."""
    from prompt_toolkit.history import FileHistory, InMemoryHistory

    try:
        path = history_file(cwd)
    except OSError:
        return InMemoryHistory()

    class TolerantHistory(FileHistory):
        def store_string(self, string: str) -> None:
            try:
                super().store_string(string)
            except OSError:
                pass

    return TolerantHistory(str(path))
