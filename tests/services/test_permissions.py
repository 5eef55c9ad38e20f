"""PermissionPolicy: allow / deny / read-only / ask, "always" memory per session, options the
agent did not offer; and one decision end to end with an SDK-written agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from acpcli.errors import RpcError, UsageError
from acpcli.model import Message, Store
from acpcli.protocol import wire
from acpcli.services.permissions import (
    CANCELLED,
    CHANGE_POLICY_UNATTENDED,
    POLICIES,
    PermissionPolicy,
    Refusals,
    permission_decider,
    pick,
    selected,
)
from acpcli.session.feed import SessionFeed
from acpcli.session.link import open_link
from tests.peers import agent_argv


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


ALLOW_ONCE = {"optionId": "a1", "name": "Allow", "kind": "allow_once"}
ALLOW_ALWAYS = {"optionId": "a2", "name": "Always allow", "kind": "allow_always"}
REJECT_ONCE = {"optionId": "r1", "name": "Reject", "kind": "reject_once"}
REJECT_ALWAYS = {"optionId": "r2", "name": "Always reject", "kind": "reject_always"}
ALL = [ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS]


def session(session_id: str = "s1") -> SessionFeed:
    return SessionFeed(session_id=session_id, store=Store())


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

    async def __call__(self, live: SessionFeed, params: dict[str, Any]) -> dict[str, Any] | None:
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


def run_request(command: str, kind: str = "execute", tool_id: str = "call-1", **extra: Any) -> dict[str, Any]:
    """A request to run ``command``, as codex and claude send one (title and rawInput)."""
    call: dict[str, Any] = {
        "toolCallId": tool_id, "title": f"Run {command}", "kind": kind, "rawInput": {"command": command}, **extra
    }
    return {"sessionId": "s1", "toolCall": call, "options": ALL}


@pytest.mark.anyio
async def test_always_is_remembered_for_exactly_the_same_request_never_for_a_kind() -> None:
    """Issue 22: "always" for ``touch x`` answered the next shell request, ``rm -f
    important.txt``, without asking. Only the very same request is answered from memory."""
    asker = FakeAsker("a2", "r1", "r2", "a1", "a1", "a1")
    policy = PermissionPolicy("ask", asker)
    s1, s2 = session("s1"), session("s2")
    assert chosen(await policy(s1, run_request("touch created.txt"))) == "a2"
    # The same request again (another tool call id): answered from memory, nobody asked.
    assert chosen(await policy(s1, run_request("touch created.txt", tool_id="call-2"))) == "a2"
    assert len(asker.calls) == 1
    # Another command of the same kind: asked again.
    assert chosen(await policy(s1, run_request("rm -f important.txt"))) == "r1"
    assert len(asker.calls) == 2
    # The same title but another rawInput command, or other locations: asked again.
    sneaky = run_request("touch created.txt")
    sneaky["toolCall"]["rawInput"] = {"command": "rm -rf ~"}
    assert chosen(await policy(s1, sneaky)) == "r2"
    elsewhere = run_request("touch created.txt", locations=[{"path": "/etc/passwd"}])
    assert chosen(await policy(s1, elsewhere)) == "a1"
    assert len(asker.calls) == 4
    # reject_always is remembered for its request too.
    assert chosen(await policy(s1, sneaky)) == "r2"
    assert len(asker.calls) == 4
    # If the agent now offers only "once", the remembered answer picks that.
    once = run_request("touch created.txt")
    once["options"] = [ALLOW_ONCE, REJECT_ONCE]
    assert chosen(await policy(s1, once)) == "a1"
    assert len(asker.calls) == 4
    # Another session starts with no memory.
    assert chosen(await policy(s2, run_request("touch created.txt"))) == "a1"
    assert len(asker.calls) == 5


@pytest.mark.anyio
async def test_an_id_only_request_is_the_call_it_was_announced_as() -> None:
    asker = FakeAsker("a2", "a1")
    policy = PermissionPolicy("ask", asker)
    live = session()
    live.feed({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Run ls", "kind": "execute",
               "rawInput": {"command": "ls"}})
    live.feed({"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "Run ls", "kind": "execute",
               "rawInput": {"command": "ls"}})
    live.feed({"sessionUpdate": "tool_call", "toolCallId": "c3", "title": "Run rm", "kind": "execute",
               "rawInput": {"command": "rm x"}})
    assert chosen(await policy(live, request(None, tool_id="c1"))) == "a2"
    assert chosen(await policy(live, request(None, tool_id="c2"))) == "a2"  # the same call: memory
    assert len(asker.calls) == 1
    assert chosen(await policy(live, request(None, tool_id="c3"))) == "a1"  # another: asked
    assert len(asker.calls) == 2


@pytest.mark.anyio
async def test_a_request_that_names_nothing_is_never_answered_from_memory() -> None:
    asker = FakeAsker("a2", "a1")
    policy = PermissionPolicy("ask", asker)
    bare = {"sessionId": "s1", "toolCall": {"toolCallId": "never-announced", "kind": "execute"}, "options": ALL}
    assert chosen(await policy(session(), bare)) == "a2"
    other = {"sessionId": "s1", "toolCall": {"toolCallId": "another", "kind": "execute"}, "options": ALL}
    assert chosen(await policy(session(), other)) == "a1"
    assert len(asker.calls) == 2


@pytest.mark.anyio
async def test_policies_answer_alike_and_remember_nothing() -> None:
    policy = PermissionPolicy("deny")
    live = session()
    assert chosen(await policy(live, request("edit", options=[ALLOW_ONCE, REJECT_ALWAYS]))) == "r2"
    assert chosen(await policy(live, request("edit"))) == "r1"  # the policy's own pick
    assert policy._always == {}


@pytest.mark.anyio
async def test_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from acpcli.services import permissions

    monkeypatch.setattr(permissions, "MAX_REMEMBERED", 3)
    policy = PermissionPolicy("ask", FakeAsker(*["a2"] * 5))
    live = session()
    for n in range(5):
        await policy(live, run_request(f"echo {n}"))
    assert len(policy._always) == 3


@pytest.mark.anyio
async def test_every_answer_on_the_users_behalf_is_one_line() -> None:
    """allow, read-only and memory answers each say what was answered; deny says it refused."""
    lines: list[str] = []
    allow = PermissionPolicy("allow", refusals=Refusals(lines.append))
    await allow(session(), run_request("touch x\x1b]0;evil\x07"))
    assert len(lines) == 1
    assert lines[0].startswith("acpcli: allowed 'Run touch x") and "with 'Allow' (policy allow)" in lines[0], lines
    assert "\x1b" not in lines[0] and "\x07" not in lines[0]

    lines.clear()
    await PermissionPolicy("allow", refusals=Refusals(lines.append))(session(), request(options=[REJECT_ONCE]))
    assert lines == ["acpcli: could not allow 'do something' (kind edit): the agent offers no allow option "
                     "(policy allow); answered cancelled"]

    lines.clear()
    refusals = Refusals(lines.append)
    read_only = PermissionPolicy("read-only", refusals=refusals)
    await read_only(session(), request("read"))
    await read_only(session(), request("edit"))
    assert lines[0] == "acpcli: allowed 'do something' (kind read) with 'Allow' (policy read-only)"
    assert lines[1].startswith("acpcli: refused permission for 'do something' (kind edit) (policy read-only)")
    assert refusals.count == 1  # only refusals count towards the end-of-turn hint

    lines.clear()
    ask = PermissionPolicy("ask", FakeAsker("r2"), refusals=Refusals(lines.append))
    live = session()
    await ask(live, run_request("ls"))
    assert lines == []  # the person chose: nothing to say
    await ask(live, run_request("ls"))
    assert lines == ["acpcli: rejected 'Run ls' (kind execute) from memory: you chose 'Always reject' for this same request"]


@pytest.mark.anyio
async def test_ask_with_nobody_to_ask_says_so_in_its_refusals() -> None:
    lines: list[str] = []
    policy = PermissionPolicy("ask", refusals=Refusals(lines.append, change=CHANGE_POLICY_UNATTENDED))
    assert policy.policy == "deny" and policy.unattended
    assert chosen(await policy(session(), request())) == "r1"
    assert lines == [
        "acpcli: refused permission for 'do something' (kind edit) (policy deny): "
        + CHANGE_POLICY_UNATTENDED
    ]
    assert "--permissions ask" not in lines[0]


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
