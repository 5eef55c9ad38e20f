"""JSON-RPC 2.0 over a :class:`~acpcli.wire.transport.Transport`: the client's half of ACP's wire.

Invariants:

* Our request ids are consecutive integers; a response is matched to its request by id, and
  a response to an id we do not know is logged and dropped.
* Notifications from the agent reach ``on_notification`` **in arrival order**, awaited by the
  reader before it reads the next frame. So every ``session/update`` sent before a response
  has been handled before that response's caller resumes. This is the replay hot path: per
  frame, one JSON decode and a few dict lookups, no models.
* Requests from the agent run concurrently, each in its own task (a permission prompt must not
  stall the update stream). Unknown method → -32601; :class:`RpcError` → that error; any
  other exception → -32603 (and logged); ``$/cancel_request`` → the handler is cancelled and
  the reply is -32800.
* A request of ours whose caller is cancelled (Ctrl-C during a slow setup step, a step
  timeout) is abandoned: ``$/cancel_request`` names it to the agent, its method is appended to
  ``cancelled`` (so the command can say what it gave up), and its late answer is dropped.
  Support needs no capability: ``$/cancel_request`` is protocol-level, which every ACP v1 and
  v2 implementation must accept (and may ignore); it is a notification, so nothing waits on it.
* Bad input (non-JSON, invalid UTF-8, JSON nested too deep for the parser, non-object) is
  skipped with a warning (:mod:`acpcli.notices`: stderr in the CLI), never fatal.
* A line the transport discarded as too long (``set_oversized_handler``) is read for its
  JSON-RPC id: the request it answered fails with :class:`AnswerTooLarge` (all pending
  requests do when it is an answer whose id cannot be read), and a request from the agent
  gets a -32600 error.
* When the agent's output ends, every pending request fails at once with
  :class:`ConnectionClosed` naming the exit status and the agent's last stderr lines; every
  later request fails the same way immediately.
* Sends are serialized: one frame at a time, so concurrent writers never interleave bytes.
"""

from __future__ import annotations

import json
import json.scanner
import logging
import signal
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from acpcli import notices
from acpcli.errors import AnswerTooLarge, ConnectionClosed, RpcError
from acpcli.wire.transport import Transport
from acpcli.wire.wiretap import Tap

if TYPE_CHECKING:
    from collections import deque

logger = logging.getLogger("acpcli.wire.connection")

Handler = Callable[[Any], Awaitable[Any]]
"""Serves one agent→client method: ``params -> result``; raise :class:`RpcError` to answer an error."""

#: ``on_notification(method, params, frame_text)``: ``frame_text`` is the notification's frame
#: as received (None inside a batch), so a consumer can store it without re-encoding it.
NotificationCallback = Callable[[str, Any, "str | None"], "Awaitable[None] | None"]

CANCEL_METHOD = "$/cancel_request"
# Bad frames reported at warning level before switching to debug (with a running count).
_BAD_FRAME_WARNINGS = 10
# How many stderr lines an "agent exited" message quotes (all of them are on the exception).
_STDERR_LINES_IN_MESSAGE = 10
# After a failed send, how long to wait for the reader to see the agent's end (for its status).
_SEND_FAILURE_SETTLE = 3.0
_CANCEL_SEND_TIMEOUT = 1.0

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
# json.loads(bytes) would sniff for UTF-16/32 on every frame; ACP frames are UTF-8.
_slow_decode = json.JSONDecoder().decode
# The decoder's own scanner (C where available): ``decode`` without its two whitespace
# regex matches, for the usual frame that is exactly one JSON value.
_scan_once = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def _decode(text: str) -> Any:
    """``json.loads(text)``, the same value or the same error; one frame of the hot path."""
    try:
        value, end = _scan_once(text, 0)
    except StopIteration:  # not a value at offset 0 (leading whitespace, or not JSON)
        return _slow_decode(text)
    if end != len(text):  # trailing whitespace, or extra data: let decode accept or reject it
        return _slow_decode(text)
    return value


