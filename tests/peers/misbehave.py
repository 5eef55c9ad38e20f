"""A badly behaved JSON-RPC peer, run as a real subprocess by the transport and connection tests.

Standard library only, one synchronous loop: read a line from stdin, act, write to stdout.
What it does is chosen per request by the method name (see ``METHODS``) and, for behaviour of
the process as a whole, by argv flags:

``--ignore-eof``      keep running after stdin closes (until a signal kills it)
``--ignore-sigterm``  ignore SIGTERM (only SIGKILL ends it)
``--banner TEXT``     write TEXT to stderr at start

Each flag is in force before the first request is answered, so a test that has had one
answer knows the agent is set up.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any

out = sys.stdout.buffer
err = sys.stderr.buffer

# agent->client request id -> id of the client request waiting for its answer
waiting: dict[Any, Any] = {}
# the client request waiting for a batch reply
batch_waiter: list[Any] = []
# "hold" requests not answered yet: (id, tag)
held: list[tuple[Any, Any]] = []
# "cancel_me" requests waiting for their $/cancel_request
cancellable: set[Any] = set()
# every requestId the client asked us to cancel
cancels_seen: list[Any] = []


def raw(data: bytes) -> None:
    out.write(data)
    out.flush()


def send(message: Any) -> None:
    raw(json.dumps(message, separators=(",", ":")).encode() + b"\n")


def result(request_id: Any, value: Any) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": value})


def error(request_id: Any, code: int, message: str) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def notification(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


# -- methods: each gets (id, params) ------------------------------------------------------------


def m_echo(rid: Any, params: Any) -> None:
    result(rid, params)


def m_env(rid: Any, params: Any) -> None:
    found = {name: os.environ.get(name) for name in params["names"]}
    result(rid, {"env": found, "cwd": os.getcwd()})


def m_pid(rid: Any, params: Any) -> None:
    result(rid, {"pid": os.getpid(), "pgid": os.getpgid(0)})


def m_hold(rid: Any, params: Any) -> None:
    """Answer nothing until ``expect`` holds have arrived, then answer them newest first."""
    held.append((rid, params.get("tag")))
    if len(held) >= params["expect"]:
        for hid, tag in reversed(held):
            result(hid, {"tag": tag})
        held.clear()


def m_stream(rid: Any, params: Any) -> None:
    for i in range(params["count"]):
        send(notification("session/update", {"i": i}))
    result(rid, {"count": params["count"]})


def m_batch_mixed(rid: Any, params: Any) -> None:
    """Two notifications and the answer, in one batch line."""
    batch = [notification("session/update", {"i": 0}), notification("session/update", {"i": 1})]
    batch.append({"jsonrpc": "2.0", "id": rid, "result": "batched"})
    send(batch)


def m_ask(rid: Any, params: Any) -> None:
    """Send the client a request with the given id; answer ours with the client's reply."""
    waiting[params["id"]] = rid
    send({"jsonrpc": "2.0", "id": params["id"], "method": params["method"], "params": params.get("params")})


def m_ask_batch(rid: Any, params: Any) -> None:
    """Send the client a batch of requests; answer ours with the client's reply, whatever it is."""
    batch_waiter.append(rid)
    send([{"jsonrpc": "2.0", **request} for request in params["requests"]])


def m_cancel_me(rid: Any, params: Any) -> None:
    """Say which id we are holding, then answer only when the client cancels it."""
    cancellable.add(rid)
    send(notification("test/waiting", {"id": rid}))


def m_cancels_seen(rid: Any, params: Any) -> None:
    result(rid, cancels_seen)


def m_garbage(rid: Any, params: Any) -> None:
    for _ in range(params.get("times", 1)):
        raw(b"this is not json\n")
        raw(b'{"jsonrpc": "2.0", "method": \n')
        raw(b"\xff\xfe\xfd not utf-8\n")
        raw(b'{"jsonrpc":"2.0","method":"session/update","params":{"text":"\xff\xfe"}}\n')
        raw(b"42\n")
        raw(b"\n   \n")
        raw(b'{"jsonrpc":"2.0","id":987654,"result":"for nobody"}\n')
        raw(b'{"jsonrpc":"2.0","id":[1],"result":"unhashable id"}\n')
        raw(b'{"jsonrpc":"2.0","method":5}\n')
        raw(b'{"jsonrpc":"2.0","id":{"x":1},"method":"test/ping"}\n')
    result(rid, "still here")


