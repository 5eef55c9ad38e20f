"""Permission decisions: what the agent may do, by the user's policy or by the user's answer.

Permissions (``--permissions``):

``ask``        show the request and every option; the person picks (the default on a terminal)
``allow``      pick the agent's ``allow_once`` option (``allow_always`` if that is all it offers)
``deny``       pick the agent's ``reject_once`` option (``reject_always`` if that is all) — a real
               rejection the agent understands, never a fake ``cancelled``
``read-only``  allow tool calls of kind read / search / fetch / think, reject the rest

What each policy lets the agent do through the client's own methods:

============  =================  ===================  ==========================================
policy        fs/read_text_file  fs/write_text_file   terminal/*        permission requests
============  =================  ===================  ==========================================
``ask``       served             served               served            the person picks
``allow``     served             served               served            allow_once
``read-only`` served             **refused**          **refused**       read kinds allowed, rest rejected
``deny``      served             **refused**          **refused**       every one rejected
============  =================  ===================  ==========================================

``deny`` is also what a script gets when no policy is given (nobody can answer a question).
A refused method is answered with a JSON-RPC error :data:`POLICY_REFUSED` (-32603) whose message
names the policy and how to change it (``--permissions ask|allow`` or the ``permissions`` config
key); ``data`` carries ``{"policy": ...}``. The capabilities stay advertised as the ``--no-fs``
and ``--no-terminal`` flags decide: an agent that knows it may write through the client asks
the client, so the refusal reaches the user (:class:`Refusals`: one stderr line each), rather
than the agent trying another way the user never hears of. Every refusal by a policy, of a
method or of a permission request, is reported to :class:`Refusals`.

"Always" answers: an ``allow_always`` / ``reject_always`` option is the *agent's* promise to
remember what it scoped ("commands that start with ``touch x``"); acpcli never widens it. It
remembers such an answer itself only for **exactly the same request** in the same session (the
same kind, title, ``rawInput``, locations and content: :func:`request_key`), never for a kind, so
an agent that asks again about something else is asked about again. A request that names
nothing (no title, input, locations or content) is never answered from memory. A request whose
``toolCall`` carries no ``kind`` (v1 agents often send only the ``toolCallId``) is judged by
what the tool call was announced with. When the agent offers no option of the kind a policy
needs, the answer is ``cancelled``: an option is never invented, and an allow option is never
picked to refuse.

Every answer acpcli gives on the user's behalf (by the policy, or from memory) is one line
reported through :class:`Refusals` (stderr), so it stays in the scrollback.

Through a live session's host, each turn runs under the policy of the command or terminal that
sent it, not the host's: the prompt carries a :class:`Grant` (the policy as the sender's decider
resolved it, ``--no-fs``, ``--no-terminal``), which the host applies to that turn's file and
terminal requests (:class:`acpcli.services.requests.TurnPolicy`); its permission requests are
decided by the sender's own :class:`PermissionPolicy`.

Files: :mod:`acpcli.services.files`; the methods served: :mod:`acpcli.services.requests`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from acpcli.errors import RpcError, UsageError
from acpcli.text.safe import safe_line

if TYPE_CHECKING:
    from rich.text import Text

    from acpcli.env import Environment
    from acpcli.model import Store

logger = logging.getLogger("acpcli.services.permissions")

POLICIES = ("ask", "allow", "deny", "read-only")
READ_ONLY_KINDS = frozenset({"read", "search", "fetch", "think"})
#: Policies under which the agent may read files but neither write them nor run commands.
READ_ONLY_POLICIES = frozenset({"deny", "read-only"})
#: The JSON-RPC error code a method refused by the policy is answered with.
POLICY_REFUSED = RpcError.INTERNAL_ERROR
#: How to change the policy, as told to the user and the agent.
CHANGE_POLICY = 'use --permissions ask|allow, or permissions = "ask" in the config'
#: ... when nobody can be asked (stdin or stdout is not a terminal): ``ask`` would not help.
CHANGE_POLICY_UNATTENDED = (
    "nobody can be asked here (stdin or stdout is not a terminal): "
    'use --permissions allow (or permissions = "allow" in the config), or run it on a terminal'
)
#: The most "always" answers remembered per policy (the oldest are forgotten first).
MAX_REMEMBERED = 4096

class AskedSession(Protocol):
    """What a permission decision reads of the session asking: its id and its transcript
    (a :class:`~acpcli.session.feed.SessionFeed`)."""

    session_id: str
    store: Store


Asker = Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any] | None]]


# -- refusals ----------------------------------------------------------------------------------


def shown(text: str, limit: int = 160) -> str:
    """``text`` (from the agent) made safe for one line of output (:func:`safe_line`: control
    characters shown as ``^[``-style escapes, never passed to the terminal), cut at ``limit``."""
    line = safe_line(text)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def refusal_message(what: str, policy: str, change: str = CHANGE_POLICY) -> str:
    """The words for one refusal: what was refused, the policy, how to change it."""
    return f"refused {what} (policy {policy}): {change}"


class Refusals:
    """Everything the permission policy refused, and every other answer acpcli gave on the
    user's behalf, reported to the user as it happens.

    ``report`` gets one line per refusal or answer (the CLI writes it on stderr); :attr:`count`
    (refusals only) lets the end of a turn say that a refusal may be why the agent stopped.
    ``change`` says how to change the policy: :data:`CHANGE_POLICY`, or
    :data:`CHANGE_POLICY_UNATTENDED` when nobody can be asked.
    """

    #: The most lines kept in :attr:`lines` (every line is still reported).
    KEEP = 100

    def __init__(self, report: Callable[[str], None] | None = None, *, change: str = CHANGE_POLICY) -> None:
        self._report = report
        self.change = change
        self.count = 0
        self.lines: list[str] = []
        #: Set while a terminal view draws the session (the REPL): takes a line into the
        #: view's scrollback, in order (True), or declines it (False: ``report`` gets it).
        self.screen: Callable[[str], bool] | None = None

    def __call__(self, what: str, policy: str, live: AskedSession | None = None) -> None:
        self.count += 1
        self.note(f"acpcli: {refusal_message(shown(what), policy, self.change)}", live)

    def refused(self, what: str, why: str) -> None:
        """A refusal for a reason other than the policy (``why``: the prompt was sent with
        ``--no-fs``): one line, counted as a refusal."""
        self.count += 1
        self.note(f"acpcli: refused {shown(what)}: {why}")

    def note(self, line: str, live: AskedSession | None = None) -> None:
        """Report one line that is not a refusal (control characters shown, never sent);
        ``live``: the session it is about, whose live region is committed first when the
        line is not drawn by :attr:`screen`."""
        line = safe_line(line)
        if len(self.lines) < self.KEEP:
            self.lines.append(line)
        screen = self.screen
        if screen is not None and screen(line):
            return
        if live is not None:
            release_screen(live)
        if self._report is not None:
            try:
                self._report(line)
            except (OSError, ValueError):  # a closed stderr must not break the answer
                logger.info("could not report a refusal: %s", line)


# -- one turn's grant ------------------------------------------------------------------------


@dataclass(frozen=True)
class Grant:
    """What the sender of one prompt lets the agent do through the client's own methods, as a
    live session's host applies it to that prompt's turn (and to no other): the permission
    policy as the sender's own decider resolved it (``ask`` only when a person can be asked
    there), whether the files and the terminals are on (``--no-fs``, ``--no-terminal``), and
    whether nobody can be asked (the refusal hint: :data:`CHANGE_POLICY_UNATTENDED`).

    It travels in the prompt message (:meth:`message`, :meth:`read`). The defaults are the
    strictest reading, which is what a prompt that carries no grant, or a malformed one,
    gets: ``deny``, no files, no terminals, nobody to ask."""

    policy: str = "deny"
    fs: bool = False
    terminal: bool = False
    unattended: bool = True

    @property
    def change(self) -> str:
        """How the sender can change the policy (the refusal lines' hint)."""
        return CHANGE_POLICY_UNATTENDED if self.unattended else CHANGE_POLICY

    def message(self) -> dict[str, Any]:
        """The grant as the prompt message carries it."""
        return {"policy": self.policy, "fs": self.fs, "terminal": self.terminal, "unattended": self.unattended}

    @classmethod
    def read(cls, raw: Any) -> Grant:
        """A prompt message's grant; anything missing or not of its type reads as the
        strictest value (an old or hostile client gets no more than a script with
        ``--permissions deny --no-fs --no-terminal``). ``ask`` from a client that says nobody
        can be asked there is ``deny``, as its own decider would have it."""
        if not isinstance(raw, dict):
            return cls()
        unattended = raw.get("unattended") is not False
        policy = raw.get("policy")
        if policy not in POLICIES or (policy == "ask" and unattended):
            policy = "deny"
        return cls(str(policy), raw.get("fs") is True, raw.get("terminal") is True, unattended)

    @classmethod
    def of(cls, decider: PermissionPolicy, *, fs: bool, terminal: bool) -> Grant:
        """The grant of a command (or terminal) whose permission decider is ``decider`` and
        whose ``--no-fs`` / ``--no-terminal`` choices are ``fs`` / ``terminal``."""
        return cls(decider.policy, fs, terminal, not decider.can_ask)


# -- permissions ---------------------------------------------------------------------------


def _options(params: dict[str, Any]) -> list[dict[str, Any]]:
    options = params.get("options")
    if not isinstance(options, list):
        raise RpcError(RpcError.INVALID_PARAMS, "session/request_permission without options")
    return [o for o in options if isinstance(o, dict) and isinstance(o.get("optionId"), str)]


def pick(options: list[dict[str, Any]], *kinds: str) -> dict[str, Any] | None:
    """The first option whose ``kind`` is the first of ``kinds`` present."""
    for kind in kinds:
        for option in options:
            if option.get("kind") == kind:
                return option
    return None


def selected(option: dict[str, Any]) -> dict[str, Any]:
    """A ``selected`` outcome for an option."""
    return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}


