"""Benchmark: replay throughput and peak memory of the real ``acpcli load`` (issue 6, #2 and #4).

``bench/replay_agent.py`` serves a pre-generated conversation (default 2,000 messages x 50
chunks = 100,000 text chunks, plus 800 tool calls = 102,400 updates, v1 shape: no
``messageId``) as fast as the pipe takes it. Each repeat runs, in a fresh ``ACPCLI_HOME``:

* **acpcli**: ``acpcli load ID --cmd "<python> bench/replay_agent.py ..." --no-repl > out.txt``,
  the real console script as a user runs it (index, event log and the final transcript
  included);
* **floor**: this file's ``--floor-client`` mode, a minimal stdlib client that spawns the
  same agent, sends ``initialize`` and ``session/load`` and reads and ``json.loads`` every
  line until the load's answer.

How each figure is taken (the agent is the client's child, so its CPU must come out):

* CPU: ``os.wait4`` on the client's pid gives the client's user+sys *plus* that of the
  children it reaped -- the agent; the agent writes its own ``getrusage(RUSAGE_SELF)`` to a
  file as it exits, and that is subtracted. Start-up and shutdown are included.
* Throughput: updates / the agent's wall time from receiving ``session/load`` to having
  written the whole replay (it writes into a 64 KB pipe, so it finishes when its client has
  consumed nearly all of it); the client's start-up is not in it.
* Peak RSS: ``VmHWM`` of the client's pid, sampled from ``/proc`` every 20 ms (the agent's
  memory is not in it). Cross-check: ``wait4``'s ``ru_maxrss`` is the maximum over the
  client and the agent, and the agent reports its own; when the agent's is lower, the
  ``wait4`` figure is exactly the client's peak.
* Correctness: the transcript on stdout must hold every agent message's text verbatim and
  in order and one ``[tool]`` header per tool call, and the index must hold every update.

Also reported: acpcli's fixed cost (the same command against an empty conversation), so the
per-update cost can be told from start-up; then the spread of loading one session again and
again in one home (``--loads``, default 10): each load's CPU, wall time and peak RSS and the
database's size after it, the last load against the first (a replay the record holds already
stores nothing, so the tenth load costs what the first did). Targets: CPU <= 3.0 x the floor (issue 6),
peak RSS <= 150 MB. Best of ``--repeat`` (CPU), worst of them (memory).
Exits 0 unless ``--check`` is given and a target is missed.

Every measured process runs without this machine's ``PYTHONDONTWRITEBYTECODE`` (bytecode is
cached under the run's temporary directory, filled by a warm-up run), as an installed
acpcli would.

Run: ``.venv/bin/python bench/bench_replay.py [--messages 2000 | --n UPDATES] [--protocol
1|2|both] [--repeat 3] [--loads 10] [--only-loads] [--keep DIR] [--acpcli COMMAND] [--compare
COMMAND] [--check]``.
``--profile FILE`` runs acpcli once under cProfile instead and prints its top functions;
``--acpcli`` runs another build or a patched launcher in place of the console script;
``--compare`` runs another build too, in the same rounds, and prints its CPU next to this
one's (A/B comparisons).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
AGENT = BENCH_DIR / "replay_agent.py"
SESSION_ID = "replay-bench-0001"
TARGET_CPU_RATIO = 3.0
TARGET_PEAK_MB = 150.0
SAMPLE_INTERVAL = 0.02

sys.path.insert(0, str(BENCH_DIR))  # replay_agent, for the conversation the agent serves


# -- the floor client (runs in its own process: ``bench_replay.py --floor-client ARGV...``) -----


def floor_client(agent_argv: list[str], session_id: str) -> int:
    """Spawn the agent, ``initialize``, ``session/load``; read and ``json.loads`` every line
    until the load's answer. Prints the number of notifications read."""
    proc = subprocess.Popen(agent_argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def until_answer(request_id: int) -> int:
        for seen, line in enumerate(proc.stdout):  # type: ignore[arg-type]
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                return seen
        raise SystemExit(f"the agent ended before answering request {request_id}")

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 2}})
    until_answer(1)
    params = {"sessionId": session_id, "cwd": os.getcwd(), "mcpServers": []}
    send({"jsonrpc": "2.0", "id": 2, "method": "session/load", "params": params})
    count = until_answer(2)
    proc.stdin.close()
    proc.wait()
    print(count)
    return 0


