"""Option and argument declarations shared by several commands (``Annotated`` aliases).

Kept import-light: this module is loaded for ``--help`` and for every completion request.
Their values are coerced without pydantic by :mod:`acpcli.cli.typer_compat`, which covers
the types used here (``str``, ``Path``, lists of those, ``bool`` flags).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from acpcli.cli import completers

Agent = Annotated[
    str | None,
    typer.Option(
        "--agent",
        "-a",
        metavar="NAME",
        help="Agent to run: a built-in (demo, claude, codex, gemini, ...) or one from config.toml. "
        "See `acpcli agents`.",
        autocompletion=completers.agent_names,
        show_default=False,
    ),
]
Cmd = Annotated[
    str | None,
    typer.Option(
        "--cmd",
        metavar="COMMAND",
        help="Run this agent command line instead of a named agent (split like a shell would, "
        "never run through one), e.g. --cmd 'my-agent --acp'.",
        show_default=False,
    ),
]
Cwd = Annotated[
    Path | None,
    typer.Option(
        "--cwd",
        "-C",
        metavar="DIR",
        help="Working directory of the session (default: the current directory; for load/resume "
        "the session's stored cwd).",
        file_okay=False,
        show_default=False,
    ),
]
AddDir = Annotated[
    list[Path] | None,
    typer.Option(
        "--add-dir",
        metavar="DIR",
        help="Extra workspace root for the session (repeatable). Needs an agent that supports "
        "additional directories. On load/resume it replaces the stored list.",
        file_okay=False,
        show_default=False,
    ),
]
NoAddDirs = Annotated[
    bool,
    typer.Option("--no-add-dirs", help="On load/resume: send no additional directories."),
]
NoMcp = Annotated[
    bool,
    typer.Option(
        "--no-mcp",
        help="On load/resume/prompt --session: send no MCP servers (by default those the session "
        "was set up with are sent again, resolved anew).",
    ),
]
McpConfig = Annotated[
    Path | None,
    typer.Option(
        "--mcp-config",
        metavar="FILE",
        help='MCP servers file in the common {"mcpServers": {...}} JSON format (at most 1 MiB).',
        dir_okay=False,
        show_default=False,
    ),
]
Mcp = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp",
        metavar="NAME",
        help="Named MCP server from config.toml [mcp_servers.NAME] (repeatable).",
        show_default=False,
    ),
]
Protocol = Annotated[
    str | None,
    typer.Option(
        "--protocol",
        metavar="auto|1|2|2-latest",
        help="ACP version to speak: auto (offer 2, accept 1), 1, 2, or 2-latest (the later v2 "
        "draft). Default: the agent's configured protocol, else the one the session was "
        "recorded with, else auto.",
        autocompletion=completers.protocols,
        show_default=False,
    ),
]
NoRepl = Annotated[
    bool,
    typer.Option(
        "--no-repl",
        help="Do the work and exit, without the interactive prompt (implied when stdin is not "
        "a terminal).",
    ),
]
NoCheckpoints = Annotated[
    bool,
    typer.Option(
        "--no-checkpoints",
        help="Take no checkpoints of the files around the turns (config: checkpoints = false).",
    ),
]
LogFile = Annotated[
    Path | None,
    typer.Option(
        "--log-file",
        metavar="FILE",
        help="Write every JSON-RPC frame both ways to this file (secrets redacted). "
        "Env: ACPCLI_LOG_FILE.",
        dir_okay=False,
        show_default=False,
    ),
]
# a str, parsed by acpcli.config.keep_alive: acpcli's own coercer (no pydantic) takes str, Path, bool
KeepAlive = Annotated[
    str | None,
    typer.Option(
        "--keep-alive",
        metavar="SECONDS",
        help="Keep the session's agent running in a background host for SECONDS after its last "
        "turn, so the next command on the session starts at once (see `acpcli sessions --live`, "
        "`acpcli stop`). 0: the agent ends with the command. Default: the config's keep_alive, "
        "else 300. Env: ACPCLI_KEEP_ALIVE.",
        show_default=False,
    ),
]
Permissions = Annotated[
    str | None,
    typer.Option(
        "--permissions",
        metavar="POLICY",
        help="Answer permission requests: ask, allow, deny or read-only. deny and read-only "
        "also refuse file writes and terminals. Default: the config's permissions key, else "
        "ask on a terminal and deny otherwise.",
        autocompletion=completers.permission_policies,
        show_default=False,
    ),
]
SessionId = Annotated[
    str,
    typer.Argument(
        metavar="SESSION_ID",
        help="Session id (a unique prefix of a locally recorded id is enough).",
        autocompletion=completers.session_ids,
        show_default=False,
    ),
]
NoFs = Annotated[
    bool,
    typer.Option(
        "--no-fs",
        help="Do not offer file reads/writes to the agent (v1 fs/read_text_file, fs/write_text_file).",
    ),
]
NoTerminal = Annotated[
    bool,
    typer.Option("--no-terminal", help="Do not offer terminals to the agent (v1 terminal/*)."),
]
NoWait = Annotated[
    bool,
    typer.Option(
        "--no-wait",
        help="When another acpcli is running a turn on this session, exit at once (code 18) "
        "instead of waiting for that turn to end.",
    ),
]

Timeout = Annotated[
    str | None,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="Wait at most SECONDS for each answer of the agent to a setup step (initialize, "
        "session/new, load, resume, close, settings); for prompt also for the whole turn, which "
        "is then cancelled (the answer so far is kept) and the command exits 15. 0: no limit. "
        "Default: ACPCLI_TIMEOUT, else the config's timeout key, else 120 for setup steps; "
        "turns unbounded.",
        show_default=False,
    ),
]
