"""What the agent itself keeps: its list (``session/list``) and deleting from it (``session/delete``).

The titles it lists are saved to the sessions recorded here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acpcli.errors import UsageError

if TYPE_CHECKING:
    from acpcli.history.index import Index, SessionRecord
    from acpcli.session.inputs import Options


def list_remote(
    agent: str | None, cmd: str | None, cwd: str | None, protocol: str | None = None, *, timeout: float | None = None
) -> list[dict[str, Any]]:
    """Every session the agent lists (all pages), under a supervisor (SIGTERM/SIGHUP stop the
    agent: exit 143/129); the titles it gives are saved to the sessions recorded here."""
    import anyio

    from acpcli.processes.supervisor import Supervisor
    from acpcli.session.agent import pick_agent
    from acpcli.session.launch import link_for

    if agent is None and cmd is None:
        raise UsageError("--remote asks an agent: pass --agent NAME or --cmd 'COMMAND'")
    if protocol is not None:
        from acpcli.wire.negotiate import parse_protocol_choice

        parse_protocol_choice(protocol)
    choice = pick_agent(agent, cmd)

    async def main() -> list[dict[str, Any]]:
        async with link_for(choice, protocol=protocol, timeout=timeout, one_shot=True) as link:
            return [info async for info in link.list_remote(cwd)]

    infos = anyio.run(Supervisor().run, main)
    _save_titles(infos, choice.argv)
    return infos


def delete_remote(record: SessionRecord, options: Options, *, timeout: float | None = None) -> str:
    """``session/delete`` of a recorded session, sent to the agent that runs it (the recorded
    one unless ``options`` name another), under a supervisor; the agent's display name.
    :class:`~acpcli.errors.CapabilityMissing` (exit 6) when it does not advertise
    ``sessionCapabilities.delete`` (v2 ``session.delete``): then nothing else is sent."""
    import anyio

    from acpcli.processes.supervisor import Supervisor
    from acpcli.session.launch import link_for

    inputs = options.inputs(record)

    async def main() -> str:
        async with link_for(inputs.agent, protocol=inputs.protocol, log_file=inputs.log_file, timeout=timeout) as link:
            await link.delete(record.wire_id)
            return link.features.display_name

    return anyio.run(Supervisor().run, main)


def _save_titles(infos: list[dict[str, Any]], argv: list[str]) -> None:
    """Best effort: a listing must not fail because the index is busy or read-only."""
    import sqlite3

    from acpcli.errors import AcpcliError
    from acpcli.history.index import Index

    if not any(i.get("title") for i in infos):
        return
    try:
        with Index.existing(read_only=False) as index:
            if index is not None:
                titles_from_list(index, infos, argv)
    except (AcpcliError, sqlite3.Error):
        pass


def titles_from_list(index: Index, infos: list[dict[str, Any]], argv: list[str] | None = None) -> int:
    """Save the titles an agent's ``session/list`` answer gives to the sessions recorded here
    (matched by the agent's id, and with ``argv`` only those of the agent run by that command
    line: ids are the agents', another agent's session may have the same); returns how many
    changed."""
    titles = {
        info.get("sessionId"): info.get("title")
        for info in infos
        if isinstance(info.get("sessionId"), str) and isinstance(info.get("title"), str) and info.get("title")
    }
    changed = 0
    if not titles:
        return 0
    for rec in index.list_sessions():
        if argv is not None and list(rec.argv) != list(argv):
            continue
        title = titles.get(rec.wire_id)
        if title is not None and title != rec.title:
            index.set_title(rec.id, title)
            changed += 1
    return changed
