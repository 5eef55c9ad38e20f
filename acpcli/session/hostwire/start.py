"""Starting a live session's host: the spec it reads on its standard input, and the process.

:func:`start_host` runs ``python -I -m acpcli.host`` detached (its own process session, no
terminal) with a :func:`spec_for` on stdin, and returns the first line it answers (``ready``,
``exists`` or ``error``: see :mod:`acpcli.host.server`). Below the host, so that every client
that starts one -- the CLI's commands (:mod:`acpcli.host.client`) and the Python API's
``keep_alive`` -- starts it the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acpcli.session.hostwire import address

if TYPE_CHECKING:
    from acpcli.session.context import Invocation
    from acpcli.session.inputs import Options

#: How long a started host may take to link the agent and attach the session, beyond the
#: setup steps' own timeout (spawning, initialize, resume or load each get that timeout).
_START_MARGIN = 15.0


def spec_for(
    session_id: str | None, options: Options, policy: str | None, run: Invocation, keep_alive: float,
    command: str | None = None,
) -> dict[str, Any]:
    """What a new host needs to attach ``session_id`` as this command would (paths made
    absolute: the host resolves them as the command line meant them). ``command``: ``load``
    or ``resume`` (else a new session, or a recorded one continued as ``prompt`` does)."""

    def absolute(path: Path | None) -> str | None:
        return os.path.abspath(os.fspath(path)) if path is not None else None

    return {
        "command": command or ("continue" if session_id is not None else "new"),
        "session_id": session_id,
        "title": run.title,
        "timeout": run.timeout,  # --timeout: the host's setup steps (turns: the client's own)
        "keep_alive": keep_alive,
        "policy": policy,
        "fs": run.fs,
        "terminal": run.terminal,
        "checkpoints": run.checkpoints,
        "options": {
            "agent": options.agent,
            "cmd": options.cmd,
            "cwd": absolute(options.cwd),
            "add_dir": [absolute(p) for p in options.add_dir] if options.add_dir else None,
            "no_add_dirs": options.no_add_dirs,
            "mcp_config": absolute(options.mcp_config),
            "mcp": list(options.mcp) if options.mcp else None,
            "no_mcp": options.no_mcp,
            "protocol": options.protocol,
            "log_file": absolute(options.log_file),
        },
    }


def start_host(spec: dict[str, Any], *, say: Any = None, home: Path | None = None) -> dict[str, Any]:
    """Start a host process (detached: its own process session, no terminal) and return its
    first line: ready, exists, or an error. ``home``: the host's ``ACPCLI_HOME`` when it is
    not the environment's (a Python API connection's own home)."""
    from acpcli.config import step_timeout
    from acpcli.paths import open_private

    address.socket_dir()  # run/ (and the socket's directory) usable, before any agent starts
    if spec["session_id"]:
        log = address.host_log(spec["session_id"])
    else:  # a new session's: its own file, renamed by the host once the agent names the session
        import secrets

        log = address.host_log(f"new-{secrets.token_hex(6)}")
        spec = {**spec, "log": str(log)}
    try:
        stderr = open_private(log, "ab")
    except OSError as err:  # a read-only home, logs/ that is a file…
        raise address.unusable(log, err) from None
    with stderr:
        process = subprocess.Popen(
            [sys.executable, "-I", "-m", "acpcli.host"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
            close_fds=True,
            env={**os.environ, "ACPCLI_HOME": str(home)} if home is not None else None,
        )
    _spare(process.pid)
    _reap_when_it_ends(process)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(spec).encode())
    process.stdin.close()
    step = step_timeout()
    limit = (step * 4 + _START_MARGIN) if step else None
    try:
        line = _read_line(process.stdout, limit)
    except BaseException:
        process.terminate()  # given up on (Ctrl-C): the host stops its agent and ends
        raise
    finally:
        process.stdout.close()
    if not line:
        process.terminate()  # silent past the limit: not a host anyone can use
        try:
            code: int | str | None = process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = "none yet"
        return {
            "t": "error",
            "exit": 1,
            "message": f"the session host could not start (exit {code}); its log: {log}",
            "hint": address.NO_HOST_HINT,
        }
    try:
        answer = json.loads(line)
    except ValueError:
        return {"t": "error", "exit": 1, "message": f"the session host said {line[:200]!r}; its log: {log}"}
    return answer if isinstance(answer, dict) else {"t": "error", "exit": 1, "message": "no answer from the host"}


def _spare(pid: int) -> None:
    """The host outlives this command on purpose: the end-of-run sweep of what acpcli started
    (:mod:`acpcli.processes.children`) must not take it for a leftover."""
    from acpcli.processes import children

    children.manage(pid)


def _reap_when_it_ends(process: subprocess.Popen[bytes]) -> None:
    """Wait for the host in a daemon thread: it outlives a command on purpose, but a program
    that lives on (the REPL, a script of the Python API) must neither keep it as a zombie once
    it ends nor drop it while it runs (``ResourceWarning``)."""
    import threading

    threading.Thread(target=process.wait, name="acpcli-host-reaper", daemon=True).start()


def _read_line(stream: Any, limit: float | None) -> str:
    import selectors
    import time

    deadline = None if limit is None else time.monotonic() + limit
    selector = selectors.DefaultSelector()
    selector.register(stream, selectors.EVENT_READ)
    data = b""
    try:
        while b"\n" not in data:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            if not selector.select(left):
                break
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                break
            data += chunk
    finally:
        selector.close()
    return data.split(b"\n", 1)[0].decode("utf-8", "replace")
