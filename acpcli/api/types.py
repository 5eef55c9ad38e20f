"""The typed objects of the Python API: what a turn yields, what a permission or input
request carries, what a turn and a script return.

Frozen dataclasses made from the session layer's own objects (the store's entries and
changes, the permission request's params, :mod:`acpcli.services.elicitation`'s requests): a caller
never reads a protocol dict to follow a turn. Importing this module is cheap (no pydantic,
no rich, no anyio), and building an event copies only what it names.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from acpcli.model import Store

# -- the protocol's enumerations, as types -------------------------------------------------------
# Each is what ACP names; an agent may send another string, which is kept as sent (so fields
# read as ``X | str``: a type checker offers the names, a script still sees what came).

#: How a turn ended.
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
#: What a tool call does.
ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]
#: Where a tool call stands.
ToolStatus = Literal["pending", "in_progress", "completed", "failed", "cancelled"]
#: The kinds of answer an agent offers to a permission request.
OptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
#: A plan entry's status and priority.
PlanStatus = Literal["pending", "in_progress", "completed"]
PlanPriority = Literal["high", "medium", "low"]
#: What was sent for a request for input.
InputAction = Literal["accept", "decline", "cancel"]
#: The kinds of a form's field.
FieldKind = Literal["text", "number", "integer", "boolean", "choice", "multi"]
#: A permission policy by name (``connect(permissions=...)``), as ``--permissions`` takes it.
Permissions = Literal["ask", "allow", "deny", "read-only"]

#: The stop reasons ACP names (an agent may send another string: it is kept as sent).
END_TURN = "end_turn"
MAX_TOKENS = "max_tokens"
MAX_TURN_REQUESTS = "max_turn_requests"
REFUSAL = "refusal"
CANCELLED = "cancelled"


# -- what a turn yields -------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentText:
    """A piece of the agent's answer, as it streams (the text of one chunk)."""

    text: str
    message_id: str | None = None


@dataclass(frozen=True)
class ThoughtText:
    """A piece of the agent's reasoning, as it streams."""

    text: str
    message_id: str | None = None


@dataclass(frozen=True)
class UserText:
    """The prompt as recorded in the transcript (or a user message the agent sends)."""

    text: str
    message_id: str | None = None


@dataclass(frozen=True)
class ToolCall:
    """A tool call as last reported: ``kind`` (``read``, ``edit``, ``execute``…) and ``status``
    (``pending``, ``in_progress``, ``completed``, ``failed``, ``cancelled``) are kept as the
    agent sent them, unknown values included."""

    tool_call_id: str
    title: str | None
    kind: ToolKind | str
    status: ToolStatus | str
    content: tuple[Mapping[str, Any], ...] = ()
    locations: tuple[str, ...] = ()
    raw_input: Any = None
    raw_output: Any = None

    @classmethod
    def of(cls, entry: Any) -> ToolCall:
        """The store's tool call (:class:`acpcli.model.ToolCall`), as the API's."""
        return cls(
            entry.tool_call_id, entry.title, entry.kind, entry.status, tuple(entry.content), cls.paths(entry.locations),
            entry.raw_input, entry.raw_output,
        )

    @staticmethod
    def paths(locations: Any) -> tuple[str, ...]:
        """The paths of a tool call's ``locations`` (the wire's list of ``{path, line}``)."""
        if not isinstance(locations, list):
            return ()
        return tuple(loc["path"] for loc in locations if isinstance(loc, dict) and isinstance(loc.get("path"), str))


@dataclass(frozen=True)
class ToolCallStarted:
    """The agent announced a tool call (or asked permission for one it had not announced)."""

    call: ToolCall


@dataclass(frozen=True)
class ToolCallUpdated:
    """A tool call changed (status, title, content, …): ``call`` is how it stands now."""

    call: ToolCall


