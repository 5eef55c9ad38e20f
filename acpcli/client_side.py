"""What the agent may ask of the client: permission decisions (fs and terminals to come).

Policies (``--permissions``):

``ask``        show the request and every option; the person picks (the default on a terminal)
``allow``      pick the agent's ``allow_once`` option (``allow_always`` if that is all it offers)
``deny``       pick the agent's ``reject_once`` option (``reject_always`` if that is all) — a real
               rejection the agent understands, never a fake ``cancelled``
``read-only``  allow tool calls of kind read / search / fetch / think, reject the rest

"Always" answers are remembered per session: a later request for the same tool kind is answered
the same way without asking again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from acpcli.errors import RpcError, UsageError

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.session import LiveSession

POLICIES = ("ask", "allow", "deny", "read-only")
READ_ONLY_KINDS = frozenset({"read", "search", "fetch", "think"})

Asker = Callable[["LiveSession", dict[str, Any]], Awaitable[dict[str, Any] | None]]


def _options(params: dict[str, Any]) -> list[dict[str, Any]]:
    options = params.get("options")
    if not isinstance(options, list):
        raise RpcError(RpcError.INVALID_PARAMS, "session/request_permission without options")
    return [o for o in options if isinstance(o, dict) and isinstance(o.get("optionId"), str)]


def pick(options: list[dict[str, Any]], *kinds: str) -> dict[str, Any] | None:
    """The first option whose ``kind`` is the first of ``kinds`` present."""
    for kind in kinds:
        for option in options:
            if option.get("kind") == kind:
                return option
    return None


def selected(option: dict[str, Any]) -> dict[str, Any]:
    """A ``selected`` outcome for an option."""
    return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}


CANCELLED = {"outcome": {"outcome": "cancelled"}}


def tool_kind(params: dict[str, Any]) -> str:
    call = params.get("toolCall")
    kind = call.get("kind") if isinstance(call, dict) else None
    return kind if isinstance(kind, str) else "other"


class PermissionPolicy:
    """Answers permission requests by policy, remembering "always" answers per session."""

    def __init__(self, policy: str, ask: Asker | None = None) -> None:
        if policy not in POLICIES:
            raise UsageError(f"--permissions must be one of {', '.join(POLICIES)} (got {policy!r})")
        if policy == "ask" and ask is None:
            policy = "deny"  # nobody to ask
        self.policy = policy
        self._ask = ask
        self._always: dict[tuple[str, str], str] = {}  # (session, tool kind) -> "allow"/"reject"

    async def __call__(self, live: LiveSession, params: dict[str, Any]) -> dict[str, Any]:
        options = _options(params)
        kind = tool_kind(params)
        remembered = self._always.get((live.session_id, kind))
        if remembered is not None:
            option = pick(options, f"{remembered}_always", f"{remembered}_once")
            if option is not None:
                return selected(option)
        if self.policy == "allow" or (self.policy == "read-only" and kind in READ_ONLY_KINDS):
            option = pick(options, "allow_once", "allow_always")
        elif self.policy in ("deny", "read-only"):
            option = pick(options, "reject_once", "reject_always")
        else:
            assert self._ask is not None
            answer = await self._ask(live, params)
            if answer is None:
                return CANCELLED
            option_id = answer.get("outcome", {}).get("optionId")
            option = next((o for o in options if o["optionId"] == option_id), None)
            if option is None:
                return answer
        if option is None:
            # The agent offered nothing of the kind the policy needs: do not invent one.
            return CANCELLED
        if option.get("kind") in ("allow_always", "reject_always"):
            self._always[(live.session_id, kind)] = option["kind"].split("_")[0]
        return selected(option)


def permission_decider(env: Environment, policy: str | None, ask: Asker | None = None) -> PermissionPolicy:
    """The policy for this run: ``ask`` on a terminal, ``deny`` when nobody can answer."""
    if policy is None:
        policy = "ask" if env.interactive and ask is not None else "deny"
    return PermissionPolicy(policy, ask)
