"""The small deciding modules of the session layer: acpcli.session.agent (which agent, what it
is called), acpcli.session.policy (who answers permission questions and forms) and
acpcli.session.outcome (how a one-turn command ends)."""

from __future__ import annotations

from typing import Any

import pytest

from acpcli.errors import Interrupted, StepTimeout, TurnStopped, UsageError
from acpcli.model import Store, TurnEnd
from acpcli.paths import config_path
from acpcli.services.permissions import CHANGE_POLICY_UNATTENDED, Refusals
from acpcli.session.agent import (
    AgentChoice,
    agent_arg,
    agent_label,
    pick_agent,
    recorded_agent,
    starting_name,
)
from acpcli.session.context import Invocation
from acpcli.session.outcome import NO_ANSWER, said_anything, turn_exit
from acpcli.session.policy import decider_for, elicitor_for
from acpcli.wire.negotiate import AgentFeatures
from tests.helpers.records import rec
from tests.session.demo_peer import quiet_env, stderr_of


def write_config(text: str) -> None:
    config_path().write_text(text, encoding="utf-8")


# -- agent ------------------------------------------------------------------------------------


def test_no_agent_chosen_names_the_known_ones() -> None:
    with pytest.raises(UsageError, match="no agent chosen") as err:
        pick_agent(None, None)
    assert "demo" in (err.value.hint or "")


def test_the_default_agent_of_the_config_is_picked() -> None:
    write_config('default_agent = "mine"\n[agents.mine]\ncommand = ["my-agent", "--acp"]\n')
    choice = pick_agent(None, None)
    assert (choice.name, choice.argv) == ("mine", ["my-agent", "--acp"])
    recorded = AgentChoice("recorded", ["x"])
    assert pick_agent(None, None, default=recorded) is recorded  # a continued session's agent wins


def test_a_recorded_agent_gets_its_configured_env_only_while_it_runs_the_same_command() -> None:
    write_config('[agents.mine]\ncommand = ["my-agent"]\nenv = { TOKEN = "t" }\n')
    same = recorded_agent(rec("s", agent="mine", argv=["my-agent"]))
    assert same.env == {"TOKEN": "t"}
    changed = recorded_agent(rec("s", agent="mine", argv=["my-old-agent"]))
    assert (changed.argv, changed.env) == (["my-old-agent"], {})


def test_a_broken_config_does_not_stop_a_recorded_session() -> None:
    write_config("this is [ not toml")
    assert recorded_agent(rec("s", agent="mine", argv=["my-agent"])).argv == ["my-agent"]


def test_agent_arg_names_an_agent_while_its_name_runs_it() -> None:
    write_config('[agents.mine]\ncommand = ["my-agent"]\n')
    assert agent_arg(AgentChoice("mine", ["my-agent"])) == "mine"
    assert agent_arg(AgentChoice("mine", ["my-old-agent", "a b"])) == "--cmd 'my-old-agent '\"'\"'a b'\"'\"''"


def test_agent_label_of_a_cmd_agent_is_its_own_name_else_its_program() -> None:
    named = AgentFeatures(protocol_version=1, reading="v1", agent_name="codex-acp")
    anonymous = AgentFeatures(protocol_version=1, reading="v1")
    assert agent_label(AgentChoice("claude", ["claude-acp"]), named) == "claude"
    assert agent_label(AgentChoice("cmd", ["/usr/bin/my-agent"]), named) == "codex-acp"
    assert agent_label(AgentChoice("cmd", ["/usr/bin/my-agent", "--acp"]), anonymous) == "my-agent"
    assert agent_label(AgentChoice("cmd", ["python3", "/opt/x/launch.py", "codex"]), anonymous) == "codex"


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["python3", "/opt/x/launch.py", "claude"], "claude"),
        (["python3", "/opt/x/launch.py", "codex", "--home", "/tmp/h"], "codex"),
        (["python3", "-m", "pkg.agent", "--delay", "0"], "pkg.agent"),
        (["node", "/srv/agent/index.js", "/etc/agent.json"], "index.js"),
        (["npx", "-y", "@scope/agent"], "@scope/agent"),
        (["env", "A=1", "uvx", "fast-agent", "--acp"], "fast-agent"),
        (["sh", "-c", "exec my-agent --acp"], "the agent"),
    ],
)
def test_starting_name_of_a_cmd_agent(argv: list[str], name: str) -> None:
    assert starting_name(AgentChoice("cmd", argv)) == name
    assert starting_name(AgentChoice("mine", argv)) == "mine"


# -- policy -----------------------------------------------------------------------------------


async def ask_person(live: Any, params: dict[str, Any]) -> dict[str, Any] | None:
    return None


def test_a_script_is_denied_by_default_and_told_why() -> None:
    run = Invocation(env=quiet_env())
    policy = decider_for(run, AgentChoice("cmd", ["x"]))
    assert policy.policy == "deny" and policy.unattended is False
    assert run.refusals is not None and run.refusals.change == CHANGE_POLICY_UNATTENDED


