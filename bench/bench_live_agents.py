"""Benchmark: prompts on a live session with a real agent, acpcli against acpx, in one run.

For one agent command (``--cmd``), in a scratch directory:

* acpcli cold: ``prompt --session ID --keep-alive 0`` on a session made by ``new --no-repl
  --keep-alive 0`` (start, initialize, resume or load, turn, stop), N times, a new session each
  time (the first continuation of a session: the one that works with every agent);
* acpcli warm: ``prompt --session ID`` on the session's live host, N times (the first one,
  which starts the host, is not counted);
* the agent's own turn: a minimal client (a few lines of JSON-RPC over the agent's pipes,
  nothing of acpcli) holds the same agent and times ``session/prompt`` to its answer, N
  times: what no client can do faster;
* acpx warm (with ``--acpx PATH``, an acpx installed elsewhere, never a dependency):
  ``acpx --approve-all --agent CMD sessions new``, then ``prompt`` N times (its queue owner
  keeps the agent; the first prompt is not counted).

Each figure is the median wall time; the same prompt text for all. Targets: warm at most half
of cold, faster than acpx's warm prompt (issue 23), and within 150 ms of the agent's own turn
(issue 33: what acpcli adds to a warm prompt, process start included).

Usage: ``python bench/bench_live_agents.py --cmd 'AGENT ARGV' [--acpx PATH] [--n N]
[--prompt TEXT] [--check]``. Under ``make bench`` (no ``--cmd``) it says so and measures nothing: it needs a real agent. The agent must be able to keep a session across processes for the cold
rows (for a launcher that wipes its home, give it a kept one).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout


class MinimalClient:
    """The least a client can do: the agent's process, newline-delimited JSON-RPC on its pipes,
    ``initialize`` (v1, no client capabilities), ``session/new``, then ``session/prompt``s,
    each timed from the request to its answer. Permission requests are answered cancelled;
    other requests, ``method not found``."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.next_id = 0
        self.cwd = cwd

    def _send(self, message: dict[str, object]) -> None:
        import json

        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, object]) -> dict[str, object]:
        import json

        self.next_id += 1
        wanted = self.next_id
        self._send({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"the agent ended before answering {method}")
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("id") == wanted and "method" not in message:
                if "error" in message:
                    raise SystemExit(f"{method}: {message['error']}")
                return message.get("result") or {}
            if "method" in message and "id" in message:  # the agent asks something: nobody here
                if message["method"] == "session/request_permission":
                    self._send({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": {"outcome": "cancelled"}}})
                else:
                    self._send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not found"}})

    def turns(self, prompt: str, n: int) -> list[float]:
        self.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = self.request("session/new", {"cwd": str(self.cwd), "mcpServers": []})["sessionId"]
        self.request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": prompt}]})  # warm-up
        times = []
        for _ in range(n):
            start = time.perf_counter()
            self.request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": prompt}]})
            times.append(time.perf_counter() - start)
        return times

    def close(self) -> None:
        import signal

        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        self.proc.wait(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cmd", help="the agent command line (without it: nothing to measure, exit 0)")
    parser.add_argument("--acpx", help="an acpx executable to compare with")
    parser.add_argument("--n", type=int, default=3)
    parser.add_argument("--prompt", default="hello")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    if not args.cmd:
        print("bench_live_agents: give --cmd 'AGENT ARGV' (a real agent) to measure; skipped")
        return 0

    script = Path(sys.executable).parent / "acpcli"
    acpcli = [str(script)] if script.exists() else [sys.executable, "-m", "acpcli"]
    scratch = Path(tempfile.mkdtemp(prefix="acpcli-bench-agents-"))
    work = scratch / "work"
    work.mkdir()
    (work / "README.md").write_text("hello from the README\n")
    env = dict(os.environ, ACPCLI_HOME=str(scratch / "home"), ACPCLI_KEEP_ALIVE="300", HOME=os.environ.get("HOME", ""))
    rows: dict[str, list[float]] = {}
    try:
        rows["acpcli cold"] = []
        for _ in range(args.n):
            # a session of its own each time: gemini cannot continue a session twice from new
            # processes (it forgets what a reloaded session did once its process ends)
            _, out = run([*acpcli, "new", "--no-repl", "--cmd", args.cmd, "--keep-alive", "0"], env, work)
            cold_id = out.strip()
            rows["acpcli cold"].append(
                run([*acpcli, "prompt", "--session", cold_id, "--keep-alive", "0", args.prompt], env, work)[0]
            )
        _, out = run([*acpcli, "new", "--no-repl", "--cmd", args.cmd], env, work)
        warm_id = out.strip()
        run([*acpcli, "prompt", "--session", warm_id, args.prompt], env, work)
        rows["acpcli warm"] = [run([*acpcli, "prompt", "--session", warm_id, args.prompt], env, work)[0] for _ in range(args.n)]
        minimal = MinimalClient(shlex.split(args.cmd), work, env)
        try:
            rows["agent turn"] = minimal.turns(args.prompt, args.n)
        finally:
            minimal.close()
        if args.acpx:
            acpx = [args.acpx, "--approve-all", "--agent", args.cmd]
            run([*acpx, "sessions", "new"], env, work)
            run([*acpx, "prompt", args.prompt], env, work)
            rows["acpx warm"] = [run([*acpx, "prompt", args.prompt], env, work)[0] for _ in range(args.n)]
    finally:
        subprocess.run([*acpcli, "stop", "--all"], env=env, cwd=work, capture_output=True, check=False)
        if args.acpx:
            subprocess.run([args.acpx, "--agent", args.cmd, "sessions", "close"], env=env, cwd=work, capture_output=True, check=False)
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"agent: {args.cmd}")
    print(f"{'':<12} {'median':>8} {'min':>8} {'max':>8}   (n={args.n})")
    median = {name: statistics.median(values) for name, values in rows.items()}
    for name, values in rows.items():
        print(f"{name:<12} {median[name]:7.2f}s {min(values):7.2f}s {max(values):7.2f}s")
    missed = False
    ratio = median["acpcli warm"] / median["acpcli cold"]
    missed |= ratio > 0.5
    print(f"acpcli warm / cold: {ratio:.2f}x (target <= 0.5x): {'PASS' if ratio <= 0.5 else 'MISS'}")
    added = median["acpcli warm"] - median["agent turn"]
    missed |= added > 0.150
    print(f"acpcli warm - the agent's own turn: {added * 1000:.0f} ms (target <= 150 ms): {'PASS' if added <= 0.150 else 'MISS'}")
    if "acpx warm" in median:
        ratio = median["acpcli warm"] / median["acpx warm"]
        missed |= ratio >= 1
        print(f"acpcli warm / acpx warm: {ratio:.2f}x (target < 1x): {'PASS' if ratio < 1 else 'MISS'}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