CANCELLED = {"outcome": {"outcome": "cancelled"}}


def tool_kind(params: dict[str, Any], live: AskedSession | None = None) -> str:
    """The kind of the tool call a permission request is about.

    The request's own ``toolCall.kind`` if it has one; otherwise the kind the call was announced
    with (v1 requests may carry only the ``toolCallId``); otherwise ``"other"``.
    """
    call = params.get("toolCall")
    if not isinstance(call, dict):
        return "other"
    kind = call.get("kind")
    if isinstance(kind, str):
        return kind
    tool_id = call.get("toolCallId")
    store = getattr(live, "store", None)
    if isinstance(tool_id, str) and store is not None:
        known = store.tool_call(tool_id)
        if known is not None and isinstance(known.kind, str):
            return known.kind
    return "other"


def _answered_option(answer: dict[str, Any], options: list[dict[str, Any]]) -> dict[str, Any] | None:
    outcome = answer.get("outcome") if isinstance(answer, dict) else None
    option_id = outcome.get("optionId") if isinstance(outcome, dict) else None
    return next((o for o in options if o["optionId"] == option_id), None)


def is_cancelled(answer: Any) -> bool:
    """A permission answer whose outcome is ``cancelled``."""
    outcome = answer.get("outcome") if isinstance(answer, dict) else None
    return isinstance(outcome, dict) and outcome.get("outcome") == "cancelled"


