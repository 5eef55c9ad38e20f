"""Screens that fit (issue 24): ``sessions`` one line a session in the terminal's width with
a unique id prefix every command takes; ``agents`` piped as tab-separated lines."""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from acpcli.errors import ExitCode
from acpcli.history.index import Index
from tests.helpers.records import rec

from .conftest import AgentTrace, Cli, error_line
from .pty import CHOICE
from .screen import screen_text

WIDTHS = (60, 80, 120, 200)
UUIDS = (
    "f08790af-4f2b-415d-a1ec-d5c62a059b3e",
    "a94835ee-e5fb-4b01-89c4-52d98ccc474b",
    "01a2438b-c6e2-74d1-994e-0ee933ecb39b",
)
CLAUDE = {"name": "@zed-industries/claude-agent-acp", "title": "Claude Agent", "version": "0.23.1"}


def _plant(home: Path) -> None:
    """Three sessions as real agents record them (uuid ids, a ``--cmd`` agent's package name,
    long titles, a deep cwd under home), used 3 h, 2 d and 5 min ago, and a stored closed
    session whose id shares its first 12 characters with a listed one."""
    now = time.time()
    deep = str(home / "src" / "projects" / "storage-layer-rewrite" / "backend")
    with Index() as index:
        index.upsert_session(rec(UUIDS[0], agent="gemini", cwd=deep, last_used_at=now - 3 * 3600))
        index.set_title(
            UUIDS[0], "Refactor the storage layer so that every write goes through one transaction"
        )
        index.upsert_session(
            rec(
                UUIDS[1],
                agent=CLAUDE["name"],
                agent_info=CLAUDE,
                cwd="/tmp",
                last_used_at=now - 2 * 86400,
            )
        )
        index.set_title(
            UUIDS[1], "Explain why 23.7k/200k tokens were used by the last turn of the session"
        )
        index.upsert_session(rec(UUIDS[2], agent="demo", cwd=str(home), last_used_at=now - 300))
        index.set_prompt_title(UUIDS[2], "fix the flaky test")  # (prompted: never-prompted ones are not listed)
        twin = UUIDS[2][:12] + "0000-0000-000000000000"
        index.upsert_session(
            rec(twin, agent="demo", cwd="/work", state="closed", last_used_at=now - 9 * 86400)
        )


def _terminal(cli: Cli, width: int, *args: str) -> str:
    """``acpcli sessions ARGS`` as a terminal ``width`` columns wide shows it (rich's forced
    terminal mode: FORCE_COLOR, COLUMNS), on an emulated screen of that width."""
    proc = cli.ok(
        "sessions", *args, env={"FORCE_COLOR": "1", "COLUMNS": str(width), "HOME": str(cli.home)}
    )
    return screen_text(proc.stdout.replace("\n", "\r\n"), width=width, height=50)  # (a pty's ONLCR)


@pytest.mark.parametrize("width", WIDTHS)
def test_sessions_is_one_line_a_session_in_the_terminals_width(cli: Cli, width: int) -> None:
    _plant(cli.home)
    screen = _terminal(cli, width).splitlines()
    assert len(screen) == 1 + 3, "\n".join(screen)  # a header and one line a session
    header, *rows = screen
    assert header.split()[:3] == ["ID", "AGENT", "TITLE"] and "LAST USED" in header
    assert all(len(line) <= width for line in screen)
    # the shortest unique prefix, at least 8 characters: the closed twin (not listed) counts
    assert [row.split()[0] for row in rows] == [UUIDS[2][:13], UUIDS[0][:8], UUIDS[1][:8]], screen
    assert ("Claude Agent" if width >= 80 else "Claude") in rows[2] and "@zed" not in rows[2]
    assert (
        re.search(r"\b5 min ago$", rows[0])
        and re.search(r"\b3 h ago$", rows[1])
        and rows[2].endswith("2 d ago")
    )
    if width >= 80:
        assert " ~ " in rows[0] or rows[0].split()[-4] == "~"  # home itself
        assert re.search(r" (…|~/src/)\S*backend ", rows[1]), rows[1]  # shortened from the left
    else:  # the cwd gives way before the title is cut below a readable width
        assert "CWD" not in header
        assert all(len(re.search(r"(Refactor|Explain)[^…]*…?", row).group()) >= 20 for row in rows[1:])
    for row in rows[1:]:  # a title cut at a word, never inside a number
        title = re.search(r"(Refactor|Explain)[^…]*…?", row)
        assert title is not None, row
        cut = title.group()
        if cut.endswith("…"):
            words = cut[:-1].split()
            full = "Refactor the storage layer so that every write goes through one transaction"
            full += " Explain why 23.7k/200k tokens were used by the last turn of the session"
            assert all(word in full.split() for word in words), cut  # whole words only
    if width >= 200:
        assert (
            "Refactor the storage layer so that every write goes through one transaction" in rows[1]
        )


