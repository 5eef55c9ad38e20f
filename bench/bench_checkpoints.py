"""Benchmark: checkpoints of a working tree against git's own cost, on one generated repository.

Generates a repository of N files (default 10,000, in 100 folders, committed, with a little
uncommitted work as a user has), then measures, median of R rounds, in this one run:

* ``git status`` on the tree (the user's git, warm caches) — the floor;
* the first checkpoint of the repository (a fresh store each round): target <= 2.0 x ``git status``
  (it starts from the user's index: only changed files are hashed);
* the checkpoint after a turn that changed 3 files: target <= 100 ms added to the turn (the turn
  without checkpoints adds nothing);
* ``acpcli rewind SESSION --to TURN --files --yes`` of that turn (3 files) against
  ``acpcli --help``: target <= 2.0 x; every rewind is checked to restore the 3 files byte for
  byte.

Prints the figures and a ``PASS``/``MISS`` line per target; exits 0 unless ``--check`` is given
and a target is missed. Run: ``.venv/bin/python bench/bench_checkpoints.py [--n 2000] [--check]``.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from acpcli.worktree import Checkpoints

FIRST_RATIO = 2.0
TURN_MS = 100.0
REWIND_RATIO = 2.0


def _git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    config = home / "gitconfig"
    config.write_text("[user]\n\tname = B\n\temail = b@example.com\n")
    env.update(GIT_CONFIG_GLOBAL=str(config), GIT_CONFIG_NOSYSTEM="1")
    return env


def generate(top: Path, n: int, env: dict[str, str]) -> None:
    """A committed repository of ``n`` small text files (one ``git fast-import``, then the files
    written by git from it), then a little uncommitted work and a ``git status`` (as a user's
    index is: fresh)."""
    top.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=top, env=env, check=True)
    stream = bytearray()
    paths = []
    for i in range(n):
        data = (f"# file {i}\n" + "".join(f"value_{j} = {i * j}\n" for j in range(i % 40 + 1))).encode()
        stream += b"blob\nmark :%d\ndata %d\n%s\n" % (i + 1, len(data), data)
        paths.append(f"pkg{i % 100:02d}/mod{i % 7}/file{i}.py")
    ignore = b"*.pyc\n__pycache__/\n"
    stream += b"blob\nmark :%d\ndata %d\n%s\n" % (n + 1, len(ignore), ignore)
    stream += b"commit refs/heads/main\ncommitter B <b@example.com> 1700000000 +0000\ndata 10\ngenerated\n"
    stream += b"".join(b"M 100644 :%d %s\n" % (i + 1, p.encode()) for i, p in enumerate(paths))
    stream += b"M 100644 :%d .gitignore\n\n" % (n + 1)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=top, env=env, input=bytes(stream), check=True)
    subprocess.run(["git", "symbolic-ref", "HEAD", "refs/heads/main"], cwd=top, env=env, check=True)
    subprocess.run(["git", "read-tree", "-u", "--reset", "HEAD"], cwd=top, env=env, check=True)
    (top / "pkg00" / "mod0" / "file0.py").write_text("# uncommitted edit\n")
    (top / "scratch.txt").write_text("untracked\n")
    time.sleep(1.1)  # past the racy-git second, as a working tree is
    subprocess.run(["git", "status", "--porcelain"], cwd=top, env=env, check=True, capture_output=True)


def timed(fn: object, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return times


def _files(n: int) -> list[str]:
    return [f"pkg{k % 100:02d}/mod{k % 7}/file{k}.py" for k in (11, n // 2 + 3, n - 1)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="files in the repository (default 10,000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per figure, the median is kept (default 5)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = parser.parse_args(argv)
    n, rounds = max(args.n, 10), max(args.rounds, 1)

    work = Path(tempfile.mkdtemp(prefix="bench-checkpoints-"))
    try:
        home = work / "acpcli-home"
        home.mkdir()
        os.environ["ACPCLI_HOME"] = str(home)
        env = _git_env(work)
        top = work / "repo"
        started = time.perf_counter()
        generate(top, n, env)
        made = time.perf_counter() - started

        status = statistics.median(
            timed(lambda: subprocess.run(["git", "status", "--porcelain"], cwd=top, env=env, check=True, capture_output=True), rounds)
        )
        sessions = iter(range(1_000_000))
        first = statistics.median(timed(lambda: Checkpoints(f"first-{next(sessions)}", [top]).take(0), rounds))

        from acpcli.history.index import Index, SessionRecord

        with Index() as index:  # the session the command names
            index.upsert_session(SessionRecord(id="bench", agent="bench", cwd=str(top)))
        cps = Checkpoints("bench", [top])
        cps.take(0)
        turn_times, rewind_times = [], []
        paths = _files(n)
        originals = {p: (top / p).read_bytes() for p in paths}
        python = sys.executable
        renv = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        turn = 0
        for r in range(rounds):
            turn += 1
            for p in paths:
                (top / p).write_text(f"# turn {turn} rewrote this file\n")
            start = time.perf_counter()
            cps.take(turn, f"turn {turn}", files=False)  # as a turn takes it (its files are not shown)
            turn_times.append(time.perf_counter() - start)
            assert len(cps.get(turn).files) == 3, cps.get(turn).files
            start = time.perf_counter()
            subprocess.run(
                [python, "-m", "acpcli", "rewind", "bench", "--to", str(turn), "--files", "--yes"],
                env=renv, check=True, capture_output=True,
            )
            rewind_times.append(time.perf_counter() - start)
            assert all((top / p).read_bytes() == originals[p] for p in paths), f"round {r}: the rewind is wrong"
            turn += 1
            cps.take(turn, "after the rewind")  # the next turn starts from the rewound files
        turn_ms = statistics.median(turn_times) * 1000
        rewind_s = statistics.median(rewind_times)
        help_s = statistics.median(
            timed(lambda: subprocess.run([python, "-m", "acpcli", "--help"], env=renv, check=True, capture_output=True), rounds)
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    first_ratio = first / status
    rewind_ratio = rewind_s / help_s
    verdicts = [
        first_ratio <= FIRST_RATIO,
        turn_ms <= TURN_MS,
        rewind_ratio <= REWIND_RATIO,
    ]
    word = ["MISS", "PASS"]
    print(f"bench_checkpoints: a repository of {n:,} files (made in {made:.1f} s), median of {rounds} rounds")
    print(f"  git status                        {status * 1000:8.1f} ms")
    print(f"  first checkpoint                  {first * 1000:8.1f} ms   {first_ratio:5.2f} x git status (target <= {FIRST_RATIO:.1f})  {word[verdicts[0]]}")
    print(f"  checkpoint of a 3-file turn       {turn_ms:8.1f} ms   added to the turn (target <= {TURN_MS:.0f} ms)  {word[verdicts[1]]}")
    print(f"    of which over git status        {turn_ms - status * 1000:8.1f} ms   (the walk of the tree is git's own cost)")
    print(f"  acpcli rewind of 3 files          {rewind_s * 1000:8.1f} ms   {rewind_ratio:5.2f} x acpcli --help ({help_s * 1000:.0f} ms; target <= {REWIND_RATIO:.1f})  {word[verdicts[2]]}")
    if args.check and not all(verdicts):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
