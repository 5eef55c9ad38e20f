"""Taking checkpoints: what is recorded (and what is not), listed and shown, in a repository with
uncommitted work and in a plain folder, and the user's repository left exactly as it was."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from acpcli.worktree import Checkpoints
from tests.helpers.trees import UserGit, dot_git_state

WEIRD = [b"new\nline.txt", b"with space.txt", b"caf\xe9-latin1.txt", b"tab\there", b"-dash", b'quo"te']


def _turn(root: Path) -> None:
    """What an agent might do in one turn: write, edit, delete, rename, chmod, link, binary,
    empty, odd names."""
    (root / "created.txt").write_text("new file\n")
    (root / "a.txt" if (root / "a.txt").exists() else root / "README").write_text("edited\n")
    os.rename(root / "sub" / "b.txt" if (root / "sub").exists() else root / "src" / "m3.py", root / "moved.txt")
    (root / "empty").write_bytes(b"")
    (root / "blob.bin").write_bytes(bytes(range(256)) * 4)
    os.symlink("created.txt", root / "inside-link")
    os.symlink("/etc/passwd", root / "outside-link")
    os.chmod(root / "created.txt", 0o755)
    for name in WEIRD:
        with open(os.path.join(os.fsencode(root), name), "wb") as f:
            f.write(b"odd " + name + b"\n")


def test_a_plain_folder_turn_is_listed_with_its_files_and_lines(plain: Path) -> None:
    cps = Checkpoints("s-plain", [plain], max_file_size=1 << 20)
    zero = cps.take(0, "")
    assert zero.turn == 0 and zero.base is None and zero.files == ()
    (plain / "tool").unlink()
    _turn(plain)
    one = cps.take(1, "make it so\nsecond line")
    assert one.label == "make it so" and one.base == zero.commit
    by_path = {f.path: f for f in one.files}
    assert by_path["created.txt"].status == "A" and by_path["created.txt"].added == 1
    assert by_path["tool"].status == "D"
    assert by_path["a.txt"].status == "M" and (by_path["a.txt"].added, by_path["a.txt"].removed) == (1, 2)
    assert by_path["moved.txt"].status == "R" and by_path["moved.txt"].old_path == "sub/b.txt"
    assert by_path["blob.bin"].added is None  # binary: no line counts
    assert by_path["outside-link"].status == "A"
    for name in WEIRD:
        assert os.fsdecode(name) in by_path
    listed = cps.list()
    assert [c.turn for c in listed] == [0, 1]
    assert listed[1].label == "make it so" and {f.path for f in listed[1].files} == set(by_path)
    assert listed[1].added == one.added > 0 and listed[1].removed == one.removed > 0
    assert cps.latest() == 1 and cps.turns() == [0, 1]


def test_the_diff_of_a_turn_is_its_changes_only(plain: Path) -> None:
    cps = Checkpoints("s-diff", [plain])
    cps.take(0)
    (plain / "a.txt").write_text("alpha\nBETA\n")
    cps.take(1, "one")
    (plain / "sub" / "c.txt").write_text("c\n")
    cps.take(2, "two")
    diff = cps.diff(1)
    assert "--- a/a.txt\n+++ b/a.txt\n" in diff and "-beta\n+BETA\n" in diff and "c.txt" not in diff
    assert cps.diff() == cps.diff(2) and "+++ b/sub/c.txt" in cps.diff(2)
    assert cps.diff(2, name_only=True) == "sub/c.txt\n"
    assert "1 file changed" in cps.diff(1, stat=True)
    cps.take(3, "nothing")
    assert cps.diff(3) == ""


def test_symlinks_are_stored_as_links_and_weird_names_are_shown_quoted(plain: Path) -> None:
    cps = Checkpoints("s-links", [plain])
    cps.take(0)
    _turn(plain)
    cps.take(1, "t")
    diff = cps.diff(1)
    assert "new file mode 120000" in diff and "+/etc/passwd" in diff  # the link, not the file
    assert "root:" not in diff
    assert '"new\\nline.txt"' in cps.diff(1, name_only=True)


def test_gitignore_and_info_exclude_are_honoured_and_acpcli_home_is_never_recorded(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = repo / ".acpcli-home"
    monkeypatch.setenv("ACPCLI_HOME", str(home))
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("secret.key\n")
    (repo / "secret.key").write_text("k\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("o\n")
    cps = Checkpoints("s-ignore", [repo])
    cps.take(0)
    (repo / "more.log").write_text("log\n")
    (repo / "kept.txt").write_text("kept\n")
    (repo / "secret.key").write_text("k2\n")
    one = cps.take(1, "t")
    assert [f.path for f in one.files] == ["kept.txt"]
    assert home.is_dir() and (home / "checkpoints").is_dir()
    names = cps.diff(1, name_only=True)
    assert ".acpcli-home" not in names and ".git" not in names


def test_files_over_the_size_limit_are_left_out_with_one_note(plain: Path) -> None:
    cps = Checkpoints("s-big", [plain], max_file_size=1000)
    (plain / "big.bin").write_bytes(b"x" * 1001)
    (plain / "small.bin").write_bytes(b"x" * 1000)
    zero = cps.take(0)
    assert len(zero.notes) == 1 and "big.bin" in zero.notes[0] and "1 file over" in zero.notes[0]
    (plain / "big.bin").write_bytes(b"y" * 5000)
    (plain / "a.txt").write_text("changed\n")
    one = cps.take(1, "t")
    assert one.notes == ()  # said once
    assert [f.path for f in one.files] == ["a.txt"]
    (plain / "big2.bin").write_bytes(b"z" * 2000)
    two = cps.take(2, "t")
    assert len(two.notes) == 1 and "2 files over" in two.notes[0] and "big2.bin" in two.notes[0]
    # a tracked file that grows past the limit leaves the checkpoint (and is never rewound)
    (plain / "small.bin").write_bytes(b"x" * 1001)
    three = cps.take(3, "t")
    assert [(f.path, f.status) for f in three.files] == [("small.bin", "D")]


def test_the_size_limit_comes_from_the_config(plain: Path, acpcli_home: Path) -> None:
    (acpcli_home / "config.toml").write_text("checkpoint_max_file_size = 10\n")
    cps = Checkpoints("s-config", [plain])
    assert cps.max_file_size == 10
    assert any("a.txt" in note for note in cps.take(0).notes)


def test_a_repository_with_uncommitted_work_is_recorded_as_it_is_on_disk(repo: Path, user_git: UserGit) -> None:
    before_git = dot_git_state(repo)
    status = user_git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    stash = user_git(repo, "stash", "list")
    cps = Checkpoints("s-repo", [repo])
    cps.take(0)
    _turn(repo)
    cps.take(1, "t")
    # what the checkpoint holds is the file on disk, not the index nor HEAD
    show = cps._git.run("show", f"{cps._ref('0')}:0/src/m1.py")
    assert show == b"def f1():\n    return 'changed'\n"
    assert cps._git.run("show", f"{cps._ref('0')}:0/notes.txt") == b"untracked\n"
    assert "debug.log" not in cps._git.run("ls-tree", "-r", "--name-only", cps._ref("0")).decode()
    assert cps._git.run("ls-tree", f"{cps._ref('0')}:0", "run.sh").startswith(b"100755 ")
    cps.rewind(1)
    cps.undo()
    cps.rewind(1)
    # the user's repository: every byte and time under .git as before, git status as before
    assert dot_git_state(repo) == before_git
    assert user_git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all") == status
    assert user_git(repo, "stash", "list") == stash


def test_the_first_checkpoint_of_a_repository_starts_from_the_users_index(repo: Path, user_git: UserGit) -> None:
    # A file the user tracks although it is ignored is in their index only: it is in the
    # checkpoint because the private index starts as a copy of the user's (whose stat data let
    # git hash only the files that changed), not from a fresh walk of the tree.
    (repo / "forced.log").write_text("tracked though ignored\n")
    user_git(repo, "add", "-f", "forced.log")
    user_git(repo, "commit", "-qm", "forced")
    cps = Checkpoints("s-seed", [repo])
    cps.take(0)
    names = cps._git.run("ls-tree", "-r", "--name-only", cps._ref("0")).decode().split("\n")
    assert "0/forced.log" in names and "0/debug.log" not in names
    objects = cps.path / "git" / "objects"
    assert (objects / "info" / "alternates").read_text().strip() == str(repo / ".git" / "objects")
    blobs = [
        p for p in objects.glob("??/*")
        if cps._git.run("cat-file", "-t", p.parent.name + p.name).strip() == b"blob"
    ]
    assert 1 <= len(blobs) <= 3  # m1.py (modified) and notes.txt (untracked): the rest is the user's


def test_an_index_that_cannot_be_trusted_is_not_copied(repo: Path, user_git: UserGit) -> None:
    (repo / "forced.log").write_text("tracked though ignored\n")
    user_git(repo, "add", "-f", "forced.log")
    user_git(repo, "update-index", "--assume-unchanged", "README")
    (repo / "README").write_text("changed behind git's back\n")
    cps = Checkpoints("s-noseed", [repo])
    cps.take(0)
    assert cps._git.run("show", f"{cps._ref('0')}:0/README") == b"changed behind git's back\n"
    names = cps._git.run("ls-tree", "-r", "--name-only", cps._ref("0")).decode().split("\n")
    assert "0/forced.log" not in names  # a fresh index: what .gitignore says


@pytest.mark.parametrize("root", [".", "src"])
def test_a_repository_with_line_ending_attributes_is_hashed_from_the_files(
    root: str, repo: Path, user_git: UserGit
) -> None:
    # the user's index holds the LF blob of a file that is CRLF on disk: it must not be trusted
    (repo / ".gitattributes").write_text("*.txt text eol=crlf\n")
    (repo / root / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    past = time.time() - 100  # not racily clean: git trusts the entry's stat data
    os.utime(repo / root / "dos.txt", (past, past))
    user_git(repo, "add", ".gitattributes", f"{root}/dos.txt")
    user_git(repo, "commit", "-qm", "attrs")
    cps = Checkpoints(f"s-attrs-{root}", [repo / root])
    cps.take(0)
    assert cps._git.run("show", f"{cps._ref('0')}:0/dos.txt") == b"one\r\ntwo\r\n"
    (repo / root / "dos.txt").write_bytes(b"changed\n")
    cps.take(1, "t")
    cps.rewind(1)
    assert (repo / root / "dos.txt").read_bytes() == b"one\r\ntwo\r\n"


def test_a_root_below_the_top_of_a_repository_holds_only_its_folder(repo: Path) -> None:
    cps = Checkpoints("s-sub", [repo / "src"])
    cps.take(0)
    (repo / "src" / "m5.py").write_text("x\n")
    (repo / "README").write_text("outside the root\n")
    one = cps.take(1, "t")
    assert [f.path for f in one.files] == ["m5.py"] and one.files[0].root == repo / "src"
    assert cps.diff(1, name_only=True) == "m5.py\n"
    cps.rewind(1)
    assert (repo / "src" / "m5.py").read_text() == "def f5():\n    return 5\n"
    assert (repo / "README").read_text() == "outside the root\n"


def test_extra_roots_are_recorded_beside_the_cwd(plain: Path, tmp_path: Path) -> None:
    extra = tmp_path / "lib"
    extra.mkdir()
    (extra / "x.txt").write_text("x\n")
    cps = Checkpoints("s-roots", [plain, extra, plain / "sub"])  # a root inside another is one root
    assert cps.roots == [plain.resolve(), extra.resolve()]
    cps.take(0)
    (extra / "x.txt").write_text("y\n")
    (plain / "a.txt").write_text("z\n")
    one = cps.take(1, "t")
    assert {(f.root, f.path) for f in one.files} == {(plain.resolve(), "a.txt"), (extra.resolve(), "x.txt")}
    assert cps.diff(1, name_only=True) == "a.txt\n../lib/x.txt\n"
    assert "+++ b/../lib/x.txt" in cps.diff(1)
    again = Checkpoints("s-roots")  # a later command: the roots come from the store
    assert again.roots == cps.roots and again.diff(1) == cps.diff(1)
    cps.rewind(1)
    assert (extra / "x.txt").read_text() == "x\n" and (plain / "a.txt").read_text() == "alpha\nbeta\n"


def test_the_users_git_environment_and_config_do_not_reach_the_store(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user_git: UserGit
) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    marker = tmp_path / "hook-ran"
    for hook in ("pre-commit", "post-commit", "post-index-change", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (hooks / hook).chmod(0o755)
    global_config = tmp_path / "hostile-gitconfig"
    global_config.write_text(f"[core]\n\thooksPath = {hooks}\n\tautocrlf = true\n\tfileMode = false\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(global_config))
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(repo))
    before = dot_git_state(repo)
    cps = Checkpoints("s-env", [repo])
    cps.take(0)
    (repo / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    os.chmod(repo / "run.sh", 0o644)
    cps.take(1, "t")
    cps.rewind(1)
    assert not marker.exists()
    assert dot_git_state(repo) == before
    cps.undo()
    assert (repo / "crlf.txt").read_bytes() == b"a\r\nb\r\n" and not os.access(repo / "run.sh", os.X_OK)


def test_a_nested_repository_is_left_out_with_a_note(plain: Path, user_env: dict[str, str]) -> None:
    cps = Checkpoints("s-nested", [plain])
    cps.take(0)
    (plain / "proj").mkdir()
    subprocess.run(["git", "init", "-q"], cwd=plain / "proj", env=user_env, check=True)
    (plain / "proj" / "f.txt").write_text("f\n")
    (plain / "top.txt").write_text("t\n")
    one = cps.take(1, "t")
    assert [f.path for f in one.files] == ["top.txt"]
    assert len(one.notes) == 1 and "nested git repository" in one.notes[0] and "proj" in one.notes[0]


def test_taking_a_turn_again_replaces_its_checkpoint(plain: Path) -> None:
    cps = Checkpoints("s-again", [plain])
    cps.take(0)
    (plain / "a.txt").write_text("1\n")
    cps.take(1, "first try")
    (plain / "a.txt").write_text("2\n")
    cps.take(1, "second try")
    assert [(c.turn, c.label) for c in cps.list()] == [(0, ""), (1, "second try")]
    with pytest.raises(ValueError):
        cps.take(-1)


def test_a_sha256_repository_is_recorded_as_a_plain_folder(tmp_path: Path, user_git: UserGit) -> None:
    top = tmp_path / "sha256"
    top.mkdir()
    user_git(top, "init", "-q", "--object-format=sha256")
    (top / "f.txt").write_text("f\n")
    user_git(top, "add", "f.txt")
    user_git(top, "commit", "-qm", "one")
    before = dot_git_state(top)
    cps = Checkpoints("s-sha256", [top])
    cps.take(0)
    (top / "f.txt").write_text("g\n")
    assert [f.path for f in cps.take(1, "t").files] == ["f.txt"]
    assert not (cps.path / "git" / "objects" / "info" / "alternates").exists()
    cps.rewind(1)
    assert (top / "f.txt").read_text() == "f\n"
    assert dot_git_state(top) == before


def test_a_linked_worktree_borrows_the_main_repositorys_objects(repo: Path, tmp_path: Path, user_git: UserGit) -> None:
    linked = tmp_path / "linked"
    user_git(repo, "worktree", "add", "-q", str(linked))
    (linked / "forced.log").write_text("x\n")
    user_git(linked, "add", "-f", "forced.log")
    before = dot_git_state(repo)
    cps = Checkpoints("s-linked", [linked])
    cps.take(0)
    names = cps._git.run("ls-tree", "-r", "--name-only", cps._ref("0")).decode().split("\n")
    assert "0/forced.log" in names  # seeded from the linked worktree's own index
    alternates = (cps.path / "git" / "objects" / "info" / "alternates").read_text().split()
    assert [Path(a).resolve() for a in alternates] == [(repo / ".git" / "objects").resolve()]
    (linked / "README").write_text("changed\n")
    cps.take(1, "t")
    cps.rewind(1)
    assert (linked / "README").read_text() == "read me\nagain\n"
    assert dot_git_state(repo) == before