# -- measuring one client process ----------------------------------------------------------------


@dataclass
class Sample:
    """One measured run of a client (acpcli or the floor)."""

    cpu: float  # the client's own user+sys seconds (the agent's taken out)
    wall: float  # seconds from spawn to exit
    replay_wall: float  # the agent's load start -> replay written
    updates: int
    peak_kb: int  # VmHWM of the client's pid, sampled
    tree_maxrss_kb: int  # wait4 ru_maxrss: max over the client and the agent
    agent_maxrss_kb: int
    agent_cpu: float


class PeakSampler(threading.Thread):
    """Polls ``/proc/<pid>/status`` for ``VmHWM`` (the peak RSS so far) until stopped."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.path = f"/proc/{pid}/status"
        self.peak_kb = 0
        self.stop = threading.Event()

    def read(self) -> None:
        try:
            with open(self.path, "rb") as f:
                for line in f:
                    if line.startswith(b"VmHWM:"):
                        self.peak_kb = max(self.peak_kb, int(line.split()[1]))
                        return
        except (OSError, ValueError):
            pass  # gone, or a zombie (no memory lines left)

    def run(self) -> None:
        while not self.stop.is_set():
            self.read()
            self.stop.wait(SAMPLE_INTERVAL)


def measure(argv: list[str], *, env: dict[str, str], cwd: Path, stdout: Any, report: Path) -> Sample:
    """Run a client to completion; its CPU without the agent's, its peak RSS, the replay time.

    stderr goes to ``cwd/stderr.txt`` (a pipe nobody reads while the client runs could fill
    up and stall it), quoted if the client fails.
    """
    errors = cwd / "stderr.txt"
    start = time.perf_counter()
    with open(errors, "wb") as stderr:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env, cwd=cwd)
    sampler = PeakSampler(proc.pid)
    sampler.start()
    # wait4 on this pid: its rusage counts the descendants it reaped (the agent) too.
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    sampler.stop.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        text = errors.read_text(encoding="utf-8", errors="replace")
        raise SystemExit(f"{shlex.join(argv[:4])} ... exited {proc.returncode}:\n{text}")
    agent = json.loads(report.read_text(encoding="utf-8"))
    agent_cpu = agent["utime"] + agent["stime"]
    loads = agent["loads"]
    if len(loads) != 1:
        raise SystemExit(f"the agent served {len(loads)} loads, expected 1")
    return Sample(
        cpu=usage.ru_utime + usage.ru_stime - agent_cpu,
        wall=wall,
        replay_wall=loads[0]["end"] - loads[0]["start"],
        updates=loads[0]["updates"],
        peak_kb=sampler.peak_kb,
        tree_maxrss_kb=usage.ru_maxrss,
        agent_maxrss_kb=agent["maxrss_kb"],
        agent_cpu=agent_cpu,
    )


def acpcli_argv(python: str) -> list[str]:
    """The installed console script next to ``python`` (what a user runs), else ``-m acpcli``."""
    script = Path(python).parent / "acpcli"
    return [str(script)] if script.exists() else [python, "-m", "acpcli"]


def agent_argv(python: str, args: argparse.Namespace, protocol: int, report: Path, messages: int) -> list[str]:
    return [
        python, str(AGENT), "--protocol", str(protocol), "--messages", str(messages),
        "--chunks", str(args.chunks), "--seed", str(args.seed), "--report", str(report),
    ]  # fmt: skip


def bench_env(root: Path) -> dict[str, str]:
    """The environment of every measured process: as a user's shell has it.

    This machine sets ``PYTHONDONTWRITEBYTECODE`` (every run would compile acpcli from
    source: the compiler would be measured, not what an installed acpcli costs) and
    ``PYTHONUNBUFFERED``; both are dropped, and bytecode goes to a cache under ``root``
    (filled by a warm-up run).
    """
    env = dict(os.environ)
    for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "ACPCLI_LOG_FILE"):
        env.pop(name, None)
    # What is measured is one cold load: a live-session host kept after it (``load --no-repl``
    # keeps one by default) would hold the agent, which writes its report only when it ends.
    env["ACPCLI_KEEP_ALIVE"] = "0"
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    return env


class Workdir:
    """A fresh directory per run: ACPCLI_HOME, the agent's report, the transcript."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.path = root / name
        self.path.mkdir(parents=True)
        self.home = self.path / "home"
        self.report = self.path / "agent-report.json"
        self.out = self.path / "out.txt"

    def env(self) -> dict[str, str]:
        env = bench_env(self.root)
        env["ACPCLI_HOME"] = str(self.home)
        return env


