"""Option declarations shared by several commands (``Annotated`` aliases), and the
pydantic-free coercion of their values (:func:`install_plain_coercion`).

Kept import-light: this module is loaded for ``--help`` and for every completion request.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_origin

import typer

from acpcli.cli import completers

AGENT_PANEL = "Agent"
SESSION_PANEL = "Session"

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
        help='MCP servers file in the common {"mcpServers": {...}} JSON format.',
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


# -- coercion without pydantic ---------------------------------------------------------------
#
# typer 0.29 coerces the value of every parameter of the invoked command (bool flags aside,
# and also when the value is None) through a pydantic TypeAdapter built for it: importing
# pydantic and building the adapters costs ~0.15 s of CPU on every `load`, `prompt`, `new`...
# (not on --help or completion, which invoke no command). acpcli's parameters are only
# `str`, `Path`, lists of those and bool flags, whose coercion is simple; these helpers do it
# for exactly those declarations and hand everything else back to typer.
# tests/test_startup_imports.py checks the results against typer's own, parameter by parameter.

if TYPE_CHECKING:
    from typer._coercion import RuntimeParam, TypeDescriptor


def install_plain_coercion() -> None:
    """Make typer coerce the parameters :func:`plain_runtime_param` knows without pydantic.

    Wraps ``typer.core._TyperParameter.get_runtime_param`` (a typer internal, like those
    :mod:`acpcli.cli.completion` uses): a parameter gets the plain coercer when there is one,
    else typer's own. Idempotent; does nothing if typer's internals are not the expected ones
    (values are then coerced by typer, correctly but slower).
    """
    try:
        from typer.core import _TyperParameter
    except ImportError:  # pragma: no cover - a typer without runtime coercion
        return
    typer_own = getattr(_TyperParameter, "get_runtime_param", None)
    if typer_own is None or getattr(typer_own, "acpcli_plain", False):
        return

    def get_runtime_param(self: Any) -> RuntimeParam:
        if getattr(self, "_runtime_param", None) is None:
            self._runtime_param = plain_runtime_param(self.type_descriptor)
        return typer_own(self)  # builds typer's own when ours is None

    get_runtime_param.acpcli_plain = True  # type: ignore[attr-defined]
    get_runtime_param.__wrapped__ = typer_own  # type: ignore[attr-defined]
    _TyperParameter.get_runtime_param = get_runtime_param  # type: ignore[method-assign]


def plain_runtime_param(descriptor: TypeDescriptor) -> RuntimeParam | None:
    """A pydantic-free coercer for ``descriptor``, or None to leave it to typer.

    Covered: ``bool`` (typer coerces a flag's ``None``, e.g. ``--help`` not given), ``str``,
    ``Path`` (with any ``file_okay``/``dir_okay``/``readable``, but not ``exists``,
    ``writable``, ``resolve_path``, ``allow_dash`` or ``path_type``) and ``List`` of those,
    without a custom ``parser``. Each gives what typer 0.29's adapter gives: ``None`` as
    ``None`` (``()`` for a list); a ``bool`` or a ``str`` as is; ``Path(value)`` after the
    same file/dir/readable checks, with the same error messages; a list for a list. Any
    other value (bytes, a non-string default) is handed to typer's own coercion.
    """
    info = descriptor.parameter_info
    if descriptor.file_annotation is not None or info.parser is not None:
        return None
    annotation = descriptor.annotation
    many = get_origin(annotation) is list  # type: ignore[comparison-overlap]  # typer's stub types the annotation as ParamSpec
    if many:
        args = get_args(annotation)
        if len(args) != 1:
            return None
        leaf = args[0]
    else:
        leaf = annotation
    if leaf is Path:
        if info.path_type is not None or info.exists or info.writable or info.resolve_path or info.allow_dash:
            return None
    elif leaf is not str and leaf is not bool:
        return None
    return _plain_param_class()(
        annotation=annotation, parameter_info=info, descriptor=descriptor, leaf=leaf, many=many
    )


_PLAIN_PARAM: Any = None


def _plain_param_class() -> Any:
    """The ``RuntimeParam`` subclass, defined on first use (typer's internals are imported
    only when a command runs)."""
    global _PLAIN_PARAM
    if _PLAIN_PARAM is not None:
        return _PLAIN_PARAM

    from dataclasses import dataclass

    from typer._coercion import RuntimeParam, build_runtime_param

    @dataclass(frozen=True)
    class PlainParam(RuntimeParam):
        """Coerces ``bool``/``str``/``Path`` (or a list of them) like typer, without pydantic."""

        descriptor: TypeDescriptor
        leaf: Any  # bool, str or Path
        many: bool

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.many:
                if isinstance(value, (list, tuple)) and all(self._fits(item) for item in value):
                    return [self._one(item, param, ctx) for item in value]
            elif self._fits(value):
                return self._one(value, param, ctx)
            # anything unusual (a non-string default, bytes): typer's own coercion
            return build_runtime_param(self.descriptor)._coerce_value(value, param=param, ctx=ctx)

        def _fits(self, value: Any) -> bool:
            if self.leaf is bool:
                return type(value) is bool
            return type(value) is str or (self.leaf is Path and isinstance(value, Path))

        def _one(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.leaf is Path:
                return checked_path(value, self.parameter_info, param=param, ctx=ctx)
            return value

    _PLAIN_PARAM = PlainParam
    return PlainParam


def checked_path(value: str | Path, info: Any, *, param: Any = None, ctx: Any = None) -> Path:
    """``value`` as a ``Path``, refused (``typer.BadParameter``) when it names an existing file
    where ``info`` wants no files, a directory where it wants no directories, or something
    unreadable when it wants readable paths. A path that does not exist passes (``exists``
    is not covered). Messages as typer words them, quoting the value as given."""
    from typer._click.utils import format_filename
    from typer._param_types import path_type_name

    path = value if isinstance(value, Path) else Path(value)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return path
    if not info.file_okay and stat.S_ISREG(mode):
        problem = "is a file"
    elif not info.dir_okay and stat.S_ISDIR(mode):
        problem = "is a directory"
    elif info.readable and not os.access(path, os.R_OK):
        problem = "is not readable"
    else:
        return path
    raise typer.BadParameter(f"{path_type_name(info)} {format_filename(value)!r} {problem}.", ctx=ctx, param=param)
