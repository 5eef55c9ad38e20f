"""PermissionPolicy: allow / deny / read-only / ask, "always" memory per session, options the
agent did not offer; and one decision end to end with an SDK-written agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from acpcli.client_side import (
    CANCELLED,
    POLICIES,
    PermissionPolicy,
    permission_decider,
    pick,
    selected,
)
from acpcli.errors import RpcError, UsageError
from acpcli.protocol import wire
from acpcli.session.link import open_link
from acpcli.session.live import LiveSession
from acpcli.store import Message, Store
from tests.agents import agent_argv


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


ALLOW_ONCE = {"optionId": "a1", "name": "Allow", "kind": "allow_once"}
ALLOW_ALWAYS = {"optionId": "a2", "name": "Always allow", "kind": "allow_always"}
REJECT_ONCE = {"optionId": "r1", "name": "Reject", "kind": "reject_once"}
REJECT_ALWAYS = {"optionId": "r2", "name": "Always reject", "kind": "reject_always"}
ALL = [ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS]


def session(session_id: str = "s1") -> LiveSession:
    return LiveSession(session_id=session_id, store=Store())


def request(kind: str | None = "edit", options: list[dict[str, Any]] = ALL, tool_id: str = "call-1") -> dict[str, Any]:
    call: dict[str, Any] = {"toolCallId": tool_id, "title": "do something"}
    if kind is not None:
        call["kind"] = kind
    return {"sessionId": "s1", "toolCall": call, "options": options}


def chosen(answer: dict[str, Any]) -> str:
    assert answer["outcome"]["outcome"] == "selected", answer
    return answer["outcome"]["optionId"]


class FakeAsker:
    """Answers with queued option ids (None → the person gave no answer), recording calls."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, live: LiveSession, params: dict[str, Any]) -> dict[str, Any] | None:
        self.calls.append((live.session_id, params))
        answer = self.answers.pop(0)
        if answer is None or isinstance(answer, dict):
            return answer
        return {"outcome": {"outcome": "selected", "optionId": answer}}


def test_helpers() -> None:
    assert pick(ALL, "reject_always", "reject_once") is REJECT_ALWAYS
    assert pick([ALLOW_ONCE], "reject_once") is None
    assert selected(ALLOW_ONCE) == {"outcome": {"outcome": "selected", "optionId": "a1"}}
    assert POLICIES == ("ask", "allow", "deny", "read-only")


def test_unknown_policy_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        PermissionPolicy("yolo")


@pytest.mark.anyio
async def test_allow_picks_allow_once_and_does_not_remember() -> None:
    policy = PermissionPolicy("allow")
    live = session()
    assert chosen(await policy(live, request())) == "a1"
    assert chosen(await policy(live, request())) == "a1"


@pytest.mark.anyio
async def test_deny_picks_the_agents_reject_option_not_cancelled() -> None:
    policy = PermissionPolicy("deny")
    assert chosen(await policy(session(), request())) == "r1"
    assert chosen(await policy(session(), request(options=[ALLOW_ONCE, REJECT_ALWAYS]))) == "r2"


@pytest.mark.anyio
async def test_missing_option_kinds_are_never_invented_or_swapped() -> None:
    # deny, and the agent offers only allow options: the only refusal left is "cancelled".
    assert await PermissionPolicy("deny")(session(), request(options=[ALLOW_ONCE, ALLOW_ALWAYS])) == CANCELLED
    # allow, and the agent offers only rejections: nothing to allow with.
    assert await PermissionPolicy("allow")(session(), request(options=[REJECT_ONCE])) == CANCELLED
    # Options with unknown kinds or without ids are not picked.
    odd = [{"optionId": "x", "kind": "allow_for_a_while"}, {"kind": "allow_once", "name": "no id"}]
    assert await PermissionPolicy("allow")(session(), request(options=odd)) == CANCELLED
    assert await PermissionPolicy("allow")(session(), request(options=[])) == CANCELLED


@pytest.mark.anyio
async def test_request_without_options_is_invalid_params() -> None:
    params = request()
    del params["options"]
    with pytest.raises(RpcError) as err:
        await PermissionPolicy("allow")(session(), params)
    assert err.value.code == RpcError.INVALID_PARAMS


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["read", "search", "fetch", "think"])
async def test_read_only_allows_reading_kinds(kind: str) -> None:
    assert chosen(await PermissionPolicy("read-only")(session(), request(kind))) == "a1"


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["edit", "delete", "move", "execute", "other", "something_new", None])
async def test_read_only_rejects_everything_else(kind: str | None) -> None:
    assert chosen(await PermissionPolicy("read-only")(session(), request(kind))) == "r1"


