"""Replaying a stored conversation for ``session/load``, in one of five styles.

The stored history (canonical updates, see :mod:`acpcli.demo_agent.translate`) is first folded into
*entries* in order of first appearance: one per message (content accumulated with the seed's
rules, adjacent text joined), one per tool call (its final state), one per plan (its final
entries), plus session info updates. Live-only updates (``state_update``, ``usage_update``,
``available_commands_update``, and the settings updates ``current_mode_update`` and
``config_option_update``, whose current state the load answer carries) are not replayed.

Messages are then emitted in the chosen style; every style yields the same final text per
message when applied with the seed's rules (whole replaces, chunk appends, keyed by
``messageId``):

``whole``              one whole-message update each (v1: one chunk)
``chunks``             ``--chunk-size`` pieces as ``*_chunk`` updates
``chunks-then-whole``  the pieces, then a whole update that replaces them
``whole-then-chunks``  a whole update with the first piece, then the rest as chunks
``interleaved``        per turn: each message's first piece where the message first appeared
                       (whole in v2), its remaining pieces round-robin with the other
                       messages of the turn and its tool calls, flushed before the next turn

v1 cannot express every style: it has no replacing update, so ``chunks-then-whole`` becomes
``chunks``; and without ``--v1-message-ids`` chunks of different messages cannot be told apart
when mixed, so ``interleaved`` becomes ``chunks``. :func:`effective_style` says so.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

from acpcli.demo_agent.translate import (
    CHUNK_TO_WHOLE,
    WHOLE_TO_CHUNK,
    merge_text_blocks,
    text_block,
)

_NOT_REPLAYED = frozenset({"state_update", "usage_update", "available_commands_update",
                           "current_mode_update", "config_option_update"})


def effective_style(style: str, version: int, v1_message_ids: bool) -> tuple[str, str | None]:
    """The style actually used for ``version``, and a note to log when it had to change."""
    if version >= 2:
        return style, None
    if style == "chunks-then-whole":
        return "chunks", "v1 has no replacing message update: replaying chunks-then-whole as chunks"
    if style == "interleaved" and not v1_message_ids:
        return "chunks", "interleaved replay needs --v1-message-ids in v1: replaying as chunks"
    return style, None


def fold(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fold the history into replay entries (see module doc). Each entry is a dict with
    ``entry`` = "message" | "update", and ``turnStart`` True on user messages."""
    entries: list[dict[str, Any]] = []
    messages: dict[str, dict[str, Any]] = {}
    tools: dict[str, dict[str, Any]] = {}
    plans: dict[str, dict[str, Any]] = {}
    for update in history:
        kind = update.get("sessionUpdate")
        if kind in _NOT_REPLAYED:
            continue
        if kind in WHOLE_TO_CHUNK or kind in CHUNK_TO_WHOLE:
            whole = CHUNK_TO_WHOLE.get(kind, kind)
            msg = messages.get(update["messageId"])
            if msg is None:
                msg = {"entry": "message", "kind": whole, "messageId": update["messageId"],
                       "content": [], "turnStart": whole == "user_message"}
                messages[update["messageId"]] = msg
                entries.append(msg)
            if kind in CHUNK_TO_WHOLE:
                msg["content"].append(update["content"])
            elif "content" in update:
                msg["content"] = list(update["content"] or [])
        elif kind == "tool_call_update":
            tool = tools.get(update["toolCallId"])
            if tool is None:
                tool = {"entry": "update", "update": dict(update)}
                tools[update["toolCallId"]] = tool
                entries.append(tool)
            else:
                tool["update"].update({k: v for k, v in update.items() if k != "_meta"})
        elif kind == "tool_call_content_chunk":
            tool = tools.get(update["toolCallId"])
            if tool is not None:
                current = tool["update"].get("content") or []
                tool["update"]["content"] = [*current, update["content"]]
        elif kind == "plan_update":
            plan_id = update["plan"].get("planId")
            plan = plans.get(plan_id)
            if plan is None:
                plan = {"entry": "update", "update": update}
                plans[plan_id] = plan
                entries.append(plan)
            else:
                plan["update"] = update
        else:
            entries.append({"entry": "update", "update": update})
    for msg in messages.values():
        msg["content"] = merge_text_blocks(msg["content"])
    return entries


def replay(history: list[dict[str, Any]], style: str, chunk_size: int) -> Iterator[dict[str, Any]]:
    """Canonical updates replaying ``history`` in ``style`` (already an :func:`effective_style`)."""
    entries = fold(history)
    if style == "interleaved":
        yield from _interleaved(entries, chunk_size)
        return
    for entry in entries:
        if entry["entry"] != "message":
            yield entry["update"]
            continue
        pieces = _pieces(entry["content"], chunk_size)
        if style == "whole" or not pieces:
            yield _whole(entry, entry["content"])
        elif style == "chunks":
            yield from (_chunk(entry, p) for p in pieces)
        elif style == "chunks-then-whole":
            yield from (_chunk(entry, p) for p in pieces)
            yield _whole(entry, entry["content"])
        elif style == "whole-then-chunks":
            yield _whole(entry, pieces[:1])
            yield from (_chunk(entry, p) for p in pieces[1:])
        else:  # pragma: no cover - argparse restricts the choices
            raise ValueError(f"unknown replay style {style!r}")


def _interleaved(entries: list[dict[str, Any]], chunk_size: int) -> Iterator[dict[str, Any]]:
    pending: deque[tuple[dict[str, Any], deque[dict[str, Any]]]] = deque()

    def one_round() -> Iterator[dict[str, Any]]:
        for _ in range(len(pending)):
            entry, rest = pending.popleft()
            yield _chunk(entry, rest.popleft())
            if rest:
                pending.append((entry, rest))

    for entry in entries:
        if entry.get("turnStart"):
            while pending:
                yield from one_round()
        if entry["entry"] == "message":
            pieces = _pieces(entry["content"], chunk_size)
            yield _whole(entry, pieces[:1])
            if len(pieces) > 1:
                pending.append((entry, deque(pieces[1:])))
        else:
            yield entry["update"]
        yield from one_round()
    while pending:
        yield from one_round()


def _pieces(content: list[dict[str, Any]], chunk_size: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in content:
        if block.get("type") == "text" and set(block) <= {"type", "text"}:
            text = block["text"]
            out.extend(text_block(text[i : i + chunk_size]) for i in range(0, len(text), chunk_size))
        else:
            out.append(block)
    return out


def _whole(entry: dict[str, Any], content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"sessionUpdate": entry["kind"], "messageId": entry["messageId"], "content": list(content)}


def _chunk(entry: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    return {"sessionUpdate": WHOLE_TO_CHUNK[entry["kind"]], "messageId": entry["messageId"], "content": block}
