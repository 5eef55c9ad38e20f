"""A stdlib-only ACP agent that replays a large pre-generated conversation on ``session/load``.

For the replay and memory benchmarks (``bench/bench_replay.py``): it must never be the
bottleneck, so the whole replay is generated (deterministically, from ``--seed``) and
serialized to one byte string *before* ``initialize`` is answered; ``session/load`` then only
substitutes the session id and writes the bytes to stdout as fast as the pipe takes them.

The conversation: ``--messages`` messages of ``--chunks`` text chunks each (default 2,000 x
50 = 100,000 chunks of ~20 characters), in turns of five messages -- user, thought, agent,
agent, agent -- with a tool call (``tool_call``, an ``in_progress`` update, a ``completed``
update with content; every other one an edit with a diff) between consecutive agent
messages, so two per turn. Shapes:

* ``--protocol 1`` (default): v1 as every real agent sends it: chunks carry no
  ``messageId`` (a tool call or a change of kind starts the next message); the
  ``initialize`` answer is ``protocolVersion: 1`` whatever the client offered.
* ``--protocol 2``: the v2 draft: chunks carry ``messageId``, tool calls are created by
  ``tool_call_update`` (v2 has no ``tool_call``), ``session.load`` is advertised, the load
  answer is ``null``. ``session/resume`` with ``replayFrom`` (v2 latest) replays too.

``--report FILE``: at exit (stdin closed, or SIGTERM) the agent writes its own CPU time and
peak RSS (``getrusage(RUSAGE_SELF)``) and the wall-clock times of the replay as JSON, so a
benchmark can subtract the agent's CPU from its client's (the agent is the client's child)
and time the replay without the client's start-up.

Other methods: ``session/new`` answers a fresh id, ``session/prompt`` ends the turn at once,
``session/close`` answers ``{}``; anything else is -32601. Imports nothing from acpcli.
Run: ``python bench/replay_agent.py [--protocol 1|2] [--messages N] [--chunks N] [--report FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

WORDS = ["the", "a", "of", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on", "be", "by", "this", "are", "from", "or", "an", "at", "which", "function", "value", "return", "error", "file", "path", "test", "store", "message", "update", "chunk", "stream", "client", "agent", "session", "prompt", "tool", "call", "plan", "render", "text", "line", "code", "change", "result"]

#: Message kinds of one turn, in order; a tool call sits between consecutive agent messages.
TURN = ("user", "thought", "agent", "agent", "agent")
CHUNK_KIND = {"user": "user_message_chunk", "thought": "agent_thought_chunk", "agent": "agent_message_chunk"}
#: Stands for the session id in the pre-serialized replay; replaced once per load.
SID_PLACEHOLDER = "@@REPLAY-SESSION-ID@@"
# The replay is written in slices of about this many bytes (cut at line ends).
_SLICE = 1 << 20
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _chunk_pool(rng: random.Random, count: int) -> list[str]:
    """Text chunks of 15..25 characters; some have a newline inside (never at an end, so
    a message's text never starts or ends with one and prints verbatim)."""
    pool = []
    for _ in range(count):
        target = rng.randint(15, 25)
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < target:
            words.append(rng.choice(WORDS))
        text = " ".join(words)[:target]
        if rng.random() < 0.05 and len(text) > 4:
            cut = len(text) // 2
            text = text[:cut] + "\n" + text[cut + 1 :]
        pool.append(text if text[-1] != " " else text[:-1] + "s")
    return pool


def iter_updates(
    messages: int = 2000, chunks: int = 50, *, seed: int = 1, v2: bool = False
) -> Iterator[dict[str, Any]]:
    """The replay, one ``session/update`` ``update`` dict at a time (deterministic for a seed).

    A generator, so that the agent never holds 100,000 dicts at once: its own peak memory
    stays below its client's, which lets a benchmark read the client's peak from ``wait4``.
    """
    rng = random.Random(seed)
    pool = _chunk_pool(rng, 4096)
    tools = 0
    prev_kind = None
    for m in range(messages):
        kind = TURN[m % len(TURN)]
        if kind == "agent" and prev_kind == "agent":
            tools += 1
            yield from _tool_call(rng, tools, v2)
        prev_kind = kind
        chunk_kind = CHUNK_KIND[kind]
        for _ in range(chunks):
            update: dict[str, Any] = {
                "sessionUpdate": chunk_kind,
                "content": {"type": "text", "text": pool[rng.randrange(len(pool))]},
            }
            if v2:
                update["messageId"] = f"msg-{m + 1:06d}"
            yield update


def expected_transcript(updates: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """What a client must end up with: the agent messages' full texts in order (a run of
    ``agent_message_chunk`` updates is one message), the number of tool calls and updates."""
    agent_texts: list[str] = []
    run: list[str] = []
    tools: set[str] = set()
    count = 0
    for update in updates:
        count += 1
        if update["sessionUpdate"] == "agent_message_chunk":
            run.append(update["content"]["text"])
            continue
        if run:
            agent_texts.append("".join(run))
            run = []
        if "toolCallId" in update:
            tools.add(update["toolCallId"])
    if run:
        agent_texts.append("".join(run))
    return {"agent_texts": agent_texts, "tool_calls": len(tools), "updates": count}


def _tool_call(rng: random.Random, number: int, v2: bool) -> list[dict[str, Any]]:
    """One tool call's life: announced, in progress, completed with content."""
    tool_id = f"call_{number:06d}"
    path = f"/work/project/src/module_{rng.randrange(200):03d}.py"
    edit = number % 2 == 0
    first: dict[str, Any] = {
        "sessionUpdate": "tool_call_update" if v2 else "tool_call",
        "toolCallId": tool_id,
        "title": f"{'Edit' if edit else 'Read'} module_{number % 200:03d}.py",
        "kind": "edit" if edit else "read",
        "status": "pending",
        "locations": [{"path": path}],
        "rawInput": {"path": path},
    }
    if edit:
        old = "\n".join(f"{rng.choice(WORDS)} = {rng.randrange(100)}" for _ in range(4))
        new = old + f"\n{rng.choice(WORDS)} = {rng.randrange(100)}"
        content: dict[str, Any] = {"type": "diff", "path": path, "oldText": old, "newText": new}
    else:
        text = " ".join(rng.choice(WORDS) for _ in range(12))
        content = {"type": "content", "content": {"type": "text", "text": text}}
    return [
        first,
        {"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": "in_progress"},
        {"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": "completed", "content": [content]},
    ]


def serialize(updates: Iterable[dict[str, Any]]) -> tuple[bytearray, int]:
    """Every update as a ``session/update`` notification line (the session id a
    placeholder), and how many there are. Built in one growing buffer: no list of 100,000
    lines next to a joined copy (see :func:`iter_updates` on the agent's memory)."""
    head = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"' + SID_PLACEHOLDER + '","update":'
    blob = bytearray()
    count = 0
    for update in updates:
        blob += f"{head}{_dumps(update)}}}}}\n".encode()
        count += 1
    return blob, count


class ReplayAgent:
    """Answers requests on stdin; on load, writes the pre-serialized replay to stdout."""

    def __init__(self, blob: bytearray, count: int, *, version: int, report: str | None) -> None:
        self.blob = blob
        self.count = count
        self.version = version
        self.report_path = report
        self.out = sys.stdout.fileno()
        self.loads: list[dict[str, float]] = []
        self.bytes_sent = 0
        self._reported = False

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self.out, view[: 1 << 20])
            view = view[written:]
        self.bytes_sent += len(data)

    def answer(self, request_id: Any, result: Any = None, error: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result
        self.write(_dumps(message).encode("utf-8") + b"\n")

    def initialize(self, params: Any) -> dict[str, Any]:
        offered = params.get("protocolVersion") if isinstance(params, dict) else None
        version = min(self.version, offered) if isinstance(offered, int) and offered >= 1 else self.version
        info = {"name": "replay-agent", "title": "Replay benchmark agent", "version": "1"}
        if version >= 2:
            return {"protocolVersion": 2, "capabilities": {"session": {"load": {}, "close": {}}}, "info": info}
        return {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": True, "sessionCapabilities": {"close": {}}},
            "agentInfo": info,
            "authMethods": [],
        }

    def replay(self, session_id: str) -> None:
        """Write the whole replay for ``session_id``, a slice of whole lines at a time (a
        slice's copy with the id filled in is all the extra memory it takes)."""
        start = time.time()
        sid = json.dumps(session_id, ensure_ascii=False)[1:-1].encode("utf-8")
        placeholder = SID_PLACEHOLDER.encode()
        blob, pos, size = self.blob, 0, len(self.blob)
        while pos < size:
            end = blob.find(b"\n", min(pos + _SLICE, size - 1)) + 1 or size
            self.write(bytes(blob[pos:end]).replace(placeholder, sid))
            pos = end
        self.loads.append({"start": start, "end": time.time(), "updates": self.count})

    def handle(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if "id" not in message or not isinstance(method, str):
            return  # notifications (session/cancel, $/cancel_request) and stray responses
        request_id, params = message["id"], message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "initialize":
            self.answer(request_id, self.initialize(params))
        elif method in ("session/load", "session/resume"):
            if method == "session/load" or params.get("replayFrom") is not None:
                self.replay(str(params.get("sessionId", "")))
            self.answer(request_id, None if self.version >= 2 else {})
        elif method == "session/new":
            self.answer(request_id, {"sessionId": f"replay-{os.getpid()}-{len(self.loads)}"})
        elif method == "session/prompt":
            self.answer(request_id, {"stopReason": "end_turn"})
        elif method == "session/close":
            self.answer(request_id, {})
        else:
            self.answer(request_id, error={"code": -32601, "message": f"method not found: {method}"})

    def serve(self) -> None:
        for line in sys.stdin.buffer:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                self.handle(message)

    def write_report(self) -> None:
        """Write this process's CPU time, peak RSS and replay times (once)."""
        if self._reported or not self.report_path:
            return
        self._reported = True
        usage = resource.getrusage(resource.RUSAGE_SELF)
        report = {
            "pid": os.getpid(),
            "utime": usage.ru_utime,
            "stime": usage.ru_stime,
            "maxrss_kb": usage.ru_maxrss,
            "loads": self.loads,
            "bytes_sent": self.bytes_sent,
        }
        tmp = self.report_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(report, f)
        os.replace(tmp, self.report_path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--protocol", type=int, choices=(1, 2), default=1, help="highest version spoken (default 1)")
    parser.add_argument("--messages", type=int, default=2000, help="messages (default 2000)")
    parser.add_argument("--chunks", type=int, default=50, help="chunks per message (default 50)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--report", default=None, help="write CPU time, peak RSS and replay times here at exit")
    args = parser.parse_args(argv)

    blob, count = serialize(iter_updates(args.messages, args.chunks, seed=args.seed, v2=args.protocol >= 2))
    agent = ReplayAgent(blob, count, version=args.protocol, report=args.report)
    del blob

    def on_term(signum: int, frame: Any) -> None:
        agent.write_report()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    try:
        agent.serve()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        agent.write_report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
