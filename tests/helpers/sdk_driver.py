"""Drive ``tests/peers/sdk_fs_agent.py`` (an SDK-written v1 agent) through the real
``open_link`` wiring: its prompts make it call our fs/terminal services."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acpcli.model import Message
from acpcli.protocol import wire
from acpcli.session.feed import SessionFeed
from acpcli.session.link import AgentLink, open_link
from acpcli.wire.negotiate import ClientOffer
from tests.peers import agent_argv


class Driver:
    """One SDK agent, one session; ``ask(command)`` returns the agent's JSON report."""

    def __init__(self, link: AgentLink, live: SessionFeed) -> None:
        self.link = link
        self.live = live

    async def ask(self, command: str, live: SessionFeed | None = None) -> dict[str, Any]:
        live = live or self.live
        before = len(live.store.entries)
        assert await self.link.prompt(live, [wire.text_block(command)]) == "end_turn"
        texts = [e.text for e in live.store.entries[before:] if isinstance(e, Message) and e.kind == "agent"]
        assert len(texts) == 1, texts
        return json.loads(texts[0])

    def terminal(self, terminal_id: str) -> Any:
        return self.link.services.terminals.get(self.live.session_id, terminal_id)


@asynccontextmanager
async def drive(
    cwd: Path, extra: tuple[Path, ...] = (), *, fs: bool = True, fs_write: bool | None = None, terminal: bool = True
) -> AsyncIterator[Driver]:
    """``open_link`` serves what its ``ClientOffer`` advertises, as in the CLI."""
    offer = ClientOffer(read_text_file=fs, write_text_file=fs if fs_write is None else fs_write, terminal=terminal)
    async with open_link(agent_argv("sdk_fs_agent.py"), offer=offer) as link:
        live = await link.new(str(cwd), [str(p) for p in extra])
        yield Driver(link, live)