def run_acpcli(
    python: str, args: argparse.Namespace, protocol: int, work: Workdir, messages: int, command: str | None = None
) -> Sample:
    """One ``acpcli load`` run: ``command`` (else ``--acpcli``, else the console script)."""
    cmd = shlex.join(agent_argv(python, args, protocol, work.report, messages))
    command = command or args.acpcli
    argv = (shlex.split(command) if command else acpcli_argv(python)) + [
        "load",
        SESSION_ID,
        "--cmd",
        cmd,
        "--no-repl",
    ]
    with open(work.out, "wb") as out:
        return measure(argv, env=work.env(), cwd=work.path, stdout=out, report=work.report)


def run_floor(python: str, args: argparse.Namespace, protocol: int, work: Workdir, messages: int) -> Sample:
    argv = [python, str(Path(__file__).resolve()), "--floor-client", "--"]
    argv += agent_argv(python, args, protocol, work.report, messages)
    with open(work.out, "wb") as out:
        sample = measure(argv, env=work.env(), cwd=work.path, stdout=out, report=work.report)
    read = int(work.out.read_text().strip())
    if read != sample.updates:
        raise SystemExit(f"the floor client read {read} updates, the agent sent {sample.updates}")
    return sample


# -- correctness of what acpcli produced ---------------------------------------------------------


def verify(work: Workdir, expected: dict[str, Any]) -> str:
    """Check the transcript and the index; return a one-line summary (raise on a mismatch)."""
    import sqlite3

    text = work.out.read_text(encoding="utf-8")
    pos = 0
    for i, agent_text in enumerate(expected["agent_texts"]):
        found = text.find(agent_text, pos)
        if found < 0:
            raise SystemExit(f"{work.out}: agent message {i + 1} is missing or out of order")
        pos = found + len(agent_text)
    tools = sum(1 for line in text.splitlines() if line.startswith("[tool] "))
    if tools != expected["tool_calls"]:
        raise SystemExit(f"{work.out}: {tools} [tool] headers, expected {expected['tool_calls']}")
    db = sqlite3.connect(work.home / "acpcli.db")
    try:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "event_pages" in tables:  # schema 2: pages of events, kinds a JSON array per page
            pages = db.execute("SELECT kinds FROM event_pages WHERE session_id = ?", (SESSION_ID,))
            stored = sum(not kind.startswith("acpcli/") for (kinds,) in pages for kind in json.loads(kinds))
        else:  # schema 1 (an older build given with --compare): a row per event
            (stored,) = db.execute(
                "SELECT COUNT(*) FROM events WHERE session_id = ? AND kind NOT LIKE 'acpcli/%'", (SESSION_ID,)
            ).fetchone()
    finally:
        db.close()
    if stored != expected["updates"]:
        raise SystemExit(f"the index holds {stored} events for the session, expected {expected['updates']}")
    lines = text.count("\n")
    return (
        f"transcript {lines:,} lines / {len(text.encode()):,} bytes, all {len(expected['agent_texts']):,} agent "
        f"messages in order, {tools:,} tool calls; index holds all {stored:,} updates"
    )


# -- reporting -----------------------------------------------------------------------------------