def _about(params: dict[str, Any], live: AskedSession | None) -> str:
    """What a permission request is about, for the user: the tool call's title (or id)."""
    call = params.get("toolCall")
    if not isinstance(call, dict):
        return "a tool call"
    title = call.get("title")
    tool_id = call.get("toolCallId")
    store = getattr(live, "store", None)
    if not isinstance(title, str) and isinstance(tool_id, str) and store is not None:
        known = store.tool_call(tool_id)
        title = getattr(known, "title", None)
    if isinstance(title, str) and title.strip():
        title = title.strip()
        return repr(title) if len(title) < 120 else repr(title[:117] + "...")
    return f"tool call {tool_id}" if isinstance(tool_id, str) else "a tool call"


#: The fields of a tool call that say what it does; a request is "the same" when all are.
_IDENTIFYING = ("title", "rawInput", "locations", "content")


def request_key(params: dict[str, Any], live: AskedSession | None = None) -> str | None:
    """What makes a permission request *this* request, as a digest: the tool call's kind,
    title, ``rawInput`` (a command's ``command`` among it), locations and content. Each comes
    from the request's ``toolCall`` when it carries it, else from what the call was announced
    with (v1 agents may send only the ``toolCallId``). ``None`` for a request that names none
    of them: such a request is never answered from memory (it would match any other)."""
    import hashlib
    import json

    call = params.get("toolCall")
    if not isinstance(call, dict):
        return None
    tool_id = call.get("toolCallId")
    store = getattr(live, "store", None)
    known = store.tool_call(tool_id) if isinstance(tool_id, str) and store is not None else None
    announced: dict[str, Any] = {}
    if known is not None:  # read, not copied: only dumped below
        announced = {"title": known.title, "rawInput": known.raw_input, "locations": known.locations,
                     "content": known.content}
    fields: dict[str, Any] = {}
    for name in _IDENTIFYING:
        value = call.get(name, announced.get(name))
        if value not in (None, "", [], {}):
            fields[name] = value
    if not fields:
        return None
    fields["kind"] = tool_kind(params, live)
    try:
        text = json.dumps(fields, sort_keys=True, ensure_ascii=True, default=repr)
    except (TypeError, ValueError, RecursionError):  # unhashable shapes: never remembered
        return None
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def release_screen(live: AskedSession | None) -> None:
    """Commit the session view's live region, if it draws one (a terminal view has a status
    line), before a line is printed on the terminal: a line printed under a live region is
    wiped by its next redraw. Pipes and other views are left alone."""
    sink = getattr(live, "sink", None)
    if sink is not None and callable(getattr(sink, "status_text", None)):
        try:
            sink.flush()
        except (OSError, ValueError):
            pass  # the view reports its own output errors


