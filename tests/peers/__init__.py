"""Agents run as real subprocesses by the tests.

``misbehave.py`` is a deliberately badly behaved JSON-RPC peer (standard library only);
``sdk_echo_agent.py`` is a v1 agent written with the official ACP Python SDK, and so are the
other ``sdk_*`` agents and ``stall.py``, all built on :mod:`sdk_base` (what they share). Tests
build their command lines with :func:`agent_argv`.
"""

from __future__ import annotations

import sys
from pathlib import Path

AGENTS_DIR = Path(__file__).resolve().parent


def agent_argv(script: str, *args: str) -> list[str]:
    """The argv that runs ``tests/peers/<script>`` with the test interpreter."""
    return [sys.executable, str(AGENTS_DIR / script), *args]
