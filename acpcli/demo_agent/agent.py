"""The method table of the demo agent and its main loop.

Threads: a reader thread frames stdin (see :mod:`acpcli.demo_agent.rpc`); the main thread
runs :meth:`DemoAgent.handle` for each request in arrival order; each prompt turn runs on its
own thread (:mod:`acpcli.demo_agent.turn`). ``session/cancel`` is handled on the reader thread
so it lands while the main thread or a turn is blocked.

Invariants:

- A request is answered exactly once: by :meth:`DemoAgent.handle` (result or error), or, for a
  v1 ``session/prompt``, by its turn. Work that must follow the answer on the wire
  (``available_commands_update`` after ``session/new``, the v2 turn after its acknowledgement,
  a replay under ``--load-answers-first``) is queued with :meth:`DemoAgent._after_reply`.
- A session is *active* on this connection after new/load/resume until close; prompts and
  settings changes are accepted only for active sessions.
- Session setup answers (new/load/resume) and ``session/set_config_option`` carry the
  session's complete current settings (:mod:`acpcli.demo_agent.session_config`); a change made
  through one API (v1 modes, config options) is announced through the other after the answer.
- With ``--require-auth``, :data:`acpcli.demo_agent.credentials.GATED_METHODS` fail with -32000 while
  no login is on record.
"""

from __future__ import annotations

import functools
import os
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from acpcli.demo_agent import caps, session_config
from acpcli.demo_agent.active import ActiveSession
from acpcli.demo_agent.content import check_prompt
from acpcli.demo_agent.credentials import GATED_METHODS, Credentials, auth_required_error
from acpcli.demo_agent.flags import Options, parse_options
from acpcli.demo_agent.replay import effective_style, replay
from acpcli.demo_agent.rpc import EOF, CancelToken, Peer, PeerGone, log
from acpcli.demo_agent.storage import SessionRecord, SessionStore, new_session_id
from acpcli.demo_agent.translate import MESSAGE_KINDS, Translator
from acpcli.demo_agent.turn import Turn
from acpcli.errors import RpcError

_DEFERRED = object()  # a handler's result when someone else answers the request later

AVAILABLE_COMMANDS = (
    {"name": "slow", "description": "Stream a long answer slowly (to try cancelling)"},
    {"name": "refuse", "description": "End the turn with stop reason refusal"},
    {"name": "crash", "description": "Exit with status 3 in the middle of the turn"},
    {"name": "read", "description": "Read a file through the client (v1)", "input": {"type": "text", "hint": "PATH"}},
    {"name": "run", "description": "Run a command in a client terminal (v1)",
     "input": {"type": "text", "hint": "COMMAND"}},
)