@pytest.mark.anyio
async def test_read_only_judges_an_id_only_request_by_the_announced_kind() -> None:
    # v1 agents may send only the toolCallId: the kind came with the earlier tool_call.
    live = session()
    live.feed({"sessionUpdate": "tool_call", "toolCallId": "call-r", "title": "Read a.txt", "kind": "read"})
    live.feed({"sessionUpdate": "tool_call", "toolCallId": "call-e", "title": "Edit a.txt", "kind": "edit"})
    policy = PermissionPolicy("read-only")
    assert chosen(await policy(live, request(None, tool_id="call-r"))) == "a1"
    assert chosen(await policy(live, request(None, tool_id="call-e"))) == "r1"
    assert chosen(await policy(live, request(None, tool_id="never-announced"))) == "r1"


@pytest.mark.anyio
async def test_ask_passes_the_persons_choice() -> None:
    asker = FakeAsker("r1", "a1")
    policy = PermissionPolicy("ask", asker)
    live = session()
    assert chosen(await policy(live, request())) == "r1"
    assert chosen(await policy(live, request())) == "a1"
    assert [sid for sid, _ in asker.calls] == ["s1", "s1"]
    assert asker.calls[0][1]["toolCall"]["toolCallId"] == "call-1"


@pytest.mark.anyio
async def test_ask_without_an_answer_is_cancelled() -> None:
    policy = PermissionPolicy("ask", FakeAsker(None, {"outcome": {"outcome": "cancelled"}}))
    assert await policy(session(), request()) == CANCELLED
    assert await policy(session(), request()) == CANCELLED


@pytest.mark.anyio
async def test_ask_answer_naming_no_offered_option_becomes_a_rejection() -> None:
    policy = PermissionPolicy("ask", FakeAsker("made-up", {"outcome": "garbage"}, "also-made-up"))
    assert chosen(await policy(session(), request())) == "r1"
    assert chosen(await policy(session(), request())) == "r1"
    # ... and with no rejection on offer, nothing is sent that the agent did not offer.
    assert await policy(session(), request(options=[ALLOW_ONCE])) == CANCELLED


@pytest.mark.anyio
async def test_ask_always_is_remembered_per_session_and_kind() -> None:
    asker = FakeAsker("a2", "r2", "a1", "a1")
    policy = PermissionPolicy("ask", asker)
    s1, s2 = session("s1"), session("s2")
    assert chosen(await policy(s1, request("execute"))) == "a2"
    # Same session, same kind: answered from memory, nobody asked; "always" is picked again.
    assert chosen(await policy(s1, request("execute"))) == "a2"
    assert len(asker.calls) == 1
    # If the agent now offers only "once", the remembered answer picks that.
    assert chosen(await policy(s1, request("execute", options=[ALLOW_ONCE, REJECT_ONCE]))) == "a1"
    assert len(asker.calls) == 1
    # A reject-always for another kind is remembered separately.
    assert chosen(await policy(s1, request("edit"))) == "r2"
    assert chosen(await policy(s1, request("edit"))) == "r2"
    assert len(asker.calls) == 2
    # Another session starts with no memory.
    assert chosen(await policy(s2, request("execute"))) == "a1"
    assert chosen(await policy(s2, request("edit"))) == "a1"
    assert len(asker.calls) == 4


@pytest.mark.anyio
async def test_always_options_picked_by_policy_are_remembered_too() -> None:
    policy = PermissionPolicy("deny")
    live = session()
    assert chosen(await policy(live, request("edit", options=[ALLOW_ONCE, REJECT_ALWAYS]))) == "r2"
    # Remembered as a rejection: when the agent next offers both, the "always" reject wins.
    assert chosen(await policy(live, request("edit"))) == "r2"


@pytest.mark.anyio
async def test_ask_with_nobody_to_ask_denies() -> None:
    policy = PermissionPolicy("ask")
    assert policy.policy == "deny"
    assert chosen(await policy(session(), request())) == "r1"


@dataclass
class FakeEnv:
    interactive: bool


def test_permission_decider_defaults() -> None:
    ask = FakeAsker()
    assert permission_decider(FakeEnv(True), None, ask).policy == "ask"
    assert permission_decider(FakeEnv(False), None, ask).policy == "deny"
    assert permission_decider(FakeEnv(True), None, None).policy == "deny"
    assert permission_decider(FakeEnv(False), "allow", None).policy == "allow"
    with pytest.raises(UsageError):
        permission_decider(FakeEnv(False), "maybe", None)


@pytest.mark.anyio
@pytest.mark.parametrize(("policy", "expected"), [("deny", "deny"), ("allow", "allow")])
async def test_policy_answers_an_sdk_agent(tmp_path, policy: str, expected: str) -> None:
    async with open_link(agent_argv("sdk_echo_agent.py"), decide_permission=PermissionPolicy(policy)) as link:
        live = await link.new(str(tmp_path))
        assert await link.prompt(live, [wire.text_block("permission please")]) == "end_turn"
    text = "".join(e.text for e in live.store.entries if isinstance(e, Message) and e.kind == "agent")
    assert text.endswith(f"[permission: {expected}]")
