"""What acpcli supports of ACP, method by method, and the capability that gates each: the
table docs/protocol.md shows.

Pure data, importing nothing. ``tests/protocol/test_support.py`` holds it to two things: it
covers every method of the generated method table (:mod:`.methods`, both versions), so a
regenerated schema with a new method fails until it is listed here; and that table says
exactly what this one says, row by row.

Each :class:`Method` names the method (or, for an advertisement acpcli reads, what it
enables), who sends it, its gate in ACP v1 (stable) and in the v2 draft (``"—"``: not in that
version), and what acpcli does with it.
"""

from __future__ import annotations

from dataclasses import dataclass

CLIENT_TO_AGENT = "client → agent"
AGENT_TO_CLIENT = "agent → client"
EITHER = "either side"
NOT_IN = "—"


@dataclass(frozen=True)
class Method:
    name: str
    direction: str
    v1: str
    v2: str
    acpcli: str


METHODS: tuple[Method, ...] = (
    Method("initialize", CLIENT_TO_AGENT, "always", "always", "yes: one request carries the v1 and v2 fields (`--protocol auto`)"),
    Method("authenticate", CLIENT_TO_AGENT, "a method listed in `authMethods` (type `agent`)", NOT_IN, "yes: `acpcli auth`, `/login`; `terminal` methods run the agent's own login instead"),
    Method("auth/login", CLIENT_TO_AGENT, NOT_IN, "a method listed in `authMethods`", "yes"),
    Method("logout", CLIENT_TO_AGENT, "`agentCapabilities.auth.logout`", NOT_IN, "yes: `acpcli auth --logout`, `/logout`"),
    Method("auth/logout", CLIENT_TO_AGENT, NOT_IN, "`authMethods` not empty", "yes"),
    Method("session/new", CLIENT_TO_AGENT, "always", "always", "yes: `new`, `prompt`"),
    Method("session/load", CLIENT_TO_AGENT, "`loadSession`", "`session.load` (latest draft: `session/resume` with `replayFrom`)", "yes: `load`, `prompt --session` without resume"),
    Method("session/resume", CLIENT_TO_AGENT, "`sessionCapabilities.resume`", "`session.resume` (latest draft: `session`)", "yes: `resume`, `prompt --session`, `close`"),
    Method("session/close", CLIENT_TO_AGENT, "`sessionCapabilities.close`", "`session.close` (latest draft: `session`)", "yes: `close`, `/close`"),
    Method("session/list", CLIENT_TO_AGENT, "`sessionCapabilities.list`", "`session.list` (latest draft: `session`)", "yes: `sessions --remote`"),
    Method("session/delete", CLIENT_TO_AGENT, "`sessionCapabilities.delete`", "`session.delete`", "yes: `sessions rm ID --remote`"),
    Method("session/fork", CLIENT_TO_AGENT, "`sessionCapabilities.fork` (unstable)", "`session.fork` (unstable schema)", "yes: `fork`, `/fork`"),
    Method("session/prompt", CLIENT_TO_AGENT, "always; images, audio, embedded files: `promptCapabilities`", "always; images, audio, embedded files: `session.prompt`", "yes"),
    Method("session/prompt during a turn", CLIENT_TO_AGENT, "`agentCapabilities._meta.claudeCode.promptQueueing`", NOT_IN, "yes: the REPL's send-now; queued otherwise"),
    Method("_session/steering", CLIENT_TO_AGENT, "advertised in `initialize`'s `_meta`", "advertised in `initialize`'s `_meta`", "yes: the REPL's send-now; never probed"),
    Method("session/cancel", CLIENT_TO_AGENT, "always", "always", "yes: Ctrl-C"),
    Method("session/set_mode", CLIENT_TO_AGENT, "`modes` offered, no config option of category `mode`", NOT_IN, "yes: `/mode`, `--mode`"),
    Method("session/set_config_option", CLIENT_TO_AGENT, "`configOptions` offered; booleans: the client's `session.configOptions.boolean`", "`configOptions` offered (select only)", "yes: `/config`, `/mode`, `/model`, `--set`; acpcli advertises booleans"),
    Method("session/set_model", CLIENT_TO_AGENT, "`models` offered, no config option of category `model` (unstable; left the stable protocol 2026-06-01)", NOT_IN, "fallback only (gemini 0.61): `/model`, `--model`"),
    Method("session/update", AGENT_TO_CLIENT, "always", "always", "yes: every kind; unknown kinds kept"),
    Method("session/request_permission", AGENT_TO_CLIENT, "always", "always", "yes: the picker, or `--permissions`"),
    Method("fs/read_text_file", AGENT_TO_CLIENT, "the client's `fs.readTextFile`", NOT_IN, "yes, inside the session's roots (`--no-fs` withholds it)"),
    Method("fs/write_text_file", AGENT_TO_CLIENT, "the client's `fs.writeTextFile`", NOT_IN, "yes, inside the session's roots (`--no-fs` withholds it)"),
    Method("terminal/create", AGENT_TO_CLIENT, "the client's `terminal`", NOT_IN, "yes (`--no-terminal` withholds it)"),
    Method("terminal/output", AGENT_TO_CLIENT, "the client's `terminal`", NOT_IN, "yes"),
    Method("terminal/wait_for_exit", AGENT_TO_CLIENT, "the client's `terminal`", NOT_IN, "yes"),
    Method("terminal/kill", AGENT_TO_CLIENT, "the client's `terminal`", NOT_IN, "yes"),
    Method("terminal/release", AGENT_TO_CLIENT, "the client's `terminal`", NOT_IN, "yes"),
    Method("elicitation/create", AGENT_TO_CLIENT, "the client's `elicitation` (`form`, `url`)", NOT_IN, "yes: a form in the REPL; `--answer`, else declined in scripts"),
    Method("elicitation/complete", AGENT_TO_CLIENT, "the client's `elicitation.url`", NOT_IN, "yes"),
    Method("$/cancel_request", EITHER, "always (protocol-level: may be ignored)", "always (protocol-level: may be ignored)", "yes: for a setup step given up with Ctrl-C or a timeout; an agent's cancels answered -32800"),
)


def by_name() -> dict[str, Method]:
    """The table by method name."""
    return {m.name: m for m in METHODS}
