"""The library and live sessions (issue 33): ``agent.resume(id)`` / ``agent.load(id)`` of a
session whose host runs join that host, never a second agent on the session; its turns stream
the same events; a turn of another client's makes a prompt :class:`acpcli.SessionBusy`;
leaving the loop cancels the turn in the host; ``join=False`` refuses; the host's prompt
message keeps ``@path`` plain text unless asked (through the raw socket too).

The hosts are started by the real CLI (``acpcli new --keep-alive``) in subprocesses and
checked with ``acpcli sessions --live --json``.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

import acpcli
from tests.cli.conftest import Cli
from tests.host import conftest as host_fixtures
from tests.host.conftest import LIVE, live_rows, wait_for

#: The host tests' fixtures (``cli``, ``trace``, ``workdir``, ``hosts``, ``raw``), here too.
cli, trace, workdir, hosts, raw = (
    host_fixtures.cli, host_fixtures.trace, host_fixtures.workdir, host_fixtures.hosts, host_fixtures.raw,
)




def _live_session(cli: Cli, keep: str = "300") -> tuple[str, dict[str, Any]]:
    """A new demo session in a host of its own (as a user makes one), and its live row."""
    sid = cli.ok("new", "--no-repl", "--keep-alive", keep, "--cmd", cli.trace.demo_cmd()).stdout.strip()
    rows = [r for r in live_rows(cli) if r["id"] == sid]
    assert len(rows) == 1 and isinstance(rows[0]["agentPid"], int), rows
    return sid, rows[0]


def _frames(log: Path) -> str:
    return log.read_text() if log.exists() else ""


@pytest.mark.parametrize("how", ["resume", "load"])
def test_resume_and_load_join_the_running_host(hosts: Cli, tmp_path: Path, how: str) -> None:
    cli = hosts
    sid, row = _live_session(cli)
    cli.ok("prompt", "--session", sid, "first from the CLI", env=LIVE)
    wire = tmp_path / "wire.log"

    async def main() -> tuple[bool, str, str, list[type], str]:
        async with acpcli.connect(argv=shlex.split(cli.trace.demo_cmd()), permissions="allow", log_file=wire) as agent:
            session = await (agent.resume(sid) if how == "resume" else agent.load(sid[:12]))
            before = session.transcript.markdown()  # what the host had stored
            kinds = []
            async for event in session.prompt("second from the library"):
                kinds.append(type(event))
            third = await session.ask("third")
            return session.hosted, before, third.text, kinds, session.id

    hosted, before, third, kinds, got = anyio.run(main)
    assert hosted and got == sid
    assert "first from the CLI" in before
    assert acpcli.AgentText in kinds and kinds[-1] is acpcli.TurnEnded
    assert "turn 3" in third  # the host's agent ran all three turns
    # The connection's own agent was never asked about the session: no second agent on it.
    frames = _frames(wire)
    assert "session/resume" not in frames and "session/load" not in frames and "session/prompt" not in frames
    after = [r for r in live_rows(cli) if r["id"] == sid]
    assert len(after) == 1 and after[0]["pid"] == row["pid"] and after[0]["agentPid"] == row["agentPid"]
    shown = cli.ok("show", sid).stdout
    assert shown.index("first from the CLI") < shown.index("second from the library") < shown.index("third")


def test_a_turn_of_another_client_makes_the_session_busy(hosts: Cli) -> None:
    cli = hosts
    sid, _ = _live_session(cli)
    other = subprocess.Popen(
        cli.argv("prompt", "--session", sid, "slow please"), env=cli.env(LIVE), cwd=cli.cwd,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: any(r["id"] == sid and r["busy"] for r in live_rows(cli)), 30, "the host's turn")

        async def main() -> tuple[str, str]:
            async with acpcli.connect(argv=shlex.split(cli.trace.demo_cmd()), permissions="allow") as agent:
                session = await agent.resume(sid)
                with pytest.raises(acpcli.SessionBusy) as busy:
                    await session.ask("me too")
                assert not session.running  # usable again: the next prompt is tried, not refused here
                other.terminate()  # the other client leaves: the host cancels its turn
                with anyio.fail_after(60):
                    while any(r["id"] == sid and r["busy"] for r in live_rows(cli)):
                        await anyio.sleep(0.1)
                result = await session.ask("now me")
                return str(busy.value), result.text

        message, text = anyio.run(main)
        assert "now me" in text
        assert "busy" in message or "turn" in message, message
    finally:
        other.terminate()
        other.wait(timeout=60)


def test_leaving_the_loop_cancels_the_hosted_turn(hosts: Cli) -> None:
    cli = hosts
    sid, _ = _live_session(cli)

    async def main() -> tuple[str, str]:
        async with acpcli.connect(argv=shlex.split(cli.trace.demo_cmd()), permissions="allow") as agent:
            session = await agent.resume(sid)
            async for event in session.prompt("slow, and I will not wait"):
                if isinstance(event, acpcli.AgentText):
                    break  # the turn is cancelled in the host; the session is ready again
            result = await session.ask("after")
            return result.stop_reason, result.text

    stop, text = anyio.run(main)
    assert stop == "end_turn" and "after" in text
    stops = [e.result.stop_reason for e in acpcli.transcript(sid).entries if isinstance(e, acpcli.TurnEnded)]
    assert stops == ["cancelled", "end_turn"], stops


def test_join_false_refuses_a_live_session(hosts: Cli, tmp_path: Path) -> None:
    cli = hosts
    sid, row = _live_session(cli)
    wire = tmp_path / "wire.log"

    async def main() -> None:
        async with acpcli.connect(argv=shlex.split(cli.trace.demo_cmd()), log_file=wire) as agent:
            with pytest.raises(acpcli.SessionBusy, match="live"):
                await agent.resume(sid, join=False)

    anyio.run(main)
    assert "session/resume" not in _frames(wire)
    assert [r["agentPid"] for r in live_rows(cli) if r["id"] == sid] == [row["agentPid"]]


def test_without_a_host_resume_uses_the_connections_agent(cli: Cli) -> None:
    # the other way round: no host runs, so the connection's own agent resumes the session
    sid = cli.ok("new", "--no-repl", "--keep-alive", "0", "--cmd", cli.trace.demo_cmd()).stdout.strip()

    async def main() -> bool:
        async with acpcli.connect(argv=shlex.split(cli.trace.demo_cmd())) as agent:
            session = await agent.resume(sid)
            await session.ask("hello")
            return session.hosted

    assert anyio.run(main) is False
    assert not live_rows(cli)


# -- the host's prompt message: mentions and attach (the raw socket) ------------------------------


def _turn_text(client: Any, message: dict[str, Any]) -> str:
    """Send ``message`` (a prompt) and return everything the host sent of its turn."""
    client.send(message)
    seen = []
    while True:
        got = client.until("u", "ask", "end", "error")
        if got["t"] == "ask":  # the demo agent's edit: allowed (its first option)
            option = got["params"]["options"][0]["optionId"]
            client.send({"t": "answer", "id": got["id"], "result": {"outcome": {"outcome": "selected", "optionId": option}}})
            continue
        if got["t"] != "u":
            assert got["t"] == "end", got
            return "\n".join(seen)
        seen.append(got["p"])


def test_the_hosts_prompt_message_attaches_only_what_it_is_asked_to(hosts: Cli, raw: Any) -> None:
    cli = hosts
    sid, _ = _live_session(cli)
    (cli.cwd / "notes.txt").write_text("MARKER-7f3a in the notes\n")
    client = raw(sid)
    grant = {"policy": "allow", "fs": True, "terminal": False, "unattended": True}
    plain = _turn_text(client, {"t": "prompt", "text": "read @notes.txt", "grant": grant, "mentions": False})
    assert "MARKER-7f3a" not in plain
    given = _turn_text(
        client,
        {"t": "prompt", "text": "read this", "grant": grant, "mentions": False, "attach": [str(cli.cwd / "notes.txt")]},
    )
    assert "MARKER-7f3a" in given
    # a prompt that says nothing of mentions keeps the CLI's way: @path attaches the file
    mentioned = _turn_text(client, {"t": "prompt", "text": "read @notes.txt", "grant": grant})
    assert "MARKER-7f3a" in mentioned


def test_the_library_sends_at_words_as_text_to_a_host(hosts: Cli) -> None:
    cli = hosts
    sid, _ = _live_session(cli)
    (cli.cwd / "notes.txt").write_text("MARKER-91c2 in the notes\n")

    async def main() -> tuple[str, str]:
        async with acpcli.connect(argv=shlex.split(cli.trace.demo_cmd()), cwd=cli.cwd) as agent:
            session = await agent.resume(sid)
            await session.ask("about @notes.txt")
            plain = session.transcript.jsonl()
            await session.ask("about the notes", attach=["notes.txt"])
            return plain, session.transcript.jsonl()

    plain, attached = anyio.run(main)
    assert "MARKER-91c2" not in plain
    assert "MARKER-91c2" in attached


# -- keep_alive: the library makes live sessions -------------------------------------------------


def test_keep_alive_makes_a_session_its_own_host_keeps(hosts: Cli) -> None:
    cli = hosts

    async def main() -> tuple[bool, str, str, int | None]:
        async with acpcli.connect(argv=shlex.split(cli.trace.demo_cmd()), permissions="allow") as agent:
            session = await agent.new_session(title="kept alive", keep_alive=300)
            result = await session.ask("hello from the library")
            return session.hosted, session.id, result.text, session.host_pid  # type: ignore[attr-defined]

    hosted, sid, text, host_pid = anyio.run(main)
    assert hosted and "turn 1" in text
    # the connection has ended; the session's host runs on, and the CLI reaches the same agent
    rows = [r for r in live_rows(cli) if r["id"] == sid]
    assert len(rows) == 1 and rows[0]["pid"] == host_pid and rows[0]["keepAlive"] == 300
    agents = len(cli.trace.pids())  # the connection's own agent and the host's
    out = cli.ok("prompt", "--session", sid, "and from the CLI", env=LIVE).stdout
    assert "turn 2" in out
    assert len(cli.trace.pids()) == agents  # no agent started for the CLI's turn
    assert [r["agentPid"] for r in live_rows(cli) if r["id"] == sid] == [rows[0]["agentPid"]]
    assert "kept alive" in cli.ok("sessions").stdout


def test_keep_alive_of_a_connection_with_its_own_home(hosts: Cli, tmp_path: Path) -> None:
    cli = hosts
    home = tmp_path / "elsewhere"
    there = {"ACPCLI_HOME": str(home)}

    async def main() -> str:
        async with acpcli.connect(argv=shlex.split(cli.trace.demo_cmd()), home=home, keep_alive=120) as agent:
            session = await agent.new_session()
            await session.ask("hello")
            return session.id

    try:
        sid = anyio.run(main)
        elsewhere = [json.loads(line) for line in cli.ok("sessions", "--live", "--json", env=there).stdout.splitlines()]
        assert [r["id"] for r in elsewhere] == [sid]
        assert not live_rows(cli)  # not in the environment's home
    finally:
        cli.run("stop", "--all", env=there)


def test_a_hosted_session_sets_times_out_and_closes_through_its_host(hosts: Cli) -> None:
    cli = hosts

    async def main() -> tuple[str, str, str]:
        argv = shlex.split(cli.trace.demo_cmd())
        async with acpcli.connect(argv=argv, permissions="allow", keep_alive=300, timeout=3) as agent:
            session = await agent.new_session()
            mode = await session.set("mode", "plan")
            with pytest.raises(acpcli.StepTimeout, match="timeout="):  # the API's words, not --timeout
                await session.ask("slow, longer than the timeout")
            after = await session.ask("after the timeout")
            await session.close()
            return mode.current, after.stop_reason, session.id

    mode, stop, sid = anyio.run(main)
    assert mode == "plan" and stop == "end_turn"
    wait_for(lambda: not any(r["id"] == sid for r in live_rows(cli)), 30, "the closed session's host to end")
    stops = [e.result.stop_reason for e in acpcli.transcript(sid).entries if isinstance(e, acpcli.TurnEnded)]
    assert stops == ["cancelled", "end_turn"], stops


def test_the_sync_twin_joins_and_keeps_alive_too(hosts: Cli) -> None:
    import acpcli.sync

    cli = hosts
    sid, row = _live_session(cli)
    with acpcli.sync.connect(argv=shlex.split(cli.trace.demo_cmd()), permissions="allow") as agent:
        joined = agent.resume(sid)
        assert joined.hosted and "turn 1" in joined.ask("from the sync twin").text
        with pytest.raises(acpcli.SessionBusy):
            agent.load(sid, join=False)
        kept = agent.new_session(keep_alive=120)
        assert kept.hosted and kept.ask("kept").stop_reason == "end_turn"
    live = {r["id"]: r for r in live_rows(cli)}
    assert live[sid]["agentPid"] == row["agentPid"] and kept.id in live
