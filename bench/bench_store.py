"""Benchmark: the message store against the cost of merely parsing the stream.

Pre-generates N ``session/update`` lines (``agent_message_chunk`` with ``messageId``, text
chunks of about 20 characters, spread over M messages, a few messages streaming at once)
in memory, then times in the same process, best of R repeats:

* floor: ``json.loads(line)`` for every line;
* store: ``json.loads(line)`` then ``store.apply(msg["params"]["update"])``.

Prints updates/s for both and their ratio against the target (store <= 3.0 x floor).
Exits 0 either way unless ``--check`` is given (benchmarks report, they do not fail the
build). Run: ``.venv/bin/python bench/bench_store.py [--n 100000] [--check]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from acpcli.model import Store

TARGET_RATIO = 3.0
WORDS = ["the", "a", "of", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on", "be", "by", "this", "are", "from", "or", "an", "at", "which", "function", "value", "return", "error", "file", "path", "test", "store", "message", "update", "chunk", "stream", "client", "agent", "session", "prompt", "tool", "call", "plan", "render", "text", "line", "code", "change", "result"]


def _chunk_texts(rng: random.Random, count: int) -> list[str]:
    """A pool of JSON-encoded text chunks of 15..25 characters."""
    pool = []
    for _ in range(count):
        target = rng.randint(15, 25)
        text = ""
        while len(text) < target:
            text += rng.choice(WORDS) + " "
        if rng.random() < 0.05:
            text = text[: target - 1] + "\n"
        pool.append(json.dumps(text[:target]))
    return pool


def generate(n: int, messages: int, seed: int = 1) -> tuple[list[str], int]:
    """``n`` update lines over ``messages`` messages, up to 3 streaming concurrently, and
    the total number of characters of text they carry.

    Mostly the newest open message gets the next chunk (one reply streaming), sometimes an
    older open one does (a thought and a reply, or a replay interleaving ids).
    """
    rng = random.Random(seed)
    pool = _chunk_texts(rng, 4096)
    pool_chars = [len(json.loads(t)) for t in pool]
    chars = 0
    per_message = [n // messages + (1 if i < n % messages else 0) for i in range(messages)]
    prefix = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_bench_0001","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg_'
    middle = '","content":{"type":"text","text":'
    suffix = "}}}}"
    lines: list[str] = []
    open_msgs: list[int] = []  # message numbers currently streaming
    left = {}
    next_msg = 0
    while len(lines) < n:
        while len(open_msgs) < 3 and next_msg < messages:
            if per_message[next_msg]:
                open_msgs.append(next_msg)
                left[next_msg] = per_message[next_msg]
            next_msg += 1
        if not open_msgs:
            break
        pick = len(open_msgs) - 1 if rng.random() < 0.8 else rng.randrange(len(open_msgs))
        msg = open_msgs[pick]
        k = rng.randrange(len(pool))
        lines.append(f"{prefix}{msg:06d}{middle}{pool[k]}{suffix}")
        chars += pool_chars[k]
        left[msg] -= 1
        if not left[msg]:
            del open_msgs[pick]
    return lines, chars


def floor(lines: list[str]) -> float:
    """Seconds to json.loads every line."""
    loads = json.loads
    start = time.perf_counter()
    for line in lines:
        loads(line)
    return time.perf_counter() - start


def store_run(lines: list[str]) -> tuple[float, Store]:
    """Seconds to json.loads every line and apply its update to a fresh store."""
    loads = json.loads
    store = Store()
    apply = store.apply
    start = time.perf_counter()
    for line in lines:
        apply(loads(line)["params"]["update"])
    elapsed = time.perf_counter() - start
    return elapsed, store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="updates (default 1,000,000)")
    parser.add_argument("--messages", type=int, default=1000, help="messages (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="repeats, best is kept (default 3)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the target is missed")
    args = parser.parse_args(argv)

    lines, chars = generate(args.n, max(1, min(args.messages, args.n)))
    n = len(lines)
    best_floor = best_store = float("inf")
    store = None
    for _ in range(max(1, args.repeat)):
        best_floor = min(best_floor, floor(lines))
        store = None  # free the previous transcript before timing the next one
        gc.collect()
        elapsed, store = store_run(lines)
        best_store = min(best_store, elapsed)

    # the store must have built what was sent, or the timing means nothing
    assert store is not None and len(store.entries) == min(args.messages, n), len(store.entries)
    assert sum(len(m.text) for m in store.entries) == chars  # type: ignore[union-attr]
    ratio = best_store / best_floor
    verdict = "PASS" if ratio <= TARGET_RATIO else "MISS"
    print(f"bench_store: {n:,} agent_message_chunk updates over {len(store.entries):,} messages, best of {args.repeat}")
    print(f"  floor  json.loads only        {n / best_floor:12,.0f} updates/s  ({best_floor * 1e9 / n:6.0f} ns/update)")
    print(f"  store  json.loads + apply     {n / best_store:12,.0f} updates/s  ({best_store * 1e9 / n:6.0f} ns/update)")
    print(f"  ratio  {ratio:.2f} (target <= {TARGET_RATIO:.1f})  {verdict}")
    if args.check and verdict != "PASS":
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
