"""The message store: a pure reducer from ``session/update`` payloads to a transcript.

``Store.apply(update)`` takes the plain dict found at ``params["update"]`` of a
``session/update`` notification (v1 or v2 draft), folds it into ``Store.entries`` and
returns what changed: ``NewEntry``, ``EntryUpdated``, ``SessionChanged`` or ``None``
(nothing to show). No I/O, no printing, no pydantic: this is the hot path of streaming
and replay, so structure is checked with cheap ``isinstance``/``type`` tests instead.

Invariants (the tests in ``tests/history/test_store*.py`` hold the store to them):

* **Entries never move.** ``entries`` only grows; an entry's index is stable, so an
  ``EntryUpdated(index, ...)`` always names the entry a view was told about earlier.
* **Messages are upserts by ``messageId``** (seed, "Loading Sessions"), applied in
  arrival order, per kind (user / agent / thought ids are separate namespaces):
  ``user_message`` / ``agent_message`` / ``agent_thought`` with ``content`` replace the
  whole content (including what chunks built); ``content: null`` clears it; no
  ``content`` key leaves it unchanged and patches ``_meta`` only. ``*_chunk`` with the
  same id append, also after a whole-message update. An unseen id starts a new message.
* **Chunks without ``messageId``** (v1; every real agent observed: codex, claude, gemini)
  continue the latest message of their kind *only if that message is the last entry*
  and no ``turn_boundary()`` came since. So a chunk of another kind, a tool call, a plan,
  or a new turn in between starts a new message. Session-level updates (usage, commands,
  ...) create no entry and therefore do not split a message.
* **Appending is O(chunk).** Consecutive plain text chunks (a block with only ``type``
  and ``text``) coalesce into the trailing text block: their strings go to a parts list
  that is joined lazily, once, when ``Message.content``/``text`` is read. A text block with
  extra fields (annotations, ``_meta``) and every non-text block is appended as a block of
  its own (a later plain chunk still extends a trailing text block).
* **Block dicts are never mutated.** Blocks are the wire dicts themselves (no copies on
  the hot path); when the lazily joined text is materialised a *new* dict replaces the
  trailing block. Callers must treat ``content`` lists and blocks as read-only.
* A chunk's ``_meta`` is chunk-scoped (v2 prompt lifecycle) and is not stored.
* **Tool calls are upserts by ``toolCallId``.** v1 ``tool_call`` creates or, for a known
  id, resets and replaces; ``tool_call_update`` patches: an omitted field is unchanged,
  an explicit ``null`` clears it (``status``/``kind`` back to ``pending``/``other``,
  ``content``/``locations`` to ``[]``). An update for an unknown id creates the call (v2
  semantics; tolerated for v1). ``tool_call_content_chunk`` appends one content item.
  **A final status is final**: once a call is ``completed``, ``failed`` or ``cancelled``
  (acpcli's own, on a cancel or at the end of a turn), a later update's status is not taken
  (its other fields are), so a call shows one final state, on the screen, piped and in
  ``show`` alike (an agent that answers our ``cancelled`` with ``failed`` is not drawn twice).
* **Plans.** v1 ``plan`` replaces the current plan: it updates in place the latest v1
  ``Plan`` entry of the current turn (since the last ``turn_boundary()`` or user
  message), else appends a new ``Plan`` entry -- so an earlier turn's plan stays where it
  was in the scrollback instead of being rewritten above the fold. v2 ``plan_update`` is
  keyed by ``plan.planId``.
* **Turn ends** are entries too (:class:`TurnEnd`, from :meth:`Store.end_turn`: acpcli's
  record of how each prompt turn ended), so what comes after a turn never continues it.
* **Never raise on input.** Unknown ``sessionUpdate`` kinds, malformed updates and
  invalid fields are ignored (logged at debug on ``acpcli.model``); unknown enum values
  (tool kinds, statuses, block types) are kept as they came.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

log = logging.getLogger("acpcli.model")

USER = "user"
AGENT = "agent"
THOUGHT = "thought"

#: ``SessionChanged.field`` values: the name of the ``Store`` attribute that changed.
AVAILABLE_COMMANDS = "available_commands"
CURRENT_MODE = "current_mode_id"
CONFIG_OPTIONS = "config_options"
CURRENT_MODEL = "current_model_id"  # current_model_id and/or available_models (v1 ``models``)
SESSION_INFO = "session_info"  # title and/or updated_at
USAGE = "usage"
STATE = "state"  # state and stop_reason

#: Client-local tool status from ``Store.cancelled_tool_calls`` (not a protocol value).
CANCELLED = "cancelled"

_UNFINISHED = frozenset(("pending", "in_progress"))
_FINAL = frozenset(("completed", "failed", CANCELLED))
_DEFAULT_STATUS = "pending"
_DEFAULT_KIND = "other"

Json = Any
Block = dict[str, Any]


@dataclass(slots=True, eq=False)
class Message:
    """A user, agent or thought message. ``content`` is read through the property."""

    kind: str
    message_id: str | None = None
    meta: dict[str, Any] | None = None
    # Blocks as received; when ``_parts`` is not None the last block is a text block whose
    # real text is "".join(_parts) (its "text" key is stale until materialised).
    _blocks: list[Block] = field(default_factory=list, init=False, repr=False)
    _parts: list[str] | None = field(default=None, init=False, repr=False)

    @property
    def content(self) -> list[Block]:
        """The content blocks (read-only), with streamed text joined.

        Joins the text streamed since the last read, once (O(that text) plus one copy of
        the trailing block); a read with nothing new is O(1). A view that reads after
        every chunk pays O(message) per chunk: stream from ``EntryUpdated.appended``.
        """
        parts = self._parts
        if parts is not None and len(parts) > 1:
            self._join(parts)
        return self._blocks

    def _join(self, parts: list[str]) -> None:
        """Write the trailing text run into its block, once: O(run length)."""
        joined = "".join(parts)
        self._parts = [joined]
        # a new dict: a block handed out earlier (or the wire dict) is never mutated
        last = dict(self._blocks[-1])
        last["text"] = joined
        self._blocks[-1] = last

    @property
    def text(self) -> str:
        """All text blocks joined (non-text blocks are skipped)."""
        blocks = self.content
        if len(blocks) == 1:
            only = blocks[0]
            return only["text"] if only.get("type") == "text" else ""
        return "".join(b["text"] for b in blocks if b.get("type") == "text")

    def set_content(self, blocks: list[Block]) -> None:
        """Replace the whole content with already-validated blocks."""
        self._blocks = blocks
        last = blocks[-1] if blocks else None
        self._parts = [last["text"]] if last is not None and last.get("type") == "text" else None

    def append_block(self, block: Block) -> None:
        """Append one validated block; plain text extends a trailing text block in O(len)."""
        parts = self._parts
        is_text = block.get("type") == "text"
        if parts is not None:
            if is_text and len(block) == 2:
                parts.append(block["text"])
                return
            if len(parts) > 1:
                self._join(parts)  # the run ends here: seal its text before moving on
        self._blocks.append(block)
        self._parts = [block["text"]] if is_text else None

    def to_dict(self) -> dict[str, Any]:
        """Plain-data snapshot (deep copy), camelCase like the wire."""
        out: dict[str, Any] = {
            "type": "message",
            "kind": self.kind,
            "messageId": self.message_id,
            "content": _copy(self.content),
        }
        if self.meta is not None:
            out["_meta"] = _copy(self.meta)
        return out


@dataclass(slots=True, eq=False)
class ToolCall:
    """A tool call as last reported. ``status``/``kind`` may be unknown strings."""

    tool_call_id: str
    title: str | None = None
    kind: str = _DEFAULT_KIND
    status: str = _DEFAULT_STATUS
    content: list[Json] = field(default_factory=list)
    locations: list[Json] = field(default_factory=list)
    raw_input: Json = None
    raw_output: Json = None
    meta: dict[str, Any] | None = None

    def reset(self) -> None:
        """Back to client defaults (keeps the id): v1 ``tool_call`` for a known id."""
        self.title = None
        self.kind = _DEFAULT_KIND
        self.status = _DEFAULT_STATUS
        self.content = []
        self.locations = []
        self.raw_input = None
        self.raw_output = None
        self.meta = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-data snapshot (deep copy), camelCase like the wire."""
        out: dict[str, Any] = {
            "type": "tool_call",
            "toolCallId": self.tool_call_id,
            "title": self.title,
            "kind": self.kind,
            "status": self.status,
            "content": _copy(self.content),
            "locations": _copy(self.locations),
            "rawInput": _copy(self.raw_input),
            "rawOutput": _copy(self.raw_output),
        }
        if self.meta is not None:
            out["_meta"] = _copy(self.meta)
        return out


