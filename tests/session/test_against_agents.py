"""The session layer against real agents: the demo agent (v1 and v2) and an SDK-written one."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from acpcli.errors import CapabilityMissing
from acpcli.model import Message
from acpcli.protocol import wire
from acpcli.session.feed import SessionFeed
from acpcli.session.link import open_link
from tests.peers import agent_argv

DEMO = [sys.executable, "-m", "acpcli.demo_agent", "--delay", "0"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Collect:
    def __init__(self) -> None:
        self.changes: list[Any] = []

    def on_change(self, session: SessionFeed, change: Any) -> None:
        self.changes.append(change)


def texts(live: SessionFeed) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in live.store.entries if isinstance(e, Message)]


def allow_first(kind: str):
    async def decide(live: SessionFeed, params: dict[str, Any]) -> dict[str, Any]:
        option = next(o for o in params["options"] if o["kind"] == kind)
        return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}

    return decide


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["1", "2"])
async def test_new_prompt_then_load_in_another_process(tmp_path, protocol: str) -> None:
    argv = [*DEMO, "--protocol", protocol]
    async with open_link(argv, decide_permission=allow_first("allow_once")) as link:
        assert link.features.protocol_version == int(protocol)
        live = await link.new(str(tmp_path), sink=Collect())
        stop = await link.prompt(live, [wire.text_block("hello demo")])
        assert stop == "end_turn"
        first = texts(live)
    assert ("user", "hello demo") in first
    assert any(kind == "agent" and "hello demo" in text for kind, text in first)
    assert any(kind == "thought" for kind, _ in first)

    async with open_link(argv) as link:
        replayed = await link.load(live.session_id, str(tmp_path), sink=Collect())
        assert texts(replayed) == first


@pytest.mark.anyio
async def test_withheld_load_is_never_sent(tmp_path) -> None:
    async with open_link([*DEMO, "--without", "load"]) as link:
        assert not link.features.load
        with pytest.raises(CapabilityMissing) as err:
            await link.load("demo-x", str(tmp_path))
        assert "resume" in (err.value.hint or "")
        assert "demo-x" not in link.sessions


@pytest.mark.anyio
async def test_sdk_agent_turn_and_permission(tmp_path) -> None:
    async with open_link(agent_argv("sdk_echo_agent.py"), decide_permission=allow_first("allow_once")) as link:
        assert link.features.protocol_version == 1
        live = await link.new(str(tmp_path))
        stop = await link.prompt(live, [wire.text_block("ask permission please")])
        assert stop == "end_turn"
        agent_text = "".join(text for kind, text in texts(live) if kind == "agent")
        assert "you said: ask permission please" in agent_text
        assert "allow" in agent_text


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["1", "2"])
async def test_dismissing_a_permission_question_cancels_the_turn(tmp_path, protocol: str) -> None:
    async def dismiss(live: SessionFeed, params: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": {"outcome": "cancelled"}}

    class Sent:
        def __init__(self) -> None:
            self.frames: list[dict[str, Any]] = []

        def sent(self, frame: bytes) -> None:
            self.frames.append(json.loads(frame))

        def received(self, frame: bytes) -> None:
            pass

        def close(self) -> None:
            pass

    tap = Sent()
    async with open_link([*DEMO, "--protocol", protocol], decide_permission=dismiss, tap=tap) as link:
        live = await link.new(str(tmp_path))
        stop = await link.prompt(live, [wire.text_block("edit something")])
        # "cancelled" is only meaningful for a cancelled turn: acpcli sent session/cancel,
        # and sent it before the "cancelled" answer, so the agent learns of the cancel first.
        assert stop == "cancelled"
        assert live.cancel_requested and not live.interrupted
        methods = [f.get("method") or ("answer:" + json.dumps(f.get("result"))) for f in tap.frames]
        cancel = methods.index("session/cancel")
        answer = next(i for i, m in enumerate(methods) if m.startswith("answer:") and '"cancelled"' in m)
        assert cancel < answer, methods
        # The session is still usable afterwards.
        live_stop = await link.prompt(live, [wire.text_block("no-permission please")])
        assert live_stop == "end_turn"


TERSE_AGENT = r"""
import json, sys
OPTIONS = [{"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "a",
            "options": [{"value": "a", "name": "A"}, {"value": "b", "name": "B"}]}]
for line in sys.stdin:
    msg = json.loads(line)
    method, result = msg.get("method"), {}
    if method == "initialize":
        result = {"protocolVersion": 1, "agentCapabilities": {}}
    elif method == "session/new":
        result = {"sessionId": "s1", "configOptions": OPTIONS,
                  "modes": {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]}}
    if "id" in msg:
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