@dataclass(frozen=True)
class PlanEntry:
    """One step of the agent's plan."""

    content: str
    status: PlanStatus | str = "pending"
    priority: PlanPriority | str = "medium"


@dataclass(frozen=True)
class PlanUpdated:
    """The agent's plan, whole, as it stands now."""

    entries: tuple[PlanEntry, ...]


@dataclass(frozen=True)
class PermissionOption:
    """One answer the agent offers to a permission request; ``kind`` is ``allow_once``,
    ``allow_always``, ``reject_once`` or ``reject_always`` (or an unknown string, kept)."""

    option_id: str
    name: str
    kind: OptionKind | str


@dataclass(frozen=True)
class PermissionRequest:
    """The agent asks before a tool call: which call (``tool_call_id``, ``title``, ``kind``,
    ``raw_input``, ``locations``) and the answers it offers (``options``)."""

    session_id: str
    tool_call_id: str | None
    title: str | None
    kind: ToolKind | str
    options: tuple[PermissionOption, ...]
    raw_input: Any = None
    locations: tuple[str, ...] = ()

    def option(self, *kinds: str) -> PermissionOption | None:
        """The first offered option of the first of ``kinds`` that has one."""
        for kind in kinds:
            for option in self.options:
                if option.kind == kind:
                    return option
        return None

    def allow(self) -> PermissionOption | None:
        """The option that allows this call once (else always), if offered."""
        return self.option("allow_once", "allow_always")

    def reject(self) -> PermissionOption | None:
        """The option that rejects this call once (else always), if offered."""
        return self.option("reject_once", "reject_always")


@dataclass(frozen=True)
class PermissionAsked:
    """A permission request reached the policy or the callback."""

    request: PermissionRequest


@dataclass(frozen=True)
class PermissionAnswered:
    """What was answered: the option chosen, or None (``cancelled``: dismissed, withdrawn
    because the turn was cancelled, or nobody could answer)."""

    request: PermissionRequest
    option: PermissionOption | None


@dataclass(frozen=True)
class FormField:
    """One field of a form the agent asks the user to fill in (``kind``: ``text``,
    ``number``, ``integer``, ``boolean``, ``choice`` or ``multi``)."""

    name: str
    kind: FieldKind
    title: str
    description: str = ""
    required: bool = False
    default: Any = None
    #: ``(value, title)`` of each choice (``choice`` and ``multi`` fields).
    options: tuple[tuple[str, str], ...] = ()
    sensitive: bool = False


@dataclass(frozen=True)
class FormRequest:
    """The agent asks for input through a form (ACP ``elicitation/create``, mode ``form``)."""

    message: str
    fields: tuple[FormField, ...]
    session_id: str | None = None
    title: str = ""


@dataclass(frozen=True)
class LinkRequest:
    """The agent asks the user to open a link (``elicitation/create``, mode ``url``);
    ``warnings`` say what about the URL deserves caution."""

    message: str
    url: str
    host: str
    warnings: tuple[str, ...] = ()
    session_id: str | None = None


InputRequest = FormRequest | LinkRequest


@dataclass(frozen=True)
class InputAnswer:
    """An answer to an :data:`InputRequest`: ``accept`` (with the form's values), ``decline``
    or ``cancel``. Accepted values are checked against the form (one that fails it is sent as
    ``decline``)."""

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, Any] | None = None

    @classmethod
    def accept(cls, values: Mapping[str, Any] | None = None) -> InputAnswer:
        return cls("accept", dict(values or {}))

    @classmethod
    def decline(cls) -> InputAnswer:
        return cls("decline")

    @classmethod
    def cancel(cls) -> InputAnswer:
        return cls("cancel")


@dataclass(frozen=True)
class InputAnswered:
    """The agent asked for input; ``action`` is what was sent (``accept``, ``decline`` or
    ``cancel``)."""

    request: InputRequest
    action: InputAction | str


