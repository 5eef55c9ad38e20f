"""A separate acpcli-like process that writes to the session index, for concurrency tests.

Usage: ``python index_writer.py WORKER SESSIONS EVENTS BATCH`` with ``ACPCLI_HOME`` set.
Prints ``ready`` once imported, waits for a line on stdin (so all workers hit a fresh
database at the same moment), then writes ``SESSIONS`` own sessions plus the shared session
``shared``, and ``EVENTS`` events round-robin over them, flushing every ``BATCH`` rows.
Each payload is ``{"sessionUpdate": "agent_message_chunk", "worker": W, "i": I}`` with
``I`` counting up per (worker, session). Prints ``done`` and exits 0.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    worker, n_sessions, n_events, batch = (int(a) for a in sys.argv[1:5])
    from acpcli.history.index import Index, SessionRecord

    print("ready", flush=True)
    sys.stdin.readline()

    index = Index()
    sessions = [f"w{worker}-s{j}" for j in range(n_sessions)] + ["shared"]
    for sid in sessions:
        index.upsert_session(
            SessionRecord(
                # the shared session is one agent's (a recorded session keeps its agent)
                id=sid, agent="shared" if sid == "shared" else f"worker{worker}", cwd=os.getcwd(), argv=["x"],
                mcp_servers=["fs"],
            )
        )
    counters = dict.fromkeys(sessions, 0)
    with index.writer(batch_size=batch, flush_interval=3600) as writer:
        for k in range(n_events):
            sid = sessions[k % len(sessions)]
            update = {"sessionUpdate": "agent_message_chunk", "worker": worker, "i": counters[sid]}
            payload = json.dumps(update)
            counters[sid] += 1
            writer.append(sid, "agent_message_chunk", payload)
            if k % 97 == 0:
                index.touch(sid)  # interleave small write transactions with the batches
    index.set_title(sessions[0], f"worker {worker}")
    index.close()
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
