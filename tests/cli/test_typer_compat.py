"""typer's internals, as :mod:`acpcli.cli.typer_compat` uses them: a typer it does not know
fails here, loudly, so that upgrading typer makes someone look.

* The installed typer is one of ``KNOWN_TYPER``, and every internal in ``RELIED_ON`` exists
  with the parameters acpcli calls it with (plus the instance attributes it reads).
* No other acpcli module names a typer or click internal.
* Importing acpcli changes nothing in typer; :func:`~acpcli.cli.main` (``install()``) does,
  once.
* On a typer it does not know, acpcli falls back to typer's own behaviour: no patch, typer's
  full command tree, and completion still answers.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from acpcli.cli import typer_compat
from acpcli.cli.typer_compat import KNOWN_TYPER, RELIED_ON

REPO = Path(__file__).resolve().parent.parent.parent

HOW_TO_UPGRADE = (
    "typer {version} is not a version acpcli/cli/typer_compat.py was written against "
    "(KNOWN_TYPER = {known}). Check every entry of RELIED_ON and what install(), "
    "command_tree() and parse_line() do with it against the new typer, run "
    "tests/test_startup_imports.py and tests/cli/test_completion.py, then add the version."
)


def test_the_installed_typer_is_a_known_version() -> None:
    assert typer_compat.known_typer(), HOW_TO_UPGRADE.format(version=typer.__version__, known=KNOWN_TYPER)


def _resolve(target: str) -> Any:
    module_name, _, attributes = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for attribute in attributes.split("."):
        obj = getattr(obj, attribute)
    return obj


@pytest.mark.parametrize(("target", "params"), RELIED_ON, ids=[target for target, _ in RELIED_ON])
def test_every_internal_relied_on_is_there_as_expected(target: str, params: tuple[str, ...] | None) -> None:
    try:
        obj = _resolve(target)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"typer {typer.__version__} has no {target} ({exc}): see acpcli/cli/typer_compat.py")
    if params is not None:
        assert tuple(inspect.signature(obj).parameters) == params, (
            f"{target} changed its parameters in typer {typer.__version__}: see acpcli/cli/typer_compat.py"
        )


def test_the_instance_attributes_relied_on_are_there() -> None:
    import typer.main

    from acpcli.cli import app
    from acpcli.cli.typer_compat import TyperArgument, TyperGroup, TyperOption

    for attribute in ("registered_commands", "registered_groups", "registered_callback",
                      "pretty_exceptions_short", "suggest_commands", "rich_markup_mode"):
        assert hasattr(app, attribute), f"typer.Typer().{attribute}"
    assert app.registered_groups, "acpcli adds its command modules with app.add_typer(sub)"
    for group in app.registered_groups:
        assert group.typer_instance is not None
        for info in group.typer_instance.registered_commands:
            for attribute in ("name", "callback", "hidden", "short_help", "help"):
                assert hasattr(info, attribute), f"CommandInfo.{attribute}"

    tree = typer.main.get_command(app)
    assert isinstance(tree, TyperGroup)
    params = [p for command in tree.commands.values() for p in command.params]  # type: ignore[attr-defined]
    assert any(isinstance(p, TyperArgument) for p in params)
    assert any(isinstance(p, TyperOption) for p in params)
    for param in params:
        assert hasattr(param, "_runtime_param"), param.name  # the cache install() fills
        descriptor = param.type_descriptor
        for attribute in ("annotation", "parameter_info", "file_annotation"):
            assert hasattr(descriptor, attribute), f"TypeDescriptor.{attribute}"
        for attribute in ("parser", "path_type", "exists", "writable", "resolve_path", "allow_dash",
                          "file_okay", "dir_okay", "readable"):
            assert hasattr(descriptor.parameter_info, attribute), f"ParameterInfo.{attribute}"
        for attribute in ("name", "opts", "secondary_opts", "multiple", "nargs", "hidden", "expose_value"):
            assert hasattr(param, attribute), f"{type(param).__name__}.{attribute}"
        if isinstance(param, TyperOption):
            for attribute in ("is_flag", "count", "help"):
                assert hasattr(param, attribute), f"TyperOption.{attribute}"


def test_version_matching_is_by_major_and_minor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(typer_compat, "KNOWN_TYPER", ("0.29",))
    for version, known in (("0.29.0", True), ("0.29.2", True), ("0.29", True), ("0.30.0", False),
                           ("0.2.9", False), ("1.0.0", False), ("0.290.0", False)):
        monkeypatch.setattr(typer, "__version__", version)
        assert typer_compat.known_typer() is known, version


# -- only the compatibility module names typer's internals -------------------------------------

#: typer's modules other than its public namespace (``typer.Typer``, ``typer.Option``...), and
#: the click it vendors or that an older typer used.
INTERNAL = re.compile(r"\btyper\.(_\w+|core|main|models|completion|params|utils|rich_utils|testing)\b|\b(from|import) click\b|_TyperParameter")


def test_no_other_module_touches_typer_internals() -> None:
    offenders = []
    for path in sorted((REPO / "acpcli").rglob("*.py")):
        if path.name == "typer_compat.py" and path.parent.name == "cli":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if INTERNAL.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert offenders == [], "typer internals belong in acpcli/cli/typer_compat.py:\n" + "\n".join(offenders)


def test_the_internals_check_sees_an_offender() -> None:
    # the guard above can fail
    assert INTERNAL.search("from typer._click.core import ParameterSource")
    assert INTERNAL.search("    from typer.main import get_command_from_info")
    assert INTERNAL.search("typer.core._TyperParameter.get_runtime_param = x")
    assert not INTERNAL.search("app = typer.Typer()") and not INTERNAL.search("typer.Option('--x')")


# -- nothing is patched on import; main() installs, once ----------------------------------------

SNAPSHOT = """
import importlib, json, pkgutil, sys
import typer, typer.core, typer.main, typer._coercion

