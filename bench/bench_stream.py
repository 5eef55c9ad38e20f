"""Benchmark: streaming one long agent message through the views must cost linear time.

Generates realistic Markdown (headings, paragraphs, bullet and numbered lists, fenced
code with blank lines inside) cut into chunks of about 20 characters, and streams one
message of N and one of 2N chunks (the same text twice) as ``agent_message_chunk``
updates without ``messageId`` (as real agents send them) through a real ``Store`` into

* the terminal view (``TtyView`` on acpcli's ``SafeConsole`` with ``force_terminal=True``, width
  100, ``TERM=xterm-256color``, writing to a null file; live refreshes throttled at 10 fps);
* the plain view (``PlainView`` writing to a null file);

and then a tool call's output streamed as N/10 and N/5 ``tool_call_content_chunk`` items
(a v2 agent's command output) through both views, with the same ratio target.

The view's clock is simulated: chunk *i* arrives at *i* x 10 ms (100 chunks/s, a fast
agent), so the live region is redrawn every 10 chunks however fast this machine is. With
the real clock a fast run would draw only a handful of frames and hide what a frame costs
(a view that kept the whole message live would look linear here and crawl in real use).

Times each in the same process (CPU time of this process, runs of N and 2N interleaved),
best of R samples (a sample averages enough runs to last about half a second, for a
fast view), and prints the 2N/N time ratio per view.
Target: ratio <= 2.2 (a renderer that redraws the whole message per chunk shows about 4);
and the terminal view's CPU per chunk of the long message <= 50 us (issue 15; the plain
view's per-chunk cost is printed too, with no target).
Exits 0 either way unless ``--check`` is given.
Run: ``.venv/bin/python bench/bench_stream.py [--n 20000] [--repeat 3] [--check]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from acpcli.model import Store

TARGET_RATIO = 2.2
TARGET_TTY_US = 50.0  # CPU per chunk of the terminal view, long message (issue 15)
WORDS = ["the", "a", "of", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on", "be", "by", "this", "are", "from", "or", "an", "at", "which", "function", "value", "return", "error", "file", "path", "test", "store", "message", "update", "chunk", "stream", "client", "agent", "session", "prompt", "tool", "call", "plan", "render", "text", "line", "code", "change", "result"]


class NullFile:
    """A text stream that discards everything but counts it (the benchmark measures rendering)."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, text: str) -> int:
        self.written += len(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 16))]
    if rng.random() < 0.3:
        i = rng.randrange(len(words))
        words[i] = f"`{words[i]}`" if rng.random() < 0.5 else f"**{words[i]}**"
    return " ".join(words).capitalize() + "."


def markdown_text(chars: int, seed: int = 7) -> str:
    """About ``chars`` characters of LLM-like Markdown."""
    rng = random.Random(seed)
    blocks: list[str] = []
    size = 0
    while size < chars:
        r = rng.random()
        if r < 0.08:
            block = "#" * rng.randint(1, 3) + " " + _sentence(rng).rstrip(".")
        elif r < 0.55:
            block = " ".join(_sentence(rng) for _ in range(rng.randint(2, 5)))
        elif r < 0.72:
            block = "\n".join("- " + _sentence(rng) for _ in range(rng.randint(2, 6)))
        elif r < 0.82:
            block = "\n".join(f"{i}. " + _sentence(rng) for i in range(1, rng.randint(3, 6)))
        else:
            lines = ["```python"]
            for _ in range(rng.randint(4, 14)):
                if rng.random() < 0.15:
                    lines.append("")  # blank lines inside a fence must not split the block
                else:
                    lines.append("    " * rng.randint(0, 2) + f"{rng.choice(WORDS)} = {rng.choice(WORDS)}({rng.randint(0, 99)})")
            lines.append("```")
            block = "\n".join(lines)
        blocks.append(block)
        size += len(block) + 2
    return "\n\n".join(blocks)