class DemoAgent:
    """One connection's worth of agent state, and a handler per ACP method."""

    def __init__(self, peer: Peer, options: Options) -> None:
        self.peer = peer
        self.options = options
        self.store = SessionStore(options.state_dir)
        self.credentials = Credentials(options.state_dir)
        self.version: int | None = None
        self.client = caps.ClientFacts()
        self._live: dict[str, ActiveSession] = {}
        self._lock = threading.Lock()
        self._after: list[Callable[[], None]] = []
        self._handlers: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
            "initialize": self._initialize,
            "session/new": self._session_new,
            "session/load": self._session_load,
            "session/resume": self._session_resume,
            "session/close": self._session_close,
            "session/list": self._session_list,
            "session/prompt": self._session_prompt,
            "session/set_mode": self._session_set_mode,
            "session/set_config_option": self._session_set_config_option,
            "authenticate": self._login,
            "auth/login": self._login,
            "logout": self._logout,
            "auth/logout": self._logout,
        }

    # -- dispatch --------------------------------------------------------------------------------

    def urgent(self, msg: dict[str, Any]) -> bool:
        """Reader-thread hook: handle ``session/cancel`` at once. Never blocks."""
        if msg.get("method") != "session/cancel":
            return False
        params = msg.get("params")
        sid = params.get("sessionId") if isinstance(params, dict) else None
        with self._lock:
            live = self._live.get(sid) if isinstance(sid, str) else None
        if live is not None and live.cancel():
            log(f"session/cancel: cancelling the turn in {sid}")
        else:
            log(f"session/cancel for {sid!r}: no turn is running there")
        return True

    def handle(self, msg: dict[str, Any]) -> None:
        """Answer one request (or log one notification). Raises PeerGone if stdout broke."""
        method = msg["method"]
        if "id" not in msg:
            log(f"ignoring notification {method}")
            return
        req_id = msg["id"]
        try:
            result = self._call(method, req_id, msg.get("params"))
        except RpcError as err:
            self._after.clear()
            self.peer.respond_error(req_id, err)
            return
        except PeerGone:
            raise
        except Exception:  # noqa: BLE001 - a bug in a handler: keep serving, but say so loudly
            log(f"internal error handling {method}:\n{traceback.format_exc()}")
            self._after.clear()
            self.peer.respond_error(req_id, RpcError(RpcError.INTERNAL_ERROR, "demo agent bug: see its stderr"))
            return
        if result is not _DEFERRED:
            self.peer.respond(req_id, result)
        after, self._after = self._after, []
        for action in after:
            action()

    def _call(self, method: str, req_id: Any, params: Any) -> Any:
        handler = self._handlers.get(method)
        feature = caps.METHOD_FEATURES.get(method)
        baseline = method in caps.LATEST_BASELINE and self.options.latest(self.version)
        if handler is None or (feature is not None and not baseline and not self.options.has(feature)):
            raise caps.refuse_method(method)
        if method != "initialize" and self.version is None:
            raise RpcError(RpcError.INVALID_REQUEST, f"{method} before initialize")
        if method != "initialize" and not caps.method_available(method, self._v, self.options):
            raise caps.refuse_method(method)
        if method in GATED_METHODS and self.options.require_auth and not self.credentials.logged_in():
            log(f"{method} refused: not logged in")
            raise auth_required_error()
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise RpcError(RpcError.INVALID_PARAMS, "params must be an object")
        return handler(req_id, params)

    def _after_reply(self, action: Callable[[], None]) -> None:
        self._after.append(action)

    def shutdown(self) -> None:
        """Cancel every running turn and give each a moment to finish (end of input)."""
        with self._lock:
            lives = list(self._live.values())
        for live in lives:
            live.cancel()
        for live in lives:
            live.join(timeout=5)

    # -- handlers --------------------------------------------------------------------------------

    def _initialize(self, req_id: Any, params: dict[str, Any]) -> Any:
        offered = params.get("protocolVersion")
        self.version = caps.negotiate(offered, self.options.protocol)
        self.client = caps.client_facts(params, self.version)
        log(f"initialize: the client offered {offered!r}; speaking v{self.version}")
        return caps.initialize_result(self.version, self.options)

    def _session_new(self, req_id: Any, params: dict[str, Any]) -> Any:
        cwd = caps.absolute_path(params.get("cwd"), "cwd")
        record = SessionRecord(
            sessionId=new_session_id(),
            cwd=cwd,
            additionalDirectories=caps.additional_directories(params, "session/new", self.options),
            mcpServers=caps.mcp_server_names(params, "session/new", self._v, self.options),
        )
        live = self._activate(record)
        live.save()

        def announce() -> None:
            live.emit({"sessionUpdate": "available_commands_update",
                       "availableCommands": [dict(c) for c in AVAILABLE_COMMANDS]})
            live.save(touch=False)

        self._after_reply(announce)
        return {"sessionId": record.sessionId, **self._settings_fields(live)}

    def _session_load(self, req_id: Any, params: dict[str, Any], method: str = "session/load") -> Any:
        live = self._activate(self._restore(params, method))
        live.save(touch=False)
        style, note = effective_style(self.options.replay, self._v, self.options.v1_message_ids)
        if note:
            log(note)
        history = list(live.record.history)

        def replay_all() -> None:
            for update in replay(history, style, self.options.chunk_size):
                live.send(update)

        if self.options.replay_pause > 0:
            # A late replay: the answer goes out, the replay follows on its own thread while
            # the agent keeps serving requests (updates for a loaded session, as gemini's).
            def late() -> None:
                time.sleep(self.options.replay_pause)
                replay_all()

            self._after_reply(threading.Thread(target=late, name="late-replay", daemon=True).start)
        elif self.options.load_answers_first:
            self._after_reply(replay_all)
        else:
            replay_all()
        fields = self._settings_fields(live)
        # v2 draft: the load result is null (seed) or an object carrying configOptions (schema).
        return (fields or None) if self._v >= 2 else fields

    def _session_resume(self, req_id: Any, params: dict[str, Any]) -> Any:
        replay_from = params.get("replayFrom")
        if replay_from is not None and self.options.latest(self.version):
            # The later v2 draft: a load is a resume that replays from a cursor.
            if not isinstance(replay_from, dict) or replay_from.get("type") != "start":
                raise RpcError(RpcError.INVALID_PARAMS, f"unsupported replayFrom cursor: {replay_from!r}")
            return self._session_load(req_id, params, method="session/resume") or {}
        live = self._activate(self._restore(params, "session/resume"))
        live.save(touch=False)
        return self._settings_fields(live)

    def _session_close(self, req_id: Any, params: dict[str, Any]) -> Any:
        sid = _session_id(params)
        with self._lock:
            live = self._live.pop(sid, None)
        if live is None:
            if self.store.load(sid) is None:
                raise _not_found(sid)
            return {}  # known but not active here: nothing to free
        if live.cancel():
            live.join(timeout=10)  # its turn ends (cancelled) before we answer
        return {}

    def _session_list(self, req_id: Any, params: dict[str, Any]) -> Any:
        cwd = params.get("cwd")
        if cwd is not None:
            caps.absolute_path(cwd, "cwd")
        cursor = params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise RpcError(RpcError.INVALID_PARAMS, "cursor must be a string")
        try:
            page, next_cursor = self.store.page(cwd=cwd, cursor=cursor, page_size=self.options.page_size)
        except ValueError as exc:
            raise RpcError(RpcError.INVALID_PARAMS, str(exc)) from exc
        result: dict[str, Any] = {"sessions": [self._info(r) for r in page]}
        if next_cursor:
            result["nextCursor"] = next_cursor
        return result

    def _session_prompt(self, req_id: Any, params: dict[str, Any]) -> Any:
        prompt = params.get("prompt")
        if not isinstance(prompt, list):
            raise RpcError(RpcError.INVALID_PARAMS, "prompt must be an array of content blocks")
        live = self._active(params)
        received = check_prompt(prompt, self.options)
        if live.busy:
            raise RpcError(RpcError.INVALID_REQUEST, f"a turn is already running in session {live.session_id}")
        token = CancelToken()
        turn = Turn(live=live, version=self._v, client=self.client, options=self.options, token=token,
                    request_id=req_id, prompt=prompt, received=received)
        live.token = token
        live.thread = threading.Thread(target=turn.run, name=f"turn-{live.session_id}", daemon=True)
        if self._v >= 2:
            self._after_reply(live.thread.start)  # the acknowledgement goes out first
            return {}
        live.thread.start()
        return _DEFERRED  # v1: the turn answers with its stopReason

    def _session_set_mode(self, req_id: Any, params: dict[str, Any]) -> Any:
        live = self._active(params)
        with live.lock:
            session_config.set_mode(live.record.config, params.get("modeId"))
            live.save(touch=False)
        log(f"session/set_mode: {live.session_id} is now in mode {params.get('modeId')}")
        self._announce(live, modes=False, options=self.options.has("config-options"))
        return {}

    def _session_set_config_option(self, req_id: Any, params: dict[str, Any]) -> Any:
        live = self._active(params)
        boolean = self.client.boolean_config
        with live.lock:
            changed = session_config.set_option(live.record.config, params, version=self._v, boolean=boolean)
            live.save(touch=False)
            options = session_config.config_options(live.record.config, version=self._v, boolean=boolean)
        log(f"session/set_config_option: {live.session_id} {changed}={params.get('value')!r}")
        if changed == session_config.MODE.key:
            self._announce(live, modes=self._v < 2 and self.options.has("modes"), options=False)
        return {"configOptions": options}

    def _login(self, req_id: Any, params: dict[str, Any]) -> Any:
        self.credentials.login(params.get("methodId"), self.options.require_auth)
        return {}

    def _logout(self, req_id: Any, params: dict[str, Any]) -> Any:
        if not self.credentials.forget():
            log("logout: was not logged in")
        return {}

    # -- helpers ---------------------------------------------------------------------------------

    @property
    def _v(self) -> int:
        assert self.version is not None
        return self.version

    def _active(self, params: dict[str, Any]) -> ActiveSession:
        """The active session named by ``params.sessionId``, or the error saying why not."""
        sid = _session_id(params)
        with self._lock:
            live = self._live.get(sid)
        if live is None:
            if self.store.load(sid) is None:
                raise _not_found(sid)
            raise RpcError(RpcError.RESOURCE_NOT_FOUND,
                           f"session {sid} is not active on this connection: load or resume it first")
        return live

    def _settings_fields(self, live: ActiveSession) -> dict[str, Any]:
        """``modes`` (v1) and ``configOptions`` for a session setup answer, as advertised."""
        fields: dict[str, Any] = {}
        with live.lock:
            config = live.record.config
            if self._v < 2 and self.options.has("modes"):
                fields["modes"] = session_config.modes_state(config)
            if self.options.has("config-options"):
                fields["configOptions"] = session_config.config_options(config, version=self._v,
                                                                  boolean=self.client.boolean_config)
        return fields

    def _announce(self, live: ActiveSession, *, modes: bool, options: bool) -> None:
        """After the answer: tell the client about a settings change through the other API."""
        with live.lock:
            updates = session_config.updates(live.record.config, modes=modes, options=options,
                                       boolean=self.client.boolean_config)
        for update in updates:
            self._after_reply(functools.partial(live.emit, update))

    def _activate(self, record: SessionRecord) -> ActiveSession:
        live = ActiveSession(record, self.peer, self.store,
                           Translator(self._v, v1_message_ids=self.options.v1_message_ids))
        with self._lock:
            self._live[record.sessionId] = live
        return live

    def _restore(self, params: dict[str, Any], method: str) -> SessionRecord:
        """The stored session for load/resume, with the request's roots and MCP servers."""
        sid = _session_id(params)
        cwd = caps.absolute_path(params.get("cwd"), "cwd")
        dirs = caps.additional_directories(params, method, self.options)
        names = caps.mcp_server_names(params, method, self._v, self.options)
        with self._lock:
            existing = self._live.get(sid)
        if existing is not None and existing.busy:
            raise RpcError(RpcError.INVALID_REQUEST, f"a turn is running in session {sid}")
        record = existing.record if existing is not None else self.store.load(sid)
        if record is None:
            raise _not_found(sid)
        if record.cwd != cwd:
            raise RpcError(RpcError.INVALID_PARAMS, f"cwd {cwd} does not match the session's cwd {record.cwd}")
        # The request carries the full intended list: omitting it restores nothing (seed rule).
        record.additionalDirectories = dirs
        record.mcpServers = names
        return record

    def _info(self, record: SessionRecord) -> dict[str, Any]:
        info: dict[str, Any] = {"sessionId": record.sessionId, "cwd": record.cwd, "updatedAt": record.updatedAt}
        if record.title is not None:
            info["title"] = record.title
        if record.additionalDirectories and self.options.has("additional-directories"):
            info["additionalDirectories"] = list(record.additionalDirectories)
        messages = {u.get("messageId") for u in record.history if u.get("sessionUpdate") in MESSAGE_KINDS}
        info["_meta"] = {"messageCount": len(messages), "turns": record.turns}
        return info


