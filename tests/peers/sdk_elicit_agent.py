"""A v1 ACP agent written with the official Python SDK that asks the client for input
(``elicitation/create``), gated on the client's ``elicitation`` capability.

Each prompt first streams ``GOT[<prompt>] ``, then by its first word:

* ``form``: a form with every field type the schema has -- ``name`` (text, required, 2-20
  characters), ``age`` (integer 0-150, default 30), ``ratio`` (number 0-1), ``subscribe``
  (boolean, default true), ``colour`` (a titled choice, required), ``size`` (an untitled choice,
  default ``m``), ``tags`` (several choices), ``email`` (format email) and ``api_token`` (format
  password: a secret the spec says a form must not ask for; acpcli must mask it);
* ``short``: a form with one required text field ``name`` and an optional ``note``;
* ``url``: a link (``https://auth.example.com/connect?elicitationId=e-1``), then
  ``elicitation/complete`` for it once accepted;
* ``bad``: a form with a field of type ``object`` (acpcli cannot draw it);
* ``malformed``: a request without a ``message`` (not valid ACP);
* ``othermode``: a request of mode ``_custom`` (not advertised);
* ``caps``: nothing asked; says the client's ``elicitation`` capability;
* ``ask PARAMS``: the request whose params (but ``sessionId``) are the JSON object after the word,
  sent as it is (a pattern, a URL or defaults a test chooses).

Then it says ``ANSWER <action> <content as JSON>`` (or ``ERROR <code> <message>``) and ends
the turn ``end_turn``. Without the client's capability for the mode it says ``NO-CAPABILITY``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import acp
from acp.schema import ElicitationFormSessionMode, ElicitationUrlSessionMode, PromptResponse
from sdk_base import BaseSdkAgent, prompt_text

FORM = {
    "type": "object",
    "title": "Your details",
    "properties": {
        "name": {
            "type": "string",
            "title": "Name",
            "description": "what to call you",
            "minLength": 2,
            "maxLength": 20,
        },
        "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150, "default": 30},
        "ratio": {"type": "number", "title": "Ratio", "minimum": 0, "maximum": 1},
        "subscribe": {"type": "boolean", "title": "Subscribe", "default": True},
        "colour": {
            "type": "string",
            "title": "Colour",
            "oneOf": [
                {"const": "r", "title": "Red"},
                {"const": "g", "title": "Green"},
                {"const": "b", "title": "Blue"},
            ],
        },
        "size": {"type": "string", "title": "Size", "enum": ["s", "m", "l"], "default": "m"},
        "tags": {
            "type": "array",
            "title": "Tags",
            "items": {"type": "string", "enum": ["x", "y", "z"]},
        },
        "email": {"type": "string", "title": "Email", "format": "email"},
        "api_token": {"type": "string", "title": "API token", "format": "password"},
    },
    "required": ["name", "colour"],
}

SHORT = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name"},
        "note": {"type": "string", "title": "Note"},
    },
    "required": ["name"],
}

URL = "https://auth.example.com/connect?elicitationId=e-1"


class ElicitAgent(BaseSdkAgent):
    name = "sdk-elicit"
    session_prefix = "elicit"

    def _caps(self) -> dict[str, Any] | None:
        caps = self.client_capabilities
        found = getattr(caps, "elicitation", None) if caps is not None else None
        return (
            found.model_dump(mode="json", by_alias=True, exclude_none=True)
            if found is not None
            else None
        )

    def _offers(self, mode: str) -> bool:
        caps = self._caps()
        return isinstance(caps, dict) and isinstance(caps.get(mode), dict)

    async def _raw(self, params: dict[str, Any]) -> str:
        try:
            result = await self._client._conn.send_request("elicitation/create", params)
        except acp.RequestError as err:
            return f"ERROR {err.code} {err}"
        return f"ANSWER {result.get('action')} {json.dumps(result.get('content'), sort_keys=True)}"

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = prompt_text(prompt)
        await self.say(session_id, f"GOT[{text}] ")
        verb = text.split(" ", 1)[0]
        if verb == "caps":
            await self.say(session_id, f"CAPS {json.dumps(self._caps(), sort_keys=True)}")
            return PromptResponse(stop_reason="end_turn")
        if verb == "ask":
            params = {**json.loads(text.split(" ", 1)[1]), "sessionId": session_id}
            await self.say(session_id, await self._raw(params))
            return PromptResponse(stop_reason="end_turn")
        mode = "url" if verb == "url" else "form"
        if not self._offers(mode):
            await self.say(session_id, "NO-CAPABILITY")
            return PromptResponse(stop_reason="end_turn")
        if verb in ("form", "short"):
            schema = FORM if verb == "form" else SHORT
            answer = await self._client.create_elicitation(
                "Tell me about you" if verb == "form" else "Who are you?",
                ElicitationFormSessionMode(session_id=session_id, requested_schema=schema),
            )
            said = f"ANSWER {answer.action} {json.dumps(getattr(answer, 'content', None), sort_keys=True)}"
        elif verb == "url":
            answer = await self._client.create_elicitation(
                "Please authorize access to your repositories.",
                ElicitationUrlSessionMode(session_id=session_id, elicitation_id="e-1", url=URL),
            )
            said = f"ANSWER {answer.action} null"
            if answer.action == "accept":
                await self._client._conn.send_notification(
                    "elicitation/complete", {"elicitationId": "e-1"}
                )
        elif verb == "bad":
            said = await self._raw(
                {
                    "sessionId": session_id,
                    "mode": "form",
                    "message": "nested",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"deep": {"type": "object"}},
                    },
                }
            )
        elif verb == "malformed":
            said = await self._raw(
                {"sessionId": session_id, "mode": "form", "requestedSchema": {"type": "object"}}
            )
        elif verb == "othermode":
            said = await self._raw({"sessionId": session_id, "mode": "_custom", "message": "hm"})
        else:
            said = "UNKNOWN"
        await self.say(session_id, said)
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(ElicitAgent()))
