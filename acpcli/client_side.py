"""What the agent may ask of the client: permission decisions, files, terminals (ACP v1).

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

Files (``fs/read_text_file``, ``fs/write_text_file``), confined to the session's root set
``[cwd, *additionalDirectories]``:

* The path must be absolute. It is resolved with every symlink followed (``os.path.realpath``,
  which also resolves the deepest existing parent of a path that does not exist yet) and only
  then checked against the equally resolved roots, so ``..``, symlinks and absolute paths
  cannot leave the root set. A refused path is answered -32602 naming the path and the roots.
  Every file operation then uses the resolved path.
* Reads honour ``line`` (1-based; 0 reads from the start, as the schema allows it) and
  ``limit`` (a number of lines; lines end at ``\\n``, line endings are kept). Text is UTF-8;
  anything else is answered -32602 ("not UTF-8 text"). A read larger than
  :data:`MAX_READ_BYTES` is refused: ask for fewer lines. Only what is asked is read, line by
  line in chunks (a 2 GB file costs a 1 MiB buffer and the time to reach ``line``).
* **A missing file inside the roots reads as empty content**, ``{"content": ""}``, marked with
  ``_meta: {"acpcli": {"missing": true}}``. Deliberately: gemini reads a file before writing it
  and only creates new files when that read succeeds with empty content; an error would make it
  unable to create any file. Agents that care can tell the difference by the marker.
* Writes are atomic: a temporary file in the target's directory, ``fsync``, ``os.replace``.
  Missing parent directories (inside the roots) are created; an existing file keeps its mode,
  a new one gets the umask's. Writing over a directory or other non-file is refused.
* Other OS errors (permission denied, disk full) are answered -32603 with the reason.

Terminals: :mod:`acpcli.terminals`. A terminal's ``cwd`` is confined like a path; the default is
the session's ``cwd``.

Which methods exist: :meth:`ClientServices.handlers` holds only what was offered (fs, terminal),
so the connection answers anything else -32601. After ``initialize``,
:meth:`ClientServices.restrict` narrows that to what the negotiated version allows (v2 has no
client file system or terminals): a handler then answers -32601 itself.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from acpcli.errors import RpcError, UsageError
from acpcli.safe_text import safe_line, shown_id

if TYPE_CHECKING:
    from rich.text import Text

    from acpcli.env import Environment
    from acpcli.negotiate import AgentFeatures, ClientOffer
    from acpcli.store import Store
    from acpcli.terminals import Terminals

logger = logging.getLogger("acpcli.client_side")

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
    (a :class:`~acpcli.session.live.LiveSession`)."""

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


# -- the root set ---------------------------------------------------------------------------

#: ``session_id -> (cwd, additional roots)``, or None for a session this client does not hold.
SessionRoots = Callable[[str], "tuple[str, Sequence[str]] | None"]

Handler = Callable[[Any], Awaitable[Any]]

#: The most a single ``fs/read_text_file`` answers with (the selected lines, in bytes).
MAX_READ_BYTES = 32 * 1024 * 1024

_MISSING_META = {"acpcli": {"missing": True}}


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


def confine(path: str, roots: Sequence[str]) -> str:
    """``path`` resolved (symlinks followed), if it lies inside one of ``roots``.

    Raises :class:`RpcError` -32602 for a relative path, or one that resolves outside every
    root (roots are resolved the same way, so a root reached through a symlink still counts).
    """
    if not isinstance(path, str) or not path:
        raise RpcError(RpcError.INVALID_PARAMS, "path must be a non-empty string")
    if not os.path.isabs(path):
        raise RpcError(
            RpcError.INVALID_PARAMS,
            f"path must be absolute: {path!r}",
            {"path": path, "roots": list(roots)},
        )
    try:
        resolved = os.path.realpath(path)
        real_roots = [os.path.realpath(root) for root in roots if isinstance(root, str) and os.path.isabs(root)]
    except (ValueError, OSError) as exc:  # an embedded NUL byte, a symlink loop
        raise RpcError(RpcError.INVALID_PARAMS, f"unusable path {path!r}: {exc}") from exc
    if any(_inside(resolved, root) for root in real_roots):
        return resolved
    shown = path if resolved == path else f"{path} (resolves to {resolved})"
    raise RpcError(
        RpcError.INVALID_PARAMS,
        f"{shown} is outside the session's directories: {', '.join(roots)}",
        {"path": path, "resolved": resolved, "roots": list(roots)},
    )


