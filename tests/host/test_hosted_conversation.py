"""The hosted backend of a conversation (:class:`acpcli.session.hosted.HostedConversation`): the
REPL drives it as it drives the local one and never asks which it holds; the files a prompt
mentions are read once, by the host, where the agent runs (the terminal reads none); the
terminal holds no writer.

In-process over a fake channel (``tests/host/test_remote.py``'s), then through the real REPL in
a pseudo-terminal, hosted and not (``repl_mode``)."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from acpcli.history.guarded import open_index
from acpcli.model import Store
from acpcli.services import mentions
from acpcli.session.conversation import Conversation
from acpcli.session.feed import SessionFeed
from acpcli.session.hosted import HostedConversation, HostedLink
from acpcli.session.hostwire.channel import Ready
from acpcli.wire.negotiate import AgentFeatures
from tests.cli import conftest as cli_fixtures
from tests.cli.conftest import AgentTrace
from tests.cli.pty import PROMPT
from tests.host.test_remote import FakeChannel

PACKAGE = Path(__file__).resolve().parents[2] / "acpcli"

#: The REPL tests' fixture: each such test runs hosted and unhosted.
repl_mode = cli_fixtures.repl_mode


def _hosted(cwd: Path, index: Any) -> tuple[HostedConversation, FakeChannel]:
    channel = FakeChannel()
    state = {"cwd": str(cwd), "features": {"prompt_embedded_context": True}}

    async def decide(live: Any, params: dict[str, Any]) -> None:
        return None

    link = HostedLink(channel, Ready("s-1", 1, "demo", None, 0, False, state), Store(), decide=decide, say=lambda line: None)  # type: ignore[arg-type]
    return link.conversation(index, "demo"), channel


def test_the_hosted_conversation_reads_no_mentioned_file_and_holds_no_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "notes.txt").write_text("abc")
    read: list[str] = []
    real = mentions._file_block

    def reading(path: str, *args: Any) -> Any:
        read.append(path)
        return real(path, *args)

    monkeypatch.setattr(mentions, "_file_block", reading)
    index = open_index()
    hosted, channel = _hosted(tmp_path, index)
    try:
        assert hosted.writer is None  # the host writes; this terminal opened none
        text = "look at @notes.txt and @../outside.txt"  # (the host refuses the second)
        assert hosted.blocks(text) == [{"type": "text", "text": text}]
        assert read == []

        async def turn() -> str:
            async with anyio.create_task_group() as tg:
                tg.start_soon(hosted.host.serve)
                running = tg.start_soon
                stop: list[str] = []

                async def send() -> None:
                    stop.append(await hosted.turn(text, hosted.blocks(text), notice=lambda line: None))

                running(send)
                await anyio.wait_all_tasks_blocked()
                await channel.to_link.send({"t": "start"})
                await channel.to_link.send({"t": "end", "stop": "end_turn"})
                await anyio.wait_all_tasks_blocked()
                tg.cancel_scope.cancel()
            return stop[0]

        assert anyio.run(turn) == "end_turn"
        assert read == []
        prompts = [m for m in channel.sent if m["t"] == "prompt"]
        assert [m["text"] for m in prompts] == [text]  # the text as typed: the host reads the files

        # the local backend reads them, here, where its agent runs
        live = SessionFeed("local-1", Store(), cwd=str(tmp_path))
        local = Conversation(hosted.link, live, index, None, "demo")
        local.link = _Features()  # type: ignore[assignment]
        blocks = local.blocks("look at @notes.txt")
        assert read == [str(tmp_path / "notes.txt")] and len(blocks) == 2
    finally:
        channel.close()
        index.close()


class _Features:
    features = AgentFeatures(protocol_version=1, reading="v1", prompt_embedded_context=True)


def test_the_repl_never_asks_which_backend_it_holds() -> None:
    """No ``hosted`` flag, no HostedLink or HostedConversation named, in the REPL's loop and
    its send-now, nor in the session layer outside the hosted backend itself
    (session/hosted.py): the backends differ by their methods alone."""
    session = [p for p in (PACKAGE / "session").glob("*.py") if p.name != "hosted.py"]
    assert len(session) > 10
    for path in [PACKAGE / "repl" / "loop.py", PACKAGE / "repl" / "sendnow.py", *session]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        names |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert not names & {"hosted", "HostedLink", "HostedConversation"}, path


def test_a_mention_is_read_once_where_the_agent_runs_and_a_bad_one_comes_back(
    spawn, trace: AgentTrace, workdir: Path, tmp_path: Path, repl_mode: list[str]  # type: ignore[no-untyped-def]
) -> None:
    """Hosted or not, the same screen: a mention outside the session is refused before
    anything is sent and the line comes back; one inside reaches the agent, read once."""
    (workdir / "todo.md").write_text("12345")
    (tmp_path / "elsewhere.md").write_text("secret")
    log = tmp_path / "wire.log"
    pty = spawn("new", "--cmd", trace.demo_cmd(protocol=1), "--log-file", str(log), *repl_mode)
    pty.prompt()
    outside = str(tmp_path / "elsewhere.md")
    pty.say(f"look at @{outside} no-permission")
    pty.expect(r"not sent:.*is outside the session")
    pty.expect(PROMPT)
    pty.child.send("\x15")  # Ctrl-U: the line that came back goes
    pty.say("look at @todo.md no-permission")
    pty.expect(r"todo\.md \(5[\s\S]{0,40}?chars\)")  # the demo agent says what it received
    pty.prompt()
    assert pty.leave()[0] == 0
    frames = [json.loads(line.split(" ", 2)[2]) for line in log.read_text().splitlines() if line.strip()]
    prompts = [f for f in frames if f.get("method") == "session/prompt"]
    assert len(prompts) == 1  # the refused one was never sent
    sent = json.dumps(prompts[0]["params"]["prompt"])
    assert "12345" in sent or "todo.md" in sent
    assert "secret" not in log.read_text()


def test_fork_in_a_terminal_attached_to_a_host_says_how_and_the_repl_goes_on(
    spawn, tmp_path: Path, repl_mode: list[str]  # type: ignore[no-untyped-def]
) -> None:
    """``/fork`` needs the agent itself: without a host the REPL forks; attached to a host
    (which holds the agent) it says, in one line, which command forks the session, and the
    REPL goes on. (An SDK agent that forks: ``tests/peers/sdk_sessions_agent.py --fork``.)"""
    import shlex
    import sys

    agent = Path(__file__).resolve().parents[1] / "peers" / "sdk_sessions_agent.py"
    env = {"SDK_SESSIONS_STATE": str(tmp_path / "agent-sessions.json")}
    pty = spawn("new", "--cmd", shlex.join([sys.executable, str(agent), "--fork"]), *repl_mode, env=env)
    pty.prompt()
    pty.say("/fork")
    if "60" in repl_mode:  # hosted
        pty.expect(r"attached to the session's host, which holds its agent")
        pty.expect(r"acpcli fork \S+` forks it")
    else:
        pty.expect(r"forked \S+ as \S+")
    pty.prompt()
    assert pty.leave()[0] == 0
