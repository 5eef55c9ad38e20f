"""The session layer's objects as the Python API's typed ones: a store change as an event, a
permission request's params, an elicitation request, a setting, a tool call. Pure functions,
no I/O; agent text is copied as sent (the caller decides how to show it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acpcli.api.types import (
    AgentText,
    Event,
    FieldKind,
    FormField,
    FormRequest,
    InputRequest,
    LinkRequest,
    PermissionOption,
    PermissionRequest,
    PlanEntry,
    PlanUpdated,
    Setting,
    SettingsChanged,
    ThoughtText,
    TitleChanged,
    ToolCall,
    ToolCallStarted,
    ToolCallUpdated,
    UsageUpdated,
    UserText,
)

if TYPE_CHECKING:
    from acpcli.model import Change
    from acpcli.protocol.settings import Choice
    from acpcli.services import elicitation as el
    from acpcli.session.feed import SessionFeed


def permission_request(live: SessionFeed, params: dict[str, Any]) -> PermissionRequest:
    """A ``session/request_permission``'s params (checked already) as a typed request."""
    from acpcli.services.permissions import tool_kind

    call = params.get("toolCall") if isinstance(params.get("toolCall"), dict) else {}
    assert isinstance(call, dict)
    tool_id = call.get("toolCallId") if isinstance(call.get("toolCallId"), str) else None
    known = live.store.tool_call(tool_id) if tool_id is not None else None
    title = call.get("title") if isinstance(call.get("title"), str) else known.title if known is not None else None
    options = tuple(
        PermissionOption(str(o["optionId"]), str(o.get("name") or o["optionId"]), str(o.get("kind") or ""))
        for o in params.get("options") or ()
        if isinstance(o, dict) and isinstance(o.get("optionId"), str)
    )
    raw_input = call.get("rawInput", known.raw_input if known is not None else None)
    locations = call.get("locations", known.locations if known is not None else [])
    return PermissionRequest(
        session_id=live.session_id,
        tool_call_id=tool_id,
        title=title,
        kind=tool_kind(params, live),
        options=options,
        raw_input=raw_input,
        locations=ToolCall.paths(locations),
    )


def input_request(request: el.Request) -> InputRequest:
    """:mod:`acpcli.services.elicitation`'s request, as the API's frozen one."""
    from acpcli.services.elicitation import UrlPage

    if isinstance(request, UrlPage):
        return LinkRequest(request.message, request.url, request.host, tuple(request.warnings), request.session_id)
    fields = tuple(
        FormField(
            f.name, _FIELD_KINDS.get(f.kind, "text"), f.title, f.description, f.required, f.default, tuple(f.options),
            f.sensitive,
        )
        for f in request.fields
    )
    return FormRequest(request.message, fields, request.session_id, request.title)


#: The form's field kinds as the API names them (the schema's ``string`` is ``text``).
_FIELD_KINDS: dict[str, FieldKind] = {
    "string": "text", "number": "number", "integer": "integer", "boolean": "boolean", "choice": "choice",
    "multi": "multi",
}


def tool_call(entry: Any) -> ToolCall:
    return ToolCall.of(entry)


def setting(choice: Choice) -> Setting:
    values = tuple((v, n) for v, n, _ in choice.values)
    # A Choice carries its current value as shown (a name): the value it names, when it names one.
    current = next((v for v, n in values if v == choice.current), None) or next(
        (v for v, n in values if n == choice.current), choice.current
    )
    return Setting(choice.key, choice.name, current, choice.current, values, choice.category)


def event_of(live: SessionFeed, change: Change) -> Event | None:
    """The API's event for one change of the store (None: nothing a caller follows)."""
    from acpcli import model as st

    if isinstance(change, st.SessionChanged):
        what = change.field
        if what == st.USAGE and live.store.usage is not None:
            usage = live.store.usage
            return UsageUpdated(usage.get("used"), usage.get("size"), usage.get("cost"))
        if what in (st.CURRENT_MODE, st.CONFIG_OPTIONS, st.CURRENT_MODEL):
            return SettingsChanged(tuple(setting(c) for c in live.settings()))
        if what == st.SESSION_INFO:
            return TitleChanged(live.store.title)
        return None
    entry = change.entry
    new = isinstance(change, st.NewEntry)
    if isinstance(entry, st.Message):
        if new:
            text = entry.text
        else:
            appended = change.appended if isinstance(change, st.EntryUpdated) else None
            text = appended.get("text", "") if appended is not None and appended.get("type") == "text" else ""
        if not text:
            return None
        if entry.kind == st.AGENT:
            return AgentText(text, entry.message_id)
        if entry.kind == st.THOUGHT:
            return ThoughtText(text, entry.message_id)
        return UserText(text, entry.message_id)
    if isinstance(entry, st.ToolCall):
        return ToolCallStarted(tool_call(entry)) if new else ToolCallUpdated(tool_call(entry))
    if isinstance(entry, st.Plan):
        return PlanUpdated(
            tuple(
                PlanEntry(str(e.get("content", "")), str(e.get("status", "pending")), str(e.get("priority", "medium")))
                for e in entry.entries
                if isinstance(e, dict)
            )
        )
    return None
