"""What the test agents written with the official SDK (``acp``) share: the base class below
(the client connection, ``initialize``, ``session/new``, ``session/cancel``), a prompt's text,
and the files tests read (``$PID_FILE``, a record of every incoming method call).

The agents run as scripts (``python tests/peers/<agent>.py``), whose own directory is first on
``sys.path``, so they import this module as ``sdk_base``.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

import acp
from acp.connection import StreamDirection, StreamEvent
from acp.schema import AgentCapabilities, Implementation, InitializeResponse, NewSessionResponse


class BaseSdkAgent:
    """The part of ``acp.Agent`` every test agent answers alike. A subclass names itself
    (:attr:`name`, :attr:`session_prefix`), says what it advertises (:meth:`capabilities`,
    :meth:`initialize_extras`) and implements ``prompt`` and whatever else it tests."""

    #: ``agentInfo.name`` and, when set, ``agentInfo.title`` of the ``initialize`` answer.
    name: ClassVar[str]
    title: ClassVar[str | None] = None
    #: Session ids are ``<session_prefix>-<id_digits hex digits>``.
    session_prefix: ClassVar[str]
    id_digits: ClassVar[int] = 12

    def __init__(self) -> None:
        self._client: Any = None
        #: What the client sent in ``initialize`` (None until then).
        self.client_capabilities: Any = None

    def on_connect(self, conn: Any) -> None:
        self._client = conn

    def capabilities(self) -> AgentCapabilities:
        """The ``agentCapabilities`` of the ``initialize`` answer: no ``loadSession`` by default."""
        return AgentCapabilities(load_session=False)

    def initialize_extras(self) -> dict[str, Any]:
        """More fields of the ``initialize`` answer (``auth_methods``, ...): none by default."""
        return {}

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        self.client_capabilities = client_capabilities
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=self.capabilities(),
            agent_info=Implementation(name=self.name, title=self.title, version="0.1"),
            **self.initialize_extras(),
        )

    def new_session_id(self) -> str:
        return f"{self.session_prefix}-{uuid.uuid4().hex[: self.id_digits]}"

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=self.new_session_id())

    async def say(self, session_id: str, text: str) -> None:
        """Send one ``agent_message_chunk`` of ``text``."""
        await self._client.session_update(session_id, acp.update_agent_message_text(text))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


def prompt_text(prompt: list[Any], separator: str = " ") -> str:
    """The text of a prompt's blocks, joined by ``separator`` (a block without text adds "")."""
    return separator.join(getattr(block, "text", "") for block in prompt)


def append_line(env_var: str, line: str) -> None:
    """Append ``line`` to the file named by ``$env_var``, if it is set.

    One write per line on an O_APPEND file: lines stay whole even if two agents share the file.
    """
    path = os.environ.get(env_var)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def note_pid() -> None:
    """Append this agent's pid to ``$PID_FILE`` (if set), so a test can check none outlives it."""
    append_line("PID_FILE", str(os.getpid()))


def recorder(env_var: str) -> Callable[[StreamEvent], None]:
    """A connection observer that appends each incoming method call (requests and notifications)
    *as received*, before the SDK parses or dispatches it, as one JSON line
    ``{"method", "params", "request"}`` to the file named by ``$env_var``, if set."""

    def record(event: StreamEvent) -> None:
        message = event.message
        if event.direction != StreamDirection.INCOMING or "method" not in message:
            return
        entry = {"method": message["method"], "params": message.get("params"), "request": "id" in message}
        append_line(env_var, json.dumps(entry))

    return record