def test_the_flag_wins_over_the_config() -> None:
    write_config('permissions = "read-only"\n[agents.mine]\ncommand = ["m"]\npermissions = "allow"\n')
    mine = AgentChoice("mine", ["m"])
    assert decider_for(Invocation(env=quiet_env()), mine).policy == "allow"  # the agent's own key
    assert decider_for(Invocation(env=quiet_env()), AgentChoice("cmd", ["other"])).policy == "read-only"
    assert decider_for(Invocation(env=quiet_env(), permissions="deny"), mine).policy == "deny"


def test_a_broken_config_warns_and_falls_back_to_the_default() -> None:
    write_config('permissions = "sometimes"\n')
    run = Invocation(env=quiet_env())
    assert decider_for(run, AgentChoice("cmd", ["x"])).policy == "deny"
    assert "acpcli: warning: the permissions config key is not used" in stderr_of(run)


def test_ask_without_anyone_to_ask_is_deny() -> None:
    policy = decider_for(Invocation(env=quiet_env(), permissions="ask"))
    assert (policy.policy, policy.unattended) == ("deny", True)
    asked = decider_for(Invocation(env=quiet_env(), permissions="ask", asker=ask_person))
    assert (asked.policy, asked.unattended) == ("ask", False)


def test_the_scripts_answers_win_over_the_person() -> None:
    async def fill(live: Any, request: Any) -> dict[str, Any] | None:
        return None

    assert elicitor_for(Invocation(env=quiet_env(), form_filler=fill)) is fill
    assert elicitor_for(Invocation(env=quiet_env(), form_filler=fill, answers={"size": "L"})) is not fill


# -- outcome ----------------------------------------------------------------------------------


def entries(*updates: dict[str, Any]) -> list[object]:
    """A transcript's entries, made by the store from the agent's updates."""
    store = Store()
    for update in updates:
        store.apply(update)
    return list(store.entries)


def chunk(kind: str, value: str) -> dict[str, Any]:
    return {"sessionUpdate": f"{kind}_chunk", "content": {"type": "text", "text": value}}


def test_said_anything_counts_only_the_agents_words_and_deeds() -> None:
    silent = entries(chunk("user_message", "hi"), chunk("agent_message", "  \n"))
    assert not said_anything([*silent, TurnEnd("end_turn")])
    assert said_anything(entries(chunk("agent_message", "ok")))
    assert said_anything(entries(chunk("agent_thought", "hmm")))
    assert said_anything(entries({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Edit"}))
    image = {"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": "", "mimeType": "image/png"}}
    assert said_anything(entries(image))


def test_turn_exit_of_a_turn_that_ended() -> None:
    run = Invocation(env=quiet_env())
    assert turn_exit("end_turn", run, "s-1", interrupted=False) == 0
    assert stderr_of(run) == ""
    assert turn_exit("end_turn", run, "s-1", interrupted=False, said=False) == 0
    assert stderr_of(run) == f"acpcli: {NO_ANSWER}\n"


def test_turn_exit_of_a_turn_that_did_not() -> None:
    run = Invocation(env=quiet_env(), timeout=5)
    with pytest.raises(Interrupted):
        turn_exit("cancelled", run, "s-1", interrupted=True)
    with pytest.raises(TurnStopped, match="refusal") as ended:
        turn_exit("refusal", run, "s-1", interrupted=False)
    assert ended.value.hint is None
    with pytest.raises(StepTimeout, match=r"outlasted --timeout 5 s: cancelled; .*acpcli show s-1"):
        turn_exit("cancelled", run, "s-1", interrupted=False, timed_out=True, answered=True)
    with pytest.raises(StepTimeout, match="did not answer the cancel and was stopped"):
        turn_exit("cancelled", run, "s-1", interrupted=False, timed_out=True)


def test_a_cancelled_turn_after_a_refusal_says_it_may_be_why() -> None:
    lines: list[str] = []
    run = Invocation(env=quiet_env(), refusals=Refusals(lines.append))
    run.refusals("write a.txt", "deny")  # type: ignore[misc]
    with pytest.raises(TurnStopped) as ended:
        turn_exit("cancelled", run, "s-1", interrupted=False)
    assert (ended.value.hint or "").startswith("acpcli refused a request of the agent (see above)")


def test_a_shared_index_never_gives_the_command_line_it_records() -> None:
    from acpcli.session.agent import named_again

    write_config('[agents.mine]\ncommand = ["my-agent"]\nenv = { TOKEN = "t" }\n')
    planted = ["sh", "-c", "touch /tmp/pwned"]
    mine = recorded_agent(rec("s", agent="mine", argv=planted), private=False)
    assert (mine.name, mine.argv, mine.env) == ("mine", ["my-agent"], {"TOKEN": "t"})
    assert recorded_agent(rec("s", agent="gemini", argv=planted), private=False).argv == ["gemini", "--acp"]
    with pytest.raises(UsageError, match="is not run") as err:
        named_again(rec("s", agent="some-cmd-agent", argv=planted))
    assert "--cmd" in (err.value.hint or "")
    assert recorded_agent(rec("s", agent="some-cmd-agent", argv=planted), private=True).argv == planted  # the user's own
