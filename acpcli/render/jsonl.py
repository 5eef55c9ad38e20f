"""The jsonl view (``--format jsonl``): one normalized JSON event per line, flushed per line.

Every event is a JSON object on its own line (UTF-8, no pretty-printing) with a ``type``
and the ``sessionId`` it belongs to (null when unknown). Field names are stable; new
fields may be added, consumers should ignore what they do not know. ``index`` is the
entry's position in the transcript (stable: entries never move).

``message_start``
    ``{"type":"message_start","sessionId","index","role","id"}`` -- a new message.
    ``role`` is ``"user"``, ``"agent"`` or ``"thought"``; ``id`` the ``messageId`` or null.
``message_chunk``
    ``{"type":"message_chunk","sessionId","index","role","id","text"}`` -- text appended
    to message ``index`` (also its initial content). A non-text block comes as
    ``{..., "block": {...}}`` instead of ``text``.
``message``
    ``{"type":"message","sessionId","index","role","id","text","content"}`` -- the
    complete message as it stands: ``text`` is all its text, ``content`` its blocks. Sent
    when a message is finished (the next entry starts right after it, the turn ends, the
    output closes) and when its content is replaced or cleared. **The last ``message``
    event of an index is authoritative**; chunks are for live display.
``tool_call``
    ``{"type":"tool_call","sessionId","index","id","title","kind","status","content",
    "locations","rawInput","rawOutput"}`` -- the whole tool call, whenever it changes.
``tool_call_chunk``
    ``{"type":"tool_call_chunk","sessionId","index","id","content"}`` -- one content item
    appended to tool call ``index`` (v2 ``tool_call_content_chunk``).
``plan``
    ``{"type":"plan","sessionId","index","id","planType","entries"}`` -- the whole plan
    whenever it changes (``id`` is the v2 ``planId``, null for v1 plans; entries as sent:
    ``content``, ``priority``, ``status``). A non-list plan adds ``"data"``.
``session``
    ``{"type":"session","sessionId","field", ...}`` -- session state changed. ``field``
    and the keys it adds: ``availableCommands`` (``availableCommands``), ``currentMode``
    (``currentModeId``), ``currentModel`` (``currentModelId``, ``availableModels``: the v1
    ``models`` state), ``configOptions`` (``configOptions``), ``sessionInfo``
    (``title``, ``updatedAt``), ``usage`` (``usage``: ``used``, ``size``, ``cost``),
    ``state`` (``state``, ``stopReason``).
``turn_end``
    ``{"type":"turn_end","sessionId","stopReason"}`` -- a prompt turn ended. In an export
    it is an entry (where the turn ended), with ``index`` and ``"error"``: what failed the
    turn (``stopReason`` null), else null. What follows it came from the agent after the turn.
``elicitation``
    ``{"type":"elicitation","sessionId","mode","message","toolCallId", ...}`` -- the agent
    asked for input: ``mode`` ``"form"`` adds ``requestedSchema`` (as sent; the default of a
    sensitive field masked ``***``), ``"url"`` adds ``url`` and ``elicitationId``.
``elicitation_answer``
    ``{"type":"elicitation_answer","sessionId","mode","action","content"}`` -- what acpcli
    answered it: ``action`` ``accept``, ``decline`` or ``cancel``; ``content`` the accepted
    form's values (a sensitive field's value ``***``), else null.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from acpcli import model as st
from acpcli.model import (
    Change,
    EntryUpdated,
    Message,
    NewEntry,
    Plan,
    SessionChanged,
    Store,
    ToolCall,
    TurnEnd,
)
from acpcli.text.safe import json_escape


def _session_fields(store: Store, name: str) -> dict[str, Any]:
    if name == st.AVAILABLE_COMMANDS:
        return {"field": "availableCommands", "availableCommands": store.available_commands}
    if name == st.CURRENT_MODE:
        return {"field": "currentMode", "currentModeId": store.current_mode_id}
    if name == st.CONFIG_OPTIONS:
        return {"field": "configOptions", "configOptions": store.config_options}
    if name == st.CURRENT_MODEL:
        return {"field": "currentModel", "currentModelId": store.current_model_id,
                "availableModels": store.available_models}
    if name == st.SESSION_INFO:
        return {"field": "sessionInfo", "title": store.title, "updatedAt": store.updated_at}
    if name == st.USAGE:
        return {"field": "usage", "usage": store.usage}
    if name == st.STATE:
        return {"field": "state", "state": store.state, "stopReason": store.stop_reason}
    return {"field": name}


def message_event(index: int, message: Message, session_id: str | None = None) -> dict[str, Any]:
    """The ``message`` event for a message in its current state."""
    return {
        "type": "message",
        "sessionId": session_id,
        "index": index,
        "role": message.kind,
        "id": message.message_id,
        "text": message.text,
        "content": message.content,
    }


def tool_event(index: int, call: ToolCall, session_id: str | None = None) -> dict[str, Any]:
    """The ``tool_call`` event for a tool call in its current state."""
    return {
        "type": "tool_call",
        "sessionId": session_id,
        "index": index,
        "id": call.tool_call_id,
        "title": call.title,
        "kind": call.kind,
        "status": call.status,
        "content": call.content,
        "locations": call.locations,
        "rawInput": call.raw_input,
        "rawOutput": call.raw_output,
    }


def plan_event(index: int, plan: Plan, session_id: str | None = None) -> dict[str, Any]:
    """The ``plan`` event for a plan in its current state."""
    event: dict[str, Any] = {
        "type": "plan",
        "sessionId": session_id,
        "index": index,
        "id": plan.plan_id,
        "planType": plan.plan_type,
        "entries": plan.entries,
    }
    if plan.data is not None:
        event["data"] = plan.data
    return event


class JsonlView:
    """Writes the events documented in this module's docstring to ``out``.

    ``final_only``: write nothing while changes arrive; :meth:`close` writes one finished
    event per entry of the session's store (as :meth:`print_store`).
    """

    def __init__(
        self, out: TextIO, *, store: Store | None = None, session_id: str | None = None, final_only: bool = False
    ) -> None:
        self._out = out
        self._store = store
        self._session_id = session_id
        self._final_only = final_only
        self._closed = False
        # messages that got chunks since their last ``message`` event: index -> message
        self._dirty: dict[int, Message] = {}

    def _emit(self, event: dict[str, Any]) -> None:
        # DEL and C1 escaped too (json.dumps leaves them raw): a terminal would obey them.
        self._out.write(json_escape(json.dumps(event, ensure_ascii=False, separators=(",", ":"))) + "\n")
        self._out.flush()

    def on_change(self, session: object, change: Change) -> None:
        """Write the event(s) for one change."""
        if session is not None:
            sid = getattr(session, "session_id", None)
            self._session_id = sid if isinstance(sid, str) else self._session_id
            store = getattr(session, "store", None)
            if isinstance(store, Store):
                self._store = store
        if self._final_only:
            return
        sid = self._session_id
        if isinstance(change, NewEntry):
            # an id-less stream is over when the entry after it starts: finish it now
            previous = self._dirty.pop(change.index - 1, None)
            if previous is not None:
                self._emit(message_event(change.index - 1, previous, sid))
            self._new(change.index, change.entry)
        elif isinstance(change, EntryUpdated):
            self._updated(change)
        elif isinstance(change, SessionChanged) and self._store is not None:
            self._emit({"type": "session", "sessionId": sid, **_session_fields(self._store, change.field)})

    def _new(self, index: int, entry: Any) -> None:
        sid = self._session_id
        if isinstance(entry, Message):
            self._emit({"type": "message_start", "sessionId": sid, "index": index, "role": entry.kind, "id": entry.message_id})
            for block in entry.content:
                self._chunk(index, entry, block)
            self._dirty[index] = entry
        elif isinstance(entry, ToolCall):
            self._emit(tool_event(index, entry, sid))
        elif isinstance(entry, Plan):
            self._emit(plan_event(index, entry, sid))

    def _chunk(self, index: int, message: Message, block: dict[str, Any]) -> None:
        event: dict[str, Any] = {
            "type": "message_chunk",
            "sessionId": self._session_id,
            "index": index,
            "role": message.kind,
            "id": message.message_id,
        }
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            event["text"] = block["text"]
        else:
            event["block"] = block
        self._emit(event)

    def _updated(self, change: EntryUpdated) -> None:
        entry, index, sid = change.entry, change.index, self._session_id
        if isinstance(entry, Message):
            if change.appended is not None:
                self._chunk(index, entry, change.appended)
                self._dirty[index] = entry
            else:  # replaced, cleared or _meta: the whole message, now
                self._dirty.pop(index, None)
                self._emit(message_event(index, entry, sid))
        elif isinstance(entry, ToolCall):
            if change.appended is not None:
                self._emit(
                    {"type": "tool_call_chunk", "sessionId": sid, "index": index, "id": entry.tool_call_id, "content": change.appended}
                )
            else:
                self._emit(tool_event(index, entry, sid))
        elif isinstance(entry, Plan):
            self._emit(plan_event(index, entry, sid))

    def _finish_messages(self) -> None:
        dirty, self._dirty = self._dirty, {}
        for index in sorted(dirty):
            self._emit(message_event(index, dirty[index], self._session_id))

    def elicitation(self, request: Any, result: dict[str, Any]) -> None:
        """The agent's request for input and the answer it got (:mod:`acpcli.services.elicitation`)."""
        if self._final_only:
            return
        from acpcli.services import elicitation as el

        sid = self._session_id
        asked: dict[str, Any] = {
            "type": "elicitation", "sessionId": sid, "mode": request.mode, "message": request.message,
            "toolCallId": request.tool_call_id,
        }
        if isinstance(request, el.UrlPage):
            asked.update(url=request.url, elicitationId=request.elicitation_id)
        else:
            asked["requestedSchema"] = el.masked_request(request).get("requestedSchema")
        self._emit(asked)
        shown = el.masked_answer(request, result)
        self._emit(
            {
                "type": "elicitation_answer", "sessionId": sid, "mode": request.mode, "action": el.action_of(shown),
                "content": shown.get("content"),
            }
        )

    def begin_turn(self, store: Store | None = None) -> None:
        """Nothing to show while a turn runs (only the terminal view has a status line)."""

    def turn_ended(self, stop_reason: str | None) -> None:
        """Finish the streamed messages; write ``turn_end``."""
        if self._final_only:
            return
        self._finish_messages()
        self._emit({"type": "turn_end", "sessionId": self._session_id, "stopReason": stop_reason})

    def flush(self) -> None:
        """Finish the streamed messages (their ``message`` events)."""
        self._finish_messages()
        self._out.flush()

    def print_store(self, store: Store) -> None:
        """One finished event per entry of ``store`` (``message``, ``tool_call``, ``plan``,
        ``turn_end``), then its usage (a ``session`` event) when the agent reported one."""
        self._finish_messages()
        sid = self._session_id
        for index, entry in enumerate(store.entries):
            if isinstance(entry, Message):
                self._emit(message_event(index, entry, sid))
            elif isinstance(entry, ToolCall):
                self._emit(tool_event(index, entry, sid))
            elif isinstance(entry, Plan):
                self._emit(plan_event(index, entry, sid))
            elif isinstance(entry, TurnEnd):
                self._emit(
                    {"type": "turn_end", "sessionId": sid, "index": index, "stopReason": entry.stop_reason, "error": entry.error}
                )
        if getattr(store, "usage", None) is not None:  # as the agent last reported it
            self._emit({"type": "session", "sessionId": sid, **_session_fields(store, st.USAGE)})

    def close(self) -> None:
        """Finish the streamed messages (``final_only``: write the store's entries)."""
        if self._final_only and not self._closed and self._store is not None:
            self.print_store(self._store)
        self._closed = True
        self.flush()