# -- files ------------------------------------------------------------------------------------


def _os_error(action: str, path: str, exc: OSError) -> RpcError:
    if exc.errno in (errno.EISDIR, errno.ENOTDIR):
        return RpcError(RpcError.INVALID_PARAMS, f"cannot {action} {path}: {exc.strerror}")
    return RpcError(RpcError.INTERNAL_ERROR, f"cannot {action} {path}: {exc.strerror or exc}")


#: Bytes read at a time while looking for lines: a line is never held whole before it is chosen.
_READ_CHUNK = 1024 * 1024


def read_text(path: str, line: int | None = None, limit: int | None = None) -> str | None:
    """The UTF-8 text of ``path`` (already confined), from ``line`` (1-based), at most
    ``limit`` lines; ``None`` if the file does not exist. Raises :class:`RpcError`.

    Streamed: the lines before ``line`` are counted chunk by chunk and dropped, and reading
    stops once ``limit`` lines or more than :data:`MAX_READ_BYTES` are chosen, so memory stays
    within about that cap and time within what is asked, whatever the file's size or its
    longest line."""
    start = max((line or 1) - 1, 0)
    try:
        # O_NONBLOCK: opening a FIFO must not hang; regular files ignore the flag.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _os_error("read", path, exc) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RpcError(RpcError.INVALID_PARAMS, f"cannot read {path}: not a regular file")
        try:
            data = _chosen_lines(fd, start, limit)
        except OSError as exc:
            raise _os_error("read", path, exc) from exc
    finally:
        os.close(fd)
    if len(data) > MAX_READ_BYTES:
        what = f"{path} is" if start == 0 and limit is None else f"{path}: the lines asked for are"
        raise RpcError(
            RpcError.INVALID_PARAMS,
            f"{what} larger than {MAX_READ_BYTES} bytes: read it in parts with line and limit",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RpcError(
            RpcError.INVALID_PARAMS,
            f"{path} is not UTF-8 text (invalid byte at offset {exc.start} of what was read)",
        ) from exc


def _nth_line_end(chunk: bytes, n: int) -> int:
    """The offset just past the ``n``-th ``\\n`` of ``chunk`` (``n`` >= 1; the caller has
    counted that there are that many)."""
    at = -1
    for _ in range(n):
        at = chunk.index(b"\n", at + 1)
    return at + 1


def _chosen_lines(fd: int, start: int, limit: int | None) -> bytes:
    """The bytes of lines ``start`` (0-based) to ``start + limit`` of the open file ``fd``, or
    just more than :data:`MAX_READ_BYTES` of them when they hold more (the caller refuses).

    Binary lines end at ``b"\\n"`` only, which never occurs inside a UTF-8 character. Holes of
    a sparse file hold no line end, so the lines before ``start`` skip them unread."""
    offset = 0
    rest = b""
    skip = start
    while skip:  # drop the lines before the first one asked for
        offset = _next_data(fd, offset)
        chunk = os.pread(fd, _READ_CHUNK, offset)
        if not chunk:
            return b""
        offset += len(chunk)
        ends = chunk.count(b"\n")
        if ends >= skip:
            rest = chunk[_nth_line_end(chunk, skip) :]
            skip = 0
        else:
            skip -= ends
    if limit == 0:
        return b""
    parts: list[bytes] = []
    size = 0
    left = limit
    while True:
        if left is not None:
            ends = rest.count(b"\n")
            if ends >= left:
                parts.append(rest[: _nth_line_end(rest, left)])
                break
            left -= ends
        parts.append(rest)
        size += len(rest)
        if size > MAX_READ_BYTES:
            break
        rest = os.pread(fd, _READ_CHUNK, offset)
        if not rest:
            break
        offset += len(rest)
    return b"".join(parts)


def _next_data(fd: int, offset: int) -> int:
    """Where the next data at or after ``offset`` begins (past a hole of a sparse file, which
    reads as zero bytes: no line end); ``offset`` itself where holes cannot be found."""
    seek_data = getattr(os, "SEEK_DATA", None)
    if seek_data is None:
        return offset
    try:
        return os.lseek(fd, offset, seek_data)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # nothing but a hole up to the end of the file
            return os.fstat(fd).st_size
        return offset  # a file system that cannot tell: read on


def write_text(path: str, content: str) -> None:
    """Write ``content`` to ``path`` (already confined) atomically, as UTF-8.

    Creates missing parent directories, keeps an existing file's mode. Raises :class:`RpcError`.
    """
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates from a "\\ud800" escape
        raise RpcError(RpcError.INVALID_PARAMS, f"content for {path} is not valid Unicode text") from exc
    parent, name = os.path.split(path)
    try:
        os.makedirs(parent, exist_ok=True)
        try:
            existing = os.stat(path)
        except FileNotFoundError:
            existing = None
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            raise RpcError(RpcError.INVALID_PARAMS, f"cannot write {path}: not a regular file")
        import secrets  # here: hmac, hashlib and random are ~5 ms of every command's start

        temp = os.path.join(parent, f".{name}.{secrets.token_hex(4)}.acpcli-tmp")
        # 0o666 lets the umask decide a new file's mode, as any editor would.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())  # the rename must never expose an empty file after a crash
                if existing is not None:
                    os.fchmod(out.fileno(), stat.S_IMODE(existing.st_mode))
            os.replace(temp, path)
        except BaseException:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise _os_error("write", path, exc) from exc


# -- the services -----------------------------------------------------------------------------


class ClientServices:
    """The agent→client methods acpcli serves besides permissions: files and terminals.

    Use as ``async with ClientServices(roots, fs=..., terminal=...) as services:`` around the
    connection, and pass :meth:`handlers` as its extra handlers; leaving the block kills and
    reaps every terminal still alive. ``session_roots`` gives a session's root set (the
    session layer's ``Dispatcher.roots``). ``fs_write`` defaults to ``fs``. ``policy`` (``deny`` or ``read-only``)
    refuses file writes and terminals (see the module docstring), reporting each refusal to
    ``refusals``; ``None``, ``ask`` and ``allow`` serve everything offered.
    """

    def __init__(
        self,
        session_roots: SessionRoots,
        *,
        fs: bool = True,
        terminal: bool = True,
        fs_write: bool | None = None,
        kill_grace: float | None = None,
        policy: str | None = None,
        refusals: Refusals | None = None,
    ) -> None:
        self._roots = session_roots
        self.policy = policy
        self.refusals = refusals
        self._fs_read = fs
        self._fs_write = fs if fs_write is None else fs_write
        self._terminal = terminal
        self._kill_grace = kill_grace
        self._tg: Any = None
        self._terminals: Terminals | None = None

    @classmethod
    def for_offer(cls, session_roots: SessionRoots, offer: ClientOffer, **kwargs: Any) -> ClientServices:
        """Services matching what ``offer`` advertises in ``initialize``."""
        return cls(
            session_roots,
            fs=offer.read_text_file,
            fs_write=offer.write_text_file,
            terminal=offer.terminal,
            **kwargs,
        )

    # -- lifecycle ------------------------------------------------------------------------------

    async def __aenter__(self) -> ClientServices:
        import anyio

        from acpcli.terminals import KILL_GRACE, Terminals

        if self._tg is not None:
            raise RuntimeError("ClientServices can be entered only once")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        grace = KILL_GRACE if self._kill_grace is None else self._kill_grace
        self._terminals = Terminals(tg, kill_grace=grace)
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        try:
            await self.aclose()
        finally:
            tg = self._tg
            tg.cancel_scope.cancel()
            # The group holds only terminal tasks: the body's exception must reach the caller
            # as it is, not wrapped in an exception group.
            await tg.__aexit__(None, None, None)

    async def aclose(self) -> None:
        """Kill and reap every terminal still alive. Idempotent."""
        if self._terminals is not None:
            await self._terminals.aclose()

    def restrict(self, features: AgentFeatures) -> None:
        """Serve only what the negotiated connection lets the agent call (call after
        ``initialize``): a v2 agent gets -32601 for every fs and terminal method."""
        self._fs_read = self._fs_read and features.client_fs_read
        self._fs_write = self._fs_write and features.client_fs_write
        self._terminal = self._terminal and features.client_terminal

    @property
    def terminals(self) -> Terminals | None:
        """The live terminals (for a view showing terminals embedded in tool calls)."""
        return self._terminals

    def handlers(self) -> dict[str, Handler]:
        """The handlers for what was offered; methods not offered are absent (→ -32601)."""
        from acpcli.protocol import methods as m

        out: dict[str, Handler] = {}
        if self._fs_read:
            out[m.FS_READ_TEXT_FILE] = self.read_text_file
        if self._fs_write:
            out[m.FS_WRITE_TEXT_FILE] = self.write_text_file
        if self._terminal:
            out.update(
                {
                    m.TERMINAL_CREATE: self.terminal_create,
                    m.TERMINAL_OUTPUT: self.terminal_output,
                    m.TERMINAL_WAIT_FOR_EXIT: self.terminal_wait_for_exit,
                    m.TERMINAL_KILL: self.terminal_kill,
                    m.TERMINAL_RELEASE: self.terminal_release,
                }
            )
        return out

    # -- helpers --------------------------------------------------------------------------------

    @staticmethod
    def _parse(method: str, params: Any) -> Any:
        from acpcli.negotiate import parse_request

        return parse_request(1, method, params)  # fs and terminals exist in v1 only

    def _roots_for(self, session_id: str) -> list[str]:
        found = self._roots(session_id)
        if found is None:
            raise RpcError(RpcError.INVALID_PARAMS, f"unknown session {shown_id(session_id)!r}")
        cwd, extra = found
        return [cwd, *extra]

    @staticmethod
    def _not_offered(method: str) -> RpcError:
        return RpcError(RpcError.METHOD_NOT_FOUND, f"method not found: {method}")

    def _refuse(self, method: str, what: str | None) -> RpcError:
        """The error answering ``method`` under a policy that forbids it; reported to the
        user when ``what`` names what was refused."""
        policy = str(self.policy)
        if what is not None and self.refusals is not None:
            self.refusals(what, policy)
        return RpcError(
            POLICY_REFUSED,
            f"{method} refused by the client's permission policy {policy!r} "
            f"(the user can change it: --permissions ask|allow, or the permissions config key)",
            {"policy": policy},
        )

    def _terminals_for(self, method: str) -> Terminals:
        if not self._terminal:
            raise self._not_offered(method)
        if self.policy in READ_ONLY_POLICIES and method != "terminal/create":
            raise self._refuse(method, None)  # no terminal exists to act on: nothing to report
        if self._terminals is None:
            raise RpcError(RpcError.INTERNAL_ERROR, "terminals are not available (services not started)")
        return self._terminals

    # -- fs -------------------------------------------------------------------------------------

    async def read_text_file(self, params: Any) -> dict[str, Any]:
        """``fs/read_text_file``."""
        import anyio.to_thread

        from acpcli.protocol import dump, models

        method = "fs/read_text_file"
        if not self._fs_read:
            raise self._not_offered(method)
        req = self._parse(method, params)
        path = confine(req.path, self._roots_for(req.session_id))
        text = await anyio.to_thread.run_sync(read_text, path, req.line, req.limit)
        v1 = models(1)
        if text is None:
            return dump(v1.ReadTextFileResponse(content="", meta=_MISSING_META))
        return dump(v1.ReadTextFileResponse(content=text))

    async def write_text_file(self, params: Any) -> dict[str, Any]:
        """``fs/write_text_file``."""
        import anyio.to_thread

        from acpcli.protocol import dump, models

        method = "fs/write_text_file"
        if not self._fs_write:
            raise self._not_offered(method)
        req = self._parse(method, params)
        if self.policy in READ_ONLY_POLICIES:
            raise self._refuse(method, f"a file write ({method} {req.path})")
        path = confine(req.path, self._roots_for(req.session_id))
        await anyio.to_thread.run_sync(write_text, path, req.content)
        return dump(models(1).WriteTextFileResponse())

    # -- terminals ------------------------------------------------------------------------------

    async def terminal_create(self, params: Any) -> dict[str, Any]:
        """``terminal/create``: start the command; answer at once with its id."""
        from acpcli.protocol import dump, models

        terminals = self._terminals_for("terminal/create")
        req = self._parse("terminal/create", params)
        if self.policy in READ_ONLY_POLICIES:
            import shlex

            command = shlex.join([req.command, *(req.args or [])])
            raise self._refuse("terminal/create", f"a command (terminal/create: {command})")
        roots = self._roots_for(req.session_id)
        cwd = confine(req.cwd, roots) if req.cwd is not None else roots[0]
        env = {var.name: var.value for var in req.env or ()}
        terminal = await terminals.create(
            req.session_id,
            req.command,
            req.args or [],
            cwd=cwd,
            env=env,
            output_limit=req.output_byte_limit,
        )
        return dump(models(1).CreateTerminalResponse(terminal_id=terminal.terminal_id))

    async def terminal_output(self, params: Any) -> dict[str, Any]:
        """``terminal/output``: the output so far, and the exit status once exited."""
        from acpcli.protocol import dump, models

        terminals = self._terminals_for("terminal/output")
        req = self._parse("terminal/output", params)
        terminal = terminals.get(req.session_id, req.terminal_id)
        text, truncated = terminal.output()
        v1 = models(1)
        answer = v1.TerminalOutputResponse(output=text, truncated=truncated)
        status = terminal.exit_status
        if status is not None:
            answer.exit_status = v1.TerminalExitStatus(exit_code=status[0], signal=status[1])
        return dump(answer)

    async def terminal_wait_for_exit(self, params: Any) -> dict[str, Any]:
        """``terminal/wait_for_exit``."""
        from acpcli.protocol import dump, models

        terminals = self._terminals_for("terminal/wait_for_exit")
        req = self._parse("terminal/wait_for_exit", params)
        code, sig = await terminals.get(req.session_id, req.terminal_id).wait_for_exit()
        return dump(models(1).WaitForTerminalExitResponse(exit_code=code, signal=sig))

    async def terminal_kill(self, params: Any) -> dict[str, Any]:
        """``terminal/kill``: kill the command; the terminal stays until released."""
        from acpcli.protocol import dump, models

        terminals = self._terminals_for("terminal/kill")
        req = self._parse("terminal/kill", params)
        await terminals.kill(req.session_id, req.terminal_id)
        return dump(models(1).KillTerminalResponse())

    async def terminal_release(self, params: Any) -> dict[str, Any]:
        """``terminal/release``: kill the command if it still runs and forget the terminal."""
        from acpcli.protocol import dump, models

        terminals = self._terminals_for("terminal/release")
        req = self._parse("terminal/release", params)
        await terminals.release(req.session_id, req.terminal_id)
        return dump(models(1).ReleaseTerminalResponse())
