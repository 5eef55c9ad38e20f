"""Full storage under a live-session host, end to end: a hosted turn keeps the promises of a
turn without a host (exit 16 and one line naming what was not saved), what the host holds in
memory is written back when the disk takes it again (at a later turn, between turns, at
``stop``), and ``stop`` while the disk is still full says what is lost (exit 16, one line)
rather than dropping it silently.

A full disk is a small tmpfs mounted over ``ACPCLI_HOME`` in a private mount namespace (as
``tests/cli/test_storage.py`` does); these tests skip when that is not possible. Every command
of a test runs in that one namespace: the host it starts lives there too.
"""

from __future__ import annotations

import re
import shlex
import sys
import time

import pytest

from acpcli.errors import ExitCode
from tests.helpers.procs import running

from .conftest import AgentTrace, Cli
from .test_storage import TRACEBACK_MARKS, assert_unsaved, error_lines, in_namespace, needs_mount

REPLY = "Demo agent reply"
LIVE = ["--keep-alive", "300"]
STOPPED = re.compile(r"^stopped (\S+) \(host pid \d+\)$")


def _first(cli: Cli, trace: AgentTrace, protocol: int, text: str, *extra: str) -> list[str]:
    """A one-shot prompt with keep-alive: a host makes the session and keeps it live."""
    return ["prompt", "--cmd", trace.demo_cmd(protocol=protocol), *extra, text]


def _again(text: str, *extra: str) -> list[str]:
    return ["prompt", "--last", *extra, text]


def _fill(cli: Cli, block: str) -> str:
    return f"dd if=/dev/zero of={cli.home}/filler bs={block} 2>/dev/null || true"


def _free(cli: Cli) -> str:
    return f"rm -f {cli.home}/filler"


def _show(cli: Cli) -> str:
    """A shell step: ``show`` of the test's one session, to a file :func:`_shown` reads."""
    acpcli = shlex.join(cli.argv())
    pick = shlex.join([sys.executable, "-c", "import json, sys; print(json.loads(sys.stdin.readline())['id'])"])
    out = cli.trace.root / "shown"
    return f"{acpcli} show \"$({acpcli} sessions --json --all | {pick})\" >{out} 2>&1 || echo FAILED >>{out}"


def _shown(cli: Cli) -> str:
    text = (cli.trace.root / "shown").read_text()
    assert "FAILED" not in text, text
    return text


@needs_mount
@pytest.mark.parametrize(("protocol", "size", "block"), [(2, "2m", "4k"), (1, "3m", "8k")])
def test_a_full_disk_in_a_hosted_turn_exits_16_and_stop_says_what_is_lost(
    cli: Cli, trace: AgentTrace, protocol: int, size: str, block: str
) -> None:
    first, second, third, stop = in_namespace(
        cli,
        f"mount -t tmpfs -o size={size},mode=700 tmpfs {cli.home}",
        _first(cli, trace, protocol, "turn one on disk", *LIVE),
        _fill(cli, block),
        _again("turn two in memory", *LIVE),
        _again("turn three in memory", *LIVE),
        ["stop", "--all"],
        _free(cli),
        _show(cli),
    )
    assert first.returncode == ExitCode.OK, first.stderr
    for turn in (second, third):  # as without a host: the answer, exit 16, one line
        assert_unsaved(turn, cli.home)
    # stop, the disk still full: what the host held in memory is lost, and it says so
    assert stop.returncode == ExitCode.STORAGE, stop.stderr
    assert not any(mark in stop.stderr for mark in TRACEBACK_MARKS), stop.stderr
    lines = stop.stderr.splitlines()
    assert STOPPED.match(lines[0]), stop.stderr
    (line,) = error_lines(stop.stderr)
    assert line.startswith(f"acpcli: error: cannot save sessions to {cli.home / 'acpcli.db'}: "), line
    unsaved = re.search(r"\((\d+) session updates? not saved\)$", line)
    assert unsaved is not None and int(unsaved.group(1)) > 0, line
    shown = _shown(cli)
    assert "turn one on disk" in shown and "turn two in memory" not in shown
    trace.assert_all_gone()


