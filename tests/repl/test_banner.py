"""The REPL's last words: the command that comes back to the session fits what the agent can do."""

from __future__ import annotations

from acpcli.repl.banner import come_back
from acpcli.wire.negotiate import AgentFeatures

SESSION = "0123456789abcdef0123"


def features(**known: object) -> AgentFeatures:
    return AgentFeatures(protocol_version=1, reading="v1", **known)  # type: ignore[arg-type]


def test_come_back_with_resume_else_load_else_show() -> None:
    assert come_back(features(resume=True, load_via="session/load"), SESSION).startswith("acpcli resume ")
    assert come_back(features(load_via="session/load"), SESSION).startswith("acpcli load ")
    neither = come_back(features(agent_title="Gadget"), SESSION)
    assert neither.startswith("acpcli show ") and "Gadget can neither resume nor load a session" in neither
