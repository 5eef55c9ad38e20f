"""Load a session recorded earlier (by the CLI or the API) and print its transcript as Markdown.

    python examples/show_session.py SESSION_ID [AGENT]

The agent replays the conversation (``session/load``); the transcript is what ``acpcli show``
prints of it.
"""

from __future__ import annotations

import sys

import anyio

import acpcli


async def main(session_id: str, agent_name: str) -> int:
    async with acpcli.connect(agent_name) as agent:
        if not agent.can_load:
            print(f"{agent.name} cannot load sessions", file=sys.stderr)
            return 1
        session = await agent.load(session_id)
        print(session.transcript.markdown())
    return 0


if __name__ == "__main__":
    if not 2 <= len(sys.argv) <= 3:
        sys.exit(__doc__)
    sys.exit(anyio.run(main, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "demo"))