def snapshot():
    seen = {}
    for owner in (typer.core, typer.main, typer._coercion, typer.core._TyperParameter,
                  typer.core.TyperGroup, typer.core.TyperOption, typer.core.TyperArgument,
                  typer.core.TyperCommand, typer.Typer):
        for name, value in sorted(vars(owner).items()):
            seen[f"{getattr(owner, '__name__', owner)}.{name}"] = id(value)
    return seen

before = snapshot()
hook = typer.core._TyperParameter.get_runtime_param
{action}
after = snapshot()
print(json.dumps({
    "changed": sorted(k for k in before if after.get(k) != before[k]),
    "added": sorted(k for k in after if k not in before),
    "hook_replaced": typer.core._TyperParameter.get_runtime_param is not hook,
}))
"""

IMPORT_EVERYTHING = """
import acpcli
for module in pkgutil.walk_packages(acpcli.__path__, "acpcli."):
    if not module.name.endswith("__main__"):
        importlib.import_module(module.name)
"""


def _probe(action: str) -> dict[str, Any]:
    script = SNAPSHOT.replace("{action}", action)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_any_acpcli_module_patches_nothing_in_typer() -> None:
    found = _probe(IMPORT_EVERYTHING + "assert 'acpcli.cli.typer_compat' in sys.modules")
    assert found == {"changed": [], "added": [], "hook_replaced": False}


def test_main_installs_the_plain_coercion_once() -> None:
    action = (
        "from acpcli.cli import main, typer_compat\n"
        "assert not typer_compat.installed()\n"
        "try:\n"
        "    main(['--version'])\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        "assert typer_compat.installed()\n"
        "installed = typer.core._TyperParameter.get_runtime_param\n"
        "assert installed.__wrapped__ is hook\n"
        "assert typer_compat.install() is True\n"
        "assert typer.core._TyperParameter.get_runtime_param is installed  # idempotent\n"
    )
    found = _probe(action)
    assert found == {"changed": ["_TyperParameter.get_runtime_param"], "added": [], "hook_replaced": True}


def test_install_gives_commands_the_plain_coercers(monkeypatch: pytest.MonkeyPatch) -> None:
    import typer.core
    import typer.main

    from acpcli.cli import app

    own = typer.core._TyperParameter.get_runtime_param
    monkeypatch.setattr(typer.core._TyperParameter, "get_runtime_param", getattr(own, "__wrapped__", own))
    assert not typer_compat.installed()
    assert typer_compat.install() is True
    assert typer_compat.installed()
    load = typer.main.get_command(app).commands["load"]  # type: ignore[attr-defined]
    kinds = {p.name: type(p.get_runtime_param()).__name__ for p in load.params}
    assert kinds["session_id"] == kinds["cwd"] == kinds["add_dir"] == kinds["no_repl"] == "PlainParam"


# -- a typer acpcli does not know: typer's own behaviour ----------------------------------------


def test_an_unknown_typer_gets_no_patch(monkeypatch: pytest.MonkeyPatch) -> None:
    import typer.core

    own = typer.core._TyperParameter.get_runtime_param
    monkeypatch.setattr(typer.core._TyperParameter, "get_runtime_param", getattr(own, "__wrapped__", own))
    monkeypatch.setattr(typer, "__version__", "0.99.0")
    before = typer.core._TyperParameter.get_runtime_param
    assert typer_compat.install() is False
    assert typer.core._TyperParameter.get_runtime_param is before
    assert not typer_compat.installed()


def test_an_unknown_typer_completes_from_its_own_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    from acpcli.cli import app
    from acpcli.cli.completion import candidates
    from acpcli.cli.typer_compat import OnDemandGroup, command_tree

    known = candidates(app, ["acpcli", "lo"], 1), candidates(app, ["acpcli", "new", "--cwd", ""], 3)
    monkeypatch.setattr(typer, "__version__", "0.99.0")
    tree = command_tree(app)
    # typer's own full tree (its root is the app's class, an OnDemandGroup with nothing on demand)
    assert not isinstance(tree, OnDemandGroup) or tree.build is None
    assert "load" in tree.commands
    assert (candidates(app, ["acpcli", "lo"], 1), candidates(app, ["acpcli", "new", "--cwd", ""], 3)) == known
    assert known == ([("plain", "load", "Reopen a session with its replay, then the prompt opens")],
                     [("dir", "", "")])


def test_a_named_sub_group_gets_typers_own_tree() -> None:
    # the on-demand tree mirrors only what acpcli declares: commands, and nameless sub-apps
    from acpcli.cli.typer_compat import OnDemandGroup, command_tree, declared_commands

    outer, inner = typer.Typer(), typer.Typer()

    @inner.command()
    def leaf() -> None:
        """A leaf."""

    outer.add_typer(inner)
    assert [info.callback for info in declared_commands(outer) or []] == [leaf]
    assert isinstance(command_tree(outer), OnDemandGroup)
    outer.add_typer(typer.Typer(), name="named")
    assert declared_commands(outer) is None
    assert not isinstance(command_tree(outer), OnDemandGroup)


def test_split_words_keeps_an_unterminated_word() -> None:
    from acpcli.cli.typer_compat import split_words

    assert split_words("acpcli load 'my id") == ["acpcli", "load", "my id"]
    assert split_words('acpcli "a b" c\\ d ') == ["acpcli", "a b", "c d"]
    assert split_words("acpcli x\\") == ["acpcli", "x"]
    assert split_words("") == []


def test_the_root_help_lists_the_commands_as_typer_would_without_building_them() -> None:
    # `acpcli --help` lists every command from its declaration (building all of them was most
    # of its time): the same text as typer's fully built tree gives, and nothing built
    import typer.main
    from typer._click import Context

    from acpcli.cli import app

    def root_help(tree: typer_compat.TyperGroup) -> str:
        return tree.get_help(Context(tree, info_name="acpcli"))

    ours = typer_compat.command_tree(app)
    listed = root_help(ours)
    assert listed == root_help(typer.main.get_command(app))  # type: ignore[arg-type]
    assert "  load " in listed and "  prompt " in listed
    assert not ours.commands
    ours.get_command(Context(ours, info_name="acpcli"), "load")  # one built: listed as built
    assert list(ours.commands) == ["load"] and root_help(ours) == listed