def bench_protocol(python: str, args: argparse.Namespace, protocol: int, root: Path) -> bool:
    """Run and print one protocol's figures; True if every target is met."""
    from replay_agent import expected_transcript, iter_updates

    expected = expected_transcript(iter_updates(args.messages, args.chunks, seed=args.seed, v2=protocol >= 2))
    n = expected["updates"]
    print(
        f"bench_replay: acpcli load, v{protocol} replay of {n:,} updates ({args.messages:,} messages x "
        f"{args.chunks} chunks + {expected['tool_calls']:,} tool calls), best of {args.repeat}",
        flush=True,
    )
    cli: list[Sample] = []
    floor: list[Sample] = []
    summary = ""
    # warm-up: fills the bytecode cache for acpcli, the agent and the floor client
    run_acpcli(python, args, protocol, Workdir(root, f"v{protocol}-warmup"), 0)
    run_floor(python, args, protocol, Workdir(root, f"v{protocol}-floor-warmup"), 0)
    other: list[Sample] = []
    if args.compare:
        run_acpcli(python, args, protocol, Workdir(root, f"v{protocol}-compare-warmup"), 0, args.compare)
    for r in range(max(1, args.repeat)):  # interleaved, so drift on a shared machine hits both
        floor.append(run_floor(python, args, protocol, Workdir(root, f"v{protocol}-floor-{r}"), args.messages))
        work = Workdir(root, f"v{protocol}-acpcli-{r}")
        cli.append(run_acpcli(python, args, protocol, work, args.messages))
        summary = verify(work, expected)
        if args.compare:
            work = Workdir(root, f"v{protocol}-compare-{r}")
            other.append(run_acpcli(python, args, protocol, work, args.messages, args.compare))
            verify(work, expected)
    # fixed costs: the same commands against an empty conversation (start-up, handshake, exit)
    empty = [run_acpcli(python, args, protocol, Workdir(root, f"v{protocol}-empty-{r}"), 0) for r in range(2)]
    empty_floor = [
        run_floor(python, args, protocol, Workdir(root, f"v{protocol}-floor-empty-{r}"), 0) for r in range(2)
    ]

    best_cli = min(cli, key=lambda s: s.cpu)
    best_floor = min(floor, key=lambda s: s.cpu)
    fixed = min(s.cpu for s in empty)
    floor_fixed = min(s.cpu for s in empty_floor)
    ratio = best_cli.cpu / best_floor.cpu
    cpu_ok = ratio <= TARGET_CPU_RATIO
    peak_mb = max(s.peak_kb for s in cli) / 1024
    floor_peak_mb = max(s.peak_kb for s in floor) / 1024
    mem_ok = peak_mb <= TARGET_PEAK_MB
    fast_cli = min(s.replay_wall for s in cli)
    fast_floor = min(s.replay_wall for s in floor)
    per_update_us = (best_cli.cpu - fixed) / n * 1e6
    floor_per_update_us = (best_floor.cpu - floor_fixed) / n * 1e6
    print(
        f"  floor   CPU {best_floor.cpu:6.2f} s   replay {n / fast_floor:10,.0f} updates/s"
        f"   peak RSS {floor_peak_mb:6.1f} MB"
    )
    print(
        f"  acpcli  CPU {best_cli.cpu:6.2f} s   replay {n / fast_cli:10,.0f} updates/s   peak RSS {peak_mb:6.1f} MB"
        f"   (wall {best_cli.wall:.2f} s)"
    )
    print(f"  fixed   CPU with an empty replay: acpcli {fixed:.2f} s, floor {floor_fixed:.2f} s")
    print(
        f"  marginal CPU per update: acpcli {per_update_us:.1f} us, floor {floor_per_update_us:.1f} us "
        f"({per_update_us / floor_per_update_us:.2f} x)"
    )
    cross = [f"{s.tree_maxrss_kb / 1024:.1f}" for s in cli if s.tree_maxrss_kb > s.agent_maxrss_kb]
    if cross:
        print(f"  peak RSS cross-check (wait4 ru_maxrss, agent lower): {', '.join(cross)} MB")
    if other:
        best_other = min(s.cpu for s in other)
        print(
            f"  compare CPU {best_other:6.2f} s, {best_other / best_floor.cpu:.2f} x floor, this build / compare "
            f"{best_cli.cpu / best_other:.3f}   ({args.compare})"
        )
    print(f"  output  {summary}")
    print(f"  ratio   CPU {ratio:.2f} x floor (target <= {TARGET_CPU_RATIO:.1f})  {'PASS' if cpu_ok else 'MISS'}")
    print(
        f"  memory  peak RSS {peak_mb:.1f} MB, {peak_mb / floor_peak_mb:.1f} x floor "
        f"(target <= {TARGET_PEAK_MB:.0f} MB)  {'PASS' if mem_ok else 'MISS'}",
        flush=True,
    )
    return cpu_ok and mem_ok