@pytest.mark.anyio
async def test_settings_from_answers_that_carry_no_option_list(tmp_path) -> None:
    """An agent answering set_mode / set_config_option with ``{}``: what was asked for
    becomes current, through the store, and the agent's own option objects are not mutated."""
    agent = tmp_path / "terse.py"
    agent.write_text(TERSE_AGENT)
    async with open_link([sys.executable, str(agent)]) as link:
        live = await link.new(str(tmp_path))
        seeded = live.store.config_options
        assert [(c.key, c.current) for c in live.settings()] == [("model", "A"), ("mode", "Ask")]
        await link.set_by_name(live, "model", "b")
        await link.set_by_name(live, "mode", "code")  # no mode option: v1 session/set_mode
        assert [(c.key, c.current) for c in live.settings()] == [("model", "B"), ("mode", "Code")]
        assert live.store.current_mode_id == "code"
        assert seeded[0]["currentValue"] == "a"  # a new list replaced it; the old one is intact


def test_updates_acpcli_makes_go_the_agents_way_store_log_view() -> None:
    # A tool call first seen in a permission request, and tool calls marked cancelled when the
    # turn is cancelled, are fed like the agent's updates: the view shows them, the event log
    # records them (as acpcli's own), and the transcript rebuilt from the log is what was shown.
    from acpcli.history.index import Index
    from acpcli.history.records import LOCAL, rebuild
    from acpcli.model import CANCELLED, Store, ToolCall
    from tests.helpers.records import rec

    with Index.open() as index:
        index.upsert_session(rec("s"))
        writer = index.writer()
        view = Collect()
        live = SessionFeed(session_id="s", store=Store(), sink=view, recorder=writer)
        live.feed({"sessionUpdate": "tool_call", "toolCallId": "run", "title": "Run", "status": "in_progress"})
        live.feed({"sessionUpdate": "tool_call", "toolCallId": "done", "title": "Done", "status": "completed"})
        live.asked_about({"toolCallId": "write", "title": "Write hello.txt", "kind": "edit", "status": "pending"})
        assert len(view.changes) == 3  # the asked-about call was shown as it was made
        live.cancel_unfinished_tools()
        shown = [(e.tool_call_id, e.status) for e in live.store.entries if isinstance(e, ToolCall)]
        assert shown == [("run", CANCELLED), ("done", "completed"), ("write", CANCELLED)]
        assert len(view.changes) == 5
        writer.flush()
        kinds = [kind for kind, _ in index.events("s")]
        assert kinds == ["tool_call", "tool_call", LOCAL, LOCAL, LOCAL]
        rebuilt = [(e.tool_call_id, e.status) for e in rebuild(index, "s").entries if isinstance(e, ToolCall)]
        assert rebuilt == shown
        writer.close()


def test_a_turn_ends_with_every_one_of_its_tool_calls_in_a_final_state() -> None:
    # Issue 32.13: what the agent leaves pending or running when the turn ends (a refused
    # permission; a call announced after the cancel) is marked cancelled, shown and recorded;
    # a call from before the turn (a replayed one, an older record) is left as it was.
    from acpcli.history.index import Index
    from acpcli.history.records import LOCAL, TURN_END, rebuild
    from acpcli.model import CANCELLED, Store, ToolCall
    from tests.helpers.records import rec

    with Index.open() as index:
        index.upsert_session(rec("s"))
        writer = index.writer()
        view = Collect()
        live = SessionFeed(session_id="s", store=Store(), sink=view, recorder=writer)
        live.feed({"sessionUpdate": "tool_call", "toolCallId": "before", "title": "Before", "status": "pending"})
        live.start_turn()
        live.feed({"sessionUpdate": "tool_call", "toolCallId": "asked", "title": "Asked", "status": "pending"})
        live.feed({"sessionUpdate": "tool_call", "toolCallId": "ran", "title": "Ran", "status": "in_progress"})
        live.feed({"sessionUpdate": "tool_call", "toolCallId": "done", "title": "Done", "status": "completed"})
        shown_before = len(view.changes)
        live.end_turn("end_turn")
        states = [(e.tool_call_id, e.status) for e in live.store.entries if isinstance(e, ToolCall)]
        # a call still running at a normal end may be a background task that reports later
        assert states == [("before", "pending"), ("asked", CANCELLED), ("ran", "in_progress"), ("done", "completed")]
        assert len(view.changes) == shown_before + 1  # the one of this turn, drawn
        writer.flush()
        kinds = [kind for kind, _ in index.events("s")]
        assert kinds[-2:] == [LOCAL, TURN_END]  # recorded before the turn's end
        rebuilt = [(e.tool_call_id, e.status) for e in rebuild(index, "s").entries if isinstance(e, ToolCall)]
        assert rebuilt == states
        # a turn that did not end normally (cancelled, failed) leaves nothing running either
        live.start_turn()
        live.feed({"sessionUpdate": "tool_call", "toolCallId": "late", "title": "Late", "status": "in_progress"})
        live.end_turn(None, "the agent went away")
        assert live.store.tool_call("late").status == CANCELLED  # type: ignore[union-attr]
        writer.close()