def chunk_updates(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` ``agent_message_chunk`` updates of 15..25 characters, one message."""
    rng = random.Random(seed)
    text = markdown_text(n * 20 + 100, seed)
    updates = []
    pos = 0
    for _ in range(n):
        step = rng.randint(15, 25)
        piece = text[pos : pos + step] or "x"
        pos += step
        updates.append({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": piece}})
    return updates


def tool_output_updates(n: int) -> list[dict[str, Any]]:
    """A tool call whose output arrives as ``n`` ``tool_call_content_chunk`` items (how a v2
    agent streams a command's output), then completes."""
    updates: list[dict[str, Any]] = [
        {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "make", "kind": "execute", "status": "in_progress"}
    ]
    for i in range(n):
        item = {"type": "content", "content": {"type": "text", "text": f"compiling module_{i}.c ... ok"}}
        updates.append({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t", "content": item})
    updates.append({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"})
    return updates


class _Session:
    """The part of a LiveSession a view reads."""

    def __init__(self) -> None:
        self.session_id = "sess_bench"
        self.store = Store()


CHUNK_INTERVAL = 0.010  # simulated seconds between chunks


def run(make_view: Callable[[NullFile, Callable[[], float]], Any], updates: list[dict[str, Any]]) -> tuple[float, int]:
    """CPU seconds to apply every update to a fresh store and hand the change to a fresh
    view (CPU time, not wall time: other work on a shared machine is not counted), and how
    many characters the view wrote."""
    session = _Session()
    now = [0.0]
    out = NullFile()
    view = make_view(out, lambda: now[0])
    apply, on_change = session.store.apply, view.on_change
    gc.collect()
    # the pre-built updates are long-lived: keep the collector from walking them again and
    # again (noise that grows with N), while it still frees what rendering leaves behind
    gc.freeze()
    try:
        start = time.process_time()
        for i, update in enumerate(updates):
            now[0] = i * CHUNK_INTERVAL
            on_change(session, apply(update))
        view.close()
        return time.process_time() - start, out.written
    finally:
        gc.unfreeze()


def tty_view(out: NullFile, clock: Callable[[], float]) -> Any:
    try:  # the console acpcli uses (builds before it had one: plain rich)
        from acpcli.text.console import SafeConsole as Console
    except ImportError:
        from rich.console import Console

    from acpcli.render.tty import TtyView

    console = Console(file=out, force_terminal=True, width=100, height=40, color_system="truecolor")  # type: ignore[arg-type]
    return TtyView(console, fps=10, clock=clock)


def plain_view(out: NullFile, clock: Callable[[], float]) -> Any:
    from acpcli.render.plain import PlainView

    return PlainView(out)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="chunks of the smaller message (default 20,000)")
    parser.add_argument("--repeat", type=int, default=3, help="repeats, best is kept (default 3)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = parser.parse_args(argv)
    os.environ["TERM"] = "xterm-256color"  # rich draws no live frames on a dumb terminal

    small = chunk_updates(args.n)
    # the long message is the short one twice, so both have the same mix of Markdown and
    # the ratio measures how the cost scales, not what the second half happens to contain
    large = [*small, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "\n\n"}}, *small]
    chars = sum(len(u["content"]["text"]) for u in large)
    print(f"bench_stream: one agent message of {args.n:,} and {2 * args.n:,} chunks "
          f"(~{chars // (2 * args.n)} chars each, {chars:,} chars), CPU time")
    missed = False
    for name, factory in (("tty", tty_view), ("plain", plain_view)):
        run(factory, small[: min(2000, len(small))])  # warm up imports and caches
        # a sample is the mean of `batch` runs, enough for about half a second of the short
        # message: a fast view streams it in milliseconds, where one hiccup of a shared
        # machine would decide the ratio
        batch = max(1, min(50, int(0.5 / max(run(factory, small)[0], 1e-3))))
        small_samples, large_samples = [], []
        for _ in range(max(1, args.repeat)):  # interleaved, so drift in the process hits both
            small_samples.append(sum(run(factory, small)[0] for _ in range(batch)) / batch)
            larges = [run(factory, large) for _ in range(batch)]
            # the view must have shown the message, or the timing means nothing
            assert all(written >= chars - 2 for _, written in larges), (name, larges, chars)
            large_samples.append(sum(t for t, _ in larges) / batch)
        t_small, t_large = min(small_samples), min(large_samples)
        ratio = t_large / t_small
        verdict = "PASS" if ratio <= TARGET_RATIO else "MISS"
        missed |= verdict == "MISS"
        per_chunk = t_large * 1e6 / (2 * args.n)
        print(f"  {name:5}  {args.n:>7,} chunks {t_small:7.3f}s   {2 * args.n:>7,} chunks {t_large:7.3f}s   "
              f"ratio {ratio:.2f} (target <= {TARGET_RATIO})  {verdict}  "
              f"({per_chunk:.1f} us/chunk; best of {max(1, args.repeat)} means of {batch})")
        if name == "tty":
            verdict = "PASS" if per_chunk <= TARGET_TTY_US else "MISS"
            missed |= verdict == "MISS"
            print(f"  tty    per chunk {per_chunk:.1f} us (target <= {TARGET_TTY_US:.0f} us)  {verdict}")
    # a tool's streamed output: each chunk is a content item of its own (the live region must
    # not draw every item in every frame: it did, 9 ms a chunk at 2,000 and growing)
    items = max(1, args.n // 10)
    small, large = tool_output_updates(items), tool_output_updates(2 * items)
    print(f"bench_stream: one tool call's output streamed as {items:,} and {2 * items:,} content items, CPU time")
    for name, factory in (("tty", tty_view), ("plain", plain_view)):
        small_samples, large_samples = [], []
        for _ in range(max(1, args.repeat)):
            small_samples.append(run(factory, small)[0])
            large_samples.append(run(factory, large)[0])
        t_small, t_large = min(small_samples), min(large_samples)
        ratio = t_large / t_small
        verdict = "PASS" if ratio <= TARGET_RATIO else "MISS"
        missed |= verdict == "MISS"
        print(f"  {name:5}  {items:>7,} items  {t_small:7.3f}s   {2 * items:>7,} items  {t_large:7.3f}s   "
              f"ratio {ratio:.2f} (target <= {TARGET_RATIO})  {verdict}  ({t_large * 1e6 / (2 * items):.0f} us/item)")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
