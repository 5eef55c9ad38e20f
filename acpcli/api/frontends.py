"""What the library's own front ends, the REPL (:mod:`acpcli.repl`) and the live-session host
(:mod:`acpcli.host`), take from the session layer: they import it from here, never from
:mod:`acpcli.session` (tests/test_layers.py), so the façade is the one door below them.

Not public API (``acpcli/__init__.py`` exports that): the conversation (:class:`Conversation`,
one live session with its link, index and writer), the session's pieces a host drives itself
(the link, attach, the inputs), the policy deciders, and the helpers of a turn and its outcome.
Each name is the session layer's own, imported on first use (as ``acpcli/__init__.py`` does),
so that a front end pays for no more of the session layer than it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpcli.session.agent import AgentChoice, agent_label, agent_stderr_log, env_extra
    from acpcli.session.attach import attach, fork_recorded
    from acpcli.session.context import Run
    from acpcli.session.conversation import Conversation, ConversationLink
    from acpcli.session.inputs import Options, for_prompt, for_reattach
    from acpcli.session.link import AgentLink, open_link
    from acpcli.session.live import LiveSession
    from acpcli.session.outcome import NO_ANSWER, reopened_line, said_anything, turn_exit
    from acpcli.session.policy import decider_for, elicitor_for
    from acpcli.session.run import _exporter as exporter
    from acpcli.session.run import closed_line, continued_by
    from acpcli.session.turn import (
        LATE_LIMIT,
        LATE_QUIET,
        Withdrawn,
        after_turn,
        claim,
        late_updates_possible,
        title_from_prompt,
    )

__all__ = [
    "LATE_LIMIT",
    "LATE_QUIET",
    "NO_ANSWER",
    "AgentChoice",
    "AgentLink",
    "Conversation",
    "ConversationLink",
    "LiveSession",
    "Options",
    "Run",
    "Withdrawn",
    "after_turn",
    "agent_label",
    "agent_stderr_log",
    "attach",
    "claim",
    "closed_line",
    "continued_by",
    "decider_for",
    "elicitor_for",
    "env_extra",
    "exporter",
    "for_prompt",
    "for_reattach",
    "fork_recorded",
    "late_updates_possible",
    "open_link",
    "reopened_line",
    "said_anything",
    "title_from_prompt",
    "turn_exit",
]

#: Where each name lives in the session layer (``exporter`` is ``run._exporter``).
_WHERE = {
    **dict.fromkeys(("AgentChoice", "agent_label", "agent_stderr_log", "env_extra"), "acpcli.session.agent"),
    **dict.fromkeys(("attach", "fork_recorded"), "acpcli.session.attach"),
    "Run": "acpcli.session.context",
    **dict.fromkeys(("Conversation", "ConversationLink"), "acpcli.session.conversation"),
    **dict.fromkeys(("Options", "for_prompt", "for_reattach"), "acpcli.session.inputs"),
    **dict.fromkeys(("AgentLink", "open_link"), "acpcli.session.link"),
    "LiveSession": "acpcli.session.live",
    **dict.fromkeys(("NO_ANSWER", "reopened_line", "said_anything", "turn_exit"), "acpcli.session.outcome"),
    **dict.fromkeys(("decider_for", "elicitor_for"), "acpcli.session.policy"),
    **dict.fromkeys(("exporter", "closed_line", "continued_by"), "acpcli.session.run"),
    **dict.fromkeys(
        (
            "LATE_LIMIT", "LATE_QUIET", "Withdrawn", "after_turn", "claim", "late_updates_possible",
            "title_from_prompt",
        ),
        "acpcli.session.turn",
    ),
}

if not TYPE_CHECKING:  # type checkers see the imports above

    def __getattr__(name: str) -> object:
        where = _WHERE.get(name)
        if where is None:
            raise AttributeError(f"module 'acpcli.api.frontends' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(where), "_exporter" if name == "exporter" else name)
        globals()[name] = value  # once: later reads do not come here
        return value