@dataclass(frozen=True)
class UsageUpdated:
    """The context window (``used`` of ``size`` tokens) and the cost so far, as reported."""

    used: int | None
    size: int | None
    cost: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Setting:
    """One of the session's settings (a mode, a model, a config option): ``key`` is what
    :meth:`~acpcli.api.client.Session.set` takes, ``current`` its value now (``current_name``
    as shown), ``values`` the ``(value, name)`` pairs it may take (empty for a boolean)."""

    key: str
    name: str
    current: str
    current_name: str
    values: tuple[tuple[str, str], ...] = ()
    category: str | None = None


@dataclass(frozen=True)
class SettingsChanged:
    """The session's mode, model or config options changed: all its settings as they are now."""

    settings: tuple[Setting, ...]


@dataclass(frozen=True)
class TitleChanged:
    """The agent gave the session a title."""

    title: str | None


@dataclass(frozen=True)
class Notice:
    """A line acpcli would have said on stderr: an answer given by the policy, a refusal, a
    declined request for input. Agent text in it is made safe (no control characters)."""

    text: str


@dataclass(frozen=True)
class TurnResult:
    """How a turn ended: its stop reason (``end_turn``, ``cancelled``, ``refusal``,
    ``max_tokens``, ``max_turn_requests`` or a string the agent chose), the session, and the
    agent's text of this turn."""

    stop_reason: StopReason | str
    session_id: str
    text: str

    @property
    def ok(self) -> bool:
        """The agent ended the turn normally (``end_turn``)."""
        return self.stop_reason == END_TURN


@dataclass(frozen=True)
class TurnEnded:
    """The last event of every turn."""

    result: TurnResult


Event = (
    AgentText
    | ThoughtText
    | UserText
    | ToolCallStarted
    | ToolCallUpdated
    | PlanUpdated
    | PermissionAsked
    | PermissionAnswered
    | InputAnswered
    | UsageUpdated
    | SettingsChanged
    | TitleChanged
    | Notice
    | TurnEnded
)

#: One entry of a stored transcript (:attr:`Transcript.entries`).
TranscriptEntry = UserText | AgentText | ThoughtText | ToolCall | PlanUpdated | TurnEnded

#: Answers a permission request: the option chosen, or None to dismiss it (``cancelled``,
#: and the turn is cancelled).
PermissionCallback = Callable[[PermissionRequest], Awaitable["PermissionOption | None"]]
#: Answers a request for input: an :class:`InputAnswer`, or None (``cancel``).
InputCallback = Callable[[InputRequest], Awaitable["InputAnswer | None"]]


# -- transcripts and results -----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Transcript:
    """A session's transcript (the store every update went into), rendered as ``acpcli show``
    and ``acpcli export`` render it."""

    _store: Store = field(repr=False)
    session_id: str
    title: str | None = None

    def markdown(self) -> str:
        """The transcript as Markdown (``acpcli export --format markdown``)."""
        return self._written("markdown")

    def text(self) -> str:
        """The transcript as plain text (``acpcli show`` in a pipe)."""
        return self._written("text")

    def jsonl(self) -> str:
        """One JSON object per entry (``acpcli export --format jsonl``)."""
        return self._written("jsonl")

    @property
    def entries(self) -> tuple[TranscriptEntry, ...]:
        """The transcript as typed entries, in order: each message whole (:class:`UserText`,
        :class:`AgentText`, :class:`ThoughtText`), each tool call as it last stood
        (:class:`ToolCall`), each plan (:class:`PlanUpdated`), and where each turn ended
        (:class:`TurnEnded`, with the agent's text of that turn)."""
        from acpcli import model as st

        out: list[TranscriptEntry] = []
        said: list[str] = []
        for entry in self._store.entries:
            if isinstance(entry, st.Message):
                if entry.kind == st.AGENT:
                    out.append(AgentText(entry.text, entry.message_id))
                    said.append(entry.text)
                elif entry.kind == st.THOUGHT:
                    out.append(ThoughtText(entry.text, entry.message_id))
                else:
                    out.append(UserText(entry.text, entry.message_id))
            elif isinstance(entry, st.ToolCall):
                out.append(ToolCall.of(entry))
            elif isinstance(entry, st.Plan):
                out.append(PlanUpdated(tuple(
                    PlanEntry(str(e.get("content", "")), str(e.get("status", "pending")), str(e.get("priority", "medium")))
                    for e in entry.entries
                    if isinstance(e, dict)
                )))
            elif isinstance(entry, st.TurnEnd):
                stop = entry.stop_reason or ("error" if entry.error else "end_turn")
                out.append(TurnEnded(TurnResult(stop, self.session_id, "".join(said))))
                said = []
        return tuple(out)

    def agent_text(self) -> str:
        """The agent's messages' text, joined by blank lines."""
        from acpcli.model import AGENT, Message

        return "\n\n".join(e.text for e in self._store.entries if isinstance(e, Message) and e.kind == AGENT)

    def __len__(self) -> int:
        return len(self._store.entries)

    def _written(self, output_format: str) -> str:
        import io

        from acpcli.render.export import write_transcript

        stream = io.StringIO()
        title = self.title if self.title is not None else self._store.title
        write_transcript(self._store, output_format, stream, session_id=self.session_id, title=title)
        return stream.getvalue()


