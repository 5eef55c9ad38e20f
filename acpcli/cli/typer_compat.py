"""The only place acpcli touches typer's internals (and the click that typer vendors as ``typer._click``).

acpcli needs three things typer's public API does not offer:

* **coercion without pydantic** (:func:`install`, called by :func:`acpcli.cli.main`): typer
  coerces every parameter of the invoked command through a pydantic ``TypeAdapter``
  (~0.15 s of CPU on every ``load``, ``prompt``, ``new``...). acpcli's parameters are only
  ``str``, ``Path``, lists of those and ``bool`` flags; :func:`plain_runtime_param` coerces
  exactly those, giving what typer gives, and hands everything else back to typer;
* **a command tree built on demand** for shell completion (:func:`command_tree`): a TAB
  after ``acpcli load`` needs only ``load`` built, not every command;
* **a command line parsed without running anything** (:func:`parse_line`): the values as
  given and where they came from, with no callback, no coercion.

It was written against the typer versions in :data:`KNOWN_TYPER`, and :data:`RELIED_ON`
lists every internal it uses with the parameters it calls them with;
``tests/cli/test_typer_compat.py`` fails on a typer that is not known or lacks one of them,
so upgrading typer makes someone look here. On a typer that is not known acpcli stays
correct: :func:`install` patches nothing (typer coerces, through pydantic: correct, slower)
and :func:`command_tree` is typer's own full tree (``typer.main.get_command``); completion,
whose parsing still goes through click's parser here, answers nothing rather than fail if
that changed too (see "Silent" in :mod:`acpcli.cli.completion`).

"Public" here means the ``typer`` namespace, ``typer.main.get_command``, the documented
``Typer``/``TyperGroup`` classes, and the documented click attributes and methods of the
objects typer hands out (``Context``, a parameter's ``opts``, ``shell_complete``...). Every
other use of typer or click lives in this module.

Nothing here changes anything on import: :func:`install` does, when :func:`acpcli.cli.main`
runs. Kept import-light: ``typer`` itself already imports every module used here.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args, get_origin

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption

if TYPE_CHECKING:
    from typer._coercion import RuntimeParam, TypeDescriptor
    from typer.models import CommandInfo

__all__ = [
    "KNOWN_TYPER",
    "RELIED_ON",
    "OnDemandGroup",
    "TyperArgument",
    "TyperGroup",
    "TyperOption",
    "checked_path",
    "command_tree",
    "declared_annotation",
    "declared_commands",
    "given_on_command_line",
    "install",
    "installed",
    "known_typer",
    "parse_line",
    "plain_runtime_param",
    "split_words",
]

#: typer versions (major.minor) this module was written and tested against.
KNOWN_TYPER = ("0.29",)

#: Every typer internal used here, as ``module:attribute``, with the names of the parameters
#: of a callable (``None``: it only has to exist). Attributes of instances (a parameter's
#: ``type_descriptor``, a ``Typer``'s ``registered_commands``...) are checked by the test on
#: real objects.
RELIED_ON: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    # install(): the coercion hook, its cache slot and what a coercer is
    ("typer.core:_TyperParameter.get_runtime_param", ("self",)),
    ("typer._coercion:RuntimeParam", ("parameter_info", "annotation")),
    ("typer._coercion:RuntimeParam.coerce", ("self", "value", "param", "ctx")),
    ("typer._coercion:RuntimeParam._coerce_value", ("self", "value", "param", "ctx")),
    ("typer._coercion:TypeDescriptor", ("annotation", "parameter_info", "file_annotation")),
    ("typer._coercion:build_runtime_param", ("descriptor",)),
    # command_tree(): typer's builders for one group / one command, and its declarations
    ("typer.main:get_group_from_info", ("group_info", "pretty_exceptions_short", "suggest_commands", "rich_markup_mode")),
    ("typer.main:get_command_from_info", ("command_info", "pretty_exceptions_short", "rich_markup_mode")),
    ("typer.main:get_command_name", ("name",)),
    ("typer.main:solve_typer_info_defaults", ("typer_info",)),
    ("typer.models:TyperInfo", None),
    ("typer.models:CommandInfo", None),
    ("typer.core:TyperArgument.display_type_rich", ("self", "ctx")),  # no "<str>" in --help
    # parse_line(): click's parser, without value processing
    ("typer.core:TyperGroup.context_class", None),
    ("typer.core:TyperGroup.make_parser", ("self", "ctx")),
    ("typer.core:TyperGroup.get_params", ("self", "ctx")),
    ("typer.core:TyperGroup.resolve_command", ("self", "ctx", "args")),
    ("typer.core:TyperOption.consume_value", ("self", "ctx", "opts")),
    ("typer.core:TyperArgument.consume_value", ("self", "ctx", "opts")),
    ("typer._click.parser:_OptionParser.parse_args", ("self", "args")),
    ("typer._click.core:Context.set_parameter_source", ("self", "name", "source")),
    ("typer._click.core:Context.get_parameter_source", ("self", "name")),
)


def typer_version() -> str:
    """The installed typer's major.minor version (``"0.29"``)."""
    return ".".join(typer.__version__.split(".")[:2])


