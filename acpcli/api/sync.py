"""``acpcli.run``: one prompt from a script that is not async, start to finish."""

from __future__ import annotations

import os
from collections.abc import Sequence

from acpcli.api.types import InputCallback, PermissionCallback, RunResult, TurnEnded


def run(
    agent: str | None,
    prompt: str,
    *,
    argv: Sequence[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    permissions: str | PermissionCallback | None = None,
    on_input: InputCallback | None = None,
    session: str | None = None,
    title: str | None = None,
    protocol: str | None = None,
    timeout: float | None = None,
    home: str | os.PathLike[str] | None = None,
) -> RunResult:
    """Connect (:func:`~acpcli.api.client.connect`, same arguments), send ``prompt`` in a new
    session (or continue ``session``: resumed when the agent can, else loaded), and return the
    turn's stop reason, the agent's text and the session's transcript. Blocks; runs its own
    event loop (call :func:`~acpcli.api.client.connect` from async code instead). Errors are
    :mod:`acpcli.errors`' exceptions; a stop reason other than ``end_turn`` is not one (read
    :attr:`RunResult.stop_reason`)."""
    import anyio

    from acpcli.api.client import connect

    async def main() -> RunResult:
        async with connect(
            agent, argv=argv, cwd=cwd, permissions=permissions, on_input=on_input, protocol=protocol,
            timeout=timeout, home=home,
        ) as connected:
            if session is None:
                opened = await connected.new_session(title=title)
            elif connected.can_resume:
                opened = await connected.resume(session)
            else:
                opened = await connected.load(session)
            ended: TurnEnded | None = None
            async for event in opened.prompt(prompt):
                if isinstance(event, TurnEnded):
                    ended = event
            assert ended is not None  # a turn ends with TurnEnded or raises
            transcript = opened.transcript
            return RunResult(
                session_id=opened.id,
                stop_reason=ended.result.stop_reason,
                text=ended.result.text,
                markdown=transcript.markdown(),
                transcript_text=transcript.text(),
            )

    return anyio.run(main)
