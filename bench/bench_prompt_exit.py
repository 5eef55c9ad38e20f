"""Benchmark: how long a one-shot ``acpcli prompt`` keeps its caller after the answer.

For one agent command (``--cmd``), N times in a scratch directory: ``acpcli prompt --cmd CMD
--permissions allow PROMPT``, a new session each time, stdout a pipe. Two figures per run, as
medians: the whole command's wall time, and the time from the answer's last byte on stdout to
the command's exit (stopping the agent, storing, closing). ``--compare COMMAND`` runs another
build (say ``env PYTHONPATH=/tmp/old .venv/bin/python -m acpcli``) in the same interleaved
rounds.

Target (issue 24): the exit follows the answer within 1 s with every agent; before, an agent
that does not exit at the end of its input (codex, claude) was given 2 s, then SIGTERM.

Usage: ``python bench/bench_prompt_exit.py --cmd 'AGENT ARGV' [--n N] [--prompt TEXT]
[--compare COMMAND] [--check]``. Under ``make bench`` (no ``--cmd``) it measures the demo agent.
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

TARGET = 1.0


def run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall time, time from the last stdout byte to the exit) of one command."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    last = start
    while True:
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        last = time.perf_counter()
    _, err = proc.communicate()
    end = time.perf_counter()
    if proc.returncode != 0:
        raise SystemExit(
            f"{shlex.join(argv)}: exit {proc.returncode}\n{err.decode(errors='replace')[-2000:]}"
        )
    return end - start, end - last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cmd", help="the agent command line (default: the demo agent)")
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--prompt", default="hello")
    parser.add_argument(
        "--compare", help="another acpcli command line to measure in the same rounds"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args(argv)

    script = Path(sys.executable).parent / "acpcli"
    builds = {"acpcli": [str(script)] if script.exists() else [sys.executable, "-m", "acpcli"]}
    if args.compare:
        builds["compare"] = shlex.split(args.compare)
    agent = ["--cmd", args.cmd] if args.cmd else ["--agent", "demo"]
    scratch = Path(tempfile.mkdtemp(prefix="acpcli-bench-exit-"))
    work = scratch / "work"
    work.mkdir()
    env = dict(os.environ, ACPCLI_HOME=str(scratch / "home"), ACPCLI_KEEP_ALIVE="0")
    rows: dict[str, list[tuple[float, float]]] = {name: [] for name in builds}
    try:
        for _ in range(args.n):
            for name, command in builds.items():
                rows[name].append(
                    run(
                        [*command, "prompt", *agent, "--permissions", "allow", args.prompt],
                        env,
                        work,
                    )
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"agent: {args.cmd or 'demo'}  (n={args.n}, medians)")
    missed = False
    for name, values in rows.items():
        wall = statistics.median(v[0] for v in values)
        after = statistics.median(v[1] for v in values)
        verdict = "PASS" if after <= TARGET else "MISS"
        missed |= name == "acpcli" and after > TARGET
        print(
            f"{name:<8} wall {wall:5.2f}s   answer -> exit {after:5.2f}s (target <= {TARGET:g}s): {verdict}"
        )
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