def test_sessions_wide_json_and_pipes_keep_whole_ids(cli: Cli) -> None:
    _plant(cli.home)
    wide = _terminal(cli, 80, "--wide")
    for sid in UUIDS:
        assert sid in wide
    assert "CREATED" in wide  # (a terminal wraps the long lines)
    piped = cli.ok("sessions").stdout.splitlines()
    assert (
        piped[0] == "ID\tAGENT\tTITLE\tCWD\tPROTOCOL\tCREATED\tLAST_USED\tSTATE\tPARENT"
    )  # the columns as before, and a fork's parent last
    assert [line.split("\t")[0] for line in piped[1:]] == [UUIDS[2], UUIDS[0], UUIDS[1]]
    assert piped[3].split("\t")[1] == CLAUDE["name"]  # the name --agent filters by
    assert [
        json.loads(line)["id"] for line in cli.ok("sessions", "--json").stdout.splitlines()
    ] == [UUIDS[2], UUIDS[0], UUIDS[1]]


def test_sessions_on_a_pseudo_terminal_at_80_columns(cli: Cli, spawn: Any) -> None:
    _plant(cli.home)
    pty = spawn("sessions", width=80, env={"HOME": str(cli.home)})
    assert pty.wait() == 0
    screen = screen_text(pty.seen, width=80).splitlines()
    assert len(screen) == 4, "\n".join(screen)
    assert [line.split()[0] for line in screen[1:]] == [UUIDS[2][:13], UUIDS[0][:8], UUIDS[1][:8]]


def test_every_command_takes_the_prefix_sessions_shows(cli: Cli, trace: AgentTrace) -> None:
    made = cli.new(trace.demo_cmd(), "--title", "prefix check")
    [row] = [line for line in _terminal(cli, 80).splitlines() if "prefix check" in line]
    prefix = row.split()[0]
    assert len(prefix) >= 8 and made.startswith(prefix) and prefix != made
    cli.ok(
        "prompt",
        "--session",
        prefix,
        "--cmd",
        trace.demo_cmd(),
        "--permissions",
        "allow",
        "hello by prefix",
    )
    assert "hello by prefix" in cli.ok("show", prefix).stdout  # the same session, by its whole id
    assert "hello by prefix" in cli.ok("export", prefix).stdout
    cli.ok("close", prefix, "--cmd", trace.demo_cmd())
    assert [r["state"] for r in cli.index() if r["id"] == made] == ["closed"]
    cli.ok("sessions", "rm", prefix)
    assert all(r["id"] != made for r in cli.index())


def test_an_ambiguous_prefix_lists_the_candidates_in_one_line(cli: Cli) -> None:
    with Index() as index:
        for sid in ("abcdefgh-1", "abcdefgh-2"):
            index.upsert_session(rec(sid))
    for command in (("show", "abcdefgh"), ("export", "abcdefgh"), ("sessions", "rm", "abcdefgh")):
        line = error_line(cli.run(*command), ExitCode.USAGE)
        assert "ambiguous" in line and "abcdefgh-1" in line and "abcdefgh-2" in line, line


def test_agents_piped_is_tab_separated(cli: Cli) -> None:
    lines = cli.ok("agents").stdout.splitlines()
    assert lines[0] == "NAME\tVERSION\tRUNS\tCOMMAND\tFOUND\tSOURCE\tDESCRIPTION"
    demo = next(line.split("\t") for line in lines if line.startswith("demo\t"))
    assert len(demo) == 7 and demo[5] == "built-in" and "  " not in demo[6]


# -- the REPL: what acpcli lays out wraps at words, under a hanging indent ---------------------

WORDY = Path(__file__).resolve().parent.parent / "peers" / "sdk_wordy_agent.py"
sys.path.insert(0, str(WORDY.parent))
import sdk_wordy_agent as wordy  # noqa: E402  (the texts the agent sends)


def _wordy(spawn: Any, width: int) -> Any:
    pty = spawn("new", "--cmd", shlex.join([sys.executable, str(WORDY)]), width=width)
    pty.prompt()
    pty.say("hello")  # its answer comes after its commands and usage: they are known now
    pty.expect("ok")
    pty.prompt()
    return pty


def _flat(text: str) -> str:
    """``text`` with every run of spaces and line breaks made one space: a word cut by the
    terminal's own wrapping shows as two words here."""
    return " ".join(text.split())


def _block(screen: str, first: str, last: str) -> list[str]:
    """The screen lines from the one holding ``first`` to the one holding ``last``."""
    lines = screen.splitlines()
    start = next(i for i, line in enumerate(lines) if first in line)
    end = next(i for i in range(start, len(lines)) if last in lines[i])
    return lines[start : end + 1]


