"""The typer command tree. Errors become exit codes in exactly one place: :func:`main`.

This package must stay cheap to import: ``acpcli --help`` and shell completion run it on
every keystroke. Command bodies import the heavy layers (models, rich, prompt_toolkit)
inside the function. Importing it changes nothing in typer: :func:`main` applies what
:mod:`acpcli.cli.typer_compat` adjusts, the only module that touches typer's internals.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any

import typer

from acpcli import __version__
from acpcli.cli import typer_compat
from acpcli.cli.typer_compat import OnDemandGroup
from acpcli.errors import AcpcliError, ExitCode, OutputClosed, leaf_error


class _PipeSafeGroup(OnDemandGroup):
    """The root group: a broken pipe anywhere in a command becomes :class:`OutputClosed`
    before click sees it (click would report a bare BrokenPipeError as a failure, exit 1)."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise OutputClosed() from None
        except BaseException as exc:
            if isinstance(leaf_error(exc), BrokenPipeError):
                raise OutputClosed() from None
            raise


app = typer.Typer(
    name="acpcli",
    help=(
        "A terminal client for ACP (Agent Client Protocol) agents.\n\n"
        "acpcli starts an agent (claude-agent-acp, codex-acp, gemini --acp, or the built-in "
        "demo), negotiates the protocol version (v1 or v2) and drives its sessions. "
        "`acpcli COMMAND --help` says more of each command.\n\n"
        "Examples:\n\n"
        "\b\n"
        "  acpcli new --agent demo\n"
        '  acpcli prompt --agent claude "explain this repository"\n'
        "  acpcli sessions"
    ),
    # Plain click help: typer's rich help would import rich.markdown on every --help.
    rich_markup_mode=None,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_PipeSafeGroup,
)


def _bare(args: list[str]) -> list[str] | None:
    """``acpcli`` alone on a terminal opens the interactive prompt with the default agent, as
    ``new`` would; ``acpcli "fix the tests"`` (a first word that is no command and holds a
    space) does so with that prompt sent first — or, without a terminal, runs it as ``prompt``
    does. The default agent: the config's ``default_agent``, else the first known agent found
    on the PATH (one line says which), else the demo agent. Any other line is left to the
    command tree (None: as given)."""
    if args and (args[0].startswith("-") or not any(c.isspace() for c in args[0])):
        return None  # (a command's name holds no space: the first word is no command)
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    if not args and not interactive:
        return None  # the help, as it always was
    name = _default_agent()
    if not interactive:
        return ["prompt", "--agent", name, *args]
    return ["new", "--agent", name, *(["--prompt", " ".join(args)] if args else [])]


def _default_agent() -> str:
    """The config's ``default_agent``; else the first known agent whose program is on the PATH
    (said on stderr); else ``demo``."""
    from acpcli.config import find_executable, load_config

    config = load_config()
    if config.default_agent:
        return config.default_agent
    for name, spec in config.agents.items():
        if name != "demo" and find_executable(spec):
            sys.stderr.write(f"acpcli: {name} (the first agent found; default_agent in the config chooses another)\n")
            return name
    return "demo"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"acpcli {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """A terminal client for ACP agents."""


def _register() -> None:
    """Each module's commands become top-level commands (``acpcli load``, not ``acpcli sessions load``)."""
    from acpcli.cli import agents, auth, checkpoints, completion, doctor, hosts, prompt, sessions
    from acpcli.cli.race import app as race_app

    for sub in (
        sessions.app, prompt.app, hosts.app, checkpoints.app, race_app, auth.app, agents.app, completion.app, doctor.app,
    ):
        app.add_typer(sub)


_register()

