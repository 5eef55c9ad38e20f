"""Run every ``bench/bench_*.py`` in turn, each in its own process, and show its output.

Usage: ``.venv/bin/python bench/run_all.py [--check] [-k SUBSTRING]`` (``make bench``).

Each benchmark runs with the repository's virtualenv interpreter (``.venv/bin/python``,
else the interpreter running this script), in its own process so that one benchmark's
heap and warm caches do not skew the next. Benchmarks report and exit 0; with ``--check``
the flag is passed on, a benchmark exits non-zero when it misses its target, and this
script exits 1 if any benchmark did.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent


def venv_python() -> str:
    """The venv's interpreter if there is one, else the current one."""
    for candidate in (REPO / ".venv" / "bin" / "python", REPO / ".venv" / "Scripts" / "python.exe"):
        if candidate.exists():
            return str(candidate)
    return sys.executable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run every bench/bench_*.py in turn.")
    parser.add_argument("--check", action="store_true", help="pass --check on; exit 1 if any target is missed")
    parser.add_argument("-k", dest="only", default="", help="only benchmarks whose file name contains this")
    args = parser.parse_args(argv)

    python = venv_python()
    scripts = sorted(p for p in BENCH_DIR.glob("bench_*.py") if args.only in p.name)
    if not scripts:
        print("no benchmarks found", file=sys.stderr)
        return 1
    failed = []
    for script in scripts:
        print(f"=== {script.name}", flush=True)
        start = time.perf_counter()
        cmd = [python, str(script)] + (["--check"] if args.check else [])
        code = subprocess.call(cmd, cwd=REPO)
        print(f"=== {script.name}: exit {code} in {time.perf_counter() - start:.1f}s\n", flush=True)
        if code:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