def db_state(home: Path) -> tuple[int, int]:
    """The database's size in bytes once its WAL is checkpointed into it, and the events
    the session's log holds."""
    import sqlite3

    path = home / "acpcli.db"
    db = sqlite3.connect(path)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (events,) = db.execute(
            "SELECT COALESCE(SUM(count), 0) FROM event_pages WHERE session_id = ?", (SESSION_ID,)
        ).fetchone()
    finally:
        db.close()
    return path.stat().st_size, int(events)


def bench_reloads(python: str, args: argparse.Namespace, protocol: int, root: Path) -> bool:
    """One session loaded ``--loads`` times in one ``ACPCLI_HOME`` (the same replay each
    time): each load's CPU, wall time and peak RSS, and the database after it. Target: the
    last load costs what the first did (CPU within 1.25 x) and the database does not grow
    after the first load."""
    from replay_agent import expected_transcript, iter_updates

    n = expected_transcript(iter_updates(args.messages, args.chunks, seed=args.seed, v2=protocol >= 2))["updates"]
    print(f"bench_replay: one session loaded {args.loads} times, v{protocol} replay of {n:,} updates", flush=True)
    run_acpcli(python, args, protocol, Workdir(root, f"v{protocol}-reloads-warmup"), 0)  # the bytecode cache
    work = Workdir(root, f"v{protocol}-reloads")
    rows: list[tuple[Sample, int, int]] = []
    for i in range(args.loads):
        sample = run_acpcli(python, args, protocol, work, args.messages)
        size, events = db_state(work.home)
        rows.append((sample, size, events))
        print(
            f"  load {i + 1:2d}  CPU {sample.cpu:6.2f} s  wall {sample.wall:6.2f} s  peak RSS {sample.peak_kb / 1024:6.1f} MB"
            f"  db {size / 1e6:7.1f} MB  events {events:,}",
            flush=True,
        )
    (first, first_size, first_events), (last, last_size, last_events) = rows[0], rows[-1]
    # Load 1 records a session acpcli did not know (no record to read and merge); load 2 is
    # the first of a recorded one: the loads after it should all cost what it did.
    second = rows[min(1, len(rows) - 1)][0]
    cpu_ratio = last.cpu / second.cpu
    grown = last_size - first_size
    ok = cpu_ratio <= 1.25 and grown <= 0 and last_events == first_events
    cpus = [s.cpu for s, _, _ in rows[1:]] or [first.cpu]
    print(
        f"  spread  load {len(rows)} / load 1: CPU {last.cpu / first.cpu:.2f} x, wall {last.wall / first.wall:.2f} x, "
        f"peak RSS {last.peak_kb / first.peak_kb:.2f} x"
    )
    print(
        f"  spread  load {len(rows)} / load 2 (the first of a recorded session): CPU {cpu_ratio:.2f} x, "
        f"wall {last.wall / second.wall:.2f} x, peak RSS {last.peak_kb / second.peak_kb:.2f} x; "
        f"loads 2-{len(rows)} CPU min {min(cpus):.2f} s max {max(cpus):.2f} s (target: last <= 1.25 x load 2)"
    )
    print(
        f"  db      after load 1 {first_size / 1e6:.1f} MB ({first_events:,} events), after load {len(rows)} "
        f"{last_size / 1e6:.1f} MB ({last_events:,} events): {last_size / first_size:.2f} x  {'PASS' if ok else 'MISS'}",
        flush=True,
    )
    return ok