def known_typer() -> bool:
    """Whether the installed typer is one this module was written against."""
    return typer_version() in KNOWN_TYPER


# ------------------------------------------------------------------------------------------
# Coercion without pydantic
# ------------------------------------------------------------------------------------------
#
# typer 0.29 coerces the value of every parameter of the invoked command (bool flags aside,
# and also when the value is None) through a pydantic TypeAdapter built for it: importing
# pydantic and building the adapters costs ~0.15 s of CPU on every command that runs (not on
# --help or completion, which invoke no command). tests/test_startup_imports.py checks the
# plain coercers against typer's own, parameter by parameter.


def install() -> bool:
    """Make typer coerce the parameters :func:`plain_runtime_param` knows without pydantic.

    Wraps ``typer.core._TyperParameter.get_runtime_param``: a parameter gets the plain
    coercer when there is one, else typer's own. Idempotent. Does nothing on a typer that is
    not in :data:`KNOWN_TYPER` or whose hook is not there (values are then coerced by typer,
    correctly but slower). Returns whether the plain coercion is in place.
    """
    if not known_typer():
        return False
    from typer.core import _TyperParameter

    typer_own = getattr(_TyperParameter, "get_runtime_param", None)
    if typer_own is None:
        return False
    if getattr(typer_own, "acpcli_plain", False):
        return True

    def get_runtime_param(self: Any) -> RuntimeParam:
        if getattr(self, "_runtime_param", None) is None:
            self._runtime_param = plain_runtime_param(self.type_descriptor)
        param: RuntimeParam = typer_own(self)  # builds typer's own when ours is None
        return param

    get_runtime_param.acpcli_plain = True  # type: ignore[attr-defined]
    get_runtime_param.__wrapped__ = typer_own  # type: ignore[attr-defined]
    _TyperParameter.get_runtime_param = get_runtime_param  # type: ignore[method-assign]
    return True


def installed() -> bool:
    """Whether :func:`install` has wrapped typer's coercion hook in this process."""
    from typer.core import _TyperParameter

    return bool(getattr(getattr(_TyperParameter, "get_runtime_param", None), "acpcli_plain", False))


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
    param: RuntimeParam = _plain_param_class()(
        annotation=annotation, parameter_info=info, descriptor=descriptor, leaf=leaf, many=many
    )
    return param


_PLAIN_PARAM: Any = None


def _plain_param_class() -> Any:
    """The ``RuntimeParam`` subclass, defined on first use (only a command that runs needs it)."""
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
    raise typer.BadParameter(f"{_path_type_name(info)} {typer.format_filename(value)!r} {problem}.", ctx=ctx, param=param)


def _path_type_name(info: Any) -> str:
    """What typer calls a path parameter in its messages (``typer._param_types.path_type_name``)."""
    if info.file_okay and not info.dir_okay:
        return "file"
    if info.dir_okay and not info.file_okay:
        return "dir"
    return "path"


# ------------------------------------------------------------------------------------------
# Declarations and the command tree
# ------------------------------------------------------------------------------------------


def declared_commands(app: typer.Typer) -> list[CommandInfo] | None:
    """The commands ``app`` declares, in typer's order: its own, then those of the sub-apps
    added without a name (``app.add_typer(sub)``, whose commands typer puts beside the
    app's own). None when ``app`` has a named sub-group or a nameless one with a callback,
    which :func:`command_tree` does not mirror."""
    try:
        from typer.main import solve_typer_info_defaults
    except ImportError:  # pragma: no cover - a typer this module does not know
        return None
    found = list(app.registered_commands)
    for group in app.registered_groups:
        sub = group.typer_instance
        if sub is None or sub.registered_callback is not None or solve_typer_info_defaults(group).name:
            return None
        inner = declared_commands(sub)
        if inner is None:
            return None
        found.extend(inner)
    return found


