"""The permission policy of one command run: the flag, the config, or who can be asked.

Kept apart from :mod:`acpcli.session.launch` so that a command which only talks to a live
session's host (:mod:`acpcli.host.client`) can decide without importing the session setup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpcli.services.permissions import PermissionPolicy
    from acpcli.session.agent import AgentChoice
    from acpcli.session.context import Invocation
    from acpcli.session.link import Elicitor


def decider_for(run: Invocation, agent: AgentChoice | None = None) -> PermissionPolicy:
    """The run's permission policy: ``--permissions``, else the ``permissions`` config key (the
    agent's, then the top-level one), else ``ask`` on a terminal and ``deny`` in scripts. Each
    refusal by the policy is one line on stderr (:class:`~acpcli.services.permissions.Refusals`)."""
    from acpcli.services.permissions import (
        CHANGE_POLICY,
        CHANGE_POLICY_UNATTENDED,
        Refusals,
        permission_decider,
    )

    # A conversation's person, else someone at the terminal a one-shot command runs on.
    ask = run.person.ask_permission if run.person is not None else run.asker
    policy = run.permissions
    if policy is None and agent is not None:
        from acpcli.config import configured_permissions
        from acpcli.errors import ConfigError

        try:
            policy = configured_permissions(agent.name if agent.name != "cmd" else None, agent.argv)
        except ConfigError as err:
            # A broken config must not stop a --cmd run that needs none of it; the default
            # (ask on a terminal, deny in scripts) is never looser than what it could have said.
            run.say(f"acpcli: warning: the permissions config key is not used: {err}")
    if run.refusals is None:
        run.refusals = Refusals(run.say, change=CHANGE_POLICY if ask is not None else CHANGE_POLICY_UNATTENDED)
    return permission_decider(run.env, policy, ask, run.refusals)


def elicitor_for(run: Invocation) -> Elicitor:
    """Who answers the agent's requests for input (``elicitation/create``): ``--answer`` /
    ``--answers`` when given (a script's answers win, even on a terminal), else the person
    (the REPL's form, or ``prompt``'s on a terminal), else nobody: declined, one stderr line."""
    from acpcli.services.elicitation import scripted

    chosen: Elicitor
    if run.answers is None:
        if run.person is not None:
            chosen = run.person.elicit
            return chosen
        if run.form_filler is not None:
            chosen = run.form_filler
            return chosen
    chosen = scripted(run.answers, run.say)
    return chosen
