"""Configuration: named agents and MCP servers.

The user config lives at ``config_path()`` (``<home>/config.toml``; see
:mod:`acpcli.paths` for where home is). A missing file is an empty config; an
unreadable or malformed one is a :class:`~acpcli.errors.ConfigError` whose one-line message
names the file (and the line, when known). Shape::

    default_agent = "myagent"           # optional: used when neither --agent nor --cmd is given
    permissions = "deny"                # optional: --permissions when not given (ask|allow|deny|read-only)
    timeout = 120                       # optional: seconds a setup step may wait for the agent (0: no limit)
    keep_alive = 300                    # optional: seconds a live session's agent stays after its last turn (0: none)
    checkpoints = true                  # optional: checkpoints of the working tree around every turn
    checkpoint_max_file_size = 10485760 # optional: bytes; larger files are left out of checkpoints (0: no limit)
    checkpoint_max_files = 100000       # optional: a tree of more files is not checkpointed (said once)
    checkpoint_time_limit = 10          # optional: seconds a checkpoint may take before checkpoints give up

    [agents.myagent]
    command = ["my-agent", "--acp"]     # argv list (a string is split with shlex)
    args = ["--verbose"]                # optional, appended to command
    env = { FOO = "bar" }               # added to the full user environment
    cwd = "~/src/project"               # optional default cwd
    description = "..."
    protocol = "1"                      # optional: auto, 1, 2 or 2-latest (--protocol's default)
    permissions = "read-only"           # optional: this agent's --permissions default

    [mcp_servers.fs]                    # same shape as an entry of the common mcpServers JSON
    command = "mcp-fs"                  # made absolute at use time (PATH, or relative to cwd)
    args = ["--root", "."]
    env = { TOKEN = "${MY_TOKEN}" }     # ${VAR} expanded from the environment at use time

    [mcp_servers.web]
    url = "https://example.com/mcp"     # type = "http" is implied; "sse" (v1 only) is explicit
    headers = { Authorization = "Bearer ${API_TOKEN}" }

    [mcp_servers.custom]
    type = "_my-transport"              # custom transports start with "_": sent unchanged

``[agents.NAME]`` entries override built-in agents of the same name (see
:func:`builtin_agents`). ``${VAR}`` is expanded in MCP env values, header values, args,
url and command, and in agent env values, when the server or agent is used, never when the
file is read; an undefined variable is a ConfigError naming it; ``$${VAR}`` is a literal
``${VAR}``. Other top-level keys are ignored.

MCP files (``load_mcp_file``) use the JSON shape shared by other MCP clients::

    {"mcpServers": {"fs": {"command": "mcp-fs", "args": [], "env": {"K": "V"}},
                    "web": {"type": "http", "url": "https://...", "headers": {"K": "V"}}}}

:func:`merge_mcp` combines MCP files with the config servers picked by ``--mcp NAME``;
:func:`to_acp_servers` turns named entries into tagged ACP ``mcpServers`` wire objects
(:func:`acpcli.protocol.wire.server_for_version` fits them to the negotiated version when a
request is built). Secrets stay out of the
session index (it stores names only) and out of the wire log and ``--raw``
(:func:`acpcli.wire.redact.redact_frame`, applied by :mod:`acpcli.wire.wiretap`).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acpcli.bounded import (
    MAX_CONFIG_BYTES,
    MAX_DEPTH,
    TooDeep,
    TooLarge,
    check_depth,
    read_file_capped,
)
from acpcli.errors import ConfigError, UsageError
from acpcli.paths import config_path, home_refusal, state_refusal

# --------------------------------------------------------------------------------------
# Agents
# --------------------------------------------------------------------------------------


#: Seconds a setup step waits for the agent unless ``timeout`` / ``ACPCLI_TIMEOUT`` say otherwise.
DEFAULT_TIMEOUT = 120.0
TIMEOUT_ENV = "ACPCLI_TIMEOUT"
#: Seconds a live session's host keeps the agent after its last turn and client (0: no host).
DEFAULT_KEEP_ALIVE = 300.0
KEEP_ALIVE_ENV = "ACPCLI_KEEP_ALIVE"
#: What the ``theme`` key and ``ACPCLI_THEME`` (which wins) take: the colours of code for the
#: terminal's background (``auto``: from ``COLORFGBG`` when it says, else the terminal's own
#: palette; see :mod:`acpcli.render.highlight`).
THEMES = ("auto", "dark", "light")
THEME_ENV = "ACPCLI_THEME"
#: Files larger than this (bytes) are left out of checkpoints unless ``checkpoint_max_file_size``
#: says otherwise (:mod:`acpcli.worktree`).
DEFAULT_CHECKPOINT_MAX_FILE_SIZE = 10 * 1024 * 1024
#: A root holding more files than this is not checkpointed (``checkpoint_max_files``).
DEFAULT_CHECKPOINT_MAX_FILES = 100_000
#: Seconds a checkpoint may take before checkpoints give up on the session (``checkpoint_time_limit``).
DEFAULT_CHECKPOINT_TIME_LIMIT = 10.0


@dataclass
class AgentSpec:
    """How to start one ACP agent. ``env`` holds only the additions to the user's env."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    description: str = ""
    builtin: bool = False
    #: ``protocol = "1" | "2" | "2-latest" | "auto"``: what ``--protocol`` defaults to for it.
    protocol: str | None = None
    permissions: str | None = None  # the agent's default --permissions policy

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The full environment for the agent: ``base`` (default ``os.environ``) plus ``env``.

        ``${VAR}`` in the added values is expanded from ``base``.
        """
        environ = os.environ if base is None else base
        merged = dict(environ)
        for key, value in self.env.items():
            merged[key] = expand_vars(value, environ, f"agent {self.name!r}: env {key}")
        return merged


def builtin_agents() -> dict[str, AgentSpec]:
    """The agents known without any configuration, by name (fresh objects on each call)."""

    from acpcli.processes import python_module_argv  # never `python -m` from the cwd: see there

    def spec(name: str, argv: list[str], description: str) -> AgentSpec:
        return AgentSpec(name=name, argv=argv, description=description, builtin=True)

    return {
        a.name: a
        for a in (
            spec("demo", python_module_argv("acpcli.demo_agent"), "built-in demo agent (offline)"),
            spec("claude", ["claude-agent-acp"], "Claude Agent (claude-agent-acp)"),
            spec("claude-code", ["claude-code-acp"], "Claude Code (claude-code-acp, older package)"),
            spec("codex", ["codex-acp"], "OpenAI Codex (codex-acp)"),
            spec("gemini", ["gemini", "--acp"], "Gemini CLI (gemini --acp)"),
            spec("goose", ["goose", "acp"], "Goose (goose acp)"),
            spec("opencode", ["opencode", "acp"], "OpenCode (opencode acp)"),
        )
    }



@dataclass
class Config:
    """The parsed user configuration.

    ``agents`` holds every known agent: the built-ins, overridden by the user's entries of
    the same name (``builtin`` tells them apart).
    """

    path: Path | None = None
    agents: dict[str, AgentSpec] = field(default_factory=builtin_agents)
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    default_agent: str | None = None
    permissions: str | None = None  # the top-level default --permissions policy
    #: Seconds a setup step (initialize, session setup, settings, listings) may wait for the
    #: agent's answer; 0: no limit. Turns are never bounded by it.
    timeout: float = DEFAULT_TIMEOUT
    #: Seconds a live session's host keeps the agent after its last turn ended and its last
    #: client left (``acpcli.host``); 0: no host, the agent ends with each command.
    keep_alive: float = DEFAULT_KEEP_ALIVE
    #: Where the ACP agent registry is fetched from (``ACPCLI_REGISTRY_URL`` wins over it).
    registry_url: str | None = None
    #: The colours of code: one of :data:`THEMES` (``ACPCLI_THEME`` wins over it).
    theme: str = "auto"
    #: Whether sessions take checkpoints of their working tree (``checkpoints = false``: none).
    checkpoints: bool = True
    #: Files over this many bytes are left out of checkpoints (0: no limit).
    checkpoint_max_file_size: int = DEFAULT_CHECKPOINT_MAX_FILE_SIZE
    #: A root holding more files than this is not checkpointed (checkpoints give up, said once).
    checkpoint_max_files: int = DEFAULT_CHECKPOINT_MAX_FILES
    #: Seconds a checkpoint may take; past them checkpoints give up for the session.
    checkpoint_time_limit: float = DEFAULT_CHECKPOINT_TIME_LIMIT


def resolve_agent(name: str, config: Config | None = None) -> AgentSpec:
    """The agent called ``name`` (user entries first, then built-ins).

    An unknown name is a :class:`UsageError` listing the known names; it is never run as a
    command (that is what ``--cmd`` is for).
    """
    agents = (config or Config()).agents
    spec = agents.get(name)
    if spec is None:
        raise UsageError(
            f"unknown agent {name!r}{did_you_mean(name, agents)}; known agents: {', '.join(sorted(agents))}",
            hint="to run any other ACP agent, pass its command line with --cmd",
        )
    return spec


def agent_from_cmd(cmdline: str) -> AgentSpec:
    """An ad-hoc agent from a ``--cmd 'ARGV...'`` string (shell-style quoting, no shell)."""
    import shlex

    try:
        argv = shlex.split(cmdline)
    except ValueError as exc:
        raise UsageError(f"cannot parse --cmd {cmdline!r}: {exc}") from exc
    if not argv:
        raise UsageError("--cmd needs a command line, e.g. --cmd 'my-agent --acp'")
    return AgentSpec(name=os.path.basename(argv[0]) or argv[0], argv=argv)


def find_executable(spec: AgentSpec, environ: Mapping[str, str] | None = None) -> str | None:
    """The absolute path that would run ``spec.argv[0]``, or ``None`` if there is none.

    A name without a path separator is looked up on ``PATH`` (the agent's own ``PATH`` if
    its env sets one); a relative or absolute path must name an existing executable file
    (relative to the current directory).
    """
    environ = os.environ if environ is None else environ
    search = spec.env.get("PATH")
    if search is not None:
        search = expand_vars(search, environ, f"agent {spec.name!r}: env PATH")
    else:
        search = environ.get("PATH", os.defpath)
    return _which(spec.argv[0], search, Path.cwd())


def _has_sep(program: str) -> bool:
    return os.sep in program or (os.altsep is not None and os.altsep in program)


def _which(program: str, search_path: str | None, base: Path) -> str | None:
    program = os.path.expanduser(program)
    if not program:
        return None
    if _has_sep(program):
        candidate = Path(program) if os.path.isabs(program) else base / program
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
        return None
    found = shutil.which(program, path=search_path)
    return os.path.abspath(found) if found else None


# --------------------------------------------------------------------------------------
# ${VAR} expansion
# --------------------------------------------------------------------------------------

_VAR = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_vars(value: str, environ: Mapping[str, str], where: str) -> str:
    """Replace ``${VAR}`` with ``environ[VAR]``; ``$${VAR}`` is a literal ``${VAR}``.

    An undefined variable is a :class:`ConfigError` naming it and ``where`` it was used.
    """
    if "$" not in value:
        return value

    def sub(m: re.Match[str]) -> str:
        if m.group(1):
            return "${" + m.group(2) + "}"
        name = m.group(2)
        if name not in environ:
            raise ConfigError(f"{where}: environment variable {name} is not set")
        return environ[name]

    return _VAR.sub(sub, value)


# --------------------------------------------------------------------------------------
# Loading the config file
# --------------------------------------------------------------------------------------

_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_PROTOCOLS = ("auto", "1", "2", "2-latest")  # as acpcli.wire.negotiate.PROTOCOL_CHOICES (not imported: start-up path)
_AGENT_KEYS = {"command", "args", "env", "cwd", "description", "protocol", "permissions"}
POLICY_NAMES = ("ask", "allow", "deny", "read-only")  # acpcli.services.permissions.POLICIES, kept cheap here


def _policy(value: Any, where: str) -> str:
    if value not in POLICY_NAMES:
        raise ConfigError(f"{where}: permissions must be one of {', '.join(POLICY_NAMES)} (got {value!r})")
    return str(value)


def load_config(path: Path | None = None) -> Config:
    """Read and validate the TOML config (default ``config_path()``).

    Missing file → empty config. Unreadable, larger than :data:`~acpcli.bounded.MAX_CONFIG_BYTES`
    (read no further), not UTF-8, not TOML, nested too deeply, or the wrong shape →
    :class:`ConfigError` with ``file[:line[:column]]: problem``.
    """
    if path is None:
        # The home's config names the commands acpcli runs: never one another user may write.
        path = config_path()
        refusal = home_refusal() or state_refusal(path, directory=None, name=f"the config file {path}")
        if refusal is not None:
            raise ConfigError(refusal[0], hint=refusal[1])
    try:
        raw = read_file_capped(str(path), MAX_CONFIG_BYTES)
    except FileNotFoundError:
        return Config(path=path)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    except TooLarge as exc:
        raise ConfigError(f"{path} is too large for a config file ({exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        data = tomllib.loads(text)
        _not_too_deep(data, path)
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise ConfigError(f"{path}: {_DEEP}") from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        m = _TOML_POS.search(message)
        if m:
            message = message[: m.start()]
            raise ConfigError(f"{path}:{m.group(1)}:{m.group(2)}: invalid TOML: {message}") from exc
        if message.endswith("(at end of document)"):
            message = message[: -len("(at end of document)")].rstrip()
            last = max(1, len(text.splitlines()))
            raise ConfigError(f"{path}:{last}: invalid TOML: {message} at end of file") from exc
        raise ConfigError(f"{path}: invalid TOML: {message}") from exc
    return _parse_config(data, path, text)


_DEEP = f"nested too deeply (more than {MAX_DEPTH} levels of arrays, tables or objects)"


def _not_too_deep(data: Any, path: Path | str) -> None:
    """Parsed config data nests no deeper than :data:`acpcli.bounded.MAX_DEPTH` (a config or
    MCP file never does; deeper data would only strain whatever walks it later)."""
    try:
        check_depth(data)
    except TooDeep:
        raise ConfigError(f"{path}: {_DEEP}") from None


def _where(path: Path, text: str, table: str, name: str | None = None) -> str:
    """``file:line`` of a ``[table.name]`` header when we can find it, else ``file``."""
    pattern = re.escape(table)
    if name is not None:
        esc = re.escape(name)
        pattern += r"\s*\.\s*(?:" + esc + '|"' + esc + "\"|'" + esc + "')"
    for lineno, line in enumerate(text.splitlines(), 1):
        if re.match(r"\s*\[\s*" + pattern + r"\s*\]", line):
            return f"{path}:{lineno}"
    return str(path)


def _parse_config(data: dict[str, Any], path: Path, text: str) -> Config:
    config = Config(path=path)
    for key, value in data.items():
        if key == "agents":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: 'agents' must be a table of [agents.NAME] entries")
            for name, entry in value.items():
                config.agents[name] = _parse_agent(name, entry, _where(path, text, "agents", name))
        elif key == "default_agent":
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{path}: default_agent must be an agent name (a string)")
            config.default_agent = value
        elif key == "permissions":
            config.permissions = _policy(value, str(path))
        elif key == "timeout":
            config.timeout = _seconds(value, f"{path}: timeout")
        elif key == "keep_alive":
            config.keep_alive = _seconds(value, f"{path}: keep_alive")
        elif key == "theme":
            if value not in THEMES:
                raise ConfigError(f"{path}: theme must be one of {', '.join(THEMES)} (got {value!r})")
            config.theme = value
        elif key == "checkpoints":
            if not isinstance(value, bool):
                raise ConfigError(f"{path}: checkpoints must be true or false (got {value!r})")
            config.checkpoints = value
        elif key == "checkpoint_max_file_size":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{path}: checkpoint_max_file_size must be a number of bytes, 0 or more (0: no limit); got {value!r}")
            config.checkpoint_max_file_size = value
        elif key == "checkpoint_max_files":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{path}: checkpoint_max_files must be a number of files, 1 or more; got {value!r}")
            config.checkpoint_max_files = value
        elif key == "checkpoint_time_limit":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise ConfigError(f"{path}: checkpoint_time_limit must be a number of seconds, more than 0; got {value!r}")
            config.checkpoint_time_limit = float(value)
        elif key == "registry_url":
            if not isinstance(value, str) or not value.startswith(("http://", "https://")):
                raise ConfigError(f"{path}: registry_url must be an http:// or https:// URL (a string)")
            config.registry_url = value
        elif key == "mcp_servers":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: 'mcp_servers' must be a table of [mcp_servers.NAME] entries")
            for name, entry in value.items():
                where = _where(path, text, "mcp_servers", name)
                config.mcp_servers[name] = validate_mcp_entry(name, entry, where)
        else:  # ignored (a newer acpcli's setting read by an older one), but said: a typo?
            _unknown_key(path, key, _TOP_KEYS)
    return config


#: The top-level keys of the config file.
_TOP_KEYS = (
    "agents", "default_agent", "permissions", "timeout", "keep_alive", "registry_url", "mcp_servers",
    "checkpoints", "checkpoint_max_file_size", "checkpoint_max_files", "checkpoint_time_limit",
)
_warned_keys: set[tuple[str, str]] = set()


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` for the known word nearest to ``word``, else ""."""
    import difflib

    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _unknown_key(path: Path, key: str, known: Iterable[str]) -> None:
    """A warning, once per file and key in a process, for a key acpcli does not know."""
    if (str(path), key) in _warned_keys:
        return
    _warned_keys.add((str(path), key))
    from acpcli import notices

    notices.warn("config-key", f"{path}: unknown key {key!r}{did_you_mean(key, known)} is ignored")


