"""The agent subprocess and its framing, against real processes (tests/peers/misbehave.py)."""

from __future__ import annotations

import json
import logging
import os
import signal
import stat
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acpcli.errors import AgentStartError, ConnectionClosed, ExitCode
from acpcli.wire.transport import (
    STDERR_LOG_MAX_BYTES,
    AgentProcess,
    LineFramer,
    StderrLog,
    memory_pair,
)
from tests.helpers.procs import group_members, running

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")

# Safety net so a broken transport fails a test instead of hanging the suite.
LIMIT = 30


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


AGENTS = Path(__file__).resolve().parents[1] / "peers"


def misbehave(*flags: str) -> list[str]:
    return [sys.executable, str(AGENTS / "misbehave.py"), *flags]


def frame(request_id: int, method: str, params: Any = None) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()


async def call(proc: AgentProcess, request_id: int, method: str, params: Any = None) -> Any:
    """Send one request and read frames until its answer (no Connection: this is the transport)."""
    await proc.send(frame(request_id, method, params))
    while True:
        raw = await proc.receive()
        assert raw is not None, "the agent's output ended before it answered"
        message = json.loads(raw)
        if isinstance(message, dict) and message.get("id") == request_id:
            return message["result"]


@asynccontextmanager
async def agent(*flags: str, **kwargs: Any) -> AsyncIterator[AgentProcess]:
    with anyio.fail_after(LIMIT):
        async with AgentProcess.spawn(misbehave(*flags), **kwargs) as proc:
            yield proc


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


# -- framing, without a process ----------------------------------------------------------------


lines_strategy = st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30)


@settings(max_examples=200, deadline=None)
@given(lines=lines_strategy, cuts=st.lists(st.integers(min_value=0, max_value=2000)), limit=st.integers(1, 50))
def test_framer_is_independent_of_chunk_boundaries(lines: list[bytes], cuts: list[int], limit: int) -> None:
    stream = b"".join(line + b"\n" for line in lines)
    framer = LineFramer(limit)
    start = 0
    for cut in [*sorted({c % (len(stream) + 1) for c in cuts}), len(stream)]:
        framer.feed(stream[start:cut])
        start = cut
    framer.end()
    expected = [line for line in lines if line.strip() and len(line) <= limit]
    assert list(framer.frames) == expected


def test_framer_keeps_an_unterminated_last_line() -> None:
    framer = LineFramer(100)
    framer.feed(b'{"a":1}\n{"b"')
    framer.feed(b":2}")
    assert list(framer.frames) == [b'{"a":1}']
    framer.end()
    assert list(framer.frames) == [b'{"a":1}', b'{"b":2}']


def test_framer_reports_and_skips_an_over_long_line(caplog: pytest.LogCaptureFixture) -> None:
    framer = LineFramer(10)
    with caplog.at_level(logging.WARNING, logger="acpcli.wire.transport"):
        framer.feed(b"ok\n" + b"x" * 8)
        framer.feed(b"x" * 8)  # now over the limit, no newline yet
        framer.feed(b"x" * 100 + b"\nnext\n")
    assert list(framer.frames) == [b"ok", b"next"]
    assert "discarded a 116-byte line" in caplog.text


def test_framer_rejects_a_silly_limit() -> None:
    with pytest.raises(ValueError):
        LineFramer(0)


# -- spawning ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_env_is_passed_through_plus_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ACPCLI_TEST_INHERITED", "from-parent")
    monkeypatch.setenv("ACPCLI_TEST_OVERRIDDEN", "parent-value")
    extra = {"ACPCLI_TEST_EXTRA": "extra-value", "ACPCLI_TEST_OVERRIDDEN": "extra-wins"}
    async with agent(env_extra=extra, cwd=tmp_path) as proc:
        names = ["ACPCLI_TEST_INHERITED", "ACPCLI_TEST_OVERRIDDEN", "ACPCLI_TEST_EXTRA", "PATH", "ACPCLI_HOME"]
        answer = await call(proc, 1, "env", {"names": names})
    assert answer["env"] == {
        "ACPCLI_TEST_INHERITED": "from-parent",
        "ACPCLI_TEST_OVERRIDDEN": "extra-wins",
        "ACPCLI_TEST_EXTRA": "extra-value",
        "PATH": os.environ["PATH"],
        "ACPCLI_HOME": os.environ["ACPCLI_HOME"],
    }
    assert Path(answer["cwd"]).resolve() == tmp_path.resolve()


