"""``acpcli race`` on a terminal (a pseudo-terminal): the board, redrawn in place at any
width, and permission questions from several candidates asked one at a time."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from .screen import Screen
from .test_race import make_repo, racer

#: A board line as drawn: the start of a line cleared, then the text, up to its newline.
DRAWN = re.compile(r"\r\x1b\[2K([^\r\n\x1b]*)\r?\n")


@pytest.mark.parametrize("width", [60, 100, 200])
def test_the_board_redraws_in_place_at_any_width(spawn, workdir: Path, width: int) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo(workdir / "repo")
    started = time.monotonic()
    pty = spawn(
        "race",
        "--cmd", racer("--write", "one.txt=1", "--sleep", "1.5", "--steps", "4", "--cost", "0.25"),
        "--cmd", racer("--write", "a-rather-long-folder-name/and-a-long-file-name.txt=2", "--sleep", "2.5", "--steps", "5"),
        "--cmd", racer("--crash", "--sleep", "1", "--steps", "2"),
        "the task", cwd=repo, width=width, height=40,
    )
    pty.child.timeout = 60  # a race of three takes seconds on a loaded machine
    code = pty.wait()
    assert code == 0, pty.seen[-3000:]
    elapsed = time.monotonic() - started
    seen = pty.seen
    drawn = DRAWN.findall(seen)
    assert drawn, seen[-2000:]
    assert all(len(line) <= width - 1 for line in drawn), [line for line in drawn if len(line) >= width]
    frames = seen.count("\x1b[3A")  # each redraw after the first moves up over the three lines
    assert frames >= 2
    assert frames <= 10 * elapsed + 5  # at most 10 redraws a second
    # the board said what each did while it ran: a state, a tool call, the cost so far
    assert any("running" in line for line in drawn)
    assert any("edit one.txt" in line or "$0." in line for line in drawn), drawn
    # then the board gave way to the summary, which fits the width too
    screen = Screen(width, 40).feed(seen).text().splitlines()
    header = [i for i, line in enumerate(screen) if line.startswith("CANDIDATE")]
    assert len(header) == 1, screen
    table = screen[header[0] : header[0] + 6]  # the header, three rows, the crash, the verdict
    assert all(len(line) <= width - 1 for line in table), table
    rows = table[1:4]
    assert [row.split()[0] for row in rows] == ["sdk_race_agent", "sdk_race_agent-2", "sdk_race_agent-3"]
    assert "failed" in rows[2]
    # nothing of the board is left above the summary: each candidate appears in the table
    # rows, its error line and the last line only
    assert sum(1 for line in screen if line.startswith("sdk_race_agent-2 ")) == 1


def test_permission_questions_come_one_at_a_time_naming_their_candidate(spawn, workdir: Path) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo(workdir / "repo")
    pty = spawn(
        "race",
        "--cmd", racer("--ask", "--name", "north", "--write", "north.txt=n"),
        "--cmd", racer("--ask", "--name", "south", "--write", "south.txt=s"),
        "go", cwd=repo, width=100,
    )
    pty.child.timeout = 60
    first = pty.expect([r"(sdk_race_agent(?:-2)?) asks: may (north|south) write\?"])
    assert first == 0
    asked = re.findall(r"(sdk_race_agent(?:-2)?) asks: may (\w+) write\?", pty.seen)
    assert len(asked) == 1  # one question at a time
    name, agent = asked[0]
    pty.expect([rf"{re.escape(name)}: choose 1-2 \(Enter: 2\): "])
    pty.child.send("1\r")  # allowed
    pty.expect([r"(sdk_race_agent(?:-2)?) asks: may (north|south) write\?"])
    asked = re.findall(r"(sdk_race_agent(?:-2)?) asks: may (\w+) write\?", pty.seen)
    assert len(asked) == 2 and asked[1][0] != name and asked[1][1] != agent
    pty.expect([rf"{re.escape(asked[1][0])}: choose 1-2 \(Enter: 2\): "])
    pty.child.send("\r")  # Enter: the reject option
    assert pty.wait() == 0
    assert (Path(repo) / "a.txt").exists()
    text = Screen(100, 30).feed(pty.seen).text()
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith("sdk_race_agent")}
    assert rows[name].split()[3] == "1"  # the allowed one wrote its file
    assert rows[asked[1][0]].split()[3] == "0"  # the refused one did not


def test_slash_race_races_the_next_prompt_from_this_conversation(spawn, workdir: Path, acpcli_home: Path) -> None:  # type: ignore[no-untyped-def]
    import json

    from .pty import PROMPT

    repo = make_repo(workdir / "repo")
    pty = spawn("new", "--cmd", racer("--name", "the-first"), "--keep-alive", "0", cwd=repo, width=100)
    pty.child.timeout = 60
    pty.expect(PROMPT)
    pty.say("hello first")
    pty.expect("the-first done")
    pty.expect(PROMPT)
    pty.say("/race demo demo")
    pty.expect([r"race demo, demo"])
    pty.say("now race this")
    while pty.expect([r"demo(?:-2)?: choose 1-4 \(Enter: 3\): ", r"race (r[0-9a-f]{8}): demo, demo-2 succeeded"]) == 0:
        pty.child.send("1\r")  # each candidate's question, one at a time
    race_id = re.search(r"race (r[0-9a-f]{8}): demo, demo-2 succeeded", pty.seen).group(1)  # type: ignore[union-attr]
    pty.prompt()  # back at this session's prompt
    data = json.loads((acpcli_home / "races" / race_id / "race.json").read_text())
    assert data["from_session"]  # the candidates started from this conversation
    assert "hello first" in data["prompt"] and data["prompt"].rstrip().endswith("now race this")
    assert data["cwd"] == str(repo)


def test_ctrl_c_on_the_board_cancels_every_candidate(spawn, workdir: Path, acpcli_home: Path) -> None:  # type: ignore[no-untyped-def]
    from .pty import CTRL_C
    from .test_race import git

    repo = make_repo(workdir / "repo")
    pty = spawn(
        "race", "--cmd", racer("--sleep", "60", "--steps", "60"), "--cmd", racer("--hang"), "x", cwd=repo, width=80,
    )
    pty.child.timeout = 60
    pty.expect([r"running"])
    pty.child.send(CTRL_C)
    pty.expect([r"acpcli: interrupted"])
    assert pty.wait() == 130
    assert not any((acpcli_home / "races").iterdir())
    assert len([x for x in git(repo, "worktree", "list", "--porcelain").split("\n\n") if x.strip()]) == 1
