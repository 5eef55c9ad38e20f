"""What the library's own front ends, the command tree (:mod:`acpcli.cli`), the REPL
(:mod:`acpcli.repl`) and the live-session host (:mod:`acpcli.host`), take from the session
layer: they import it from here, never from :mod:`acpcli.session` (tests/test_layers.py), so
the façade is the one door below them. (The command bodies are :mod:`acpcli.api.commands`.)

Not public API (``acpcli/__init__.py`` exports that): the conversation (:class:`Conversation`,
one live session with its link, index and writer), the session's pieces a command or a host drives
itself (the link, attach, the inputs, remote sessions), the policy deciders, and the helpers of a turn and its outcome.
Each name is the session layer's own, imported on first use (as ``acpcli/__init__.py`` does),
so that a front end pays for no more of the session layer than it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpcli.api.commands import _exporter as exporter
    from acpcli.api.commands import closed_line
    from acpcli.session.agent import (
        AgentChoice,
        agent_label,
        agent_stderr_log,
        env_extra,
        pick_agent,
        starting_name,
    )
    from acpcli.session.attach import attach, continued_by, fork_recorded
    from acpcli.session.checkpointing import checkpoint_after_turn, checkpoint_before_turn
    from acpcli.session.context import Invocation, Lifecycle
    from acpcli.session.conversation import Conversation, ConversationLink
    from acpcli.session.inputs import (
        Options,
        SessionInputs,
        for_prompt,
        for_reattach,
        lookup,
        resolve_dir,
    )
    from acpcli.session.link import AgentLink, open_link
    from acpcli.session.linking import link_for
    from acpcli.session.live import LiveSession
    from acpcli.session.outcome import NO_ANSWER, reopened_line, said_anything, turn_exit
    from acpcli.session.policy import decider_for, elicitor_for
    from acpcli.session.remote import delete_remote, list_remote
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
    "Invocation",
    "Lifecycle",
    "LiveSession",
    "Options",
    "SessionInputs",
    "Withdrawn",
    "after_turn",
    "agent_label",
    "agent_stderr_log",
    "attach",
    "checkpoint_after_turn",
    "checkpoint_before_turn",
    "claim",
    "closed_line",
    "continued_by",
    "decider_for",
    "delete_remote",
    "elicitor_for",
    "env_extra",
    "exporter",
    "for_prompt",
    "for_reattach",
    "fork_recorded",
    "late_updates_possible",
    "link_for",
    "list_remote",
    "lookup",
    "open_link",
    "pick_agent",
    "reopened_line",
    "resolve_dir",
    "said_anything",
    "starting_name",
    "title_from_prompt",
    "turn_exit",
]

#: Where each name lives in the session layer (``exporter`` is ``api.commands._exporter``).
_WHERE = {
    **dict.fromkeys(("AgentChoice", "agent_label", "agent_stderr_log", "env_extra", "pick_agent", "starting_name"), "acpcli.session.agent"),
    **dict.fromkeys(("attach", "continued_by", "fork_recorded"), "acpcli.session.attach"),
    **dict.fromkeys(("checkpoint_after_turn", "checkpoint_before_turn"), "acpcli.session.checkpointing"),
    **dict.fromkeys(("Invocation", "Lifecycle"), "acpcli.session.context"),
    **dict.fromkeys(("Conversation", "ConversationLink"), "acpcli.session.conversation"),
    **dict.fromkeys(
        ("Options", "SessionInputs", "for_prompt", "for_reattach", "lookup", "resolve_dir"), "acpcli.session.inputs"
    ),
    "link_for": "acpcli.session.linking",
    **dict.fromkeys(("delete_remote", "list_remote"), "acpcli.session.remote"),
    **dict.fromkeys(("AgentLink", "open_link"), "acpcli.session.link"),
    "LiveSession": "acpcli.session.live",
    **dict.fromkeys(("NO_ANSWER", "reopened_line", "said_anything", "turn_exit"), "acpcli.session.outcome"),
    **dict.fromkeys(("decider_for", "elicitor_for"), "acpcli.session.policy"),
    **dict.fromkeys(("exporter", "closed_line"), "acpcli.api.commands"),
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
