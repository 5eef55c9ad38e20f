"""Benchmark: where a replay's CPU goes, part by part, against the JSON floor in one process.

``bench_replay.py`` times the whole ``acpcli load`` against a floor client that only reads
and parses the lines. This one takes the same frames (``bench/replay_agent.py``'s
conversation, the session id a UUID as real agents send it) through acpcli's own pieces in
this process, adding one part at a time, so each part's cost per update is the difference
between two rows:

* **floor**: a buffered reader's lines and ``json.loads`` of each (what the floor client does);
* **reader**: the real ``Connection`` reader (framed bytes from an in-memory transport,
  decoded and dispatched) with a callback that does nothing;
* **+ store**: the ``Dispatcher`` routing to a ``LiveSession`` that folds every update into
  its ``Store``;
* **+ view**: the plain view that ``load --no-repl`` uses (it prints the transcript at the end);
* **+ event log**: every update buffered and written to a real index (SQLite, WAL), flushed
  and the index closed (the close checkpoints the WAL);
* **+ transcript**: the final transcript written (to memory).

Rounds are interleaved (each row once per round), best of ``--repeat``; CPU time of this
process. Start-up (interpreter, imports, the agent's spawn) is not here: ``bench_replay.py``
reports it as acpcli's fixed cost.
No target: it prints figures for deciding what to work on. Exits 0, ``--check`` too.
Run: ``.venv/bin/python bench/bench_replay_parts.py [--messages 2000] [--protocol 1|2] [--repeat 9]``.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

import anyio  # noqa: E402
import replay_agent  # noqa: E402

from acpcli.history.guarded import SafeIndex  # noqa: E402
from acpcli.history.index import SessionRecord  # noqa: E402
from acpcli.model import Store  # noqa: E402
from acpcli.render.plain import PlainView  # noqa: E402
from acpcli.session.feed import LiveSession  # noqa: E402
from acpcli.session.link import Dispatcher  # noqa: E402
from acpcli.wire.connection import Connection  # noqa: E402

SESSION_ID = "3f2b8c1e-6a4d-4e9b-9c1a-2d7e8f0a1b2c"
PARTS = ("reader", "+ store", "+ view", "+ event log", "+ transcript")


class _Frames:
    """A transport that already holds every frame (the reader pops ``buffered``)."""

    def __init__(self, frames: list[bytes]) -> None:
        self.buffered = deque(frames)

    async def receive(self) -> bytes | None:
        return None

    async def send(self, frame: bytes) -> None:
        pass

    async def aclose(self) -> None:
        pass


def floor(blob: bytes) -> int:
    count = 0
    for line in io.BufferedReader(io.BytesIO(blob), 8192):
        json.loads(line)
        count += 1
    return count


def pipeline(frames: list[bytes], parts: int, home: Path) -> int:
    """Run the frames through the first ``parts`` of :data:`PARTS`; return updates seen."""
    index = writer = None
    view = PlainView(io.StringIO(), stream=False) if parts >= 3 else None
    if parts >= 4:
        index = SafeIndex(home / "index.db")
        index.upsert_session(SessionRecord(id=SESSION_ID, agent="bench", cwd=str(home)))
        writer = index.writer()
    live = LiveSession(SESSION_ID, Store(), sink=view, recorder=writer)
    dispatcher = Dispatcher()
    dispatcher.attach(SESSION_ID, live)
    callback: Callable[..., None] = dispatcher.on_notification if parts >= 2 else lambda *_: None

    async def read() -> None:
        conn = Connection(_Frames(frames), on_notification=callback)  # type: ignore[arg-type]
        async with conn:
            assert conn._reader_done is not None
            await conn._reader_done.wait()

    anyio.run(read)
    if index is not None:
        index.close()
    if view is not None and parts >= 5:
        view.close()
    return live.updates_seen if parts >= 2 else len(frames)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", "--n", type=int, default=2000, help="messages of 50 chunks (default 2000)")
    parser.add_argument("--protocol", type=int, choices=(1, 2), default=1)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--check", action="store_true", help="accepted for run_all.py; there is no target")
    args = parser.parse_args(argv)

    blob, count = replay_agent.serialize(replay_agent.iter_updates(args.messages, v2=args.protocol == 2))
    data = bytes(blob).replace(replay_agent.SID_PLACEHOLDER.encode(), SESSION_ID.encode())
    frames = data.split(b"\n")[:-1]
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="acpcli-parts-") as tmp:
        for round_ in range(args.repeat):
            rows: list[tuple[str, Callable[[], int]]] = [("floor", lambda: floor(data))]
            for n, name in enumerate(PARTS, start=1):
                home = Path(tmp) / f"{round_}-{n}"
                home.mkdir()
                rows.append((name, lambda n=n, home=home: pipeline(frames, n, home)))  # type: ignore[misc]
            for name, run in rows:
                gc.collect()  # what the row before left behind is not this row's cost
                start = time.process_time()
                seen = run()
                spent = time.process_time() - start
                if seen != count:
                    raise SystemExit(f"{name}: {seen} updates seen of {count}")
                best[name] = min(best.get(name, spent), spent)
    print(
        f"bench_replay_parts: v{args.protocol} replay of {count:,} updates "
        f"({len(data) / count:.0f} bytes a frame), in process, best of {args.repeat}"
    )
    base = best["floor"] / count
    previous = 0.0
    for name in ("floor", *PARTS):
        per = best[name] / count
        part = "" if name == "floor" else f"   this part {(per - previous) * 1e6:5.2f} us"
        print(f"  {name:14s} {per * 1e6:6.2f} us/update   {per / base:4.2f} x floor{part}")
        previous = 0.0 if name == "floor" else per
    return 0


if __name__ == "__main__":
    sys.exit(main())
