"""The exception tree and the exit codes, in one place.

::

    AcpcliError                      exit_code
    ├── UsageError                   USAGE              bad flags, bad paths, unknown agent name
    ├── ConfigError                  CONFIG             unreadable config, malformed MCP JSON
    │   └── RegistryError            CONFIG             the agent registry cannot be fetched (no cache) or is malformed
    ├── AgentStartError              AGENT_START        agent command missing / not executable
    │   └── UnsafeArchive            AGENT_START        a registry agent's archive would write outside its folder
    ├── ConnectionClosed             AGENT_EXITED       agent exited or closed stdout mid-conversation
    ├── HandshakeError               HANDSHAKE          initialize failed or spoke a version we cannot
    ├── CapabilityMissing            CAPABILITY         the agent did not advertise what was asked for
    ├── RpcError                     AGENT_ERROR        the agent answered a request with a JSON-RPC error
    │   ├── AuthRequired             AUTH_REQUIRED      ... and that error says authentication is needed
    │   ├── UnknownSession           SESSION_NOT_FOUND  ... to a load/resume of a session it does not know
    │   ├── AnswerTooLarge           AGENT_ERROR        ... or its answer was a line over the size limit
    │   └── ProtocolError            AGENT_ERROR        ... or it sent what ACP does not allow (acpcli.protocol)
    │       └── UnprintableId        AGENT_ERROR        ... or a new session id a script cannot be given back
    ├── LoginFailed                  AUTH_REQUIRED      `acpcli auth`: the agent's login program failed
    ├── SessionNotFound              SESSION_NOT_FOUND  no such session id in the local index
    ├── TurnStopped                  (per stop reason)  a prompt turn ended other than with end_turn
    ├── StepTimeout                  TIMEOUT            a setup step or a turn outlasted --timeout
    ├── StorageError                 STORAGE            local state could not be saved (disk full, read-only)
    │   └── DatabaseLocked           BUSY               another acpcli held the database's write lock past the wait
    ├── SessionBusy                  BUSY               another acpcli command is running a turn on the session
    ├── DamagedState                 DAMAGED            the index or event log is damaged (``acpcli doctor``)
    ├── HostLost                     HOST_LOST          the session's host went away mid-turn
    ├── HostReported                 (as reported)      the session's host ended a request with this error
    ├── CheckpointError              STORAGE            a checkpoint could not be taken, read or restored (disk full, damaged store)
    │   ├── CheckpointsOff           CONFIG             checkpoints are off: no git on PATH, or the tree is over the bounds
    │   ├── CheckpointsBusy          BUSY               another acpcli held the session's checkpoints past the wait
    │   ├── NoCheckpoint             USAGE              no checkpoint of that turn (or nothing to undo)
    │   └── RewindRefused            USAGE              a file to restore was changed by hand since the last checkpoint
    ├── OutputError                  OUTPUT             the transcript could not be written (-o FILE, closed stdout)
    ├── Interrupted                  INTERRUPTED        a second Ctrl-C killed the agent mid-turn
    │   └── Terminated               TERMINATED/HANGUP  SIGTERM or SIGHUP (the terminal was closed)
    └── OutputClosed                 OK                 whoever read stdout went away (`| head -1`)

Library code raises these; only ``acpcli.cli`` turns them into a one-line message and an
exit code (``acpcli.cli.main``). Nothing below the CLI calls ``sys.exit``.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

from acpcli.text.safe import clip_lines, safe_text


class ExitCode(enum.IntEnum):
    """Every exit status acpcli uses. Documented in docs/scripting.md ("Exit codes")."""

    OK = 0
    FAILURE = 1  # an unexpected internal error (a bug: please report it)
    USAGE = 2  # bad command line or input; matches click's own usage errors
    CONFIG = 3  # config file, MCP server file or agent registry unreadable or malformed
    AGENT_START = 4  # the agent command was not found or could not be executed
    HANDSHAKE = 5  # initialize failed, or the agent speaks a protocol version we do not
    CAPABILITY = 6  # the agent does not advertise the capability the command needs
    AGENT_ERROR = 7  # the agent answered with a JSON-RPC error
    SESSION_NOT_FOUND = 8  # unknown session id
    AGENT_EXITED = 9  # the agent exited or closed its stdout before answering
    AUTH_REQUIRED = 10  # the agent requires authentication first (see `acpcli auth`)
    CANCELLED = 11  # the turn ended with stopReason "cancelled" (not by our Ctrl-C)
    REFUSAL = 12  # stopReason "refusal"
    MAX_TOKENS = 13  # stopReason "max_tokens"
    MAX_TURN_REQUESTS = 14  # stopReason "max_turn_requests"
    TIMEOUT = 15  # a setup step (initialize, session/new, load, resume) or the turn outlasted --timeout
    STORAGE = 16  # the turn ran, but what arrived could not all be saved locally (disk full, read-only)
    OUTPUT = 17  # the transcript could not be written (-o FILE, a closed or full stdout)
    BUSY = 18  # the session is in use by another acpcli command (--no-wait), or the local database stayed locked by another acpcli
    DAMAGED = 19  # local state is damaged (`acpcli doctor` found a problem; `doctor --repair` salvages)
    HOST_LOST = 20  # the session's host went away mid-turn (killed); what arrived before is stored
    NO_WINNER = 21  # `race`: no candidate ended its turn (with its --check passing)
    HANGUP = 129  # SIGHUP (the terminal was closed), 128 + 1
    INTERRUPTED = 130  # Ctrl-C (SIGINT), as shells expect
    TERMINATED = 143  # SIGTERM, 128 + 15


class AcpcliError(Exception):
    """Base of every error acpcli reports to the user as one line."""

    exit_code: ExitCode = ExitCode.FAILURE

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        # Messages quote what agents wrote (errors, stderr lines): shown, never obeyed, and
        # never a megabyte of it (an agent's 1 MB session id in its "not found").
        message = clip_lines(safe_text(message))
        super().__init__(message)
        self.message = message
        self.hint = hint

    @property
    def hint(self) -> str | None:
        """A second line of advice (control characters made visible, like the message)."""
        return self._hint

    @hint.setter
    def hint(self, value: str | None) -> None:
        self._hint = clip_lines(safe_text(value)) if value is not None else None

    def __str__(self) -> str:
        return self.message


class UsageError(AcpcliError):
    exit_code = ExitCode.USAGE


class ConfigError(AcpcliError):
    exit_code = ExitCode.CONFIG


class RegistryError(ConfigError):
    """The ACP agent registry could not be fetched (and no copy is cached), or is not JSON
    or not the documented shape (``acpcli.agents.registry``)."""

    #: Why a fetch failed, without the registry's address (empty: not a fetch).
    reason: str = ""


class AgentStartError(AcpcliError):
    exit_code = ExitCode.AGENT_START


class UnsafeArchive(AgentStartError):
    """A registry agent's archive that would write outside its folder (absolute paths, ``..``,
    escaping links) or holds device files (``acpcli.agents.install``)."""


class ConnectionClosed(AcpcliError):
    """The agent went away: carries its exit status and the last lines of its stderr."""

    exit_code = ExitCode.AGENT_EXITED

    def __init__(
        self,
        message: str,
        *,
        returncode: int | None = None,
        stderr_tail: list[str] | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.returncode = returncode
        self.stderr_tail = list(stderr_tail or [])


class HandshakeError(AcpcliError):
    exit_code = ExitCode.HANDSHAKE


class CapabilityMissing(AcpcliError):
    """A command needs a capability the agent did not advertise. The method is never sent."""

    exit_code = ExitCode.CAPABILITY


class RpcError(AcpcliError):
    """A JSON-RPC error object, received from the agent or to be sent to it."""

    exit_code = ExitCode.AGENT_ERROR

    # JSON-RPC 2.0 and ACP error codes
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    REQUEST_CANCELLED = -32800
    AUTH_REQUIRED = -32000
    RESOURCE_NOT_FOUND = -32002

    def __init__(self, code: int, message: str, data: Any = None, *, method: str | None = None) -> None:
        text = f"{method}: {message} ({code})" if method else f"{message} ({code})"
        detail = data_detail(data, message)
        if detail:
            # The agent's `data` often says what `message` does not (codex: the model
            # provider's answer; gemini: "Invalid session identifier ..."): show it, indented.
            text += "\n  " + detail.replace("\n", "\n  ")
        super().__init__(text)
        self.code = code
        self.rpc_message = message
        self.data = data
        self.method = method

    def data_detail(self) -> str:
        """The useful part of the error's ``data``, sanitized, at most a few lines ("" if none)."""
        return data_detail(self.data, self.rpc_message)

    def to_wire(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member for this error."""
        err: dict[str, Any] = {"code": self.code, "message": self.rpc_message}
        if self.data is not None:
            err["data"] = self.data
        return err

    @classmethod
    def from_wire(cls, error: Any, *, method: str | None = None) -> RpcError:
        """Build from a received ``error`` member (:func:`acpcli.protocol.check_error`). A
        malformed one is still the failure it reports: read as far as it goes, with what was
        malformed said in its message."""
        from acpcli.protocol import InvalidMessage, check_error

        try:
            check_error(error)
        except InvalidMessage as bad:
            malformed: str | None = bad.detail
        else:
            malformed = None
        if not isinstance(error, dict):
            return cls(cls.INTERNAL_ERROR, f"malformed error: {error!r}", method=method)
        code = error.get("code")
        message = error.get("message")
        if not isinstance(code, int) or isinstance(code, bool):
            code = cls.INTERNAL_ERROR
        if not isinstance(message, str):
            message = "(no message)"
        if malformed is not None:
            message += f" [malformed error object: {malformed}]"
        klass = AuthRequired if code == cls.AUTH_REQUIRED else cls  # by code: ACP's auth_required
        return klass(code, message, error.get("data"), method=method)


#: How much of an error's ``data`` is shown: lines, and characters per line.
DETAIL_LINES = 4
DETAIL_WIDTH = 300


def _clean(text: str) -> str:
    """Text from the agent made safe for a terminal: control characters shown, not obeyed
    (:func:`~acpcli.text.safe.safe_text`, as for every agent string); tabs as spaces,
    newlines kept (they split the detail into lines)."""
    return safe_text(text.replace("\r\n", "\n").replace("\t", " "))


def data_detail(data: Any, message: str = "") -> str:
    """The useful part of a JSON-RPC error's ``data`` for a person: a string as it is; an
    object's ``message``/``details``/``detail``/``error`` string field(s); else compact JSON.
    Sanitized (control characters shown as ``^[`` and the like), blank lines dropped, at most :data:`DETAIL_LINES`
    lines of :data:`DETAIL_WIDTH` characters; "" when there is nothing beyond ``message``.
    """
    import json

    if data is None or data == "" or data == {} or data == []:
        return ""
    text: str
    if isinstance(data, str):
        text = data
    elif isinstance(data, dict):
        parts = [
            value.strip()
            for key in ("message", "details", "detail", "error", "reason")
            if isinstance((value := data.get(key)), str) and value.strip()
        ]
        if not parts and isinstance(data.get("error"), dict):
            return data_detail(data["error"], message)
        text = "\n".join(dict.fromkeys(parts)) if parts else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    else:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    lines = [line.strip() for line in _clean(text).split("\n") if line.strip()]
    if not lines or (len(lines) == 1 and lines[0] == message.strip()):
        return ""
    shown = [line if len(line) <= DETAIL_WIDTH else line[: DETAIL_WIDTH - 1] + "…" for line in lines[:DETAIL_LINES]]
    if len(lines) > DETAIL_LINES:
        shown[-1] += " …"
    return "\n".join(shown)


class AuthRequired(RpcError):
    exit_code = ExitCode.AUTH_REQUIRED


class LoginFailed(AcpcliError):
    """A login run by ``acpcli auth`` did not succeed (the agent still needs one)."""

    exit_code = ExitCode.AUTH_REQUIRED


class UnknownSession(RpcError):
    """The agent answered a load or resume with "not found": it does not know the session."""

    exit_code = ExitCode.SESSION_NOT_FOUND


class AnswerTooLarge(RpcError):
    """The agent's answer to a request was a line over the line limit: it was dropped."""

    def __init__(self, size: int, limit: int, *, method: str | None = None) -> None:
        message = f"the agent's answer was a {size}-byte line, over the {limit}-byte limit; it was dropped"
        super().__init__(RpcError.INTERNAL_ERROR, message, {"size": size, "limit": limit}, method=method)
        self.size = size
        self.limit = limit


class ProtocolError(RpcError):
    """The agent sent what ACP does not allow, where acpcli cannot read past it: an answer
    without a member it must carry, or a request whose params the schema rejects (the run-time
    contract: :mod:`acpcli.protocol`). One line naming the method and the member, without a
    JSON-RPC code: the agent did not send one. For an agent's request it is the answer the agent
    gets (``code`` ``-32602``); for an answer, the request fails with it (exit 7)."""

    def __init__(self, method: str, problem: str, *, code: int = RpcError.INTERNAL_ERROR) -> None:
        AcpcliError.__init__(self, f"{method}: {problem}")
        self.code = code
        self.rpc_message = self.message
        self.data = None
        self.method = method


class UnprintableId(ProtocolError):
    """A new session's id, to be printed alone on stdout for a script (``ID=$(acpcli new ...)``
    then ``prompt --session "$ID"``), holds control characters the agent put there: printed raw
    a terminal would obey them, printed escaped no command would find the session. Refused
    instead, with the way on (the session is recorded: ``--last`` continues it)."""

    def __init__(self, session_id: str) -> None:
        from acpcli.text.safe import shown_id

        super().__init__(
            "the new session's id",
            f"the agent chose one with control characters ('{shown_id(session_id)}'): "
            "not printed, since no command could be given it back",
        )
        self.hint = "the session is recorded: `acpcli prompt --last` (same agent and directory) continues it"


class SessionNotFound(AcpcliError):
    exit_code = ExitCode.SESSION_NOT_FOUND


class TurnStopped(AcpcliError):
    """A prompt turn ended with a stop reason other than ``end_turn``."""

    _CODES: ClassVar[dict[str, ExitCode]] = {
        "cancelled": ExitCode.CANCELLED,
        "refusal": ExitCode.REFUSAL,
        "max_tokens": ExitCode.MAX_TOKENS,
        "max_turn_requests": ExitCode.MAX_TURN_REQUESTS,
    }

    def __init__(self, stop_reason: str) -> None:
        super().__init__(f"the turn ended: {stop_reason.replace('_', ' ')}")
        self.stop_reason = stop_reason
        self.exit_code = self._CODES.get(stop_reason, ExitCode.AGENT_ERROR)


class StepTimeout(AcpcliError):
    """A bounded step (initialize, session setup, or a turn under ``--timeout``) took too long."""

    exit_code = ExitCode.TIMEOUT


class StorageError(AcpcliError):
    """Local state (the index, the event log) could not be written: full or read-only disk."""

    exit_code = ExitCode.STORAGE


class DatabaseLocked(StorageError):
    """Another acpcli process held the index's write lock for longer than acpcli waits for it.
    Not a failure of the disk: nothing is damaged, the command can be run again."""

    exit_code = ExitCode.BUSY


class SessionBusy(AcpcliError):
    """Another acpcli command is running a turn on this session (one writer per session), and
    the command was told not to wait (``--no-wait``), or the session cannot be removed now."""

    exit_code = ExitCode.BUSY


class DamagedState(AcpcliError):
    """Local state (the SQLite index, an event log row) is damaged: ``acpcli doctor`` says what,
    ``acpcli doctor --repair`` salvages what is readable into a fresh index."""

    exit_code = ExitCode.DAMAGED


class HostLost(AcpcliError):
    """The live session's host (:mod:`acpcli.host`) went away while this command waited on it
    (killed): what arrived before is stored; the next command starts a new host."""

    exit_code = ExitCode.HOST_LOST


class HostReported(AcpcliError):
    """An error the session's host met on this command's behalf (the agent could not start,
    the session was not found, the turn failed): its message and exit code, as the host saw
    them."""

    def __init__(self, message: str, exit_code: int, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        try:
            self.exit_code = ExitCode(exit_code)
        except ValueError:
            self.exit_code = ExitCode.FAILURE


class CheckpointError(AcpcliError):
    """A checkpoint of the working tree could not be taken, read or restored (a full disk, a
    damaged store, git failing): ``acpcli.worktree``. Around a turn it is a warning, never the
    turn's failure (a full disk: exit 16 at the end of the command, ``disk_full``)."""

    exit_code = ExitCode.STORAGE
    #: The disk (or the quota) had no room for it.
    disk_full: bool = False


class CheckpointsOff(CheckpointError):
    """Checkpoints cannot be taken here: no git on PATH (or too old a one), or the tree is over
    the bounds (too many files, or the first checkpoint took too long). Said in one line."""

    exit_code = ExitCode.CONFIG


class CheckpointsBusy(CheckpointError):
    """Another acpcli process held the session's checkpoint store for longer than the wait."""

    exit_code = ExitCode.BUSY


class NoCheckpoint(CheckpointError):
    """There is no checkpoint of the turn asked for (or nothing to undo)."""

    exit_code = ExitCode.USAGE


class RewindRefused(CheckpointError):
    """A rewind would overwrite files the user changed by hand since the last checkpoint: it
    names them (``paths``) and writes nothing; ``--force`` overrides. ``plan`` is what the
    rewind would have done (an :class:`acpcli.worktree.RewindPlan`)."""

    exit_code = ExitCode.USAGE

    def __init__(self, message: str, *, paths: list[Any], plan: Any, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.paths = paths
        self.plan = plan


class OutputError(AcpcliError):
    """The transcript could not be written where the user asked (``-o FILE``, stdout)."""

    exit_code = ExitCode.OUTPUT


class Interrupted(AcpcliError):
    """The person stopped the command (a second Ctrl-C): the agent was killed. Reported as
    one line without the ``error:`` prefix."""

    exit_code = ExitCode.INTERRUPTED

    def __init__(self, message: str = "interrupted") -> None:
        super().__init__(message)


class Terminated(Interrupted):
    """SIGTERM or SIGHUP arrived: the turn was cancelled, the agent's process group killed,
    what had arrived stored. Exit 143 (SIGTERM) or 129 (SIGHUP)."""

    def __init__(self, signum: int) -> None:
        import signal

        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        super().__init__(f"stopped by {name}")
        self.signum = signum
        self.exit_code = ExitCode.HANGUP if signum == signal.SIGHUP else ExitCode.TERMINATED


class OutputClosed(AcpcliError):
    """stdout's reader went away (a broken pipe). Not a failure: the CLI leaves quietly."""

    exit_code = ExitCode.OK

    def __init__(self) -> None:
        super().__init__("the reader of the output went away")


def leaf_error(err: BaseException) -> BaseException:
    """The error to report from an exception group (task groups wrap what they raise): the
    first signal stop (:class:`Interrupted`), broken pipe, acpcli error or Ctrl-C inside it,
    else the group itself."""
    inner = getattr(err, "exceptions", None)
    if not inner:
        return err
    leaves = [leaf_error(sub) for sub in inner]
    for wanted in (Interrupted, OutputClosed, BrokenPipeError, AcpcliError, KeyboardInterrupt):
        for leaf in leaves:
            if isinstance(leaf, wanted):
                return leaf
    return err