# cProfile with its default (wall) clock: a CPU clock costs a system call per event and
# multiplies the run time by 6. So the time acpcli waits for the agent shows up, as
# `select.epoll.poll`: leave that line out when reading the table. py-spy (sampling, see
# BENCHMARKS.md) has far less overhead and no such line.
PROFILE_WRAPPER = """
import cProfile, runpy, sys
out = sys.argv.pop(1)
sys.argv[0] = "acpcli"
profiler = cProfile.Profile()
try:
    profiler.runcall(runpy.run_module, "acpcli", run_name="__main__")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
finally:
    profiler.dump_stats(out)
sys.exit(code)
"""


def profile(python: str, args: argparse.Namespace, protocol: int, root: Path, out: Path) -> None:
    """Run acpcli once under cProfile and print its top functions."""
    import pstats

    run_acpcli(python, args, protocol, Workdir(root, f"v{protocol}-warmup"), 0)  # fill the bytecode cache
    work = Workdir(root, f"v{protocol}-profile")
    cmd = shlex.join(agent_argv(python, args, protocol, work.report, args.messages))
    argv = [python, "-c", PROFILE_WRAPPER, str(out), "load", SESSION_ID, "--cmd", cmd, "--no-repl"]
    with open(work.out, "wb") as stdout:
        sample = measure(argv, env=work.env(), cwd=work.path, stdout=stdout, report=work.report)
    print(f"profiled acpcli load (v{protocol}): CPU {sample.cpu:.2f} s under cProfile; stats in {out}")
    stats = pstats.Stats(str(out))
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(40)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--floor-client"]:
        rest = argv[1:]
        if rest[:1] == ["--"]:
            rest = rest[1:]
        return floor_client(rest, SESSION_ID)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2000, help="messages in the conversation (default 2000)")
    parser.add_argument("--chunks", type=int, default=50, help="chunks per message (default 50)")
    parser.add_argument("--n", type=int, default=None, help="scale down: about N updates (sets --messages)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--protocol", choices=("1", "2", "both"), default="1", help="replay shape (default 1)")
    parser.add_argument("--repeat", type=int, default=3, help="repeats (default 3)")
    parser.add_argument("--keep", type=Path, default=None, help="keep transcripts and indexes under this directory")
    parser.add_argument("--profile", type=Path, default=None, help="run acpcli once under cProfile, write stats here")
    parser.add_argument(
        "--acpcli",
        default=None,
        metavar="COMMAND",
        help="how to run acpcli (default: the console script next to this interpreter); for A/B runs",
    )
    parser.add_argument(
        "--compare",
        metavar="COMMAND",
        default=None,
        help="also run this acpcli build in the same rounds (A/B, e.g. 'env PYTHONPATH=/tmp/old python -m acpcli')",
    )
    parser.add_argument(
        "--loads", type=int, default=10, help="then load one session this many times and report the spread (default 10; 0: not)"
    )
    parser.add_argument("--only-loads", action="store_true", help="only the repeated loads (--loads)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = parser.parse_args(argv)
    if args.n is not None:
        args.messages = max(5, args.n // args.chunks)
    python = sys.executable
    protocols = (1, 2) if args.protocol == "both" else (int(args.protocol),)
    with tempfile.TemporaryDirectory(prefix="acpcli-bench-replay-") as tmp:
        root = args.keep.resolve() if args.keep is not None else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        if args.profile is not None:
            profile(python, args, protocols[0], root, args.profile.resolve())
            return 0
        verdicts = [] if args.only_loads else [bench_protocol(python, args, p, root) for p in protocols]
        if args.loads > 0:
            verdicts += [bench_reloads(python, args, p, root) for p in protocols]  # every protocol runs
    ok = all(verdicts)
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