def _string_list(value: Any, what: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {what} must be a list of strings")
    return list(value)


def _string_map(value: Any, what: str, where: str) -> dict[str, str]:
    """A ``{name: value}`` table, also accepting ACP's ``[{name, value}]`` list form."""
    if isinstance(value, list) and all(
        isinstance(v, dict) and isinstance(v.get("name"), str) and isinstance(v.get("value"), str)
        for v in value
    ):
        return {v["name"]: v["value"] for v in value}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {what} must be a table of name = \"value\" strings")
    for k, v in value.items():
        if not isinstance(v, str):
            raise ConfigError(f"{where}: {what} value for {k} must be a string")
    return dict(value)


def _parse_agent(name: str, entry: Any, where: str) -> AgentSpec:
    label = f"{where}: agent {name!r}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{label} must be a table")
    unknown = sorted(set(entry) - _AGENT_KEYS)
    if unknown:
        expected = ", ".join(sorted(_AGENT_KEYS))
        raise ConfigError(f"{label}: unknown key {unknown[0]!r} (expected {expected})")
    command = entry.get("command")
    if isinstance(command, str):
        import shlex  # (a config without command strings, as a TAB reads it, needs none)

        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ConfigError(f"{label}: cannot parse command: {exc}") from exc
    elif command is None:
        raise ConfigError(f"{label} has no command")
    else:
        argv = _string_list(command, "command", label)
    argv += _string_list(entry.get("args", []), "args", label)
    if not argv:
        raise ConfigError(f"{label}: command is empty")
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigError(f"{label}: cwd must be a string")
    description = entry.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(f"{label}: description must be a string")
    protocol = entry.get("protocol")
    if isinstance(protocol, int) and not isinstance(protocol, bool):
        protocol = str(protocol)  # protocol = 1 reads as well as protocol = "1"
    if protocol is not None and protocol not in _PROTOCOLS:
        raise ConfigError(f"{label}: protocol must be one of {', '.join(_PROTOCOLS)} (got {protocol!r})")
    permissions = entry.get("permissions")
    return AgentSpec(
        name=name,
        argv=argv,
        env=_string_map(entry.get("env", {}), "env", label),
        cwd=os.path.expanduser(cwd) if cwd else None,
        description=description,
        protocol=protocol,
        permissions=_policy(permissions, label) if permissions is not None else None,
    )


