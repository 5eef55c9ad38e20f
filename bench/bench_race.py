"""Benchmark: ``acpcli race`` against what it is made of, ratios in one run.

* **Together vs alone**: three candidates (SDK agents that take 1, 2 and 3 s) raced together,
  against the slowest of them raced alone (same agents, same prompt, the same ``acpcli race``
  command, interleaved rounds): target <= 1.3 x.
* **Preparing a worktree** (``git worktree add --detach`` at HEAD, the user's uncommitted
  changes copied, the baseline written to the private store) against ``git worktree add``
  alone, on a generated repository of N files (default 10,000): target <= 2.0 x.
* **The board**: the cost of one redraw of a three-candidate board (cut to 100 columns),
  times the 10 redraws a second it does at most: target < 5 % of one core.

Prints the figures and a ``PASS``/``MISS`` line per target; exits 0 unless ``--check`` is
given and a target is missed. Run: ``.venv/bin/python bench/bench_race.py [--n 2000] [--check]``.
"""

from __future__ import annotations

import argparse
import io
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_checkpoints import _git_env, generate  # (this script's folder is first on the path)

from acpcli.racing import worktrees
from acpcli.racing.board import Board
from acpcli.racing.record import Candidate, Race

ROOT = Path(__file__).resolve().parent.parent

TOGETHER_RATIO = 1.3
PREPARE_RATIO = 2.0
BOARD_SHARE = 0.05
RACER = ROOT / "tests" / "peers" / "sdk_race_agent.py"


def _racer(seconds: float, name: str) -> str:
    return shlex.join([sys.executable, str(RACER), "--sleep", str(seconds), "--steps", "10", "--write", f"{name}.txt={name}"])


def together_vs_alone(rounds: int, work: Path) -> tuple[float, float]:
    """Median wall times of the three raced together and of the slowest raced alone."""
    repo = work / "small"
    env = _git_env(work)
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, env=env, check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "a"], cwd=repo, env=env, check=True)
    run_env = dict(env, ACPCLI_HOME=str(work / "home"), ACPCLI_KEEP_ALIVE="0")
    three = ["--cmd", _racer(1, "one"), "--cmd", _racer(2, "two"), "--cmd", _racer(3, "three")]
    alone = ["--cmd", _racer(3, "three")]
    together_t, alone_t = [], []
    for _ in range(rounds):
        for args, into in ((three, together_t), (alone, alone_t)):
            start = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "acpcli", "race", "--json", *args, "go"], cwd=repo, env=run_env,
                capture_output=True, stdin=subprocess.DEVNULL, check=False,
            )
            into.append(time.perf_counter() - start)
            if proc.returncode != 0:
                raise SystemExit(f"race failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return statistics.median(together_t), statistics.median(alone_t)


def prepare_vs_worktree_add(n: int, rounds: int, work: Path) -> tuple[float, float]:
    """Median seconds of ``git worktree add`` and of preparing a candidate's tree."""
    env = _git_env(work)
    top = work / "big"
    generate(top, n, env)
    source = worktrees.inspect(top)
    add_t, prepare_t = [], []
    for i in range(rounds):
        tree = work / f"plain-{i}"
        start = time.perf_counter()
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(tree), "HEAD"], cwd=top, env=env, check=True)
        add_t.append(time.perf_counter() - start)
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=top, env=env, check=True)
        store = work / f"store-{i}"
        git = worktrees.make_store(store, source)
        tree = work / f"race-{i}"
        start = time.perf_counter()
        worktrees.prepare(source, git, tree, work / f"i-{i}", work / f"x-{i}", work / "home")
        prepare_t.append(time.perf_counter() - start)
        worktrees.remove_tree(source, tree)
        shutil.rmtree(store)
    return statistics.median(add_t), statistics.median(prepare_t)


class _Terminal(io.StringIO):
    def fileno(self) -> int:
        raise OSError("not a terminal")  # the board then draws 80 columns


def board_redraw(rounds: int) -> float:
    """Median seconds of one forced redraw of a three-candidate board."""
    race = Race(id="rbench000", cwd="/x", kind="repo", top="/x", rel="", head=None, prompt="p")
    now = time.time()
    for i in range(3):
        race.candidates.append(Candidate(
            name=f"agent-{i}", state="running", started=now - 10 * i, files_so_far=i,
            usage={"used": 12_000 * (i + 1), "size": 200_000, "cost": {"amount": 0.1 * i, "currency": "USD"}},
            last_tool=f"edit src/module_{i}/a_rather_long_file_name_{i}.py",
        ))
    board = Board(race, _Terminal())
    times = []
    for i in range(rounds):
        race.candidates[i % 3].files_so_far += 1
        start = time.perf_counter()
        board.tick(force=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="files in the generated repository")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = parser.parse_args()
    missed = False
    with tempfile.TemporaryDirectory(prefix="bench-race-") as tmp:
        work = Path(tmp)
        os.environ["ACPCLI_HOME"] = str(work / "home")
        together, alone = together_vs_alone(args.rounds, work)
        ratio = together / alone
        ok = ratio <= TOGETHER_RATIO
        missed |= not ok
        print(f"three together {together:.2f} s, the slowest alone {alone:.2f} s: {ratio:.2f}x "
              f"(target <= {TOGETHER_RATIO}x) {'PASS' if ok else 'MISS'}")
        add, prepare = prepare_vs_worktree_add(args.n, args.rounds, work)
        ratio = prepare / add
        ok = ratio <= PREPARE_RATIO
        missed |= not ok
        print(f"{args.n} files: git worktree add {add * 1000:.0f} ms, preparing a candidate {prepare * 1000:.0f} ms: "
              f"{ratio:.2f}x (target <= {PREPARE_RATIO}x) {'PASS' if ok else 'MISS'}")
    redraw = board_redraw(max(200, args.rounds * 100))
    share = redraw * 10
    ok = share < BOARD_SHARE
    missed |= not ok
    print(f"board redraw {redraw * 1e6:.0f} us; at 10 redraws a second {share * 100:.2f} % of one core "
          f"(target < {BOARD_SHARE * 100:.0f} %) {'PASS' if ok else 'MISS'}")
    return 1 if missed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