@pytest.mark.parametrize("width", WIDTHS)
def test_repl_lists_wrap_at_words_under_a_hanging_indent(spawn: Any, width: int) -> None:
    pty = _wordy(spawn, width)
    for command, done in (
        ("/help", r"cancels\s+a\s+turn"),
        ("/login", "logs in with"),
    ):
        pty.say(command)
        pty.expect(done)
        pty.prompt()
    screen = screen_text(pty.seen, width=width, height=30)
    banner = _block(screen, "session wordy-", "commands")
    assert all(line.startswith("  ") for line in banner[1:]), banner
    # every text whole (no word cut), every line after a block's first indented
    help_block = _block(screen, "  /help ", "Ctrl-C cancels a turn")
    assert all(line.startswith("  ") for line in help_block), help_block
    own = _block(screen, "the agent's own:", "/about")
    assert all(line.startswith(" " * len("  the agent's own: ")) for line in own[1:]), own
    for name in wordy.COMMANDS:  # a name with a space stays on one line
        assert any(f"/{name}," in line or line.endswith(f"/{name}") for line in own), (name, own)
    assert "close the session on the agent and leave" in _flat("\n".join(help_block))
    logins = _block(screen, "oauth-personal", "/login METHOD")
    for method, name, description in wordy.LOGINS:
        assert f"{method} {name} — {description}" in _flat("\n".join(logins)), logins
    assert all(line.startswith("  ") for line in logins), logins
    # /mode: a picker, one row a mode in the width, cut at a word (the description goes first)
    pty.say("/mode")
    pty.expect(CHOICE)
    pty.expect(r"3\. [\s\S]*?Wordy Agent ·")  # (the last row, then the toolbar under it)
    rows = [line for line in screen_text(pty.seen, width=width).splitlines() if re.match(r"\s+›?\s*[123]\. ", line)][-3:]
    for row, (value, name, description) in zip(rows, wordy.MODES, strict=True):
        label = re.sub(r"^\s+›?\s*[123]\. [ *] ", "", row)
        assert len(row) <= width and label.startswith(f"{value} ({name})"[: len(label) - 1]), row
        words = f"{value} ({name}) — {description}".split()
        assert label.split()[:-1] == words[: len(label.split()) - 1], row  # whole words, in order
        assert label.endswith("…") or label == " ".join(words), row
    pty.child.send("\x1b")
    pty.expect(r"\(unchanged\)")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK


@pytest.mark.parametrize("width", WIDTHS)
def test_the_toolbar_and_the_picker_shorten_at_a_word_never_inside_a_number(
    spawn: Any, width: int
) -> None:
    pty = _wordy(spawn, width)
    # the toolbar, drawn in one piece; the agent by its title and the session's title (the
    # first prompt's), as `sessions` shows them
    pty.expect(r"Wordy Agent · hello · idle[^\r\x1b]*")
    toolbar = [
        line for line in screen_text(pty.seen, width=width).splitlines() if "Wordy Agent ·" in line
    ][-1]
    whole = " Wordy Agent · hello · idle · mode: Default Approval · 23.7k/200k tokens (11%) "
    assert toolbar.rstrip() == whole.rstrip() or toolbar.rstrip().endswith("…"), toolbar
    assert set(toolbar.rstrip("… ").split()) <= {*whole.split(), "mode"}, (
        toolbar
    )  # whole words only
    pty.say("please ask")
    pty.expect(CHOICE)  # (drawn whole with the toolbar, then taking keys)
    assert "waiting for you" in pty.child.match.group(0)
    screen = screen_text(pty.seen, width=width)
    rows = [line for line in screen.splitlines() if re.match(r"\s+›?\s*[123]\. ", line)][-3:]
    assert len(rows) == 3, screen
    for row, option in zip(rows, wordy.OPTIONS, strict=True):
        label = re.sub(r"^\s+›?\s*[123]\. ", "", row).rsplit("  (", 1)[0]
        assert len(row) <= width
        if label.endswith("…"):
            assert set(label[:-1].split()) <= {w.rstrip(",") for w in option.name.split()} | set(
                option.name.split()
            ), row
        else:
            assert label == option.name, row
    if width >= 200:
        assert all("…" not in row for row in rows), rows
    pty.child.send("\r")  # the highlighted option: allow_once
    pty.expect("CHOSEN=once")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK


# -- code in colours that suit the terminal's background ---------------------------------------