def _seconds(value: Any, where: str, error: type[ConfigError | UsageError] = ConfigError) -> float:
    """A number of seconds: 0 (no limit) or a finite positive number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise error(f"{where} must be a number of seconds, 0 or more (0: no limit); got {value!r}")
    return float(value)


def parse_timeout(raw: str | None, option: str = "--timeout") -> float | None:
    """``--timeout SECONDS`` as given on a command line: None when not given, else a finite
    number of seconds, 0 or more (0: no limit); anything else is a :class:`UsageError`."""
    if raw is None:
        return None
    try:
        value = float(raw.strip()) if raw.strip() else -1.0
    except ValueError:
        value = -1.0  # not a number: the same message as for a negative one
    if not 0 <= value < math.inf:
        raise UsageError(f"{option} must be a number of seconds, 0 or more (0: no limit); got {raw!r}")
    return value


def step_timeout(config: Config | None = None, flag: float | None = None) -> float | None:
    """How long a setup step may wait for the agent: ``flag`` (``--timeout``) when given,
    else ``ACPCLI_TIMEOUT``, else the config's ``timeout``, else :data:`DEFAULT_TIMEOUT`;
    None for no limit (0)."""
    if flag is not None:
        return flag or None
    raw = os.environ.get(TIMEOUT_ENV)
    if raw is not None and raw.strip():
        try:
            seconds = _seconds(float(raw), TIMEOUT_ENV)
        except ValueError:
            raise ConfigError(f"{TIMEOUT_ENV} must be a number of seconds, 0 or more (0: no limit); got {raw!r}") from None
    elif config is not None:
        seconds = config.timeout
    else:
        try:
            seconds = load_config().timeout
        except ConfigError:
            seconds = DEFAULT_TIMEOUT  # a broken config is reported where it is needed
    return seconds or None


def keep_alive(flag: str | None = None, config: Config | None = None) -> float:
    """How long a live session's host keeps the agent: ``--keep-alive`` (``flag``), else
    ``ACPCLI_KEEP_ALIVE``, else the config's ``keep_alive``, else :data:`DEFAULT_KEEP_ALIVE`;
    0 means no host (the agent ends with the command)."""
    if flag is not None:
        try:
            seconds = float(flag)
        except ValueError:
            seconds = -1.0
        if not (0 <= seconds < float("inf")):
            raise UsageError(f"--keep-alive must be a number of seconds, 0 or more (0: no live session); got {flag!r}")
        return seconds
    raw = os.environ.get(KEEP_ALIVE_ENV)
    if raw is not None and raw.strip():
        try:
            return _seconds(float(raw), KEEP_ALIVE_ENV)
        except ValueError:
            raise ConfigError(f"{KEEP_ALIVE_ENV} must be a number of seconds, 0 or more (0: no live session); got {raw!r}") from None
    cfg = load_config() if config is None else config
    return cfg.keep_alive


def configured_permissions(agent: str | None, argv: list[str] | None = None, config: Config | None = None) -> str | None:
    """The ``permissions`` policy the config gives an agent: its own ``[agents.NAME]`` key (when
    ``argv``, if given, is still that agent's command line), else the top-level key, else None."""
    cfg = load_config() if config is None else config
    spec = cfg.agents.get(agent) if agent is not None else None
    if spec is not None and spec.permissions is not None and (argv is None or list(spec.argv) == list(argv)):
        return spec.permissions
    return cfg.permissions


# --------------------------------------------------------------------------------------
# MCP servers
# --------------------------------------------------------------------------------------

# Spellings of the HTTP ("streamable HTTP") transport seen in other clients' MCP files.
_HTTP_ALIASES = {"http", "streamable-http", "streamable_http", "streamableHttp"}


def _transport_of(entry: Mapping[str, Any]) -> str | None:
    kind = entry.get("type")
    if isinstance(kind, str):
        if kind in _HTTP_ALIASES:
            return "http"
        return kind
    if "command" in entry:
        return "stdio"
    if "url" in entry:
        return "http"
    return None


def validate_mcp_entry(name: str, entry: Any, where: str = "") -> dict[str, Any]:
    """Check one named MCP server entry (config or JSON shape); return a copy.

    Keys other clients use for their own purposes (``disabled``, ``timeout``, ...) are
    kept but ignored. Custom ``_`` transports are not inspected.
    """
    label = f"{where}: MCP server {name!r}" if where else f"MCP server {name!r}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{label} must be an object")
    transport = _transport_of(entry)
    if transport is None:
        raise ConfigError(f"{label} needs a command (stdio) or a url (http)")
    if "type" in entry and not isinstance(entry["type"], str):
        raise ConfigError(f"{label}: type must be a string")
    out = dict(entry)
    if transport.startswith("_"):
        return out
    if transport == "stdio":
        if not isinstance(entry.get("command"), str) or not entry["command"]:
            raise ConfigError(f"{label}: command must be a non-empty string")
        out["args"] = _string_list(entry.get("args", []), "args", label)
        out["env"] = _string_map(entry.get("env", {}), "env", label)
    elif transport in ("http", "sse"):
        if not isinstance(entry.get("url"), str) or not entry["url"]:
            raise ConfigError(f"{label}: url must be a non-empty string")
        scheme = entry["url"].partition(":")[0] if ":" in entry["url"] else ""
        if scheme.lower() not in ("http", "https"):
            from acpcli.text.safe import clip, safe_line

            shown = f"{safe_line(clip(scheme, 20))}:" if scheme else "a URL without a scheme"
            raise ConfigError(
                f"{label}: url must start with http:// or https:// (an {transport} MCP server is reached "
                f"over HTTP), not {shown}"
            )
        out["headers"] = _string_map(entry.get("headers", {}), "headers", label)
    else:
        raise ConfigError(
            f"{label}: unknown transport type {transport!r} "
            "(expected stdio, http, sse, or a custom type starting with '_')"
        )
    return out