def note_on_screen(sink: object, line: str | Text, style: str | None = None) -> bool:
    """Have a session's view draw ``line`` (a note, a refusal, ``cancelling…``) into its
    scrollback, in order with what it draws, when it takes notes (a terminal view: a line
    written beside its live region would be wiped by the next redraw). False: the caller
    writes the line itself."""
    note = getattr(sink, "note", None)
    if note is None:
        return False
    try:
        return bool(note(line, style))
    except (OSError, ValueError):
        return False


def _option_name(option: dict[str, Any]) -> str:
    name = option.get("name")
    return repr(shown(name, 60)) if isinstance(name, str) and name.strip() else f"option {shown(option['optionId'], 60)!r}"


class PermissionPolicy:
    """Answers permission requests by policy; under ``ask``, remembers the person's "always"
    answers for exactly the same request (:func:`request_key`), never for a kind.

    Each request the policy itself rejects (``deny``, ``read-only``) is reported to
    ``refusals`` as a refusal; each it allows, and each answered from memory, as one line too
    (:meth:`Refusals.note`); what a person chooses is not (they know). :attr:`unattended`:
    ``ask`` was wanted but nobody can be asked (so the policy is ``deny``).
    """

    def __init__(self, policy: str, ask: Asker | None = None, refusals: Refusals | None = None) -> None:
        if policy not in POLICIES:
            raise UsageError(f"--permissions must be one of {', '.join(POLICIES)} (got {policy!r})")
        self.unattended = policy == "ask" and ask is None
        if self.unattended:
            policy = "deny"  # nobody to ask
        self.policy = policy
        self._ask = ask
        self.refusals = refusals
        # (session, request_key) -> "allow"/"reject", oldest first (bounded: MAX_REMEMBERED)
        self._always: dict[tuple[str, str], str] = {}

    @property
    def can_ask(self) -> bool:
        """Whether a person can be asked (the refusal hints differ when nobody can)."""
        return self._ask is not None

    def _tell(self, live: AskedSession, line: str) -> None:
        if self.refusals is not None:
            self.refusals.note(line, live)

    async def __call__(self, live: AskedSession, params: dict[str, Any]) -> dict[str, Any]:
        options = _options(params)
        kind = tool_kind(params, live)
        # Only what a person chose is remembered: a policy answers every request alike anyway.
        key = request_key(params, live) if self.policy == "ask" else None
        remembered = self._always.get((live.session_id, key)) if key is not None else None
        if remembered is not None:
            option = pick(options, f"{remembered}_always", f"{remembered}_once")
            if option is not None:
                verb = "allowed" if remembered == "allow" else "rejected"
                self._tell(
                    live,
                    f"acpcli: {verb} {_about(params, live)} (kind {shown(kind, 40)}) from memory: "
                    f"you chose {_option_name(option)} for this same request",
                )
                return selected(option)
        if self.policy == "allow" or (self.policy == "read-only" and kind in READ_ONLY_KINDS):
            option = pick(options, "allow_once", "allow_always")
            if option is not None:
                self._tell(
                    live,
                    f"acpcli: allowed {_about(params, live)} (kind {shown(kind, 40)}) with {_option_name(option)} "
                    f"(policy {self.policy})",
                )
            else:
                self._tell(
                    live,
                    f"acpcli: could not allow {_about(params, live)} (kind {shown(kind, 40)}): the agent offers no "
                    f"allow option (policy {self.policy}); answered cancelled",
                )
        elif self.policy in READ_ONLY_POLICIES:
            option = pick(options, "reject_once", "reject_always")
            if self.refusals is not None:
                self.refusals(f"permission for {_about(params, live)} (kind {kind})", self.policy, live)
        else:
            assert self._ask is not None
            answer = await self._ask(live, params)
            if answer is None or is_cancelled(answer):
                return CANCELLED
            option = _answered_option(answer, options)
            if option is None:
                # An answer naming no offered option must not reach the agent: refuse properly.
                logger.warning("the permission asker chose no offered option (%.200r): rejecting", answer)
                option = pick(options, "reject_once", "reject_always")
        if option is None:
            # The agent offered nothing of the kind the policy needs: do not invent one.
            return CANCELLED
        if key is not None and option.get("kind") in ("allow_always", "reject_always"):
            self._remember((live.session_id, key), option["kind"].split("_")[0])
        return selected(option)

    def _remember(self, where: tuple[str, str], answer: str) -> None:
        self._always.pop(where, None)
        self._always[where] = answer
        while len(self._always) > MAX_REMEMBERED:
            del self._always[next(iter(self._always))]


def permission_decider(
    env: Environment, policy: str | None, ask: Asker | None = None, refusals: Refusals | None = None
) -> PermissionPolicy:
    """The policy for this run: ``ask`` on a terminal, ``deny`` when nobody can answer."""
    if policy is None:
        policy = "ask" if env.interactive and ask is not None else "deny"
    return PermissionPolicy(policy, ask, refusals)


