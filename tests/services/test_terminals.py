"""Terminals: the bounded output buffer, real commands in their own process groups, and the
terminal/* methods end to end through an SDK-written agent."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from acpcli.errors import RpcError
from acpcli.services.terminals import OutputBuffer, Terminal, Terminals, command_argv
from tests.helpers.procs import gone
from tests.helpers.sdk_driver import drive

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- the output buffer --------------------------------------------------------------------------


def test_buffer_keeps_everything_under_the_limit() -> None:
    buf = OutputBuffer(100)
    buf.feed("héllo ".encode())
    buf.feed(b"world\n")
    assert buf.text() == "héllo world\n"
    assert not buf.truncated


def test_buffer_truncates_from_the_start_on_a_character_boundary() -> None:
    data = ("é" * 5 + "€").encode()  # 10 bytes of é, then 3 of €
    buf = OutputBuffer(6)
    buf.feed(data)
    # The last 6 bytes start inside an é: that half is dropped too (5 bytes kept, not 6).
    assert buf.text(final=True) == "é€"
    assert buf.truncated
    buf7 = OutputBuffer(7)
    buf7.feed(data)
    assert buf7.text(final=True) == "éé€"


def test_buffer_with_zero_limit_keeps_nothing_but_says_so() -> None:
    buf = OutputBuffer(0)
    assert buf.text() == "" and not buf.truncated
    buf.feed(b"x")
    assert buf.text() == "" and buf.truncated


def test_buffer_holds_back_a_character_still_arriving() -> None:
    euro = "€".encode()
    buf = OutputBuffer(100)
    buf.feed(b"cost: " + euro[:2])
    assert buf.text() == "cost: "  # running: the rest of € may still come
    assert buf.text(final=True) == "cost: \ufffd"  # ended: it never will
    buf.feed(euro[2:])
    assert buf.text() == "cost: €"


def test_buffer_with_binary_output_stays_within_the_limit() -> None:
    buf = OutputBuffer(8)
    buf.feed(b"\xff" * 20)
    text = buf.text(final=True)
    assert set(text) == {"\ufffd"}
    assert len(text.encode()) <= 8


@given(
    chunks=st.lists(st.text(max_size=40).map(lambda s: s.encode()), max_size=30),
    limit=st.integers(min_value=0, max_value=200),
    split=st.integers(min_value=1, max_value=7),
)
def test_buffer_text_is_the_longest_valid_suffix_within_the_limit(chunks, limit, split) -> None:
    whole = b"".join(chunks)
    buf = OutputBuffer(limit)
    # Feed in pieces that cut characters anywhere.
    for i in range(0, len(whole), split):
        buf.feed(whole[i : i + split])
    text = buf.text(final=True)
    kept = text.encode()
    assert len(kept) <= limit
    assert whole.endswith(kept)
    assert buf.truncated == (len(whole) > limit)
    if len(whole) > limit:
        # Only the pieces of one character cut in two may be missing.
        assert len(kept) >= limit - 3


def test_command_argv_runs_argv_directly_and_shell_lines_in_a_shell() -> None:
    assert command_argv("ls", ["-la", "a b"]) == ["ls", "-la", "a b"]
    assert command_argv("pytest", []) == ["pytest"]
    assert command_argv("echo hi", ["x"]) == ["echo hi", "x"]  # args given: never a shell
    shell_line = command_argv("npm test | tail -5", [])
    assert shell_line[1:] == ["-c", "npm test | tail -5"]
    assert os.path.basename(shell_line[0]) in ("bash", "sh")
    assert command_argv(sys.executable, []) == [sys.executable]


def test_command_argv_keeps_an_executable_path_with_spaces(tmp_path) -> None:
    tool = tmp_path / "my tools" / "run"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho ran\n")
    tool.chmod(0o755)
    assert command_argv(str(tool), []) == [str(tool)]


# -- real processes, through Terminals directly ----------------------------------------------------


async def output_until(terminal: Terminal, done: Callable[[str], bool]) -> str:
    with anyio.fail_after(10):
        while not done(terminal.output()[0]):
            await terminal.output_changed()
    return terminal.output()[0]


@asynccontextmanager
async def terminals(grace: float = 2.0) -> AsyncIterator[Terminals]:
    async with anyio.create_task_group() as tg:
        terms = Terminals(tg, kill_grace=grace)
        try:
            yield terms
        finally:
            await terms.aclose()


@pytest.mark.anyio
async def test_output_is_stdout_and_stderr_merged_with_exit_code(tmp_path) -> None:
    async with terminals() as terms:
        term = await terms.create("s", "sh", ["-c", "echo out; echo err >&2; exit 3"], cwd=str(tmp_path))
        assert await term.wait_for_exit() == (3, None)
        text, truncated = term.output()
        assert text == "out\nerr\n" and not truncated
        assert term.exit_status == (3, None)


@pytest.mark.anyio
async def test_kill_takes_the_whole_process_group(tmp_path) -> None:
    async with terminals() as terms:
        # The command starts a grandchild and prints its pid; killing must take both.
        term = await terms.create("s", "sh", ["-c", "sleep 60 & echo $!; wait"], cwd=str(tmp_path))
        grandchild = int(await output_until(term, lambda t: t.endswith("\n")))
        assert not gone(grandchild)
        await terms.kill("s", term.terminal_id)
        assert term.exit_status == (None, "SIGTERM")
        assert gone(grandchild) and gone(term.pid)
        # Killed, not released: still readable.
        assert terms.get("s", term.terminal_id).output()[0] == f"{grandchild}\n"


@pytest.mark.anyio
async def test_kill_escalates_to_sigkill_when_sigterm_is_ignored(tmp_path) -> None:
    async with terminals(grace=0.1) as terms:
        term = await terms.create("s", "sh", ["-c", "trap '' TERM; echo ready; sleep 60"], cwd=str(tmp_path))
        await output_until(term, lambda t: t == "ready\n")  # the trap is in place
        await terms.kill("s", term.terminal_id)
        assert await term.wait_for_exit() == (None, "SIGKILL")


@pytest.mark.anyio
async def test_aclose_kills_and_reaps_every_terminal(tmp_path) -> None:
    async with terminals() as terms:
        started = [await terms.create("s", "sleep", ["60"], cwd=str(tmp_path)) for _ in range(3)]
        finished = await terms.create("s", "true", [], cwd=str(tmp_path))
        await finished.wait_for_exit()
    assert all(gone(t.pid) for t in started)
    assert all(t.exit_status == (None, "SIGTERM") for t in started)
    with pytest.raises(RpcError):
        terms.get("s", started[0].terminal_id)


@pytest.mark.anyio
async def test_release_session_releases_only_that_sessions_terminals(tmp_path) -> None:
    # What a closed session leaves behind (AgentLink.close): its terminals, killed and released.
    async with terminals() as terms:
        mine = [await terms.create("s", "sleep", ["60"], cwd=str(tmp_path)) for _ in range(2)]
        other = await terms.create("t", "sleep", ["60"], cwd=str(tmp_path))
        await terms.release_session("s")
        assert all(gone(t.pid) for t in mine)
        assert not gone(other.pid) and len(terms) == 1
        with pytest.raises(RpcError):
            terms.get("s", mine[0].terminal_id)


@pytest.mark.anyio
async def test_released_output_stays_visible_for_the_view(tmp_path) -> None:
    async with terminals() as terms:
        term = await terms.create("s", "echo", ["kept"], cwd=str(tmp_path))
        await term.wait_for_exit()
        await terms.release("s", term.terminal_id)
        assert terms.snapshot(term.terminal_id) == ("kept\n", False)
        assert len(terms) == 0


@pytest.mark.anyio
async def test_create_errors_are_invalid_params(tmp_path) -> None:
    async with terminals() as terms:
        for command, cwd, fragment in [
            ("no-such-command-acpcli", str(tmp_path), "command not found"),
            ("true", str(tmp_path / "missing"), "not a directory"),
            ("", str(tmp_path), "empty command"),
        ]:
            with pytest.raises(RpcError) as err:
                await terms.create("s", command, [], cwd=cwd)
            assert err.value.code == RpcError.INVALID_PARAMS and fragment in err.value.rpc_message
        with pytest.raises(RpcError) as err:
            await terms.create("s", "true", [], cwd=str(tmp_path), env={"A=B": "x"})
        assert err.value.code == RpcError.INVALID_PARAMS
        assert len(terms) == 0


# -- end to end, through an agent written with the official SDK -----------------------------------


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    root, extra, outside = tmp_path / "root", tmp_path / "extra", tmp_path / "outside"
    for d in (root, extra, outside):
        d.mkdir()
    return root, extra, outside


@pytest.mark.anyio
async def test_sdk_agent_runs_commands_in_the_session(dirs) -> None:
    root, extra, outside = dirs
    async with drive(root, (extra,)) as agent:
        ran = (await agent.ask("run --env GREETING=hi -- sh -c 'echo $GREETING; pwd; exit 3'"))["ok"]
        assert ran["exit"] == {"exitCode": 3, "signal": None}
        assert ran["output"] == {
            "output": f"hi\n{root}\n",
            "truncated": False,
            "exitStatus": {"exitCode": 3, "signal": None},
        }
        assert (await agent.ask(f"run --cwd {extra} -- pwd"))["ok"]["output"]["output"] == f"{extra}\n"

        # Truncated from the start, on a character boundary: 13 bytes, limit 6 → "é€" (5 bytes).
        cut = (await agent.ask("run --limit 6 -- printf ééééé€"))["ok"]["output"]
        assert (cut["output"], cut["truncated"]) == ("é€", True)

        # A whole shell line as the command, no args (what claude-code-acp sends).
        started = (await agent.ask("shell echo $((6*7)) | tr 4 x"))["ok"]["terminalId"]
        assert (await agent.ask(f"wait {started}"))["ok"] == {"exitCode": 0, "signal": None}
        assert (await agent.ask(f"output {started}"))["ok"]["output"] == "x2\n"
        assert "ok" in await agent.ask(f"release {started}")

        for command, fragment in [
            (f"run --cwd {outside} -- pwd", "outside the session's directories"),
            ("run --cwd relative -- pwd", "must be absolute"),
            ("run -- no-such-command-acpcli", "command not found"),
        ]:
            error = (await agent.ask(command))["error"]
            assert error["code"] == RpcError.INVALID_PARAMS and fragment in error["message"], error


@pytest.mark.anyio
async def test_sdk_agent_kills_waits_and_releases(dirs) -> None:
    root = dirs[0]
    async with drive(root) as agent:
        tid = (await agent.ask("start -- sleep 60"))["ok"]["terminalId"]
        running = (await agent.ask(f"output {tid}"))["ok"]
        assert running == {"output": "", "truncated": False}  # no exitStatus while it runs
        pid = agent.terminal(tid).pid

        assert "ok" in await agent.ask(f"kill {tid}")
        assert (await agent.ask(f"wait {tid}"))["ok"] == {"exitCode": None, "signal": "SIGTERM"}
        after = (await agent.ask(f"output {tid}"))["ok"]
        assert after["exitStatus"] == {"exitCode": None, "signal": "SIGTERM"}
        assert gone(pid)

        assert "ok" in await agent.ask(f"release {tid}")
        for method in ("output", "wait", "kill", "release"):
            error = (await agent.ask(f"{method} {tid}"))["error"]
            assert error["code"] == RpcError.INVALID_PARAMS and "unknown terminal" in error["message"]

        # Release kills a command that still runs.
        tid2 = (await agent.ask("start -- sleep 60"))["ok"]["terminalId"]
        pid2 = agent.terminal(tid2).pid
        assert "ok" in await agent.ask(f"release {tid2}")
        assert gone(pid2)


@pytest.mark.anyio
async def test_sdk_agent_terminals_belong_to_their_session_and_die_with_the_services(dirs) -> None:
    root = dirs[0]
    async with drive(root) as agent:
        tid = (await agent.ask("start -- sleep 60"))["ok"]["terminalId"]
        pid = agent.terminal(tid).pid
        other = await agent.link.new(str(root))
        error = (await agent.ask(f"output {tid}", live=other))["error"]
        assert error["code"] == RpcError.INVALID_PARAMS
        assert not gone(pid)
    # Never released by the agent: leaving the services killed and reaped it.
    assert gone(pid)


@pytest.mark.anyio
async def test_sdk_agent_gets_method_not_found_without_terminals(dirs) -> None:
    async with drive(dirs[0], terminal=False) as agent:
        for command in ("run -- true", "output term-x", "release term-x"):
            assert (await agent.ask(command))["error"]["code"] == RpcError.METHOD_NOT_FOUND
        assert "ok" in await agent.ask(f"read {dirs[0]}/nothing")  # fs is still served