@pytest.mark.anyio
async def test_the_agent_runs_in_its_own_process_group() -> None:
    async with agent() as proc:
        answer = await call(proc, 1, "pid")
    assert answer == {"pid": proc.pid, "pgid": proc.pid}
    assert answer["pgid"] != os.getpgid(0)


@pytest.mark.anyio
async def test_missing_command_is_one_clear_line() -> None:
    with pytest.raises(AgentStartError) as info:
        async with AgentProcess.spawn(["acpcli-no-such-agent-xyz", "--acp"]):
            pass  # pragma: no cover
    message = str(info.value)
    assert message == "agent command not found: acpcli-no-such-agent-xyz (is it installed and on PATH?)"
    assert info.value.exit_code == ExitCode.AGENT_START


@pytest.mark.anyio
async def test_non_executable_file_is_reported(tmp_path: Path) -> None:
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(stat.S_IRUSR | stat.S_IWUSR)
    with pytest.raises(AgentStartError, match=r"^agent command is not executable: .*agent\.sh$"):
        async with AgentProcess.spawn([str(script)]):
            pass  # pragma: no cover


@pytest.mark.anyio
async def test_missing_working_directory_is_reported(tmp_path: Path) -> None:
    with pytest.raises(AgentStartError, match="working directory does not exist"):
        async with AgentProcess.spawn(misbehave(), cwd=tmp_path / "nope"):
            pass  # pragma: no cover


def test_a_command_string_is_refused() -> None:
    with pytest.raises(TypeError, match="not a string"):
        AgentProcess.spawn("python agent.py")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_await_form_runs_tasks_in_the_callers_group() -> None:
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            proc = await AgentProcess.spawn(misbehave(), task_group=tg)
            assert await call(proc, 1, "echo", {"x": 1}) == {"x": 1}
            assert await proc.aclose() == 0
        # Leaving the task group did not hang: the stderr drain ended with the process.


@pytest.mark.anyio
async def test_await_form_without_a_task_group_is_refused() -> None:
    with pytest.raises(TypeError, match="task_group"):
        await AgentProcess.spawn(misbehave())


# -- framing over a real pipe -------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_20mb_line_is_received() -> None:
    size = 20 * 1024 * 1024
    async with agent() as proc:
        answer = await call(proc, 1, "huge", {"size": size})
        assert len(answer["data"]) == size
        assert set(answer["data"]) == {"x"}
        # The stream is still in step afterwards.
        assert await call(proc, 2, "echo", "after") == "after"


@pytest.mark.anyio
@pytest.mark.parametrize("size", [3_000, 500_000], ids=["within-one-read", "across-reads"])
async def test_a_line_over_the_limit_is_skipped_and_reading_goes_on(
    size: int, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="acpcli.wire.transport"):
        async with agent(max_line_bytes=1_000) as proc:
            await proc.send(frame(1, "long_line_then_echo", {"size": size}))
            # The long notification is dropped: the next frame is the answer itself.
            raw = await proc.receive()
    assert raw is not None
    assert json.loads(raw) == {"jsonrpc": "2.0", "id": 1, "result": {"size": size}}
    assert "longer than the 1000-byte limit" in caplog.text


@pytest.mark.anyio
async def test_an_unterminated_last_line_is_still_a_frame() -> None:
    async with agent() as proc:
        await proc.send(frame(1, "unterminated"))
        raw = await proc.receive()
        assert raw is not None and json.loads(raw)["result"] == "no newline"
        assert await proc.receive() is None


# -- stderr -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_agent_flooding_stderr_still_answers(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "agent-stderr.log"
    flood = 6 * 1024 * 1024  # far more than a pipe buffer: the agent blocks unless we drain
    async with agent("--banner", "hello from the agent", stderr_log=log, stderr_tail_lines=5) as proc:
        assert await call(proc, 1, "flood_stderr", {"bytes": flood}) == "flooded"
    returncode, tail = proc.exit_info()
    assert returncode == 0
    assert len(tail) == 5
    assert tail[-1] == "flood done"
    # Over the cap of one file (4 MiB) it was rotated once: together the two hold it all.
    older = log.with_name(log.name + ".1")
    assert older.stat().st_size <= STDERR_LOG_MAX_BYTES and log.stat().st_size <= STDERR_LOG_MAX_BYTES
    data = older.read_bytes() + log.read_bytes()
    assert data.startswith(b"hello from the agent\n")
    assert data.endswith(b"flood done\n")
    assert len(data) == len(b"hello from the agent\n") + flood // 100 * 100 + len(b"flood done\n")


