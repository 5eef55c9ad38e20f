"""Start a session, send one prompt and answer the agent's permission questions in code.

    python examples/prompt_with_permissions.py [AGENT] [PROMPT]

AGENT defaults to the built-in demo agent. Edits are allowed; anything else (running a
command, fetching…) is rejected. Prints the answer as it streams, then the session's id.
"""

from __future__ import annotations

import sys

import anyio

import acpcli


async def decide(request: acpcli.PermissionRequest) -> acpcli.PermissionOption | None:
    """Allow edits, reject the rest (None would dismiss the question and cancel the turn)."""
    if request.kind == "edit":
        return request.allow()
    return request.reject()


async def main(agent_name: str, prompt: str) -> int:
    async with acpcli.connect(agent_name, cwd=".", permissions=decide) as agent:
        session = await agent.new_session()
        async for event in session.prompt(prompt):
            if isinstance(event, acpcli.AgentText):
                print(event.text, end="", flush=True)
            elif isinstance(event, acpcli.PermissionAnswered):
                chosen = event.option.name if event.option is not None else "dismissed"
                print(f"\n[permission for {event.request.title}: {chosen}]", file=sys.stderr)
            elif isinstance(event, acpcli.TurnEnded):
                print(f"\n[{event.result.stop_reason}] session {session.id}")
                return 0 if event.result.ok else 1
    return 1


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(anyio.run(main, args[0] if args else "demo", args[1] if len(args) > 1 else "hello"))
