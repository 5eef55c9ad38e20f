"""A v1 ACP agent written with the official Python SDK that asks permission on every prompt
and never remembers an answer itself (what acpcli remembers is all there is).

Each prompt first streams ``GOT[<prompt>] `` (so the client's live region is up), then:

* ``run CMD``: asks to run ``CMD`` as codex does (kind ``execute``, title ``Run CMD``,
  ``rawInput: {"command": CMD}``, the location of the session's cwd) with four options
  (``yes-once``, ``yes-always``, ``no-once``, ``no-always``);
* ``many N``: asks with ``N`` options, ``opt-1`` ... ``opt-N``, named ``Option I`` (option 7777
  is also called ``zebra``), every one ``allow_once``;
* ``title N``: asks with a title of ``N`` characters (``T`` repeated, then ``-END``).

Then it says ``ASKED-<n> CHOSEN=<option id or "cancelled">`` and ends the turn ``end_turn``
(``cancelled`` when the answer was).
"""

from __future__ import annotations

import asyncio
from typing import Any

import acp
from acp.schema import PermissionOption, PromptResponse, ToolCallLocation, ToolCallUpdate
from sdk_base import BaseSdkAgent, prompt_text

FOUR = [
    PermissionOption(option_id="yes-once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="yes-always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="no-once", name="Reject", kind="reject_once"),
    PermissionOption(option_id="no-always", name="Always reject", kind="reject_always"),
]


class AskingAgent(BaseSdkAgent):
    name = "sdk-asking"
    session_prefix = "asking"

    def __init__(self) -> None:
        super().__init__()
        self._asked = 0
        self._cwd = "/"

    async def new_session(self, cwd: str, **kwargs: Any) -> Any:
        self._cwd = cwd
        return await super().new_session(cwd, **kwargs)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = prompt_text(prompt)
        await self.say(session_id, f"GOT[{text}] ")
        verb, _, rest = text.partition(" ")
        self._asked += 1
        call_id = f"call-{self._asked}"
        if verb == "many":
            count = int(rest)
            options = [
                PermissionOption(
                    option_id=f"opt-{i}", name=f"Option {i}" + (" zebra" if i == 7777 else ""), kind="allow_once"
                )
                for i in range(1, count + 1)
            ]
            call = ToolCallUpdate(tool_call_id=call_id, title=f"Pick one of {count}", kind="other", status="pending")
        elif verb == "title":
            options = FOUR
            title = "T" * int(rest) + "-END"
            call = ToolCallUpdate(tool_call_id=call_id, title=title, kind="edit", status="pending")
        else:
            options = FOUR
            call = ToolCallUpdate(
                tool_call_id=call_id,
                title=f"Run {rest}",
                kind="execute",
                status="pending",
                raw_input={"command": rest},
                locations=[ToolCallLocation(path=self._cwd)],
            )
        answer = await self._client.request_permission(session_id=session_id, tool_call=call, options=options)
        outcome = answer.outcome
        chosen = getattr(outcome, "option_id", None) or outcome.outcome
        await self.say(session_id, f"ASKED-{self._asked} CHOSEN={chosen}")
        return PromptResponse(stop_reason="cancelled" if chosen == "cancelled" else "end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(AskingAgent()))