@needs_mount
@pytest.mark.parametrize("protocol", [2, 1])
def test_what_a_host_held_in_memory_is_written_back_by_a_later_turn(cli: Cli, trace: AgentTrace, protocol: int) -> None:
    first, second, third, stop = in_namespace(
        cli,
        f"mount -t tmpfs -o size=2m,mode=700 tmpfs {cli.home}",
        _first(cli, trace, protocol, "before the disk filled", *LIVE),
        _fill(cli, "4k"),
        _again("while the disk is full", *LIVE),
        _free(cli),
        _again("after it was freed", *LIVE),
        ["stop", "--all"],
        _show(cli),
    )
    assert first.returncode == ExitCode.OK, first.stderr
    assert_unsaved(second, cli.home)
    assert third.returncode == ExitCode.OK, third.stderr
    assert REPLY in third.stdout and not error_lines(third.stderr), third.stderr
    assert stop.returncode == ExitCode.OK and not error_lines(stop.stderr), stop.stderr
    shown = _shown(cli)
    order = [shown.index(text) for text in ("before the disk filled", "while the disk is full", "after it was freed")]
    assert order == sorted(order), shown
    trace.assert_all_gone()


@needs_mount
def test_stop_writes_back_what_the_host_held_once_the_disk_takes_it(cli: Cli, trace: AgentTrace) -> None:
    first, second, stop = in_namespace(
        cli,
        f"mount -t tmpfs -o size=2m,mode=700 tmpfs {cli.home}",
        _first(cli, trace, 2, "kept on disk", *LIVE),
        _fill(cli, "16k"),
        _again("kept in memory until stop", *LIVE),
        _free(cli),
        ["stop", "--all"],
        _show(cli),
    )
    assert first.returncode == ExitCode.OK, first.stderr
    assert_unsaved(second, cli.home)
    assert stop.returncode == ExitCode.OK and not error_lines(stop.stderr), stop.stderr
    shown = _shown(cli)
    assert "kept on disk" in shown and "kept in memory until stop" in shown
    trace.assert_all_gone()


@needs_mount
def test_a_host_holding_unsaved_updates_outlives_its_keep_alive_until_the_disk_takes_them(
    cli: Cli, trace: AgentTrace
) -> None:
    """Keep-alive 1 s: the host does not end (dropping what it holds) while the disk is
    full; once freed, the disk is tried again (every few seconds), the turn written back,
    and the host ends by itself."""
    run = cli.home / "run"
    wait_gone = (
        f"i=0; while [ $i -lt 600 ] && ls {run}/*.lock >/dev/null 2>&1; do sleep 0.1; i=$((i+1)); done"
    )
    first, second, live = in_namespace(
        cli,
        f"mount -t tmpfs -o size=2m,mode=700 tmpfs {cli.home}",
        _first(cli, trace, 1, "the first turn", "--keep-alive", "1"),
        _fill(cli, "4k"),
        _again("the turn the disk refused", "--keep-alive", "1"),
        "sleep 3",  # past the keep-alive
        ["sessions", "--live", "--json"],
        _free(cli),
        wait_gone,
        _show(cli),
    )
    assert first.returncode == ExitCode.OK, first.stderr
    assert_unsaved(second, cli.home)
    assert live.returncode == ExitCode.OK, live.stderr
    assert len(live.stdout.strip().splitlines()) == 1, live.stdout  # still there, holding the turn
    shown = _shown(cli)
    assert "the turn the disk refused" in shown
    trace.assert_all_gone()