@dataclass(slots=True, eq=False)
class Plan:
    """A plan: v1 (``plan_id`` None) or v2 keyed by ``plan_id``.

    ``plan_type`` is ``"items"`` for entry lists; for an unknown v2 plan type ``entries``
    is empty and ``data`` keeps the plan object as received.
    """

    plan_id: str | None = None
    entries: list[Json] = field(default_factory=list)
    plan_type: str = "items"
    meta: dict[str, Any] | None = None
    data: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-data snapshot (deep copy), camelCase like the wire."""
        out: dict[str, Any] = {
            "type": "plan",
            "planId": self.plan_id,
            "planType": self.plan_type,
            "entries": _copy(self.entries),
        }
        if self.data is not None:
            out["data"] = _copy(self.data)
        if self.meta is not None:
            out["_meta"] = _copy(self.meta)
        return out


@dataclass(slots=True, eq=False)
class TurnEnd:
    """Where a prompt turn ended: acpcli's own record (:meth:`Store.end_turn`), never an
    agent's update. ``stop_reason`` as the agent gave it, or ``error`` when the turn failed;
    ``stop_reason`` ``cancelled`` also stands for a turn acpcli abandoned (Ctrl-C twice, a
    timeout). Views draw nothing for ``end_turn``."""

    stop_reason: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-data snapshot, camelCase like the wire."""
        return {"type": "turn_end", "stopReason": self.stop_reason, "error": self.error}


