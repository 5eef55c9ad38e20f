"""Merging an agent's replay (``session/load``) into what acpcli recorded itself. Pure.

For a session acpcli recorded, the local transcript -- what the user sent and saw -- stays
the record after a load: replays degrade it (observed with the real agents: no boundaries between
consecutive user messages, so codex glues two prompts into one; claude adds its
slash-command artefacts to user messages; gemini replays its ``<session_context>`` block
and tool results as user text). A replay may still *add* what the local record lacks:
turns made after acpcli's last one (by another client), appended in order. Nothing of the
local record is replaced or duplicated.

For a session with no local prompt (made elsewhere, or never prompted here) the replay is
the record, as the store builds it -- less its tool-response echoes (below).

A replayed user message that only echoes a tool's result (gemini replays each function
response as user text, ``[Function Response: run_shell_command]``) is not a user message:
it is never added, never taken for the start of a turn, and not kept in a replay-only record.

How additions are found: acpcli's prompts are looked for, in order, in the replay's user
messages (each prompt's whitespace-normalized text inside one replayed message, several
prompts possibly inside the same one). If every prompt is found, the replayed turns that
start after the message holding the last one are additions. If one is missing the replay
cannot be lined up with the record, and nothing is added (never duplicate).
"""

from __future__ import annotations

import re

from acpcli.model import USER, Entry, Message, Plan, Store, ToolCall

#: Replayed user messages that are an agent's own bookkeeping, not a person's prompt (claude
#: records its slash commands so); a turn starting with one is not added.
_ARTEFACT_PREFIXES = ("<command-name>", "<command-message>", "<local-command-", "<command-args>")

#: A replayed user message that is only tool results echoed back (gemini: one
#: ``[Function Response: NAME]`` per result, glued together when there are several).
_ECHO = re.compile(r"(?:\s*\[Function (?:Response|Call): [^\]\n]*\])+\s*")


def _norm(text: str) -> str:
    return " ".join(text.split())


def _is_echo(entry: Entry) -> bool:
    """A replayed user message that only echoes tool results (see the module docstring)."""
    return isinstance(entry, Message) and entry.kind == USER and _ECHO.fullmatch(entry.text) is not None


def _user_messages(store: Store) -> list[tuple[int, Message]]:
    """The store's user messages with their entry indexes, tool-response echoes left out."""
    return [
        (i, e) for i, e in enumerate(store.entries) if isinstance(e, Message) and e.kind == USER and not _is_echo(e)
    ]


def replay_additions(local: Store, replay: Store) -> list[Entry] | None:
    """The replay's entries the local record lacks (a list, possibly empty), or None when
    the local record has no prompt (then the replay is the record)."""
    prompts = [_norm(m.text) for _, m in _user_messages(local)]
    if not prompts:
        return None
    replayed = _user_messages(replay)
    texts = [_norm(m.text) for _, m in replayed]
    k, offset, last = 0, 0, -1
    for prompt in prompts:
        if not prompt:
            continue  # an image-only prompt: nothing to look for
        while k < len(texts):
            pos = texts[k].find(prompt, offset)
            if pos >= 0:
                offset, last = pos + len(prompt), k
                break
            k, offset = k + 1, 0
        else:
            return []  # not found: the replay does not line up with the record
    if last + 1 >= len(replayed):
        return []
    added: list[Entry] = []
    skipping = False
    for entry in replay.entries[replayed[last + 1][0] :]:
        if _is_echo(entry):
            continue
        if isinstance(entry, Message) and entry.kind == USER:
            skipping = entry.text.lstrip().startswith(_ARTEFACT_PREFIXES)
        if not skipping:
            added.append(entry)
    return added


def _append(store: Store, entry: Entry) -> None:
    """``entry`` appended to ``store``, known to it (a later update patches it)."""
    index = len(store.entries)
    store.entries.append(entry)
    if isinstance(entry, ToolCall):
        store._tools[entry.tool_call_id] = index
    elif isinstance(entry, Message) and entry.message_id is not None:
        store._ids[entry.kind][entry.message_id] = index
    elif isinstance(entry, Plan) and entry.plan_id is not None:
        store._plans[entry.plan_id] = index


def _without_echoes(replay: Store) -> Store:
    """``replay`` itself when it holds no tool-response echo, else a copy without them (the
    replay is the live session's store: it is not changed)."""
    if not any(_is_echo(entry) for entry in replay.entries):
        return replay
    record = Store()
    for entry in replay.entries:
        if not _is_echo(entry):
            _append(record, entry)
    for name in (
        "available_commands", "current_mode_id", "config_options", "current_model_id", "available_models",
        "title", "updated_at", "usage", "state", "stop_reason",
    ):
        setattr(record, name, getattr(replay, name))
    record.turn_boundary()
    return record


def merge_replay(local: Store, replay: Store) -> Store:
    """The record after a load: ``local`` with what ``replay`` adds (see the module
    docstring), or ``replay`` (less its tool-response echoes) when ``local`` holds no prompt. Session-level state the
    replay reports (title, commands, mode, settings) is newer and is taken when present."""
    added = replay_additions(local, replay)
    if added is None:
        return _without_echoes(replay)
    for entry in added:
        _append(local, entry)
    local.turn_boundary()
    if replay.title:
        local.title = replay.title
        local.updated_at = replay.updated_at or local.updated_at
    if replay.available_commands:
        local.available_commands = replay.available_commands
    if replay.current_mode_id is not None:
        local.current_mode_id = replay.current_mode_id
    if replay.config_options:
        local.config_options = replay.config_options
    return local