def test_the_stderr_log_is_capped_rotated_and_says_what_it_dropped(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "agent.stderr.log"
    older = path.with_name(path.name + ".1")
    log = StderrLog.open(path, max_bytes=1000)
    assert log is not None
    for i in range(30):  # 3000 bytes: two rotations, the first file's bytes dropped
        log.write(b"%09d\n" % i * 10)
    log.close()
    assert path.stat().st_size <= 1000 and older.stat().st_size <= 1000
    current = path.read_bytes()
    assert current.startswith(b"[acpcli: ") and b"bytes of this log were dropped" in current.splitlines()[0]
    assert current.endswith(b"000000029\n")  # the newest bytes are kept
    assert oct(path.stat().st_mode & 0o777) == "0o600"

    big = StderrLog.open(path, max_bytes=1000)  # a chunk larger than a file keeps its end
    assert big is not None
    big.write(b"a" * 5000 + b"END\n")
    big.close()
    assert path.stat().st_size <= 1000 and path.read_bytes().endswith(b"aaaEND\n")

    path.write_bytes(b"z" * 1500)  # a log a past run left over the cap is rotated when opened
    again = StderrLog.open(path, max_bytes=1000)
    assert again is not None
    again.write(b"next run\n")
    again.close()
    assert older.read_bytes() == b"z" * 1500 and path.read_bytes().endswith(b"next run\n")


@pytest.mark.anyio
async def test_death_is_reported_with_status_and_stderr_tail() -> None:
    async with agent() as proc:
        await proc.send(frame(1, "die", {"code": 3, "stderr": ["fatal: out of cheese", "goodbye"]}))
        assert await proc.receive() is None
        assert proc.exit_info() == (3, ["fatal: out of cheese", "goodbye"])
        assert proc.returncode == 3
        # Writing to a dead agent is a ConnectionClosed, not a BrokenPipeError.
        with pytest.raises(ConnectionClosed) as info:
            await proc.send(frame(2, "echo"))
        assert info.value.returncode == 3


# -- shutdown -----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_well_behaved_agent_exits_on_stdin_close() -> None:
    async with agent() as proc:
        await call(proc, 1, "echo")
        assert await proc.aclose(stdin_grace=LIMIT, term_grace=LIMIT) == 0
        assert await proc.aclose() == 0  # idempotent
        with pytest.raises(ConnectionClosed):
            await proc.send(frame(2, "echo"))


@pytest.mark.anyio
async def test_an_agent_ignoring_stdin_close_gets_sigterm() -> None:
    async with agent("--ignore-eof") as proc:
        await call(proc, 1, "echo")  # answered: its flags are in force
        assert await proc.aclose(stdin_grace=0.1, term_grace=LIMIT) == -signal.SIGTERM


@pytest.mark.anyio
async def test_an_agent_ignoring_sigterm_gets_sigkill() -> None:
    async with agent("--ignore-eof", "--ignore-sigterm") as proc:
        await call(proc, 1, "echo")
        assert await proc.aclose(stdin_grace=0.1, term_grace=0.1) == -signal.SIGKILL


@pytest.mark.anyio
async def test_concurrent_closes_share_one_shutdown() -> None:
    results: list[int | None] = []
    async with agent("--ignore-eof") as proc:
        await call(proc, 1, "echo")

        async def close() -> None:
            results.append(await proc.aclose(stdin_grace=0.1, term_grace=LIMIT))

        async with anyio.create_task_group() as tg:
            tg.start_soon(close)
            tg.start_soon(close)
    assert results == [-signal.SIGTERM, -signal.SIGTERM]


@pytest.mark.anyio
async def test_shutdown_completes_when_the_caller_is_cancelled() -> None:
    async with agent("--ignore-eof") as proc:
        await call(proc, 1, "echo")
        with anyio.CancelScope() as scope:
            scope.cancel()
            await proc.aclose(stdin_grace=0.1, term_grace=LIMIT)
        assert proc.returncode == -signal.SIGTERM


@needs_proc
@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs pidfd_open")
@pytest.mark.anyio
@pytest.mark.parametrize("flags", [(), ("--ignore-eof", "--ignore-sigterm")], ids=["graceful", "killed"])
async def test_no_process_of_the_group_survives(flags: tuple[str, ...]) -> None:
    async with agent(*flags) as proc:
        grandchild = (await call(proc, 1, "spawn_grandchild"))["pid"]
        assert os.getpgid(grandchild) == proc.pid
        assert set(group_members(proc.pid)) == {proc.pid, grandchild}
        # Not our child, so we cannot wait() for it; a pidfd becomes readable when it ends.
        pidfd = os.pidfd_open(grandchild)
        try:
            await proc.aclose(stdin_grace=0.2, term_grace=0.2)
            with anyio.fail_after(5):
                await anyio.wait_readable(pidfd)
        finally:
            os.close(pidfd)
    assert group_members(proc.pid) == []
    assert not running(grandchild)


@pytest.mark.anyio
@needs_proc
@pytest.mark.parametrize("how", ["setsid", "orphan"])
async def test_what_the_agent_started_outside_its_group_is_ended_too(how: str) -> None:
    """Here acpcli is a library (no subreaper): the setsid child is found in the agent's
    tree, the orphan (re-parented to init) by the owner tag in its environment."""
    async with agent() as proc:
        left = (await call(proc, 1, "spawn_grandchild", {how: True}))["pid"]
        deadline = time.monotonic() + 5
        while os.getsid(left) != left and time.monotonic() < deadline:  # `setsid` may not have run yet
            await anyio.sleep(0.01)
        assert os.getsid(left) == left and os.getpgid(left) != proc.pid  # out of the group
        await proc.aclose(stdin_grace=0.2, term_grace=0.2)
    deadline = time.monotonic() + 5
    while running(left) and time.monotonic() < deadline:
        await anyio.sleep(0.02)
    assert not running(left)


@pytest.mark.anyio
async def test_an_agent_that_exits_while_an_unreachable_process_holds_its_stdout() -> None:
    """Nothing can end the holder here (no subreaper, no tag, not in the tree): once the agent
    has exited its stdout is no longer read, so the connection still ends."""
    async with agent() as proc:
        await proc.send(frame(1, "exit_leaving_holder"))
        raw = await proc.receive()
        assert raw is not None
        holder = json.loads(raw)["params"]["pid"]
        try:
            with anyio.fail_after(LIMIT):  # before the fix: read until the sleep ends (600 s)
                assert await proc.receive() is None
            assert proc.exit_info()[0] == 3
        finally:
            os.kill(holder, signal.SIGKILL)


# -- the in-memory pair -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_memory_pair_round_trip_and_close() -> None:
    client, agent_end = memory_pair()
    with anyio.fail_after(LIMIT):
        await client.send(b'{"a":1}')
        await client.send(b'{"b":2}')
        assert await agent_end.receive() == b'{"a":1}'
        await agent_end.send(b'{"c":3}')
        assert await client.receive() == b'{"c":3}'
        agent_end.returncode, agent_end.stderr_tail = 7, ["bye"]
        await client.aclose()
        # Frames already queued are still delivered, then the end.
        assert await agent_end.receive() == b'{"b":2}'
        assert await agent_end.receive() is None
        assert await client.receive() is None
        with pytest.raises(ConnectionClosed):
            await agent_end.send(b"{}")
        assert agent_end.exit_info() == (7, ["bye"])
        assert client.exit_info() == (None, [])


@pytest.mark.anyio
async def test_memory_pair_receive_waits_for_a_frame() -> None:
    client, agent_end = memory_pair()
    got: list[bytes | None] = []
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:

            async def reader() -> None:
                got.append(await agent_end.receive())
                got.append(await agent_end.receive())

            tg.start_soon(reader)
            await anyio.wait_all_tasks_blocked()
            await client.send(b"1")
            await client.aclose()
    assert got == [b"1", None]