def m_huge(rid: Any, params: Any) -> None:
    result(rid, {"data": "x" * params["size"]})


def m_long_line_then_echo(rid: Any, params: Any) -> None:
    """A notification line of about ``size`` bytes, then the answer."""
    send(notification("session/update", {"pad": "y" * params["size"]}))
    result(rid, params)


def m_unterminated(rid: Any, params: Any) -> None:
    """Answer without the final newline, then exit."""
    raw(json.dumps({"jsonrpc": "2.0", "id": rid, "result": "no newline"}).encode())
    os._exit(0)


def m_die(rid: Any, params: Any) -> None:
    """Write some stderr and end without answering: by exit status, or by a signal."""
    for line in params.get("stderr", []):
        err.write(line.encode() + b"\n")
    err.flush()
    if "signal" in params:
        os.kill(os.getpid(), params["signal"])
    os._exit(params.get("code", 1))


def m_flood_stderr(rid: Any, params: Any) -> None:
    """Write ``bytes`` bytes of stderr (blocks unless the client drains it), then answer."""
    line = b"z" * 99 + b"\n"
    for _ in range(params["bytes"] // len(line)):
        err.write(line)
    err.write(b"flood done\n")
    err.flush()
    result(rid, "flooded")


def m_spawn_grandchild(rid: Any, params: Any) -> None:
    """Start a long sleeper that inherits stderr (as MCP servers often do) and outlives us;
    ``setsid``: in a session of its own (outside our group); ``orphan``: through a shell that
    exits at once (so it is re-parented away from us), in a session of its own."""
    if params and params.get("orphan"):
        shell = subprocess.run(
            ["sh", "-c", "setsid sleep 600 >/dev/null 2>&1 </dev/null & echo $!"], capture_output=True, check=True
        )
        result(rid, {"pid": int(shell.stdout)})
        return
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        start_new_session=bool(params and params.get("setsid")),
    )
    result(rid, {"pid": child.pid})


def m_exit_leaving_holder(rid: Any, params: Any) -> None:
    """Leave a ``sleep`` holding our stdout, out of every reach: double-forked into a session
    of its own, its environment cleared. Say its pid (a ``test/holder`` notification), then
    exit with status 3 without answering."""
    import shutil

    sleep = shutil.which("sleep") or "/bin/sleep"
    read_end, write_end = os.pipe()
    if os.fork() == 0:
        os.setsid()
        holder = os.fork()
        if holder == 0:
            os.execve(sleep, ["sleep", "600"], {})
        os.write(write_end, str(holder).encode())
        os._exit(0)
    os.close(write_end)
    holder_pid = int(os.read(read_end, 32))
    os.wait()
    send(notification("test/holder", {"pid": holder_pid}))
    os._exit(3)


METHODS = {name[2:]: fn for name, fn in dict(globals()).items() if name.startswith("m_")}


def handle(message: Any) -> None:
    if isinstance(message, list):
        # A batch: answers to our ask_batch.
        if batch_waiter:
            result(batch_waiter.pop(0), {"batch": message})
        return
    method = message.get("method")
    if method is None:  # an answer to one of our requests
        rid = waiting.pop(message.get("id"), None)
        if rid is not None:
            result(rid, {"response": message})
        return
    params = message.get("params")
    if method == "$/cancel_request":
        target = params["requestId"]
        cancels_seen.append(target)
        if target in cancellable:
            cancellable.discard(target)
            error(target, -32800, "cancelled by the client")
        return
    if method == "test/cancel_your_request":
        send(notification("$/cancel_request", {"requestId": params["id"]}))
        return
    if "id" not in message:
        return
    fn = METHODS.get(method)
    if fn is None:
        error(message["id"], -32601, f"no method {method}")
    else:
        fn(message["id"], params or {})


def main() -> None:
    args = sys.argv[1:]
    if "--ignore-sigterm" in args:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "--banner" in args:
        err.write(args[args.index("--banner") + 1].encode() + b"\n")
        err.flush()
    for line in sys.stdin.buffer:
        handle(json.loads(line))
    if "--ignore-eof" in args:
        while True:
            signal.pause()


if __name__ == "__main__":
    main()