def load_mcp_file(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Read a ``{"mcpServers": {name: entry}}`` JSON file; return its entries by name.

    VS Code's ``{"servers": {...}}`` spelling is accepted too. Unreadable, larger than
    :data:`~acpcli.bounded.MAX_CONFIG_BYTES` (read no further: ``/dev/zero`` costs nothing),
    malformed or too deeply nested JSON, or the wrong shape → :class:`ConfigError` naming the
    file and the problem, on one line.
    """
    path = Path(path)
    try:
        text = read_file_capped(str(path), MAX_CONFIG_BYTES).decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read MCP server file {path}: {exc.strerror or exc}") from exc
    except TooLarge as exc:
        raise ConfigError(f"{path} is too large for an MCP server file ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    import json  # (here: reading the config for a TAB needs no JSON)

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc
    except RecursionError:  # [[[[…]]]]: deeper than the parser goes
        raise ConfigError(f"{path}: {_DEEP}") from None
    _not_too_deep(data, path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object with an \"mcpServers\" object")
    servers = data.get("mcpServers", data.get("servers"))
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: expected an \"mcpServers\" object mapping names to servers")
    return {name: validate_mcp_entry(name, entry, str(path)) for name, entry in servers.items()}


def merge_mcp(
    file_servers: Mapping[str, Mapping[str, Any]],
    config_servers: Mapping[str, Mapping[str, Any]],
    selected_names: Iterable[str],
) -> dict[str, dict[str, Any]]:
    """All servers from MCP files plus the config servers picked with ``--mcp NAME``.

    An unknown name is a :class:`UsageError` listing the configured ones; the same name
    with two different definitions is a UsageError too.
    """
    merged = {name: dict(entry) for name, entry in file_servers.items()}
    for name in selected_names:
        if name not in config_servers:
            known = ", ".join(sorted(config_servers)) or "(none configured)"
            raise UsageError(
                f"unknown MCP server {name!r}; servers in {config_path()}: {known}"
            )
        entry = dict(config_servers[name])
        if name in merged and merged[name] != entry:
            raise UsageError(f"MCP server {name!r} is defined both in an MCP file and in the config")
        merged[name] = entry
    return merged


def _expander(environ: Mapping[str, str], label: str) -> Callable[[str, str], str]:
    def ex(value: str, what: str) -> str:
        return expand_vars(value, environ, f"{label}: {what}")

    return ex


def mcp_transport(server: Mapping[str, Any]) -> str:
    """The transport of an ACP wire MCP server: its ``type``; v1 stdio has none → ``stdio``."""
    kind = server.get("type")
    return kind if isinstance(kind, str) else "stdio"


def to_acp_servers(
    named: Mapping[str, Mapping[str, Any]],
    environ: Mapping[str, str] | None = None,
    *,
    base_dir: str | os.PathLike[str] | None = None,
) -> list[dict[str, Any]]:
    """ACP ``mcpServers`` wire objects for named entries, with ``${VAR}`` expanded.

    * stdio → ``{"type": "stdio", name, command, args, env: [{name, value}]}``; ``command``
      becomes an absolute path (bare names looked up on ``environ["PATH"]``, relative paths
      taken from ``base_dir``, default the current directory), else ConfigError.
    * http / sse → ``{"type", name, url, headers: [{name, value}]}``.
    * ``_``-prefixed custom types are passed through unchanged (``name`` added if absent).

    Every server is tagged (the version is not negotiated yet): the v1 shape (untagged
    stdio) and the check that the agent supports each transport (``sse`` exists in v1 only)
    are made once, where requests are built (:mod:`acpcli.wire.capabilities`). Read the
    transport of any returned server with :func:`mcp_transport`.
    """
    environ = os.environ if environ is None else environ
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    servers: list[dict[str, Any]] = []
    for name, raw in named.items():
        entry = validate_mcp_entry(name, raw, "")
        label = f"MCP server {name!r}"
        transport = _transport_of(entry)
        assert transport is not None  # validate_mcp_entry guarantees it
        if transport.startswith("_"):
            servers.append({"name": name, **entry})
            continue

        ex = _expander(environ, label)
        if transport == "stdio":
            command = ex(entry["command"], "command")
            resolved = _which(command, environ.get("PATH", os.defpath), base)
            if resolved is None:
                where = "not found on PATH" if not _has_sep(command) else "not an executable file"
                raise ConfigError(f"{label}: command {command!r} {where}")
            server: dict[str, Any] = {
                "type": "stdio",
                "name": name,
                "command": resolved,
                "args": [ex(a, "args") for a in entry["args"]],
                "env": [{"name": k, "value": ex(v, f"env {k}")} for k, v in entry["env"].items()],
            }
        else:
            server = {
                "type": transport,
                "name": name,
                "url": ex(entry["url"], "url"),
                "headers": [
                    {"name": k, "value": ex(v, f"header {k}")} for k, v in entry["headers"].items()
                ],
            }
        servers.append(server)
    return servers