@needs_mount
@pytest.mark.parametrize("protocol", [2, 1])
def test_a_live_session_made_on_a_full_disk_says_so_as_without_a_host(cli: Cli, trace: AgentTrace, protocol: int) -> None:
    """The index is full, the host's own files have room (``run/`` on a disk of its own): the
    host makes the session in memory; ``new`` prints its id and exits 16 with the line, as
    ``new --keep-alive 0`` does; ``stop`` says what is lost."""
    home = cli.home
    unhosted, hosted, stop = in_namespace(
        cli,
        f"mount -t tmpfs -o size=2m,mode=700 tmpfs {home}; mkdir -m 700 {home}/run {home}/logs; "
        f"mount -t tmpfs -o size=1m,mode=700 tmpfs {home}/run; mount -t tmpfs -o size=1m,mode=700 tmpfs {home}/logs",
        ["sessions"],
        _fill(cli, "4k"),
        ["new", "--no-repl", "--keep-alive", "0", "--cmd", trace.demo_cmd(protocol=protocol)],
        ["new", "--no-repl", "--keep-alive", "300", "--cmd", trace.demo_cmd(protocol=protocol)],
        ["stop", "--all"],
    )[1:]
    for made in (unhosted, hosted):
        assert made.returncode == ExitCode.STORAGE, made.stderr
        assert re.fullmatch(r"demo-[0-9a-f]{32}\n", made.stdout), made.stdout
        (line,) = error_lines(made.stderr)
        assert line.startswith(f"acpcli: error: cannot save sessions to {home / 'acpcli.db'}: "), line
    assert stop.returncode == ExitCode.STORAGE, stop.stderr
    trace.assert_all_gone()


@needs_mount
def test_a_host_on_a_disk_too_full_for_its_lock_is_one_line_and_its_log_does_not_fail_it(cli: Cli, trace: AgentTrace) -> None:
    """Everything full (the host log too): the host cannot write its lock (exit 16, one line,
    the --keep-alive 0 hint), and its end is not a "session host failed: OSError" because
    its last words could not be written to its log."""
    (made,) = in_namespace(
        cli,
        f"mount -t tmpfs -o size=2m,mode=700 tmpfs {cli.home}; {_fill(cli, '4k')}",
        ["new", "--no-repl", "--keep-alive", "300", "--cmd", trace.demo_cmd(protocol=2)],
    )
    assert made.returncode == ExitCode.STORAGE, made.stderr
    assert not any(mark in made.stderr for mark in TRACEBACK_MARKS), made.stderr
    error, hint = made.stderr.splitlines()
    assert error.startswith(f"acpcli: error: the session host cannot use {cli.home}/"), error
    assert "No space left on device" in error, error
    assert "--keep-alive 0" in hint, hint
    trace.assert_all_gone()


@needs_mount
def test_the_repl_over_a_host_says_after_a_turn_what_could_not_be_saved_and_goes_on(cli: Cli, trace: AgentTrace) -> None:
    """The interactive ``new`` over a host, the index's disk full (the host's own files on a
    disk of their own): each turn's answer and the line saying what could not be saved; the
    REPL goes on. Ctrl-D leaves it; ``stop`` then says what the host could not save."""
    from .pty import CTRL_D, Pty
    from .pty import REPLY as SHOWN

    home = cli.home
    setup = (
        f"mount -t tmpfs -o size=2m,mode=700 tmpfs {home}; mkdir -m 700 {home}/run {home}/logs; "
        f"mount -t tmpfs -o size=1m,mode=700 tmpfs {home}/run; mount -t tmpfs -o size=1m,mode=700 tmpfs {home}/logs; "
        f"{_fill(cli, '4k')}; "
    )
    repl_args = cli.argv("new", "--cmd", trace.demo_cmd(protocol=1), "--keep-alive", "300", "--permissions", "allow")
    then = f"{shlex.join(repl_args)}; echo REPL-EXIT=$?; {shlex.join(cli.argv('stop', '--all'))}; echo STOP-EXIT=$?"
    repl = Pty(["unshare", "-m", "sh", "-c", setup + then], cli.cwd, width=400)  # the line whole
    try:
        repl.expect("/help for commands")
        repl.prompt()
        for text in ("first on a full disk", "second on a full disk"):
            repl.say(text)
            repl.expect(SHOWN)
            repl.expect(r"warning: cannot save sessions to \S+acpcli\.db: \S.* session updates? not saved\)")
            repl.prompt()
        repl.child.send(CTRL_D)
        repl.expect("REPL-EXIT=0")
        repl.expect(r"acpcli: error: cannot save sessions to \S+acpcli\.db: .* session updates? not saved\)")
        repl.expect("STOP-EXIT=16")
    finally:
        repl.kill()
    deadline = time.monotonic() + 20
    while any(running(pid) for pid in trace.pids()) and time.monotonic() < deadline:
        time.sleep(0.05)
    trace.assert_all_gone()