@dataclass(frozen=True)
class RunResult:
    """What :func:`acpcli.run` returns: the turn's result and the session's transcript."""

    session_id: str
    stop_reason: StopReason | str
    text: str
    markdown: str
    transcript_text: str

    @property
    def ok(self) -> bool:
        return self.stop_reason == END_TURN


# -- checkpoints ---------------------------------------------------------------------------------

#: How a file changed: ``A`` added, ``M`` modified (content or exec bit), ``D`` deleted, ``R``
#: renamed (from ``old_path``), ``T`` changed kind (a file became a link). In a :class:`Rewind`:
#: ``M`` written back, ``A`` brought back, ``D`` removed.
FileStatus = Literal["A", "M", "D", "R", "T"]


@dataclass(frozen=True)
class ChangedFile:
    """One file a turn (or a rewind) changed. ``path`` is relative to ``root`` (the session's
    folder, or one of its extra roots); ``added``/``removed``: lines (None for a binary file,
    and in a rewind)."""

    path: str
    status: FileStatus | str
    root: str
    added: int | None = None
    removed: int | None = None
    old_path: str | None = None


@dataclass(frozen=True)
class Checkpoint:
    """The session's files after turn ``turn`` (0: before the first turn), from
    :meth:`acpcli.Session.checkpoints`: the prompt's first line, when it was taken (seconds
    since the epoch), and what the turn changed."""

    turn: int
    prompt: str
    time: float
    files: tuple[ChangedFile, ...] = ()

    @property
    def added(self) -> int:
        """Lines the turn added (binary files count none)."""
        return sum(f.added or 0 for f in self.files)

    @property
    def removed(self) -> int:
        """Lines the turn removed."""
        return sum(f.removed or 0 for f in self.files)


#: How a rewound conversation's new session holds its turns: the agent forked it (every turn
#: kept), the transcript goes with its first prompt, or no turn is kept.
RewindHow = Literal["fork", "transcript", "empty"]


@dataclass(frozen=True)
class Rewind:
    """What :meth:`acpcli.Session.rewind` did: ``files`` written back, brought back or removed
    (empty when the files were not asked for, or were as they should be), ``skipped`` paths
    left alone with why; ``session`` the new :class:`acpcli.Session` holding the turns before
    ``turn`` (None when the conversation was not asked for), ``how`` it holds them."""

    turn: int
    files: tuple[ChangedFile, ...] = ()
    skipped: tuple[tuple[ChangedFile, str], ...] = ()
    session: Any = None
    how: RewindHow | str | None = None
