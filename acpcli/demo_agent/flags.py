"""Command-line flags of the demo agent, and the help text that documents its prompt keywords."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

#: Capabilities that ``--without`` can withhold, in the order ``--help`` lists them.
FEATURES = (
    "load", "resume", "close", "list", "additional-directories", "mcp-http", "mcp-stdio",
    "modes", "config-options", "embedded-context",
)

#: Prompt capabilities that are *not* advertised unless ``--with`` turns them on.
EXTRAS = ("image", "audio")

#: How ``session/load`` replays stored messages (see :mod:`acpcli.demo_agent.replay`).
REPLAY_STYLES = ("whole", "chunks", "chunks-then-whole", "whole-then-chunks", "interleaved")

KEYWORDS_HELP = """\
prompt keywords (anywhere in the prompt text, case-insensitive):
  slow            stream a long answer slowly, so cancellation can be tested
  refuse          end the turn with stopReason "refusal"
  max tokens      cut the answer short with stopReason "max_tokens"
  crash           write a line to stderr and exit with status 3 mid-turn
  no-permission   skip the session/request_permission step of the edit
  read PATH       v1: fs/read_text_file PATH (if the client advertised fs.readTextFile)
                  and quote the result
  write PATH      v1: the demo edit targets PATH and, once allowed, is written with
                  fs/write_text_file (if the client advertised fs.writeTextFile)
  run CMD...      v1: terminal/create + wait_for_exit + output + release for the rest of
                  the line (if the client advertised terminal)
  plan mode       switch the session to mode "plan" during the turn and say so
                  (v1 current_mode_update; config_option_update in v1 and v2)
  status          a short turn answering "mode=<id> model=<id> effort=<id>"
  form            v1: ask the client to fill in a coffee order form (elicitation/create,
                  if the client advertised elicitation.form) and say what came back
  Relative paths are resolved against the session's cwd. Every answer also states the
  settings, and lists each non-text block of the prompt ("received resource_link URI",
  "received resource URI (N chars)", "received image MIME (N bytes)").

settings: session setup answers carry v1 "modes" (ask, code, plan) and "configOptions"
  (mode, model, effort; v1 adds the boolean "brave" if the client advertised
  session.configOptions.boolean). session/set_mode (v1) and session/set_config_option
  change them; they are stored with the session. brave=true skips permission prompts.
auth: with --require-auth, session/new, load, resume and prompt fail with -32000
  "Authentication required" until "authenticate" (v1) / "auth/login" (v2) with method
  "demo-login"; the login is kept in <state-dir>/credentials.json for later processes.
  "logout" (v1, advertised as agentCapabilities.auth.logout) / "auth/logout" (v2) or
  --forget-auth remove it.

state: sessions are JSON files in $ACPCLI_HOME/demo-agent/sessions/ (or --state-dir),
  credentials in $ACPCLI_HOME/demo-agent/credentials.json.
logs: stderr only; a client calling something not advertised is logged as
  "UNADVERTISED METHOD CALLED: <method>" (or "UNADVERTISED FIELD SENT: ...").