class OnDemandGroup(TyperGroup):
    """A root group whose subcommands are built from their typer declarations the first
    time they are asked for. (typer builds every command up front (~40 ms of a ``load``),
    and running ``acpcli load`` or a TAB after it needs only ``load``.)

    Built by typer itself (no :func:`command_tree`: nothing declared here), it is a plain
    :class:`TyperGroup`, so it can be an app's ``cls``."""

    declared: Mapping[str, Any] = {}  # name -> typer CommandInfo; set by command_tree()
    build: Callable[[Any], Any] | None = None

    def list_commands(self, ctx: Any) -> list[str]:
        if self.build is None:
            return super().list_commands(ctx)
        return list(self.declared)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in self.declared and self.build is not None:
            self.commands[cmd_name] = self.build(self.declared[cmd_name])
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        # typer's "Did you mean ...?" for an unknown name reads the built commands: build them.
        if args and args[0] not in self.declared and not ctx.resilient_parsing:
            for name in self.declared:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run the tree as click's standalone mode would, except that a usage error (an
        unknown option, a missing argument, a bad value) is raised as acpcli's own
        :class:`~acpcli.errors.UsageError` (one ``acpcli: error:`` line and a hint naming
        the command's ``--help``, exit 2), and a Ctrl-C that reaches it as a
        :class:`~acpcli.errors.Interrupted` (``acpcli: interrupted``, exit 130) rather than
        click's ``Aborted!`` and exit 1."""
        from typer._click import (
            exceptions as click,  # (the click typer carries: a known typer here)
        )

        from acpcli.errors import Interrupted, UsageError

        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.NoArgsIsHelpError as err:  # `acpcli` alone without a terminal: the help, as click gives it
            err.show()
            sys.exit(err.exit_code)
        except click.UsageError as err:
            # (an option's missing value is raised without its context: the command is the
            # first word of the line that names one)
            words = kwargs.get("args")
            words = sys.argv[1:] if words is None else words
            named = next((w for w in words if not w.startswith("-")), None)
            where = err.ctx.command_path if err.ctx is not None else "acpcli"
            if err.ctx is None and named in self.declared:
                where = f"acpcli {named}"
            message = err.format_message().rstrip(".")
            from acpcli.env import program

            where = program() + where.removeprefix("acpcli")  # (a command to run as printed)
            raise UsageError(message[:1].lower() + message[1:], hint=f"see '{where} --help'") from None
        except typer.Abort:
            raise Interrupted() from None
        except click.ClickException as err:  # (click's file errors and the like)
            raise UsageError(err.format_message()) from None
        sys.exit(code if isinstance(code, int) else 0)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The root ``--help``'s list of commands, from their declarations: each command not
        built yet stands in as a bare :class:`TyperCommand` holding what typer would give it
        of help (its name, help, short help, hidden, deprecated), so that listing them costs
        no parameters (building all of them evaluates every parameter's annotations: most of
        what ``acpcli --help`` took)."""
        if self.build is None:
            super().format_commands(ctx, formatter)
            return
        built = self.commands
        self.commands = {name: built.get(name) or self._stand_in(name) for name in self.declared}
        try:
            super().format_commands(ctx, formatter)
        finally:
            self.commands = built

    def _stand_in(self, cmd_name: str) -> Any:
        import inspect

        from typer.core import TyperCommand

        info = self.declared[cmd_name]
        text = inspect.cleandoc(info.help) if info.help is not None else inspect.getdoc(info.callback)
        return TyperCommand(
            cmd_name, help=text, short_help=info.short_help, hidden=bool(info.hidden), deprecated=info.deprecated
        )

    def summary(self, cmd_name: str) -> tuple[bool, str | None]:
        """``(hidden, help)`` of a subcommand, read from its declaration as typer would,
        without building it (listing command names must not build them all)."""
        import inspect

        info = self.declared[cmd_name]
        return bool(info.hidden), info.short_help or info.help or inspect.getdoc(info.callback)


def command_tree(app: typer.Typer) -> TyperGroup:
    """``app`` as a click group: an :class:`OnDemandGroup` on a known typer, else typer's own
    full tree (``typer.main.get_command``: every command built, slower, public API)."""
    commands = declared_commands(app) if known_typer() else None
    if commands is None:
        import typer.main

        tree = typer.main.get_command(app)
        assert isinstance(tree, TyperGroup)
        return tree

    from typer.main import get_command_from_info, get_command_name, get_group_from_info
    from typer.models import TyperInfo

    # The root's own callback, options and settings; no commands. A shallow copy by hand:
    # copy.copy would leave a cached __slotnames__ on typer's class.
    bare = object.__new__(type(app))
    vars(bare).update(vars(app))
    bare.registered_commands = []
    bare.registered_groups = []
    cls = app.info.cls  # the app's own root class when it is one (it may add behaviour)
    root = get_group_from_info(
        TyperInfo(bare, cls=cls if isinstance(cls, type) and issubclass(cls, OnDemandGroup) else OnDemandGroup),
        pretty_exceptions_short=app.pretty_exceptions_short,
        suggest_commands=app.suggest_commands,
        rich_markup_mode=app.rich_markup_mode,
    )
    assert isinstance(root, OnDemandGroup)
    root.declared = {
        info.name or get_command_name(info.callback.__name__): info
        for info in commands
        if info.callback is not None
    }
    def build(info: CommandInfo) -> Any:
        command = get_command_from_info(
            info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode
        )
        for param in command.params:
            if isinstance(param, TyperArgument) and param.metavar is not None:
                # typer 0.29 writes an argument's Python type after its metavar in --help
                # ("WORD <list[str]>"), which tells a user nothing the metavar does not
                setattr(param, "display_type_rich", _no_type)  # noqa: B010 -- an instance's method
        return command

    root.build = build
    return root


def _no_type(ctx: Any) -> None:
    return None


# ------------------------------------------------------------------------------------------
# Parsing a command line without running it
# ------------------------------------------------------------------------------------------


def _parse_only(command: Any, name: str, parent: Any, args: list[str]) -> tuple[Any, list[str]]:
    """Parse ``args`` for ``command`` the way click would, minus value processing.

    Each parameter gets its raw value and its source (command line, env, default), which is
    all completion needs: whether an option was given, whether an argument is still open.
    Processing would run callbacks (``--version`` exits) and typer's pydantic coercion.
    """
    extra = dict(command.context_settings)
    extra["resilient_parsing"] = True  # the parser swallows usage errors
    ctx = command.context_class(command, info_name=name, parent=parent, **extra)
    parser = command.make_parser(ctx)
    opts, rest, _order = parser.parse_args(args=list(args))
    for param in command.get_params(ctx):
        value, source = param.consume_value(ctx, opts)
        ctx.set_parameter_source(param.name, source)
        if param.expose_value:
            ctx.params[param.name] = value
    return ctx, rest


def parse_line(root: TyperGroup, prog: str, args: list[str]) -> Any:
    """The context of the innermost command named on the line (``acpcli load …`` → load),
    its parameters holding their raw values: nothing is run, nothing coerced."""
    ctx, rest = _parse_only(root, prog, None, args)
    while rest and isinstance(ctx.command, TyperGroup):
        name, command, rest = ctx.command.resolve_command(ctx, rest)
        if command is None:
            break
        ctx, rest = _parse_only(command, name or "", ctx, rest)
    return ctx


def given_on_command_line(ctx: Any, name: str | None) -> bool:
    """Whether the parameter ``name`` of ``ctx``'s command was given on the command line."""
    source = ctx.get_parameter_source(name) if name else None
    return getattr(source, "name", None) == "COMMANDLINE"  # click's ParameterSource.COMMANDLINE


def declared_annotation(param: Any) -> tuple[Any, Any] | None:
    """``(annotation, parameter_info)`` of a parameter as the command declares it
    (``list[Path]``, its ``typer.Option(...)``), or None if typer does not say."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None:
        return None
    return descriptor.annotation, descriptor.parameter_info


def split_words(text: str) -> list[str]:
    """``text`` split into words like a POSIX shell (``shlex``), an unterminated quote or a
    trailing backslash ending the last word instead of failing (as click splits
    ``COMP_WORDS``)."""
    import shlex

    lex = shlex.shlex(text, posix=True)
    lex.whitespace_split = True
    lex.commenters = ""
    out: list[str] = []
    try:
        for word in lex:
            out.append(word)
    except ValueError:  # end of text inside a quote or after a backslash: keep the partial word
        out.append(lex.token)
    return out