Entry = Message | ToolCall | Plan | TurnEnd


# One change object is made per update. A frozen dataclass's generated __init__ sets each
# field through object.__setattr__ (~0.33 us for EntryUpdated); these two write their slots
# through the slot descriptors instead (~0.2 us), and stay frozen for everyone else.


@dataclass(slots=True, frozen=True, init=False)
class NewEntry:
    """``entry`` was appended at ``index``."""

    index: int
    entry: Entry

    def __init__(self, index: int, entry: Entry) -> None:
        _new_index(self, index)
        _new_entry(self, entry)


@dataclass(slots=True, frozen=True, init=False)
class EntryUpdated:
    """``entry`` at ``index`` changed.

    ``appended`` is the block (message) or content item (tool call) a chunk appended, so
    a streaming view can print just that; it is None when the entry changed otherwise
    (replaced content, fields, status) and must be redrawn.
    """

    index: int
    entry: Entry
    appended: dict[str, Any] | None = None

    def __init__(self, index: int, entry: Entry, appended: dict[str, Any] | None = None) -> None:
        _updated_index(self, index)
        _updated_entry(self, entry)
        _updated_appended(self, appended)


# (slots=True makes a new class: the descriptors are read from the final classes)
# mypy sees the annotations, not the member descriptors that slots=True puts in their place.
_new_index = NewEntry.index.__set__  # type: ignore[misc, attr-defined]
_new_entry = NewEntry.entry.__set__  # type: ignore[misc, union-attr]
_updated_index = EntryUpdated.index.__set__  # type: ignore[misc, attr-defined]
_updated_entry = EntryUpdated.entry.__set__  # type: ignore[misc, union-attr]
_updated_appended = EntryUpdated.appended.__set__  # type: ignore[misc, union-attr]


@dataclass(slots=True, frozen=True)
class SessionChanged:
    """A session-level field changed: one of the module's field-name constants."""

    field: str


Change = NewEntry | EntryUpdated | SessionChanged


def _copy(value: Json) -> Json:
    """Deep copy of JSON-shaped data (faster than copy.deepcopy, enough for snapshots)."""
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return value


def _dicts(items: list[Any]) -> list[Any]:
    """Keep only object items (invalid array items are skipped, as the schema says)."""
    return [item for item in items if type(item) is dict]


def _blocks(items: list[Any]) -> list[Block]:
    """Valid content blocks: objects with a string ``type``; text blocks need ``text``."""
    out = []
    for b in items:
        if type(b) is dict:
            t = b.get("type")
            if type(t) is str and (t != "text" or type(b.get("text")) is str):
                out.append(b)
    return out


