"""Canonical session updates, and their translation to the v1 or v2 wire shapes.

The agent builds every update once, in the *canonical* form: the v2 draft shape, with a
``messageId`` on every message update and chunk (v2 is the superset). That form is what the
session history stores. :class:`Translator` turns one canonical update into what the
negotiated version allows:

- v2: sent as is, except ``current_mode_update`` (v2 has no modes), which is dropped.
- v1:
  - ``user_message`` / ``agent_message`` / ``agent_thought`` (whole, replacing) become one
    ``*_chunk`` per content block. v1 has no replacing update, so callers send a whole update
    in v1 only for a message the client has not seen yet (replay styles respect that).
  - ``messageId`` is dropped from chunks unless ``v1_message_ids`` (real agents send none).
  - ``plan_update`` becomes ``plan`` (same entries, no planId).
  - the first ``tool_call_update`` of a ``toolCallId`` becomes ``tool_call`` (title required);
    ``tool_call_content_chunk`` becomes a ``tool_call_update`` carrying the accumulated content.
  - ``state_update`` is dropped (v1 ends a turn with the prompt response instead).
  - an available command's ``input: {type: "text", hint}`` becomes ``input: {hint}``.
  - ``config_option_update``: each option's ``configId`` becomes ``id``.

A translator has state (which tool calls the client has seen, their content), so use one per
session per connection.
"""

from __future__ import annotations

import copy
from typing import Any

WHOLE_TO_CHUNK = {
    "user_message": "user_message_chunk",
    "agent_message": "agent_message_chunk",
    "agent_thought": "agent_thought_chunk",
}
CHUNK_TO_WHOLE = {chunk: whole for whole, chunk in WHOLE_TO_CHUNK.items()}
MESSAGE_KINDS = frozenset(WHOLE_TO_CHUNK) | frozenset(CHUNK_TO_WHOLE)


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def merge_text_blocks(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Join runs of adjacent plain text blocks (what streamed chunks leave behind) into one."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        plain = block.get("type") == "text" and set(block) <= {"type", "text"}
        if plain and out and out[-1].get("type") == "text" and set(out[-1]) <= {"type", "text"}:
            out[-1] = text_block(out[-1]["text"] + block["text"])
        else:
            out.append(dict(block))
    return out


class Translator:
    """Canonical update → list of wire updates for one protocol version (see module doc)."""

    def __init__(self, version: int, *, v1_message_ids: bool = False) -> None:
        self.version = version
        self._v1_ids = v1_message_ids
        self._announced: set[str] = set()
        self._tool_content: dict[str, list[Any]] = {}

    def translate(self, update: dict[str, Any]) -> list[dict[str, Any]]:
        """The wire updates for one canonical ``update`` (none, one, or one per content block)."""
        kind = update.get("sessionUpdate")
        if self.version >= 2:
            return [] if kind == "current_mode_update" else [update]
        if kind in WHOLE_TO_CHUNK:
            content = update.get("content") or []
            return [self._v1_chunk(WHOLE_TO_CHUNK[kind], update, block) for block in content]
        if kind in CHUNK_TO_WHOLE:
            return [self._v1_chunk(kind, update, update["content"])]
        if kind == "plan_update":
            return [{"sessionUpdate": "plan", "entries": update["plan"].get("entries", [])}]
        if kind == "tool_call_update":
            return [self._v1_tool(update)]
        if kind == "tool_call_content_chunk":
            tool_id = update["toolCallId"]
            content = self._tool_content.setdefault(tool_id, [])
            content.append(update["content"])
            return [self._v1_tool({"sessionUpdate": "tool_call_update", "toolCallId": tool_id,
                                   "content": list(content)})]
        if kind == "state_update":
            return []
        if kind == "available_commands_update":
            return [_v1_commands(update)]
        if kind == "config_option_update":
            return [_v1_config(update)]
        return [update]

    def _v1_chunk(self, kind: str, update: dict[str, Any], block: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"sessionUpdate": kind, "content": block}
        if self._v1_ids and update.get("messageId"):
            out["messageId"] = update["messageId"]
        return out

    def _v1_tool(self, update: dict[str, Any]) -> dict[str, Any]:
        tool_id = update["toolCallId"]
        out = dict(update)
        if "content" in out:
            self._tool_content[tool_id] = list(out["content"] or [])
        if tool_id not in self._announced:
            self._announced.add(tool_id)
            out["sessionUpdate"] = "tool_call"
            out.setdefault("title", "Tool call")
            if out.get("content") is None:
                out.pop("content", None)
        return out


def _v1_commands(update: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(update)
    for command in out.get("availableCommands", []):
        command_input = command.get("input")
        if isinstance(command_input, dict):
            command["input"] = {"hint": command_input.get("hint", "")}
    return out


def _v1_config(update: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(update)
    for option in out.get("configOptions", []):
        if "configId" in option:
            option["id"] = option.pop("configId")
    return out
