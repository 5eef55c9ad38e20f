"""Benchmark: start-up of ``acpcli --help`` and of a shell-completion answer.

Both run on every keystroke a user waits for, so both are compared with the framework's own
floor, ``python -c "import typer"``, measured in the same run:

* ``--help``: ``acpcli --help`` (target: at most 2.0 x the floor);
* ``import acpcli``: what a script using the Python API pays before it uses it (the API's
  names are imported on first use; target: at most 0.5 x the floor);
* completion: what one TAB costs, i.e. ``acpcli`` with ``_ACPCLI_COMPLETE=complete_bash``,
  ``COMP_WORDS`` and ``COMP_CWORD`` set, for ``acpcli load <TAB>`` against an index of 50
  sessions (sqlite3 is read), ``acpcli lo<TAB>`` (command names) and
  ``acpcli new --agent <TAB>`` (agent names; config.toml is read). Target: each at most
  1.3 x the floor.

Each figure is the median wall time of N fresh processes (default 15), the commands taking
turns so that a burst of load on the machine hits all of them alike; beside it, the ratio of
the median CPU time (user + system), which a loaded machine's other work adds less to (the
targets are read on the wall times). Bytecode is written to
a temporary ``PYTHONPYCACHEPREFIX`` (and two warm-up runs fill it) because the
environment may set ``PYTHONDONTWRITEBYTECODE``: compiling acpcli on every run would measure
the compiler, not what an installed acpcli costs. ``ACPCLI_HOME`` is a temporary directory.

Usage: ``python bench/bench_startup.py [--n N] [--check]`` (or ``make bench``). Reports and
exits 0; with ``--check``, exits 1 if a target is missed. When one is, look at what the
path imports: ``_ACPCLI_COMPLETE=complete_bash COMP_WORDS='acpcli load ' COMP_CWORD=2
python -X importtime -m acpcli``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HELP_BUDGET = 2.0
IMPORT_BUDGET = 0.5
COMPLETION_BUDGET = 1.3
SESSIONS = 50


def acpcli_command(python: str) -> list[str]:
    """How a user starts acpcli: the console script next to the interpreter, else -m."""
    script = Path(python).parent / "acpcli"
    return [str(script)] if script.exists() else [python, "-m", "acpcli"]


def populate(home: Path) -> None:
    """An index of SESSIONS sessions under ``home`` (done in this process, before timing)."""
    sys.path.insert(0, str(REPO))
    os.environ["ACPCLI_HOME"] = str(home)
    from acpcli.history.index import Index, SessionRecord

    with Index.open() as index:
        for i in range(SESSIONS):
            index.upsert_session(
                SessionRecord(id=f"sess-{i:04d}-{'ab' * 8}", agent="demo", cwd=str(home), title=f"session {i}")
            )


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, str, float]:
    """Wall time, stdout and CPU time (user + system, of the process and what it waited
    for: what a loaded machine's other work does not add to) of one run of ``cmd``."""
    before = os.times()
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    after = os.times()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return elapsed, proc.stdout, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=15, help="runs per command (default 15)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = parser.parse_args(argv)

    python = sys.executable
    tmp = Path(tempfile.mkdtemp(prefix="acpcli-bench-startup-"))
    try:
        home = tmp / "home"
        populate(home)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "_ACPCLI_COMPLETE")}
        env.update(ACPCLI_HOME=str(home), PYTHONPYCACHEPREFIX=str(tmp / "pycache"))
        acpcli = acpcli_command(python)

        def completing(line: str) -> dict[str, str]:
            words = line.split(" ")
            return {**env, "_ACPCLI_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(len(words) - 1)}

        # (label, command, environment, budget, a string the output must contain)
        cases = [
            ('python -c "import typer"', [python, "-c", "import typer"], env, None, ""),
            ("acpcli --help", [*acpcli, "--help"], env, HELP_BUDGET, "Usage:"),
            ('python -c "import acpcli"', [python, "-c", "import acpcli; print(acpcli.__version__)"], env, IMPORT_BUDGET, "."),
            ("complete 'acpcli load '", acpcli, completing("acpcli load "), COMPLETION_BUDGET, "sess-0049-"),
            ("complete 'acpcli lo'", acpcli, completing("acpcli lo"), COMPLETION_BUDGET, "load"),
            ("complete 'acpcli new --agent '", acpcli, completing("acpcli new --agent "), COMPLETION_BUDGET, "demo"),
        ]
        for _label, cmd, cmd_env, _budget, expected in cases:
            for _ in range(2):  # warm-up: bytecode cache, page cache
                _, out, _ = run(cmd, cmd_env)
            if expected not in out:
                raise SystemExit(f"{' '.join(cmd)}: expected {expected!r} in its output, got {out[:200]!r}")
        times: list[list[float]] = [[] for _ in cases]
        cpus: list[list[float]] = [[] for _ in cases]
        for _ in range(args.n):
            for slot, cpu_slot, (_label, cmd, cmd_env, _budget, _expected) in zip(times, cpus, cases, strict=False):
                elapsed, _, cpu = run(cmd, cmd_env)
                slot.append(elapsed)
                cpu_slot.append(cpu)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    medians = [statistics.median(t) for t in times]
    cpu_medians = [statistics.median(t) for t in cpus]
    floor = medians[0]
    cpu_floor = cpu_medians[0] or 1e-9
    missed = []
    print(f"start-up, median of {args.n} runs each ({os.cpu_count()} CPUs, Python {sys.version.split()[0]})")
    for (label, _cmd, _env, budget, _expected), median, cpu in zip(cases, medians, cpu_medians, strict=False):
        ratio = median / floor
        verdict = ""
        if budget is not None:
            ok = ratio <= budget
            verdict = f"  target <= {budget:.1f}x  {'PASS' if ok else 'MISS'}"
            if not ok:
                missed.append(label)
        print(f"  {label:<34} {median * 1000:7.1f} ms  {ratio:5.2f}x floor  (CPU {cpu / cpu_floor:4.2f}x){verdict}")
    print("MISS: " + ", ".join(missed) if missed else "PASS")
    return 1 if (missed and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())