"""


@dataclass(frozen=True)
class Options:
    """Parsed flags. Built once in ``main`` and passed down; nothing reads ``sys.argv`` again."""

    protocol: int = 2
    without: frozenset[str] = frozenset()
    extras: frozenset[str] = frozenset()
    require_auth: bool = False
    forget_auth: bool = False
    state_dir: Path = field(default_factory=lambda: default_state_dir())
    page_size: int = 50
    replay: str = "chunks"
    load_answers_first: bool = False
    replay_pause: float = 0.0
    v1_message_ids: bool = False
    chunk_size: int = 12
    delay: float = 0.02
    string_ids: bool = False
    v2_flavour: str = "draft"  # "latest": the later v2 draft (no session/load; resume+replayFrom)

    def latest(self, version: int | None) -> bool:
        """True when speaking the later v2 draft on a connection of ``version``."""
        return self.v2_flavour == "latest" and version is not None and version >= 2

    def has(self, feature: str) -> bool:
        """True when ``feature`` (one of :data:`FEATURES`) is advertised."""
        return feature not in self.without

    def offers(self, extra: str) -> bool:
        """True when ``extra`` (one of :data:`EXTRAS`) was turned on with ``--with``."""
        return extra in self.extras


def default_state_dir() -> Path:
    """``<acpcli home>/demo-agent``.

    The home follows the same rule as ``acpcli.paths.home_dir`` (``$ACPCLI_HOME``, else
    the platform config dir), restated here because the demo agent imports no acpcli layer.
    """
    override = os.environ.get("ACPCLI_HOME")
    if override:
        base = Path(override).expanduser()
    elif sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        base = (Path(appdata) if appdata else Path.home() / "AppData" / "Roaming") / "acpcli"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support" / "acpcli"
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME")
        base = (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".config") / "acpcli"
    return base / "demo-agent"


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser; its ``--help`` lists every flag and prompt keyword."""
    p = argparse.ArgumentParser(
        prog="python -m acpcli.demo_agent",
        description=(
            "acpcli's built-in demo agent: a real ACP agent speaking newline-delimited "
            "JSON-RPC on stdin/stdout (protocol v1 and v2). It logs only to stderr and "
            "exits cleanly when stdin closes."
        ),
        epilog=KEYWORDS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--protocol", type=int, choices=(1, 2), default=2,
        help="highest protocol version to speak (default 2; 1 = v1-only, like real agents today)",
    )
    p.add_argument(
        "--without", action="append", choices=FEATURES, default=[], metavar="FEATURE",
        help="withhold a capability (repeatable): " + ", ".join(FEATURES),
    )
    p.add_argument(
        "--with", dest="extras", action="append", choices=EXTRAS, default=[], metavar="CAPABILITY",
        help="also advertise a prompt capability (repeatable): " + ", ".join(EXTRAS),
    )
    p.add_argument(
        "--require-auth", action="store_true",
        help="advertise the demo-login auth method and refuse sessions until logged in",
    )
    p.add_argument(
        "--forget-auth", action="store_true",
        help="delete the stored login (credentials.json in the state dir) at start-up",
    )
    p.add_argument(
        "--state-dir", type=Path, default=None,
        help="where sessions are stored (default $ACPCLI_HOME/demo-agent)",
    )
    p.add_argument("--page-size", type=_positive_int, default=50, help="session/list page size (default 50)")
    p.add_argument(
        "--replay", choices=REPLAY_STYLES, default="chunks",
        help="how session/load replays messages (default chunks)",
    )
    p.add_argument(
        "--load-answers-first", action="store_true",
        help="answer session/load before replaying (gemini's quirk)",
    )
    p.add_argument(
        "--replay-pause", type=float, default=0.0, metavar="SECONDS",
        help="answer session/load first, then replay SECONDS later on another thread (a late replay)",
    )
    p.add_argument(
        "--v1-message-ids", action="store_true",
        help="in v1, put a messageId on message chunks (v2 always does)",
    )
    p.add_argument(
        "--chunk-size", type=_positive_int, default=12,
        help="characters per streamed message chunk (default 12)",
    )
    p.add_argument(
        "--delay", type=float, default=0.02,
        help="seconds between streamed chunks (default 0.02; tests pass 0)",
    )
    p.add_argument(
        "--v2-flavour", choices=("draft", "latest"), default="draft",
        help="which v2 draft to speak in v2: draft (the seed's, with session/load and per-method "
        "markers; default) or latest (session/load removed, capabilities.session implies "
        "resume/close/list, a load is session/resume with replayFrom {type: start})",
    )
    p.add_argument(
        "--string-ids", action="store_true",
        help="use UUID strings as ids of requests sent to the client (like codex-acp)",
    )
    return p


def parse_options(argv: list[str] | None = None) -> Options:
    """Parse ``argv`` (``sys.argv[1:]`` when None) into :class:`Options`."""
    ns = build_parser().parse_args(argv)
    return Options(
        protocol=ns.protocol,
        without=frozenset(ns.without),
        extras=frozenset(ns.extras),
        require_auth=ns.require_auth,
        forget_auth=ns.forget_auth,
        state_dir=ns.state_dir if ns.state_dir is not None else default_state_dir(),
        page_size=ns.page_size,
        replay=ns.replay,
        load_answers_first=ns.load_answers_first,
        replay_pause=max(0.0, ns.replay_pause),
        v1_message_ids=ns.v1_message_ids,
        chunk_size=ns.chunk_size,
        delay=max(0.0, ns.delay),
        string_ids=ns.string_ids,
        v2_flavour=ns.v2_flavour,
    )


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value