def _session_id(params: dict[str, Any]) -> str:
    sid = params.get("sessionId")
    if not isinstance(sid, str):
        raise RpcError(RpcError.INVALID_PARAMS, "sessionId must be a string")
    return sid


def _not_found(sid: str) -> RpcError:
    return RpcError(RpcError.RESOURCE_NOT_FOUND, f"Resource not found: session {sid}")


def main(argv: list[str] | None = None) -> int:
    """Serve one client on stdin/stdout until end of input. Returns the exit status."""
    options = parse_options(argv)
    if options.forget_auth:
        Credentials(options.state_dir).forget()
    # Raw, unbuffered fds: see Peer. Anything printed by mistake goes to stderr, not the protocol.
    # Both live as long as the process (SIM115): nothing would ever close them.
    rfile = open(0, "rb", buffering=0, closefd=False)  # noqa: SIM115
    wfile = open(1, "wb", buffering=0, closefd=False)  # noqa: SIM115
    sys.stdout = sys.stderr
    peer = Peer(rfile, wfile, string_ids=options.string_ids)
    agent = DemoAgent(peer, options)
    inbox: queue.Queue[Any] = queue.Queue()
    reader = threading.Thread(target=peer.read_forever, args=(inbox, agent.urgent), name="stdin", daemon=True)
    log(f"started: pid {os.getpid()}, protocol <= {options.protocol}, state in {options.state_dir}")
    reader.start()
    try:
        while (msg := inbox.get()) is not EOF:
            agent.handle(msg)
        log("stdin closed: exiting")
    except PeerGone:
        log("stdout closed: exiting")
    except KeyboardInterrupt:
        log("interrupted: exiting")
    finally:
        agent.shutdown()
    return 0
