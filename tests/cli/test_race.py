"""``acpcli race``: one task, several agents at once, each in its own worktree (or copy);
then ``race show``, ``race apply``, ``race drop``. Through the real CLI in subprocesses, with
SDK agents (``tests/peers/sdk_race_agent.py``) that write different files, finish at
different times, crash, hang or refuse.

What is checked every time: the user's ``.git`` is byte for byte what it was (``race apply``
writes only the user's files), ``git worktree list`` shows only the user's tree, no ref or
branch of the race is left, and no agent is left running.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acpcli.errors import ExitCode
from tests.helpers.procs import running

from .conftest import TIMEOUT, Cli, error_line

RACER = Path(__file__).resolve().parent.parent / "peers" / "sdk_race_agent.py"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


def racer(*args: str) -> str:
    """A ``--cmd`` line running the race agent with ``args``."""
    return shlex.join([sys.executable, str(RACER), *args])


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout


def make_repo(root: Path) -> Path:
    """A repository with two commits, then uncommitted changes of every kind: a tracked file
    edited, one staged, one deleted, an untracked file, an ignored one."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("alpha\n")
    (root / "gone.txt").write_text("to delete\n")
    (root / ".gitignore").write_text("*.log\n")
    (root / "sub").mkdir()
    (root / "sub" / "b.txt").write_text("beta\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    (root / "a.txt").write_text("alpha\nedited by the user\n")
    (root / "staged.txt").write_text("staged\n")
    git(root, "add", "staged.txt")
    (root / "gone.txt").unlink()
    (root / "untracked.txt").write_text("mine\n")
    (root / "build.log").write_text("ignored\n")
    return root


def dotgit_state(repo: Path) -> dict[str, str]:
    """Every file under ``.git`` and a hash of its bytes (folders too): any write shows."""
    state = {}
    for path in sorted((repo / ".git").rglob("*")):
        rel = str(path.relative_to(repo))
        state[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return state


def tree_state(root: Path) -> dict[str, bytes]:
    """Every file of the user's tree (not .git), its bytes and exec bit."""
    state = {}
    for path in sorted(root.rglob("*")):
        if ".git" in path.relative_to(root).parts or path.is_dir():
            continue
        state[str(path.relative_to(root))] = path.read_bytes() + (b"+x" if os.access(path, os.X_OK) else b"")
    return state


def race_json(proc: subprocess.CompletedProcess[str]) -> dict:
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


def by_name(data: dict) -> dict[str, dict]:
    return {c["name"]: c for c in data["candidates"]}


def assert_nothing_left(repo: Path, cli: Cli, before: dict[str, str] | None = None) -> None:
    lines = git(repo, "worktree", "list", "--porcelain").split("\n\n")
    assert len([x for x in lines if x.strip()]) == 1, lines
    refs = git(repo, "for-each-ref", "--format=%(refname)")
    assert refs.split() == ["refs/heads/main"], refs
    assert git(repo, "stash", "list") == ""
    if before is not None:
        assert dotgit_state(repo) == before
    left = [pid for pid in cli.trace.pids() if running(pid)]
    assert not left, f"agents left running: {left}"


@pytest.fixture
def repo(workdir: Path) -> Path:
    return make_repo(workdir / "repo")


def test_a_race_in_a_repository_with_uncommitted_changes(cli: Cli, repo: Path) -> None:
    before = dotgit_state(repo)
    index_before = (repo / ".git" / "index").read_bytes()
    user_files = tree_state(repo)
    proc = cli.run(
        "race", "--json",
        "--cmd", racer("--write", "one.txt=ONE\\n", "--sleep", "0.3", "--steps", "2", "--name", "fast"),
        "--cmd", racer("--write", "sub/b.txt=beta\\nand more\\n", "--sleep", "1.5", "--steps", "3", "--name", "slow"),
        "--cmd", racer("--crash", "--sleep", "0.4", "--steps", "2", "--name", "crasher"),
        "--check", "cat a.txt staged.txt untracked.txt; test ! -e gone.txt && test ! -e build.log && test -f one.txt",
        "do the task",
        cwd=repo,
    )
    assert proc.returncode == 0, proc.stderr
    data = race_json(proc)
    rows = by_name(data)
    assert sorted(rows) == ["sdk_race_agent", "sdk_race_agent-2", "sdk_race_agent-3"]
    fast, slow, crasher = rows["sdk_race_agent"], rows["sdk_race_agent-2"], rows["sdk_race_agent-3"]
    assert fast["state"] == "done" and fast["stop"] == "end_turn" and fast["succeeded"]
    assert [f["path"] for f in fast["files"]] == ["one.txt"] and fast["files"][0]["added"] == 1
    # the user's uncommitted changes were there for every candidate; ignored files were not
    assert fast["check"]["exit"] == 0
    assert fast["check"]["tail"][:4] == ["alpha", "edited by the user", "staged", "mine"]
    assert slow["state"] == "done" and slow["check"]["exit"] == 1  # its tree has no one.txt
    assert slow["files"] == [{"path": "sub/b.txt", "added": 1, "removed": 0, "status": "M"}]
    assert slow["wall"] > fast["wall"]
    assert crasher["state"] == "failed" and "exited" in crasher["error"] and crasher["check"] is None
    assert fast["usage"]["cost"]["amount"] == pytest.approx(0.02)
    assert fast["last_tool"] == "edit one.txt"
    # the user's tree, index and .git: as they were (no worktree, ref or object of the race left)
    assert tree_state(repo) == user_files
    assert (repo / ".git" / "index").read_bytes() == index_before
    assert_nothing_left(repo, cli, before)
    # recorded in the history with the race's id
    race_id = data["id"]
    listed = cli.ok("sessions", "--race", race_id, "--json").stdout.splitlines()
    sessions = {json.loads(line)["id"] for line in listed}
    assert sessions == {fast["session"], slow["session"], crasher["session"]}
    assert all(json.loads(line)["race"] == race_id for line in listed)
    everything = cli.ok("sessions", "--json", "--all").stdout
    assert everything.count(f'"race": "{race_id}"') == 3
    # the summary again, as a table, and one candidate's diff
    table = cli.ok("race", "show", race_id).stdout
    assert "sdk_race_agent-3" in table and "failed" in table and "exit 1" in table
    diff = cli.ok("race", "show", race_id, "sdk_race_agent-2").stdout
    assert "+and more" in diff and "sub/b.txt" in diff
    cli.ok("race", "drop", race_id)
    assert not (cli.home / "races" / race_id).exists()
    assert_nothing_left(repo, cli, before)


def test_apply_brings_one_candidate_in_byte_for_byte_and_refuses_a_conflict(cli: Cli, repo: Path) -> None:
    proc = cli.run(
        "race", "--json",
        "--cmd", racer("--write", "a.txt=alpha\\nedited by the user\\nand by the agent\\n", "--write", "bin.dat=\\x00\\xff\\r\\n\\x1b[31m", "--delete", "untracked.txt"),
        "--cmd", racer("--write", "a.txt=a different alpha\\n"),
        "task", cwd=repo,
    )
    assert proc.returncode == 0, proc.stderr
    data = race_json(proc)
    race_id = data["id"]
    before = dotgit_state(repo)
    user = tree_state(repo)
    # the user edits another file meanwhile: no conflict with the first candidate
    (repo / "sub" / "b.txt").write_text("beta\nthe user's own line\n")
    applied = cli.run("race", "apply", race_id, "sdk_race_agent")
    assert applied.returncode == 0, applied.stderr
    assert sorted(applied.stdout.split()) == ["a.txt", "bin.dat", "untracked.txt"]
    assert (repo / "a.txt").read_bytes() == b"alpha\nedited by the user\nand by the agent\n"
    assert (repo / "bin.dat").read_bytes() == b"\x00\xff\r\n\x1b[31m"
    assert not (repo / "untracked.txt").exists()
    assert (repo / "sub" / "b.txt").read_text() == "beta\nthe user's own line\n"
    expected = dict(user)
    expected["a.txt"] = b"alpha\nedited by the user\nand by the agent\n"
    expected["bin.dat"] = b"\x00\xff\r\n\x1b[31m"
    expected["sub/b.txt"] = b"beta\nthe user's own line\n"
    del expected["untracked.txt"]
    assert tree_state(repo) == expected
    assert dotgit_state(repo) == before  # apply writes the user's files, never .git
    # the second candidate changed a.txt too, differently: refused, naming it, nothing written
    now = tree_state(repo)
    refused = cli.run("race", "apply", race_id, "sdk_race_agent-2")
    assert "a.txt" in error_line(refused, ExitCode.USAGE)
    assert tree_state(repo) == now
    assert dotgit_state(repo) == before
    unknown = cli.run("race", "apply", race_id, "nobody")
    assert "nobody" in error_line(unknown, ExitCode.USAGE)
    cli.ok("race", "drop", race_id)
    assert_nothing_left(repo, cli, before)


def test_a_race_in_a_plain_folder_and_a_three_way_merge(cli: Cli, workdir: Path) -> None:
    folder = workdir / "plain"
    folder.mkdir()
    (folder / "notes.txt").write_text("one\ntwo\nthree\nfour\nfive\nsix\n")
    (folder / "tool.sh").write_text("#!/bin/sh\n")
    os.chmod(folder / "tool.sh", 0o755)
    proc = cli.run(
        "race", "--json",
        "--cmd", racer("--write", "notes.txt=one\\ntwo\\nthree\\nfour\\nfive\\nsix and a half\\n", "--sleep", "0.2"),
        "--agent", "demo",
        "go", cwd=folder,
    )
    assert proc.returncode == 0, proc.stderr
    data = race_json(proc)
    assert data["kind"] == "folder"
    rows = by_name(data)
    assert rows["demo"]["state"] == "done" and rows["demo"]["files"] == []
    assert rows["sdk_race_agent"]["files"][0]["path"] == "notes.txt"
    # the copies are gone; the results stay for show and apply
    assert not any(p.name.startswith(data["id"] + "-") for p in (cli.home / "races" / data["id"]).iterdir())
    # the user changed the first line meanwhile: the 3-way merge keeps both
    (folder / "notes.txt").write_text("ONE\ntwo\nthree\nfour\nfive\nsix\n")
    cli.ok("race", "apply", data["id"], "sdk_race_agent")
    assert (folder / "notes.txt").read_text() == "ONE\ntwo\nthree\nfour\nfive\nsix and a half\n"
    assert os.access(folder / "tool.sh", os.X_OK)
    cli.ok("race", "drop", data["id"])
    assert cli.ok("race").stdout == ""


def test_timeouts_refusals_and_failed_checks_get_their_rows(cli: Cli, repo: Path) -> None:
    before = dotgit_state(repo)
    proc = cli.run(
        "race", "--json", "--timeout", "6", "--check", "sleep 30", "--check-timeout", "1",
        "--cmd", racer("--hang"),
        "--cmd", racer("--refuse"),
        "--cmd", racer("--write", "x.txt=x"),
        "task", cwd=repo,
    )
    assert proc.returncode == ExitCode.NO_WINNER, proc.stderr
    rows = by_name(race_json(proc))
    assert rows["sdk_race_agent"]["state"] == "timed out"
    assert rows["sdk_race_agent-2"]["state"] == "refused"
    checked = rows["sdk_race_agent-3"]
    assert checked["state"] == "done" and checked["check"]["timed_out"] and not checked["succeeded"]
    assert_nothing_left(repo, cli, before)
    table = cli.ok("race", "show", race_json(proc)["id"]).stdout
    assert "timed out" in table and "refused" in table and "no candidate succeeded" in table


def test_bad_places_and_bad_input_each_get_one_line(cli: Cli, workdir: Path) -> None:
    bare = workdir / "bare.git"
    git(workdir, "init", "-q", "--bare", str(bare))
    assert "bare" in error_line(cli.run("race", "--agent", "demo", "x", cwd=bare), ExitCode.USAGE)
    empty = workdir / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    assert "no commits" in error_line(cli.run("race", "--agent", "demo", "x", cwd=empty), ExitCode.USAGE)
    assert "candidates" in error_line(cli.run("race", "just a prompt", cwd=workdir), ExitCode.USAGE)
    assert error_line(cli.run("race", "--agent", "no-such-agent", "x", cwd=workdir), ExitCode.USAGE)
    assert "no race" in error_line(cli.run("race", "show", "rdeadbeef"), ExitCode.USAGE)
    assert not (cli.home / "races").exists() or not any((cli.home / "races").iterdir())


def test_a_detached_head_races_too(cli: Cli, repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "--detach", head)
    before = dotgit_state(repo)
    proc = cli.run("race", "--json", "--cmd", racer("--write", "d.txt=d"), "go", cwd=repo / "sub")
    assert proc.returncode == 0, proc.stderr
    data = race_json(proc)
    assert data["head"] == head and data["rel"] == "sub"
    assert data["candidates"][0]["files"][0]["path"] == "sub/d.txt"  # the agent ran in sub/
    cli.ok("race", "drop", data["id"])
    assert dotgit_state(repo) == before


@pytest.mark.parametrize("kind", ["folder", "repo"])
def test_a_full_disk_while_preparing_removes_what_was_made(cli: Cli, workdir: Path, kind: str) -> None:
    folder = workdir / "big"
    folder.mkdir()
    (folder / "small.txt").write_text("x")
    if kind == "repo":
        git(folder, "init", "-q", "-b", "main")
        git(folder, "add", "-A")
        git(folder, "commit", "-qm", "small")
        (folder / "big.bin").write_bytes(os.urandom(3 << 20))  # uncommitted: copied into each worktree
    else:
        (folder / "big.bin").write_bytes(os.urandom(3 << 20))
    before = dotgit_state(folder) if kind == "repo" else None

    def small_files() -> None:  # a 1 MiB file size limit: the copy's write fails (EFBIG)
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    proc = subprocess.run(
        cli.argv("race", "--agent", "demo", "--agent", "demo", "go"), cwd=folder, env=cli.env(),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT, preexec_fn=small_files,
        check=False,
    )
    assert "disk is full" in error_line(proc, ExitCode.STORAGE)
    races = cli.home / "races"
    assert not races.exists() or not any(races.iterdir())
    if kind == "repo":
        assert len([x for x in git(folder, "worktree", "list", "--porcelain").split("\n\n") if x.strip()]) == 1
        assert dotgit_state(folder) == before


def test_two_races_at_once_never_share_a_tree_or_a_ref(cli: Cli, repo: Path) -> None:
    before = dotgit_state(repo)
    # (git itself fails to add worktrees at once in one repository: they are added one at a time)
    one = [
        "race", "--json", "--cmd", racer("--write", "one.txt=1", "--sleep", "0.5"), "--cmd", racer("--write", "two.txt=2"),
        "--cmd", racer("--write", "three.txt=3"), "x",
    ]
    procs = [
        subprocess.Popen(cli.argv(*one), cwd=repo, env=cli.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=TIMEOUT) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    datas = [json.loads(out) for out, _ in outs]
    assert datas[0]["id"] != datas[1]["id"]
    trees = [c["tree"] for d in datas for c in d["candidates"]]
    assert len(set(trees)) == 6
    for d in datas:
        assert [c["files"][0]["path"] for c in d["candidates"]] == ["one.txt", "two.txt", "three.txt"]
    assert_nothing_left(repo, cli, before)


def _wait_for(predicate, seconds: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("the condition never came")


def _running_candidates(home: Path) -> int:
    count = 0
    for path in (home / "races").glob("*/race.json"):
        try:
            data = json.loads(path.read_text())
        except ValueError:
            continue
        count += sum(1 for c in data["candidates"] if c.get("session"))
    return count


def test_ctrl_c_cancels_every_candidate_and_leaves_nothing(cli: Cli, repo: Path) -> None:
    before = dotgit_state(repo)
    proc = subprocess.Popen(
        cli.argv("race", "--cmd", racer("--sleep", "60", "--steps", "60"), "--cmd", racer("--hang"), "x"),
        cwd=repo, env=cli.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        _wait_for(lambda: len(cli.trace.pids()) == 2 and _running_candidates(cli.home) >= 1)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == ExitCode.INTERRUPTED, err
    assert "interrupted" in err
    races = cli.home / "races"
    assert not any(races.iterdir())
    _wait_for(lambda: not any(running(pid) for pid in cli.trace.pids()), 15)
    assert_nothing_left(repo, cli, before)


def test_keep_leaves_live_sessions_to_continue_and_drop_ends_them(cli: Cli, repo: Path) -> None:
    before = dotgit_state(repo)
    live = {"ACPCLI_KEEP_ALIVE": "60"}  # (the tests' default is 0: no hosts)
    try:
        _keep_and_drop(cli, repo, live, before)
    finally:
        cli.run("stop", "--all")


def _keep_and_drop(cli: Cli, repo: Path, live: dict[str, str], before: dict[str, str]) -> None:
    proc = cli.run("race", "--json", "--keep", "--agent", "demo", "--cmd", racer("--write", "k.txt=k"), "go", cwd=repo, env=live)
    assert proc.returncode == 0, proc.stderr
    data = race_json(proc)
    demo = by_name(data)["demo"]
    tree = Path(demo["tree"])
    assert tree.is_dir() and str(tree).startswith(str(cli.home))
    assert str(tree) in git(repo, "worktree", "list")
    # continue the demo candidate in its worktree: its live session answers
    more = cli.run("prompt", "--session", demo["session"], "and now this", env=live)
    assert more.returncode == 0, more.stderr
    assert demo["session"] in cli.ok("sessions", "--live", "--json").stdout
    recorded = [json.loads(line) for line in cli.ok("sessions", "--race", data["id"], "--json").stdout.splitlines()]
    assert {r["id"]: r["cwd"] for r in recorded}[demo["session"]] == str(tree)  # it goes on in its worktree
    cli.ok("race", "drop", data["id"])
    assert demo["session"] not in cli.ok("sessions", "--live", "--json").stdout
    assert not tree.exists()
    assert_nothing_left(repo, cli, before)


SESSIONS_AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_sessions_agent.py"


def test_a_race_from_a_session_forks_it_where_the_agent_can(cli: Cli, repo: Path, tmp_path: Path) -> None:
    state = tmp_path / "sessions.json"
    extra = {"SDK_SESSIONS_STATE": str(state)}
    forking = shlex.join([sys.executable, str(SESSIONS_AGENT), "--fork"])
    first = cli.run("prompt", "--cmd", forking, "remember the blue door", cwd=repo, env=extra)
    assert first.returncode == 0, first.stderr
    parent = next(iter(json.loads(state.read_text())))
    proc = cli.run(
        "race", "--json", "--session", parent, "--cmd", forking, "--cmd", racer("--write", "ctx.txt=x"),
        "paint it", cwd=repo, env=extra,
    )
    assert proc.returncode == 0, proc.stderr
    assert "fork session" in proc.stderr and "transcript" in proc.stderr
    data = race_json(proc)
    assert data["from_session"] == parent and data["task"] == "paint it"
    forked, other = data["candidates"]
    assert forked["started_from"] == "fork" and other["started_from"] == "transcript"
    sessions = json.loads(state.read_text())
    fork = sessions[forked["session"]]
    assert fork["parent"] == parent and fork["said"] == ["remember the blue door", "paint it"]
    assert fork["cwd"] == forked["cwd"]  # forked into its own worktree
    assert "remember the blue door" in data["prompt"]  # what the others were given
    # applying the fork's result goes on from its conversation, in the user's tree
    applied = cli.ok("race", "apply", data["id"], forked["name"], env=extra)
    sessions = json.loads(state.read_text())
    here = [sid for sid, s in sessions.items() if s["parent"] == forked["session"]]
    assert len(here) == 1 and sessions[here[0]]["cwd"] == str(repo)
    assert sessions[here[0]]["said"] == ["remember the blue door", "paint it"]
    assert here[0] in applied.stderr
    cli.ok("race", "drop", data["id"])


def test_a_repository_with_a_submodule_races_and_says_so(cli: Cli, workdir: Path) -> None:
    inner = workdir / "inner"
    inner.mkdir()
    git(inner, "init", "-q", "-b", "main")
    (inner / "lib.txt").write_text("lib\n")
    git(inner, "add", "-A")
    git(inner, "commit", "-qm", "lib")
    outer = workdir / "outer"
    outer.mkdir()
    git(outer, "init", "-q", "-b", "main")
    (outer / "app.txt").write_text("app\n")
    git(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "vendor/inner")
    git(outer, "commit", "-qm", "app")
    before = dotgit_state(outer)
    proc = cli.run("race", "--json", "--cmd", racer("--write", "app.txt=changed"), "go", cwd=outer)
    assert proc.returncode == 0, proc.stderr
    assert "submodules" in proc.stderr
    data = race_json(proc)
    assert [f["path"] for f in data["candidates"][0]["files"]] == ["app.txt"]  # the empty submodule folder is no change
    cli.ok("race", "apply", data["id"], data["candidates"][0]["name"])
    assert (outer / "app.txt").read_text() == "changed"
    assert (outer / "vendor" / "inner" / "lib.txt").read_text() == "lib\n"
    assert cli.ok("race").stdout.startswith(data["id"])  # the races kept are listed
    cli.ok("race", "drop", data["id"])
    assert dotgit_state(outer) == before
