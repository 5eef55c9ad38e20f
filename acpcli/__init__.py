"""acpcli: a terminal client for ACP (Agent Client Protocol) agents, and its Python API.

The public API is what this module exports (``__all__``); everything else is private::

    import acpcli

    async with acpcli.connect("demo", permissions="allow") as agent:
        session = await agent.new_session()
        async for event in session.prompt("explain this repo"):
            if isinstance(event, acpcli.AgentText):
                print(event.text, end="")
        print(session.transcript.markdown())

    result = acpcli.run("demo", "explain this repo")   # the same, from a script that is not async

Importing this package is cheap on purpose: it builds no pydantic models and imports
neither rich.markdown nor prompt_toolkit nor anyio. The API's names are imported on first use
(the module ``__getattr__`` below); heavy modules are imported where they are used.
"""

from acpcli._version import __version__

#: True for type checkers only (``typing`` is not imported: it would cost ``import acpcli``
#: a few milliseconds, and type checkers read the name itself).
TYPE_CHECKING = False

if TYPE_CHECKING:
    from acpcli.api.client import Agent, Session, SessionInfo, connect
    from acpcli.api.history import SearchHit, StoredSession, search, sessions, transcript
    from acpcli.api.sync import run
    from acpcli.api.types import (
        AgentText,
        ChangedFile,
        Checkpoint,
        Event,
        FieldKind,
        FileStatus,
        FormField,
        FormRequest,
        InputAction,
        InputAnswer,
        InputAnswered,
        InputCallback,
        InputRequest,
        LinkRequest,
        Notice,
        OptionKind,
        PermissionAnswered,
        PermissionAsked,
        PermissionCallback,
        PermissionOption,
        PermissionRequest,
        Permissions,
        PlanEntry,
        PlanPriority,
        PlanStatus,
        PlanUpdated,
        Rewind,
        RewindHow,
        RunResult,
        Setting,
        SettingsChanged,
        StopReason,
        ThoughtText,
        TitleChanged,
        ToolCall,
        ToolCallStarted,
        ToolCallUpdated,
        ToolKind,
        ToolStatus,
        Transcript,
        TranscriptEntry,
        TurnEnded,
        TurnResult,
        UsageUpdated,
        UserText,
    )
    from acpcli.errors import (
        AcpcliError,
        AgentStartError,
        AuthRequired,
        CapabilityMissing,
        ConfigError,
        ConnectionClosed,
        DamagedState,
        HandshakeError,
        HostLost,
        ProtocolError,
        RpcError,
        SessionBusy,
        SessionNotFound,
        StepTimeout,
        StorageError,
        UnknownSession,
        UsageError,
    )
    from acpcli.wire.transport import Transport, memory_pair

#: The public API (a literal, sorted list, for the tools that read it): what is not here is
#: private. The errors are acpcli.errors' (AcpcliError is the root of every one).
__all__ = [
    "AcpcliError",
    "Agent",
    "AgentStartError",
    "AgentText",
    "AuthRequired",
    "CapabilityMissing",
    "ChangedFile",
    "Checkpoint",
    "ConfigError",
    "ConnectionClosed",
    "DamagedState",
    "Event",
    "FieldKind",
    "FileStatus",
    "FormField",
    "FormRequest",
    "HandshakeError",
    "HostLost",
    "InputAction",
    "InputAnswer",
    "InputAnswered",
    "InputCallback",
    "InputRequest",
    "LinkRequest",
    "Notice",
    "OptionKind",
    "PermissionAnswered",
    "PermissionAsked",
    "PermissionCallback",
    "PermissionOption",
    "PermissionRequest",
    "Permissions",
    "PlanEntry",
    "PlanPriority",
    "PlanStatus",
    "PlanUpdated",
    "ProtocolError",
    "Rewind",
    "RewindHow",
    "RpcError",
    "RunResult",
    "SearchHit",
    "Session",
    "SessionBusy",
    "SessionInfo",
    "SessionNotFound",
    "Setting",
    "SettingsChanged",
    "StepTimeout",
    "StopReason",
    "StorageError",
    "StoredSession",
    "ThoughtText",
    "TitleChanged",
    "ToolCall",
    "ToolCallStarted",
    "ToolCallUpdated",
    "ToolKind",
    "ToolStatus",
    "Transcript",
    "TranscriptEntry",
    "Transport",
    "TurnEnded",
    "TurnResult",
    "UnknownSession",
    "UsageError",
    "UsageUpdated",
    "UserText",
    "__version__",
    "connect",
    "memory_pair",
    "run",
    "search",
    "sessions",
    "transcript",
]

#: Where each public name lives (imported on first use, so ``import acpcli`` stays cheap).
_WHERE = {
    **dict.fromkeys(("connect", "Agent", "Session", "SessionInfo"), "acpcli.api.client"),
    "run": "acpcli.api.sync",
    **dict.fromkeys(("SearchHit", "StoredSession", "search", "sessions", "transcript"), "acpcli.api.history"),
    **dict.fromkeys(("Transport", "memory_pair"), "acpcli.wire.transport"),
    **dict.fromkeys(
        (
            "AcpcliError", "AgentStartError", "AuthRequired", "CapabilityMissing", "ConfigError", "ConnectionClosed",
            "DamagedState", "HandshakeError", "HostLost", "ProtocolError", "RpcError", "SessionBusy", "SessionNotFound", "StepTimeout", "StorageError",
            "UnknownSession", "UsageError",
        ),
        "acpcli.errors",
    ),
}

if not TYPE_CHECKING:  # type checkers see the imports above, and no catch-all attribute

    def __getattr__(name: str) -> object:
        where = _WHERE.get(name) or ("acpcli.api.types" if name in __all__ and name != "__version__" else None)
        if where is None:
            raise AttributeError(f"module 'acpcli' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(where), name)
        globals()[name] = value  # once: later reads do not come here
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