class Store:
    """The transcript of one session plus its session-level state.

    Session-level attributes (read them after a ``SessionChanged``): ``available_commands``,
    ``current_mode_id``, ``config_options``, ``current_model_id`` and ``available_models``
    (the v1 unstable ``models`` state), ``title``, ``updated_at``, ``usage`` (the
    ``usage_update`` fields ``used``/``size``/``cost``), ``state`` (``idle``, ``running``,
    ``requires_action`` or an unknown string) and ``stop_reason``.
    """

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.available_commands: list[Json] = []
        self.current_mode_id: str | None = None
        self.config_options: list[Json] = []
        self.current_model_id: str | None = None
        self.available_models: list[Json] = []
        self.title: str | None = None
        self.updated_at: str | None = None
        self.usage: dict[str, Any] | None = None
        self.state: str = "idle"
        self.stop_reason: str | None = None
        # messageId -> entry index, one namespace per message kind
        self._ids: dict[str, dict[str, int]] = {USER: {}, AGENT: {}, THOUGHT: {}}
        self._tools: dict[str, int] = {}
        self._plans: dict[str, int] = {}
        self._v1_plan: int | None = None  # latest v1 plan entry of the current turn
        self._boundary = False  # set by turn_boundary(): id-less chunks start new messages
        self._dispatch: dict[str, Callable[[dict[str, Any]], Change | None]] = {
            # (partials: the chunk reducer is called without a Python frame in between)
            "agent_message_chunk": partial(self._chunk, AGENT),
            "agent_thought_chunk": partial(self._chunk, THOUGHT),
            "user_message_chunk": partial(self._chunk, USER),
            "agent_message": self._agent_message,
            "agent_thought": self._thought_message,
            "user_message": self._user_message,
            "tool_call": self._tool_call,
            "tool_call_update": self._tool_call_update,
            "tool_call_content_chunk": self._tool_content_chunk,
            "plan": self._plan_v1,
            "plan_update": self._plan_v2,
            "available_commands_update": self._commands,
            "current_mode_update": self._mode,
            "config_option_update": self._config,
            "current_model_update": self._model,
            "session_info_update": self._info,
            "usage_update": self._usage,
            "state_update": self._state,
        }

    # -- public API ---------------------------------------------------------------------

    def apply(self, update: dict[str, Any]) -> Change | None:
        """Fold one ``session/update`` ``update`` object in; return what changed, or None.

        Never raises: unknown kinds and malformed updates are ignored (debug log).
        """
        try:
            handler = self._dispatch[update["sessionUpdate"]]
        except (KeyError, TypeError, IndexError):
            log.debug("ignored session update: %.200r", update)
            return None
        try:
            return handler(update)
        except Exception:  # a bug here must not kill the session: keep the stream going
            log.warning("store failed to apply an update: %.200r", update, exc_info=True)
            return None

    def turn_boundary(self) -> None:
        """A new prompt turn starts: the next id-less chunk starts a new message, and a v1
        ``plan`` starts a new plan entry."""
        self._boundary = True
        self._v1_plan = None

    def end_turn(self, stop_reason: str | None, error: str | None = None) -> NewEntry:
        """A prompt turn ended: a :class:`TurnEnd` entry, and a :meth:`turn_boundary` (what
        the agent sends after the turn starts messages of its own)."""
        entry = TurnEnd(stop_reason, error)
        index = self._add(entry)
        self.turn_boundary()
        return NewEntry(index, entry)

    def asked_tool_call(self, tool_call: Any) -> dict[str, Any] | None:
        """The ``tool_call_update`` that records a permission request's ``toolCall``, or None
        for a malformed one. The caller feeds it like any update (so it is stored and shown).

        Agents may ask permission for a call never announced (gemini): the update creates it.
        A request's ``status: "pending"`` does not move a call that already reported progress
        back to pending (codex announces ``in_progress`` first): that status is left out.
        """
        if type(tool_call) is not dict:
            log.debug("ignored tool call: %.200r", tool_call)
            return None
        tool_id = tool_call.get("toolCallId")
        if type(tool_id) is not str:
            log.debug("ignored tool call without id: %.200r", tool_call)
            return None
        fields = {k: v for k, v in tool_call.items() if k not in ("sessionUpdate", "_meta")}
        index = self._tools.get(tool_id)
        if index is not None:
            existing = self.entries[index]
            if fields.get("status") == _DEFAULT_STATUS and existing.status != _DEFAULT_STATUS:  # type: ignore[union-attr]
                del fields["status"]
        return {"sessionUpdate": "tool_call_update", **fields}

    def cancelled_tool_calls(self, since: int = 0, *, running: bool = True) -> list[dict[str, Any]]:
        """The ``tool_call_update`` s that mark every pending / in-progress tool call (of the
        entries from ``since`` on; only pending ones unless ``running``) ``cancelled``
        (client-local status), in entry order. The spec asks the client to do this as soon as
        it sends ``session/cancel``; acpcli does it too for what a turn leaves unfinished when
        it ends. Later updates from the agent still apply, but for their status (a final
        status is final).
        """
        marked = _UNFINISHED if running else frozenset((_DEFAULT_STATUS,))
        updates = []
        for tool_id, index in self._tools.items():
            if index >= since and self.entries[index].status in marked:  # type: ignore[union-attr]
                updates.append({"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": CANCELLED})
        return updates

    def set_state(self, state: str, stop_reason: str | None = None) -> SessionChanged:
        """Set ``state``/``stop_reason`` (v2 ``state_update``; v1's prompt response)."""
        self.state = state
        self.stop_reason = stop_reason
        return SessionChanged(STATE)

    def message(self, kind: str, message_id: str) -> Message | None:
        """The message of ``kind`` with ``message_id``, if seen."""
        index = self._ids.get(kind, {}).get(message_id)
        return None if index is None else self.entries[index]  # type: ignore[return-value]

    def tool_call(self, tool_call_id: str) -> ToolCall | None:
        """The tool call with ``tool_call_id``, if seen."""
        index = self._tools.get(tool_call_id)
        return None if index is None else self.entries[index]  # type: ignore[return-value]

    def transcript(self) -> list[dict[str, Any]]:
        """The entries as plain, independent data (for export and for comparing)."""
        return [entry.to_dict() for entry in self.entries]

    # -- entries --------------------------------------------------------------------------

    def _add(self, entry: Entry) -> int:
        entries = self.entries
        entries.append(entry)
        self._boundary = False
        return len(entries) - 1

    def _new_message(self, kind: str, message_id: str | None) -> tuple[int, Message]:
        message = Message(kind, message_id)
        index = self._add(message)
        if message_id is not None:
            self._ids[kind][message_id] = index
        if kind == USER:
            self._v1_plan = None  # a user message opens a turn (replay has no boundary call)
        return index, message

    # -- messages ---------------------------------------------------------------------------

    def _chunk(self, kind: str, update: dict[str, Any]) -> Change | None:
        # The hot path: one dict lookup per field read, and the common case (a plain text
        # chunk continuing the last message) appends its string without another call.
        block = update.get("content")
        if type(block) is not dict:
            log.debug("ignored chunk without a content block: %.200r", update)
            return None
        btype = block.get("type")
        if btype == "text":
            text = block.get("text")
            if not isinstance(text, str):  # (a str subclass cannot come from JSON)
                log.debug("ignored text chunk without text: %.200r", update)
                return None
            plain = len(block) == 2  # only type and text: it joins a trailing text run
        elif type(btype) is not str:
            log.debug("ignored chunk with an untyped block: %.200r", update)
            return None
        else:
            plain, text = False, ""

        message_id = update.get("messageId")
        if type(message_id) is str:
            index = self._ids[kind].get(message_id)
            if index is not None:
                message: Message = self.entries[index]  # type: ignore[assignment]
                parts = message._parts
                if plain and parts is not None:
                    parts.append(text)  # Message.append_block's own fast path, inline
                else:
                    message.append_block(block)
                return EntryUpdated(index, message, block)
        else:
            message_id = None  # null or invalid: schema says default (no id)
            entries = self.entries
            if entries and not self._boundary:
                last = entries[-1]
                if type(last) is Message and last.kind == kind:
                    parts = last._parts
                    if plain and parts is not None:
                        parts.append(text)  # Message.append_block's own fast path, inline
                    else:
                        last.append_block(block)
                    return EntryUpdated(len(entries) - 1, last, block)
        index, message = self._new_message(kind, message_id)
        message.append_block(block)
        return NewEntry(index, message)

    def _agent_message(self, update: dict[str, Any]) -> Change | None:
        return self._whole(update, AGENT)

    def _thought_message(self, update: dict[str, Any]) -> Change | None:
        return self._whole(update, THOUGHT)

    def _user_message(self, update: dict[str, Any]) -> Change | None:
        return self._whole(update, USER)

    def _whole(self, update: dict[str, Any], kind: str) -> Change | None:
        has_content = "content" in update
        content = update.get("content")
        if has_content and content is not None and type(content) is not list:
            log.debug("ignored message with invalid content: %.200r", update)
            return None
        has_meta = "_meta" in update
        meta = update.get("_meta")
        if has_meta and meta is not None and type(meta) is not dict:
            has_meta = False  # invalid _meta: leave it as it was
        message_id = update.get("messageId")
        if type(message_id) is not str:
            # messageId is required for whole messages; without one it cannot be
            # upserted, but its content is still worth showing as a message of its own.
            if not has_content:
                log.debug("ignored message update without id or content: %.200r", update)
                return None
            message_id = None

        index = self._ids[kind].get(message_id) if message_id is not None else None
        if index is None:
            index, message = self._new_message(kind, message_id)
            change: Change = NewEntry(index, message)
        else:
            message = self.entries[index]  # type: ignore[assignment]
            change = EntryUpdated(index, message)
        if has_content:
            message.set_content(_blocks(content) if content else [])
        if has_meta:
            message.meta = meta
        return change

    # -- tool calls ----------------------------------------------------------------------

    def _tool_call(self, update: dict[str, Any]) -> Change | None:
        tool_id = update.get("toolCallId")
        if type(tool_id) is not str:
            log.debug("ignored tool call without id: %.200r", update)
            return None
        return self._upsert_tool(update, tool_id, replace=True)

    def _tool_call_update(self, update: dict[str, Any]) -> Change | None:
        tool_id = update.get("toolCallId")
        if type(tool_id) is not str:
            log.debug("ignored tool call update without id: %.200r", update)
            return None
        return self._upsert_tool(update, tool_id, replace=False)

    def _tool_for(self, tool_id: str) -> tuple[int | None, ToolCall]:
        index = self._tools.get(tool_id)
        if index is None:
            return None, ToolCall(tool_id)
        return index, self.entries[index]  # type: ignore[return-value]

    def _register_tool(self, call: ToolCall) -> int:
        index = self._add(call)
        self._tools[call.tool_call_id] = index
        return index

    def _upsert_tool(self, fields: dict[str, Any], tool_id: str, *, replace: bool) -> Change:
        index, call = self._tool_for(tool_id)
        final = call.status if index is not None and call.status in _FINAL else None
        if replace and index is not None:
            call.reset()
        _patch_tool(call, fields)
        if final is not None:
            call.status = final  # one final state per call (see the module docstring)
        if index is None:
            return NewEntry(self._register_tool(call), call)
        return EntryUpdated(index, call)

    def _tool_content_chunk(self, update: dict[str, Any]) -> Change | None:
        tool_id = update.get("toolCallId")
        item = update.get("content")
        if type(tool_id) is not str or type(item) is not dict:
            log.debug("ignored tool content chunk: %.200r", update)
            return None
        index, call = self._tool_for(tool_id)
        call.content.append(item)
        if index is None:
            return NewEntry(self._register_tool(call), call)
        return EntryUpdated(index, call, item)

    # -- plans ---------------------------------------------------------------------------

    def _plan_v1(self, update: dict[str, Any]) -> Change | None:
        entries = update.get("entries")
        if type(entries) is not list:
            log.debug("ignored plan without entries: %.200r", update)
            return None
        meta = update.get("_meta")
        meta = meta if type(meta) is dict else None
        index = self._v1_plan
        if index is not None:
            plan: Plan = self.entries[index]  # type: ignore[assignment]
            plan.entries = _dicts(entries)
            plan.meta = meta
            return EntryUpdated(index, plan)
        plan = Plan(None, _dicts(entries), meta=meta)
        index = self._add(plan)
        self._v1_plan = index
        return NewEntry(index, plan)

    def _plan_v2(self, update: dict[str, Any]) -> Change | None:
        body = update.get("plan")
        if type(body) is not dict:
            log.debug("ignored plan_update without plan: %.200r", update)
            return None
        plan_id = body.get("planId")
        plan_type = body.get("type")
        if type(plan_id) is not str or type(plan_type) is not str:
            log.debug("ignored plan_update without planId/type: %.200r", update)
            return None
        if plan_type == "items":
            items = body.get("entries")
            entries = _dicts(items) if type(items) is list else []
            data = None
        else:  # unknown or future plan type: keep it whole for a generic view
            entries, data = [], body
        meta = body.get("_meta")
        meta = meta if type(meta) is dict else None
        index = self._plans.get(plan_id)
        if index is not None:
            plan: Plan = self.entries[index]  # type: ignore[assignment]
            plan.entries, plan.plan_type, plan.data, plan.meta = entries, plan_type, data, meta
            return EntryUpdated(index, plan)
        plan = Plan(plan_id, entries, plan_type, meta, data)
        index = self._add(plan)
        self._plans[plan_id] = index
        return NewEntry(index, plan)

    # -- session-level state ---------------------------------------------------------------

    def _commands(self, update: dict[str, Any]) -> Change | None:
        commands = update.get("availableCommands")
        if type(commands) is not list:
            log.debug("ignored available_commands_update: %.200r", update)
            return None
        self.available_commands = _dicts(commands)
        return SessionChanged(AVAILABLE_COMMANDS)

    def _mode(self, update: dict[str, Any]) -> Change | None:
        # The schema says currentModeId; the v1 Session Modes page's example says modeId.
        mode = update.get("currentModeId", update.get("modeId"))
        if type(mode) is not str:
            log.debug("ignored current_mode_update: %.200r", update)
            return None
        self.current_mode_id = mode
        return SessionChanged(CURRENT_MODE)

    def _config(self, update: dict[str, Any]) -> Change | None:
        options = update.get("configOptions")
        if type(options) is not list:
            log.debug("ignored config_option_update: %.200r", update)
            return None
        self.config_options = _dicts(options)
        return SessionChanged(CONFIG_OPTIONS)

    def _model(self, update: dict[str, Any]) -> Change | None:
        # v1 (unstable) models: the setup answers' ``models`` state (``currentModelId``,
        # ``availableModels``) and a ``session/set_model`` that succeeded arrive here as
        # this update (the session layer builds it); an agent sending it is read the same.
        model = update.get("currentModelId", update.get("modelId"))
        available = update.get("availableModels")
        changed = False
        if type(model) is str:
            self.current_model_id = model
            changed = True
        if type(available) is list:
            self.available_models = [m for m in _dicts(available) if type(m.get("modelId")) is str]
            changed = True
        if not changed:
            log.debug("ignored current_model_update: %.200r", update)
            return None
        return SessionChanged(CURRENT_MODEL)

    def _info(self, update: dict[str, Any]) -> Change | None:
        changed = False
        # omitted = unchanged, null = cleared, anything but a string = ignored
        for key, attr in (("title", "title"), ("updatedAt", "updated_at")):
            if key in update:
                value = update[key]
                if value is None or type(value) is str:
                    setattr(self, attr, value)
                    changed = True
        return SessionChanged(SESSION_INFO) if changed else None

    def _usage(self, update: dict[str, Any]) -> Change | None:
        used, size = update.get("used"), update.get("size")
        if type(used) is not int or type(size) is not int:
            log.debug("ignored usage_update: %.200r", update)
            return None
        cost = update.get("cost")
        self.usage = {"used": used, "size": size, "cost": cost if type(cost) is dict else None}
        return SessionChanged(USAGE)

    def _state(self, update: dict[str, Any]) -> Change | None:
        state = update.get("state")
        if type(state) is not str:
            log.debug("ignored state_update: %.200r", update)
            return None
        stop = update.get("stopReason")
        return self.set_state(state, stop if type(stop) is str else None)


def _patch_tool(call: ToolCall, fields: dict[str, Any]) -> None:
    """Apply the fields present in ``fields``; invalid values leave the field unchanged."""
    if "title" in fields:
        value = fields["title"]
        if value is None or type(value) is str:
            call.title = value
    if "kind" in fields:
        value = fields["kind"]
        if value is None:
            call.kind = _DEFAULT_KIND
        elif type(value) is str:
            call.kind = value
    if "status" in fields:
        value = fields["status"]
        if value is None:
            call.status = _DEFAULT_STATUS
        elif type(value) is str:
            call.status = value
    if "content" in fields:
        value = fields["content"]
        if value is None:
            call.content = []
        elif type(value) is list:
            call.content = _dicts(value)
    if "locations" in fields:
        value = fields["locations"]
        if value is None:
            call.locations = []
        elif type(value) is list:
            call.locations = _dicts(value)
    if "rawInput" in fields:
        call.raw_input = fields["rawInput"]
    if "rawOutput" in fields:
        call.raw_output = fields["rawOutput"]
    if "_meta" in fields:
        value = fields["_meta"]
        if value is None or type(value) is dict:
            call.meta = value