class Masked:
    """A handler's result whose wire log copy differs: ``value`` goes to the agent, ``logged``
    to the tap (the wire log, ``--raw``): an answer carrying what the user typed into a field
    the request marked sensitive (:mod:`acpcli.services.elicitation`)."""

    __slots__ = ("logged", "value")

    def __init__(self, value: Any, logged: Any) -> None:
        self.value = value
        self.logged = logged


class _Reply(dict[str, Any]):
    """A reply whose tap copy is :attr:`logged` (from a :class:`Masked` result)."""

    logged: dict[str, Any]


def encode(message: Any) -> bytes:
    """Serialize one JSON-RPC message as a compact UTF-8 frame (no newline)."""
    # Lone surrogates (from "\\ud800" escapes we received) cannot be UTF-8: replace them.
    return _dumps(message).encode("utf-8", "replace")


class _Pending:
    __slots__ = ("done", "error", "method", "result")

    def __init__(self, method: str) -> None:
        self.method = method
        self.done = anyio.Event()
        self.result: Any = None
        self.error: BaseException | None = None


class Connection:
    """A JSON-RPC 2.0 endpoint over one transport; use ``async with Connection(t) as conn``.

    ``handlers`` serve requests from the peer; ``on_notification(method, params, frame_text)`` receives its
    notifications in order (it may be sync or async; it must not await a request on this
    connection, since it runs on the reader). ``tap`` records every frame both ways.

    Leaving the ``async with`` block stops the reader and the handlers, closes the transport
    (for an agent process: the escalating shutdown) and closes the tap's file.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        handlers: Mapping[str, Handler] | None = None,
        on_notification: NotificationCallback | None = None,
        tap: Tap | None = None,
        step_timeout: float | None = None,
        cancelled: list[str] | None = None,
    ) -> None:
        self._transport = transport
        #: The methods of our requests abandoned with ``$/cancel_request``, in order.
        self.cancelled: list[str] = cancelled if cancelled is not None else []
        #: How long a bounded request (every one but a turn or a login) may wait for its
        #: answer; None or 0: for ever. See :meth:`request`.
        self.step_timeout = step_timeout
        self._handlers: dict[str, Handler] = dict(handlers or {})
        self._on_notification = on_notification
        self._tap = tap
        self._next_id = 0
        self._pending: dict[int, _Pending] = {}
        # Ids of our requests abandoned by a cancelled caller: their late answers are expected.
        self._abandoned: set[int] = set()
        # Agent→client requests being served, by id: cancelling the scope cancels the handler.
        self._serving: dict[Any, anyio.CancelScope] = {}
        self._send_lock = anyio.Lock()
        self._tg: anyio.abc.TaskGroup | None = None
        self._reader_done: anyio.Event | None = None
        self._closed_locally = False
        self._bad_frames = 0
        self.closed = False
        """True once the peer's output ended or the connection was closed: requests fail at once."""
        set_handler = getattr(transport, "set_oversized_handler", None)
        if set_handler is not None:
            set_handler(self._oversized)

    # -- lifecycle ------------------------------------------------------------------------------

    async def __aenter__(self) -> Connection:
        if self._tg is not None or self.closed:
            raise RuntimeError("a Connection can be entered only once")
        self._reader_done = anyio.Event()
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        tg.start_soon(self._read_loop, name="acpcli connection reader")
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        tg = self._tg
        assert tg is not None
        self._closed_locally = True
        tg.cancel_scope.cancel()
        try:
            # The group holds only our reader and handlers: the body's exception is not its
            # business and must reach the caller as it is, not wrapped in an exception group.
            await tg.__aexit__(None, None, None)
        finally:
            self._mark_closed()
            with anyio.CancelScope(shield=True):
                await self._transport.aclose()
            if self._tap is not None:
                self._tap.close()

    # -- outgoing -------------------------------------------------------------------------------

    async def request(self, method: str, params: Any = None, *, bounded: bool = True) -> Any:
        """Send a request and wait for its result.

        Raises :class:`RpcError` for an error answer, :class:`ConnectionClosed` if the agent is
        gone (now or before it answers). If the caller is cancelled, ``$/cancel_request`` is
        sent for the request (best effort) and its late answer is ignored. A ``bounded``
        request (setup steps: ``initialize``, session setup, settings, listings) not answered
        within :attr:`step_timeout` is abandoned the same way and raises :class:`StepTimeout`;
        a turn or a login (``bounded=False``) takes as long as it takes.
        """
        limit = self.step_timeout if bounded else None
        if not limit:
            return await self._request(method, params)
        from acpcli.errors import StepTimeout

        try:
            with anyio.fail_after(limit):
                return await self._request(method, params)
        except TimeoutError:
            raise StepTimeout(
                f"{method}: the agent did not answer within {limit:g} s",
                hint="the agent may be stuck or still starting; wait longer with --timeout SECONDS, "
                "ACPCLI_TIMEOUT=SECONDS or timeout = SECONDS in config.toml (0: no limit)",
            ) from None

    async def _request(self, method: str, params: Any = None) -> Any:
        if self.closed:
            raise self._closed_error(method)
        self._next_id += 1
        request_id = self._next_id
        pending = _Pending(method)
        self._pending[request_id] = pending
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._send(message)
            await pending.done.wait()
        except ConnectionClosed:  # from the send: the agent is gone
            self._pending.pop(request_id, None)
            await self._wait_for_reader()
            raise self._closed_error(method) from None
        except anyio.get_cancelled_exc_class():
            if self._pending.pop(request_id, None) is not None:
                self._abandoned.add(request_id)
                self.cancelled.append(method)
                await self._send_cancel_quietly(request_id)
            raise
        except BaseException:
            self._pending.pop(request_id, None)
            raise
        if pending.error is not None:
            raise pending.error
        return pending.result

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification. Raises :class:`ConnectionClosed` if the agent is gone."""
        if self.closed:
            raise self._closed_error(None)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._send(message)
        except ConnectionClosed:
            await self._wait_for_reader()
            raise self._closed_error(None) from None

    async def cancel_request(self, request_id: int | str) -> None:
        """Ask the peer to cancel our request ``request_id`` (``$/cancel_request``).

        The request stays pending: the peer still answers it, with a result or -32800.
        """
        await self.notify(CANCEL_METHOD, {"requestId": request_id})

    async def _send(self, message: Any) -> None:
        await self._send_frame(encode(message))

    async def _send_frame(self, frame: bytes, logged: bytes | None = None) -> None:
        """Send ``frame``; the tap records ``logged`` instead when given (a masked copy)."""
        async with self._send_lock:
            if self._tap is not None:
                self._tap.sent(frame if logged is None else logged)
            await self._transport.send(frame)

    async def _send_cancel_quietly(self, request_id: int) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_SEND_TIMEOUT):
            try:
                cancel = {"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"requestId": request_id}}
                await self._send(cancel)
            except ConnectionClosed:
                pass

    # -- the reader -----------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        # The hot path of replay: keep per-frame work to a decode and a few dict lookups.
        transport = self._transport
        tap = self._tap
        dispatch = self._dispatch
        # frames the transport already holds, popped without awaiting (AgentProcess has them)
        buffered: deque[bytes] | None = getattr(transport, "buffered", None)
        cancelled = False
        try:
            while True:
                frame = buffered.popleft() if buffered else None
                if frame is None:
                    try:
                        frame = await transport.receive()
                    except ConnectionClosed:
                        break
                    if frame is None:
                        break
                if tap is not None:
                    try:
                        tap.received(frame)
                    except (RecursionError, ValueError):  # redacting a frame too deep to walk
                        logger.debug("could not record a frame", exc_info=True)
                try:
                    text = frame.decode("utf-8")
                    message = _decode(text)
                except ValueError as exc:  # invalid UTF-8 (UnicodeDecodeError) or not JSON
                    self._bad_frame(frame, exc)
                    continue
                except RecursionError:  # [[[[…]]]]: nested deeper than the parser goes
                    self._bad_frame(frame, "JSON nested too deeply")
                    continue
                try:
                    if type(message) is dict:
                        consuming = dispatch(message, text)
                        if consuming is not None:
                            await self._consume(consuming, message)
                    elif type(message) is list:
                        await self._dispatch_batch(message)
                    else:
                        self._bad_frame(frame, "not a JSON-RPC message")
                except RecursionError:  # parsed, but too deep to log, copy or answer (an id of [[[…]]])
                    self._bad_frame(frame, "JSON nested too deeply")
        except anyio.get_cancelled_exc_class():
            # Cancelled with the requests it serves (Ctrl-C): they are abandoned first, each
            # with its ``$/cancel_request``, as they unwind; the connection's exit marks it
            # closed after them. Failing them here would race their own cancellation.
            cancelled = True
            raise
        finally:
            if not cancelled:
                self._mark_closed()
            assert self._reader_done is not None
            self._reader_done.set()

    def _dispatch(self, message: dict[str, Any], text: str | None = None) -> Awaitable[None] | None:
        """Handle one message. For a notification, return what the consumer wants awaited:
        the reader awaits it before reading on, which is what keeps updates in order.
        ``text`` is the frame as received when it held this message alone (not a batch)."""
        method = message.get("method")
        if method is None:
            self._resolve(message)
        elif "id" not in message:
            if type(method) is not str:
                self._bad_frame(encode(message), "method is not a string")
                return None
            if method == CANCEL_METHOD:
                self._cancel_serving(message.get("params"))
                return None
            callback = self._on_notification
            if callback is not None:
                try:
                    return callback(method, message.get("params"), text)
                except Exception:
                    # A failing consumer must not take the whole stream down with it.
                    logger.exception("handling the notification %s failed", method)
        else:
            scope = self._accept_request(message)
            if scope is not None:
                assert self._tg is not None
                self._tg.start_soon(self._serve_one, message, scope)
        return None

    async def _consume(self, consuming: Awaitable[None], message: dict[str, Any]) -> None:
        try:
            await consuming
        except Exception:
            logger.exception("handling the notification %s failed", message.get("method"))

    async def _dispatch_batch(self, items: list[Any]) -> None:
        if not items:
            self._bad_frame(b"[]", "an empty batch")
            return
        requests: list[tuple[dict[str, Any], anyio.CancelScope]] = []
        for item in items:
            if type(item) is not dict:
                self._bad_frame(repr(item).encode(), "a batch element is not an object")
            elif item.get("method") is not None and "id" in item:
                scope = self._accept_request(item)
                if scope is not None:
                    requests.append((item, scope))
            else:
                consuming = self._dispatch(item)
                if consuming is not None:
                    await self._consume(consuming, item)
        if requests:
            # One task answers the whole batch, with one batch.
            assert self._tg is not None
            self._tg.start_soon(self._serve_batch, requests)

    def _resolve(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        pending = None
        if type(request_id) is int:  # our ids are ints; anything else is nobody's
            pending = self._pending.pop(request_id, None)
            if pending is None and request_id in self._abandoned:
                self._abandoned.discard(request_id)
                logger.debug("dropped the answer to the cancelled request %s", request_id)
                return
        if pending is None:
            logger.warning("the agent answered an unknown request id %.100r; ignored", request_id)
            return
        error = message.get("error")
        if error is not None:
            pending.error = RpcError.from_wire(error, method=pending.method)
        elif "result" in message:
            pending.result = message["result"]
        else:
            pending.error = RpcError(
                RpcError.INTERNAL_ERROR, "malformed response (no result, no error)", method=pending.method
            )
        pending.done.set()

    def _bad_frame(self, frame: bytes, reason: object) -> None:
        self._bad_frames += 1
        count = self._bad_frames
        if count < _BAD_FRAME_WARNINGS:
            logger.warning("skipped a bad line from the agent (%s): %.200r", reason, frame)
        elif count == _BAD_FRAME_WARNINGS:
            logger.warning(
                "skipped a bad line from the agent (%s): %.200r; further bad lines are logged at debug level",
                reason,
                frame,
            )
        else:
            logger.debug("skipped bad line #%d from the agent (%s): %.200r", count, reason, frame)
        # The person sees it too (logged above already). A bytes repr escapes every control byte.
        notices.warn("bad-line", f"skipped a bad line from the agent ({reason}): {frame[:80]!r}", log=False)

    def _oversized(self, head: bytes, size: int, limit: int) -> None:
        """The transport dropped a line over ``limit`` bytes: say so, and settle whatever
        was waiting for it (see the module docstring)."""
        notices.warn("too-long", f"skipped a {size}-byte line from the agent (over the {limit}-byte line limit)")
        fields = _head_fields(head)
        request_id = fields.get("id", _MISSING)
        if "method" in fields:
            if request_id is not _MISSING and request_id is not _UNREAD and self._tg is not None:
                reply = _error_reply(request_id, RpcError.INVALID_REQUEST, f"request too large ({size} bytes, the limit is {limit})")
                self._tg.start_soon(self._send_reply, reply)
            return
        if type(request_id) is int and request_id in self._pending:
            self._fail(request_id, size, limit)
        elif request_id in (_MISSING, _UNREAD) and ("result" in fields or "error" in fields):
            # An answer, but to which request cannot be read: none of them will get another.
            for pending_id in list(self._pending):
                self._fail(pending_id, size, limit)

    def _fail(self, request_id: int, size: int, limit: int) -> None:
        pending = self._pending.pop(request_id)
        pending.error = AnswerTooLarge(size, limit, method=pending.method)
        pending.done.set()

    # -- serving the agent's requests ---------------------------------------------------------------

    def _accept_request(self, message: dict[str, Any]) -> anyio.CancelScope | None:
        """Register an incoming request (before its task starts, so a cancel can find it)."""
        request_id = message["id"]
        try:
            hash(request_id)
        except TypeError:
            self._bad_frame(encode(message), "unusable request id")
            return None
        scope = anyio.CancelScope()
        self._serving[request_id] = scope
        return scope

    def _cancel_serving(self, params: Any) -> None:
        request_id = params.get("requestId") if type(params) is dict else None
        try:
            scope = self._serving.get(request_id)
        except TypeError:
            scope = None
        if scope is None:
            logger.debug("$/cancel_request for %r, which is not running", request_id)
            return
        scope.cancel()

    async def _serve_one(self, message: dict[str, Any], scope: anyio.CancelScope) -> None:
        reply = await self._serve(message, scope)
        await self._send_reply(reply)

    async def _serve_batch(self, requests: list[tuple[dict[str, Any], anyio.CancelScope]]) -> None:
        replies: list[Any] = [None] * len(requests)

        async def serve(index: int, message: dict[str, Any], scope: anyio.CancelScope) -> None:
            replies[index] = await self._serve(message, scope)

        async with anyio.create_task_group() as tg:
            for index, (message, scope) in enumerate(requests):
                tg.start_soon(serve, index, message, scope)
        await self._send_reply(replies)

    async def _serve(self, message: dict[str, Any], scope: anyio.CancelScope) -> dict[str, Any]:
        request_id = message["id"]
        method = message["method"]
        try:
            if type(method) is not str:
                return _error_reply(request_id, RpcError.INVALID_REQUEST, "method must be a string")
            handler = self._handlers.get(method)
            if handler is None:
                return _error_reply(request_id, RpcError.METHOD_NOT_FOUND, f"method not found: {method}")
            with scope:
                try:
                    result = await handler(message.get("params"))
                except RpcError as exc:
                    return {"jsonrpc": "2.0", "id": request_id, "error": exc.to_wire()}
                except Exception as exc:
                    logger.exception("the handler for %s failed", method)
                    text = f"internal error in {method}: {exc}"
                    return _error_reply(request_id, RpcError.INTERNAL_ERROR, text)
                if isinstance(result, Masked):
                    reply = _Reply(jsonrpc="2.0", id=request_id, result=result.value)
                    reply.logged = {"jsonrpc": "2.0", "id": request_id, "result": result.logged}
                    return reply
                return {"jsonrpc": "2.0", "id": request_id, "result": result}
            # Only reached when the scope swallowed its own cancellation: $/cancel_request.
            return _error_reply(request_id, RpcError.REQUEST_CANCELLED, "request cancelled")
        finally:
            if self._serving.get(request_id) is scope:
                del self._serving[request_id]

    async def _send_reply(self, reply: Any) -> None:
        logged: bytes | None = None
        try:
            frame = encode(reply)
            if isinstance(reply, _Reply):
                logged = encode(reply.logged)
            elif isinstance(reply, list) and any(isinstance(item, _Reply) for item in reply):
                logged = encode([item.logged if isinstance(item, _Reply) else item for item in reply])
        except (TypeError, ValueError) as exc:
            logger.error("a handler returned a result that is not JSON: %s", exc)
            frame = encode(_unserializable(reply, str(exc)))
            logged = None
        try:
            await self._send_frame(frame, logged)
        except ConnectionClosed:
            logger.debug("could not answer the agent: the connection is closed")

    # -- closing ----------------------------------------------------------------------------------

    def _mark_closed(self) -> None:
        """Fail every pending request; later requests fail immediately."""
        self.closed = True
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        for waiter in pending.values():
            waiter.error = self._closed_error(waiter.method)
            waiter.done.set()

    async def wait_closed(self, method: str | None = None) -> ConnectionClosed:
        """Wait until the peer's output has ended; return the error that describes it.

        For waits that no request covers (a v2 turn ends with a notification, not a response).
        """
        assert self._reader_done is not None, "the connection was never entered"
        await self._reader_done.wait()
        return self._closed_error(method)

    async def _wait_for_reader(self) -> None:
        # A send failed because the agent is gone; its stdout ends about now. Waiting for the
        # reader to see that lets the error carry the exit status.
        if self._reader_done is not None:
            with anyio.move_on_after(_SEND_FAILURE_SETTLE):
                await self._reader_done.wait()

    def _closed_error(self, method: str | None) -> ConnectionClosed:
        returncode, tail = self._transport.exit_info()
        before = f" before answering {method}" if method else ""
        if self._closed_locally:
            return ConnectionClosed(
                f"the connection to the agent was closed{before}", returncode=returncode, stderr_tail=tail
            )
        message = f"the agent {_describe_exit(returncode)}{before}"
        if tail:
            shown = tail[-_STDERR_LINES_IN_MESSAGE:]
            message += "; its last stderr lines:\n" + "\n".join(f"  {line}" for line in shown)
        else:
            message += " (it wrote nothing to stderr)"
        return ConnectionClosed(message, returncode=returncode, stderr_tail=tail)


_MISSING = object()  # no such member in the line's head
_UNREAD = object()  # the member is there, but its value did not fit in the head
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]  # c_scanstring or py_scanstring, untyped


def _head_fields(head: bytes) -> dict[str, Any]:
    """The top-level members that can be read from the start of a JSON object (``head`` is
    the first bytes of a line too long to keep). A member whose value runs past the head
    maps to ``_UNREAD``; reading stops there."""
    text = head.decode("utf-8", "replace")
    fields: dict[str, Any] = {}
    end = len(text)
    i = _skip_ws(text, 0)
    if i >= end or text[i] != "{":
        return fields
    i += 1
    while True:
        i = _skip_ws(text, i)
        if i >= end or text[i] != '"':
            return fields
        try:
            key, i = _scanstring(text, i + 1)
        except ValueError:
            return fields
        i = _skip_ws(text, i)
        if i >= end or text[i] != ":":
            return fields
        i = _skip_ws(text, i + 1)
        try:
            fields[key], i = _raw_decode(text, i)
        except (ValueError, RecursionError):
            fields[key] = _UNREAD
            return fields
        i = _skip_ws(text, i)
        if i >= end or text[i] != ",":
            return fields
        i += 1


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


_raw_decode = json.JSONDecoder().raw_decode


def _describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "closed its output"
    if returncode >= 0:
        return f"exited with status {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"was killed by {name}"


def _error_reply(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _unserializable(reply: Any, reason: str) -> Any:
    def fix(one: Any) -> Any:
        try:
            encode(one)
        except (TypeError, ValueError):
            return _error_reply(one.get("id"), RpcError.INTERNAL_ERROR, f"result is not JSON: {reason}")
        return one

    return [fix(one) for one in reply] if isinstance(reply, list) else fix(reply)