ECHO = Path(__file__).resolve().parent.parent / "peers" / "sdk_echo_agent.py"
CODE = "Here:\n\n```python\n@dataclass\nclass Point:\n    x: int = 1  # the x\n    def norm(self):\n        return abs(self.x)\n```\n"
WHITE_FG, DARK_BG = "38;5;231", "48;5;235"  # monokai's plain text and background, as drawn before


def _code_session(cli: Cli) -> str:
    cli.ok("prompt", "--cmd", shlex.join([sys.executable, str(ECHO)]), CODE)
    [made] = cli.index()
    return str(made["id"])


def _shown(cli: Cli, sid: str, width: int, **env: str) -> str:
    colours = {"FORCE_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": str(width), "COLORTERM": ""}
    out = cli.ok("show", sid, env={**colours, **env}).stdout
    return out[out.rindex("Here:") :]  # the agent's answer (the prompt above it is shown as typed)


def _sgr(out: str, word: str) -> str:
    """The SGR parameters ``word`` is drawn with (the last escape before it)."""
    m = re.search(r"\x1b\[([0-9;]*)m" + re.escape(word), out)
    assert m is not None, (word, out)
    return m.group(1)


@pytest.mark.parametrize("width", WIDTHS)
def test_code_is_drawn_in_the_terminals_own_colour_on_its_own_background(
    cli: Cli, width: int
) -> None:
    sid = _code_session(cli)
    out = _shown(cli, sid, width)
    assert "@dataclass" in out and "return" in out
    assert WHITE_FG not in out and DARK_BG not in out and "48;" not in out  # no colour of its own
    assert _sgr(out, "class") != _sgr(out, "@dataclass") or "Point" in out
    plain_text = re.search(r"(?:\x1b\[[0-9;]*m)*(\s*x: )", out)
    assert plain_text is not None and not plain_text.group(0).startswith("\x1b[38"), (
        out
    )  # default foreground
    assert _sgr(out, "class").strip("0;") in ("35", "1;35", "35;1"), _sgr(
        out, "class"
    )  # the terminal's magenta


def test_colorfgbg_and_the_theme_setting_pick_the_colours(cli: Cli) -> None:
    sid = _code_session(cli)
    ansi, dark, light = (_shown(cli, sid, 80, COLORFGBG=bg) for bg in ("", "15;0", "0;15"))
    keyword = {
        name: _sgr(out, "class") for name, out in (("ansi", ansi), ("dark", dark), ("light", light))
    }
    assert len(set(keyword.values())) == 3, keyword
    assert keyword["light"] == _sgr(_shown(cli, sid, 80, ACPCLI_THEME="light"), "class")
    (cli.home / "config.toml").write_text('theme = "dark"\n')
    assert _sgr(_shown(cli, sid, 80), "class") == keyword["dark"]
    assert (
        _sgr(_shown(cli, sid, 80, ACPCLI_THEME="light", COLORFGBG="15;0"), "class")
        == keyword["light"]
    )
    bad = cli.run("show", sid, env={"ACPCLI_THEME": "sepia", "FORCE_COLOR": "1"})
    assert (
        bad.returncode == 0
        and bad.stderr.count("ACPCLI_THEME must be one of auto, dark, light") == 1
    ), bad.stderr
    (cli.home / "config.toml").write_text('theme = "sepia"\n')
    line = error_line(cli.run("prompt", "--agent", "demo", "hi"), ExitCode.CONFIG)
    assert "theme must be one of auto, dark, light (got 'sepia')" in line
    shown = cli.run("show", sid, env={"FORCE_COLOR": "1"})  # drawing goes on, in the auto colours
    assert (
        shown.returncode == 0
        and "@dataclass" in shown.stdout
        and "theme must be one of" in shown.stderr
    )


def test_code_on_a_pseudo_terminal_with_a_light_background(cli: Cli, spawn: Any) -> None:
    sid = _code_session(cli)
    pty = spawn("show", sid, width=80, env={"COLORFGBG": "0;15"})
    assert pty.wait() == 0
    assert WHITE_FG not in pty.seen and DARK_BG not in pty.seen
    assert "@dataclass" in screen_text(pty.seen, width=80)


def test_agent_filters_take_the_name_shown_or_the_one_recorded(cli: Cli) -> None:
    """One agent, one name on the screen (``Claude Agent``), and ``--agent`` takes that name or
    the one it is recorded under (its package name, the id ``--json`` gives)."""
    _plant(cli.home)
    for name in ("Claude Agent", "claude agent", CLAUDE["name"]):
        rows = [json.loads(line) for line in cli.ok("sessions", "--agent", name, "--json").stdout.splitlines()]
        assert [row["id"] for row in rows] == [UUIDS[1]], name
        assert rows[0]["agent"] == CLAUDE["name"]  # --json keeps the id
    assert cli.ok("sessions", "--agent", "Claude", "--json").stdout == ""  # not a prefix match