#: errnos of an output that cannot take more (full disk, quota, file size, I/O error).
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def report(err: AcpcliError) -> None:
    """Print an error as one line on stderr (plus an optional hint line). A signal stop
    (:class:`~acpcli.errors.Interrupted`) is not an error: ``acpcli: interrupted``.
    A stderr that cannot be written (the terminal is gone: SIGHUP) is not a reason to fail."""
    from acpcli.errors import Interrupted

    try:
        if isinstance(err, Interrupted):
            sys.stderr.write(f"acpcli: {err}\n")
            return
        sys.stderr.write(f"acpcli: error: {as_typed(str(err))}\n")
        if err.hint:
            sys.stderr.write(f"acpcli: hint: {as_typed(err.hint)}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def as_typed(text: str) -> str:
    """``text`` with each command it quotes (`` `acpcli …` ``, ``'acpcli …'``) naming the
    program as the user can type it (:func:`acpcli.env.program`: ``.venv/bin/acpcli`` when
    ``acpcli`` is not on the PATH), so that every command we print runs as printed."""
    if "acpcli " not in text:
        return text
    from acpcli.env import program

    typed = program()
    if typed == "acpcli":
        return text
    import re

    return re.sub(r"(?<=[`'])acpcli (?=[a-z-])", typed.replace("\\", "\\\\") + " ", text)


def _quiet_stdout() -> None:
    """Point fd 1 at /dev/null, so the interpreter's final flush of a stdout that cannot be
    written (a gone reader, a full disk, a closed descriptor) has nothing to complain about."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    except OSError:
        pass


def _stdout_closed() -> bool:
    try:
        os.fstat(1)
    except OSError:
        return True
    return sys.stdout is None


def _writes_elsewhere(argv: list[str]) -> bool:
    """The command line sends the transcript to a file (``-o FILE``), not stdout."""
    return any(a in ("-o", "--output") or a.startswith(("--output=", "-o")) for a in argv)


def main(argv: list[str] | None = None) -> None:
    """Run the command tree; map every :class:`AcpcliError` to its exit code.

    click (standalone mode) reports its own usage errors with exit code 2 (``ExitCode.USAGE``).
    A shell asking for completions (``_ACPCLI_COMPLETE`` set, see :mod:`acpcli.cli.completion`)
    is answered before typer builds the whole command tree.
    """
    if os.environ.get("_ACPCLI_COMPLETE"):
        from acpcli.cli.completion import respond

        sys.exit(respond(app))
    if _stdout_closed():
        # `acpcli … >&-`: whatever is opened next would get fd 1 and receive the transcript.
        # Hold fd 1 with /dev/null first; a command writing to stdout cannot run.
        _quiet_stdout()
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
        args = sys.argv[1:] if argv is None else argv
        if not _writes_elsewhere(args):
            from acpcli.errors import OutputError

            report(OutputError("standard output is closed: nowhere to write (redirect it, or use -o FILE)"))
            sys.exit(int(ExitCode.OUTPUT))
    from acpcli import notices

    argv = _bare(sys.argv[1:] if argv is None else list(argv)) or argv
    # typer would import pydantic to coerce the invoked command's parameter values (~0.15 s).
    typer_compat.install()
    # What the agent sent and acpcli skipped (bad lines, lines over the limit) is said on stderr.
    notices.set_sink(notices.stderr_sink())
    try:
        # Only the invoked command is built (typer's app() would build all of them).
        typer_compat.command_tree(app)(args=argv, prog_name="acpcli")
    except BaseException as exc:
        err = leaf_error(exc)
        if type(err).__module__ == "sqlite3":
            # The index failed where no command expected it (a damaged page, say): one line
            # naming the file and what to do, never a traceback.
            from acpcli.history.index import storage_error

            err = storage_error(err)
        if isinstance(err, OSError) and err.errno in _FULL_ERRNOS:
            # What is left unconverted by now is output: stdout, or the file a command writes
            # (live commands go on over a full disk for their own storage, see safestore).
            from acpcli.errors import OutputError

            err = OutputError(f"cannot write the output: {err.strerror}")
        if isinstance(err, (BrokenPipeError, OutputClosed)):
            # The reader went away (`acpcli prompt … | head -1`): that was its choice, so
            # leave quietly. Point stdout at /dev/null so the interpreter's final flush
            # cannot complain about the same pipe again.
            _quiet_stdout()
            sys.exit(int(ExitCode.OK))
        if isinstance(err, AcpcliError):
            from acpcli.errors import OutputError

            if isinstance(err, OutputError):
                _quiet_stdout()
            report(err)
            if err.exit_code == ExitCode.HANGUP:
                # The terminal is gone: the interpreter's last flush must not turn 129 into 120.
                _quiet_stdout()
                os.dup2(1, 2)
            sys.exit(int(err.exit_code))
        if isinstance(err, KeyboardInterrupt):
            sys.stderr.write("acpcli: interrupted\n")
            sys.exit(int(ExitCode.INTERRUPTED))
        raise
