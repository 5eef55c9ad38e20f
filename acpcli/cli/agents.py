"""``acpcli agents``: the agents acpcli knows (built-in, configured, the ACP registry's) and whether they can run."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from acpcli.cli import completers
from acpcli.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from acpcli.agents.registry import Registry, RegistryAgent
    from acpcli.env import Environment
    from acpcli.render.fit import Column

app = typer.Typer()


@app.command(short_help="List, show, install, update and remove agents.")
def agents(
    action: Annotated[
        str | None,
        typer.Argument(
            metavar="ACTION",
            help="show ID: all about one agent; install ID, update [ID], remove ID: a registry agent's binary; none: the list.",
            autocompletion=completers.agents_actions,
            show_default=False,
        ),
    ] = None,
    agent_id: Annotated[
        str | None,
        typer.Argument(metavar="ID", help="The agent of 'show'.", autocompletion=completers.agent_names, show_default=False),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    registry_only: Annotated[bool, typer.Option("--registry", help="Only the agents of the ACP registry.")] = False,
    refresh: Annotated[bool, typer.Option("--refresh", help="Fetch the registry now, whatever the age of the cached copy.")] = False,
) -> None:
    """List built-in, configured and ACP registry agents, how each would run and whether it can.

    The registry is fetched on demand from $ACPCLI_REGISTRY_URL (else the config's
    registry_url, else the public ACP registry) and cached for a day under ACPCLI_HOME;
    offline, the cached copy is used. Configure more agents in config.toml under
    [agents.NAME] (see docs/configuration.md); run any other command with --cmd.

    Downloads are capped while they arrive (the registry at 16 MiB, an archive at 1 GiB)
    and given up after 2 and 10 minutes in all: ACPCLI_DOWNLOAD_DEADLINE=SECONDS sets
    both. Registry entries whose package is not a package name are skipped with a warning.

    Examples:

    \b
      acpcli agents
      acpcli agents show codex-acp
      acpcli agents install codex-acp
    """
    if action is None:
        if agent_id is not None:
            raise UsageError(f"unexpected argument {agent_id!r}")
        raise typer.Exit(_list(as_json, registry_only, refresh))
    if action not in _ACTIONS:
        raise UsageError(f"unknown action {action!r}: expected one of {', '.join(_ACTIONS)}", hint="acpcli agents --help")
    if action == "update":
        raise typer.Exit(_update(agent_id))
    if not agent_id:
        raise UsageError(f"'acpcli agents {action}' needs an agent ID", hint="acpcli agents --registry lists them")
    if action == "install":
        raise typer.Exit(_install(agent_id, refresh))
    if action == "remove":
        raise typer.Exit(_remove(agent_id))
    raise typer.Exit(_show(agent_id, as_json, refresh))


_ACTIONS = ("show", "install", "update", "remove")


@contextmanager
def _progress() -> Iterator[Callable[[int, int | None], None] | None]:
    """A download progress bar on a terminal's stderr (rich), else no progress callback."""
    from acpcli.cli.streams import environment

    env = environment()
    if not env.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    columns = (TextColumn("  downloading"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, console=env.err) as bar:
        task = bar.add_task("download", total=None)

        def show(done: int, total: int | None) -> None:
            bar.update(task, completed=done, total=total)

        yield show


def _install_entry(entry: RegistryAgent) -> str:
    from acpcli.agents import install, registry

    target = entry.binary.get(registry.platform_key())
    if target is None:
        how = registry.launch(entry)
        raise UsageError(
            f"registry agent {entry.id!r} has no binary for {registry.platform_key()}; it runs with {how.how}",
            hint=f"acpcli prompt --agent {entry.id} … runs it",
        )
    from acpcli.cli.streams import environment

    install.installable(entry)  # a version that cannot be a folder: refused before any download
    environment().stderr.write(f"acpcli: downloading {target.archive}\n")
    with _progress() as progress:
        done = install.install(entry, progress=progress)
    return f"installed {entry.id} {done.version} in {done.folder} (sha256 {done.sha256})\n"


def _install(agent_id: str, refresh: bool) -> int:
    """Install (again) the binary of registry agent ``agent_id``."""
    from acpcli.agents import registry
    from acpcli.cli.streams import environment

    entry = registry.load(refresh=True).agents.get(agent_id) if refresh else registry.find(agent_id)
    if entry is None:
        raise UsageError(f"the agent registry has no agent {agent_id!r}", hint="acpcli agents --registry lists them")
    environment().stdout.write(_install_entry(entry))
    return int(ExitCode.OK)


def _update(agent_id: str | None) -> int:
    """Install the registry's version of ``agent_id`` (every installed agent when None) when
    it differs from the installed one."""
    from acpcli.agents import install, registry
    from acpcli.cli.streams import environment

    env = environment()
    reg = registry.load(refresh=True)
    if agent_id is not None:
        ids = [agent_id]
        if install.installed(agent_id) is None:
            raise UsageError(f"{agent_id!r} is not installed", hint=f"acpcli agents install {agent_id}")
    else:
        folder = install.agents_dir()
        ids = sorted(p.name for p in folder.iterdir() if install.installed(p.name)) if folder.is_dir() else []
    for one in ids:
        have = install.installed(one)
        entry = reg.agents.get(one)
        if have is None or entry is None:
            env.stdout.write(f"{one}: no longer in the registry; kept as it is\n")
            continue
        if have.version == entry.version:
            env.stdout.write(f"{one} {have.version} is up to date\n")
            continue
        env.stdout.write(_install_entry(entry))
    return int(ExitCode.OK)


def _remove(agent_id: str) -> int:
    from acpcli.agents import install
    from acpcli.cli.streams import environment

    if not install.remove(agent_id):
        raise UsageError(f"{agent_id!r} is not installed")
    environment().stdout.write(f"removed {agent_id}\n")
    return int(ExitCode.OK)


def _registry(refresh: bool, *, required: bool) -> Registry | None:
    """The registry; when it cannot be had and is not ``required``: a warning and None."""
    from acpcli import notices
    from acpcli.agents import registry
    from acpcli.errors import RegistryError

    try:
        return registry.load(refresh=refresh)
    except RegistryError as exc:
        if required:
            raise
        if not exc.reason:
            notices.warn("registry-unavailable", f"{exc}; registry agents not listed")
            return None
        # offline, this comes with every listing: one short line, the details in the log
        import logging
        import re

        logging.getLogger(__name__).warning("%s", exc)
        short = re.split(r" \(|: \[", exc.reason, maxsplit=1)[0]  # without the errno's details
        notices.warn("registry-unavailable", f"registry agents not listed ({short})", log=False)
        return None


def _registry_rows(reg: Registry, local: dict[str, str]) -> Iterator[dict[str, Any]]:
    """The rows of the registry's agents, sorted by id, one at a time. Linear in the
    registry: PATH is searched once per launcher and the agents folder listed once, not
    once per agent."""
    import functools
    import shutil

    from acpcli.agents import install, registry

    which = functools.cache(shutil.which)
    try:
        present = {p.name for p in install.agents_dir().iterdir()}
    except OSError:
        present = set()
    for agent_id in sorted(reg.agents):
        entry = reg.agents[agent_id]
        how = registry.launch(entry, which)
        copy = install.installed(entry.id) if entry.id in present else None
        if copy is not None:
            how = registry.Launch("binary", copy.argv(), copy.env, str(copy.cmd))
        yield {
            "name": entry.id,
            "title": entry.name,
            "version": entry.version,
            "installed": copy.version if copy is not None else None,
            "update": bool(copy is not None and copy.version != entry.version),
            "runs": how.how,
            "argv": how.argv,
            "found": how.found,
            "source": "registry",
            "builtin": False,
            "shadowedBy": local.get(agent_id),
            "distributions": entry.kinds(),
            "description": entry.description,
            "whyNot": None if how.found else registry.not_runnable(entry, how),
        }


_COLUMNS = ("NAME", "VERSION", "RUNS", "COMMAND", "FOUND", "SOURCE", "DESCRIPTION")


def _columns() -> list[Column]:
    """The table's columns on a terminal, with how soon each gives way (:class:`Column`):
    the name and what the agent is come first; how it runs and where from give way first
    (whole: a word like ``command`` is never cut, the column is dropped); an empty column (no registry version known) is not drawn."""
    from acpcli.render.fit import Column

    return [
        Column("NAME", rank=100, floor=0, keep=True),
        Column("VERSION", rank=20, floor=0),
        Column("RUNS", rank=10, floor=0),
        Column("COMMAND", rank=40, floor=12, cap=40),
        Column("FOUND", rank=50, floor=11, cap=30),
        Column("SOURCE", rank=30, floor=0),
        Column("DESCRIPTION", rank=90, floor=20),
    ]


def _cells(row: dict[str, Any]) -> tuple[str, ...]:
    """One table row: the cells, each on one line with its control characters shown."""
    from acpcli.text.safe import safe_line

    if row["found"]:
        found = row["found"]
    elif row["runs"] == "binary":
        found = "not installed"
    elif row["runs"] in ("npx", "uvx"):
        found = f"{row['runs']} not on PATH"
    else:
        found = "not on PATH"
    source = row["source"]
    if row.get("update"):
        found += f" (installed {row['installed']}: `acpcli agents update` installs {row['version']})"
    if row.get("shadowedBy"):
        source += f" (the {row['shadowed_by']} {row['name']} runs)"
    # (the demo runs as an isolated interpreter given acpcli's folder: a person reads the module)
    command = "python -m acpcli.demo_agent" if row.get("builtin") and row["name"] == "demo" else " ".join(row["argv"])
    cells = (row["name"], row["version"] or "", row["runs"], command, found, source, row["description"])
    return tuple(safe_line(str(c)) for c in cells)


def _table(env: Environment, rows: list[tuple[str, ...]]) -> None:
    """The rows as aligned columns, in time and memory linear in the rows (rich's Table
    measures and wraps every cell: minutes for the 100,000 agents of a hostile registry).
    On a terminal the table is cut to its width (``agents show ID`` says all); elsewhere
    the lines are whole, tab-separated."""
    if not env.stdout_is_terminal:
        # Pipes get one tab-separated line per agent, as `sessions` does: easy to cut/awk
        # (the cells are safe_line'd: a tab in one is shown as ^I, never a column break).
        env.stdout.write("\t".join(_COLUMNS) + "\n")
        env.stdout.writelines("\t".join(cells) + "\n" for cells in rows)
        return
    from rich.text import Text

    from acpcli.render.fit import table_lines

    header, lines = table_lines(_columns(), [dict(zip(_COLUMNS, cells, strict=True)) for cells in rows], env.out.width)
    env.out.print(Text(header, style="bold"), soft_wrap=True)
    env.stdout.writelines(line + "\n" for line in lines)


def _list(as_json: bool, registry_only: bool, refresh: bool) -> int:
    """List the agents: built-in and configured (unless ``registry_only``), then the registry's."""
    from acpcli.cli.streams import environment
    from acpcli.config import find_executable, load_config

    env = environment()
    local_rows: list[dict[str, Any]] = []
    local: dict[str, str] = {}
    if not registry_only:
        cfg = load_config()
        for name, spec in sorted(cfg.agents.items()):
            source = "built-in" if spec.builtin else "config"
            local[name] = source
            local_rows.append(
                {
                    "name": name,
                    "title": name,
                    "version": None,
                    "runs": "command",
                    "argv": spec.argv,
                    "found": find_executable(spec),
                    "source": source,
                    "builtin": spec.builtin,
                    "description": spec.description,
                }
            )
    reg = _registry(refresh, required=registry_only)
    rows = itertools.chain(local_rows, _registry_rows(reg, local) if reg is not None else ())
    if as_json:
        import json

        write = env.stdout.write
        for row in rows:
            write(json.dumps(row) + "\n")
        return int(ExitCode.OK)
    _table(env, [_cells(row) for row in rows])
    return int(ExitCode.OK)


def _show(agent_id: str, as_json: bool, refresh: bool) -> int:
    """Everything about one agent: its whole registry entry, or the configured/built-in spec."""
    from acpcli.agents import registry
    from acpcli.cli.streams import environment
    from acpcli.config import find_executable, load_config
    from acpcli.text.safe import safe_line

    env = environment()
    spec = load_config().agents.get(agent_id)
    entry = None
    if spec is None or refresh:
        entry = registry.find(agent_id) if not refresh else registry.load(refresh=True).agents.get(agent_id)
    else:
        copy = registry.cached()
        entry = copy.agents.get(agent_id) if copy is not None else None
    if spec is None and entry is None:
        raise UsageError(f"unknown agent {agent_id!r}", hint="acpcli agents lists the agents acpcli knows")
    if as_json:
        import json

        out: dict[str, Any] = {}
        if spec is not None:
            out["local"] = {
                "name": spec.name,
                "argv": spec.argv,
                "env": spec.env,
                "builtin": spec.builtin,
                "found": find_executable(spec),
            }
        if entry is not None:
            how = registry.launch(entry)
            out["registry"] = entry.raw
            out["runs"] = {"how": how.how, "argv": how.argv, "env": how.env, "found": how.found}
        try:
            text = json.dumps(out)
        except RecursionError:  # an entry nested deeper than json goes (the parser went as deep)
            from acpcli.errors import RegistryError

            raise RegistryError(f"the agent registry's entry {agent_id!r} is nested too deeply to show as JSON") from None
        env.stdout.write(text + "\n")
        return int(ExitCode.OK)
    lines: list[str] = []
    if spec is not None:
        lines += [
            f"{spec.name} ({'built-in' if spec.builtin else 'config'}): {' '.join(spec.argv)}",
            f"  found: {find_executable(spec) or 'not on PATH'}",
        ]
        if entry is not None:
            lines.append(f"  (it runs for --agent {spec.name}; the registry entry below does not)")
    if entry is not None:
        lines += [
            f"id: {entry.id}",
            f"name: {entry.name}",
            f"version: {entry.version}",
        ]
        for key, value in (
            ("description", entry.description),
            ("repository", entry.repository),
            ("authors", ", ".join(entry.authors)),
            ("license", entry.license),
            ("icon", entry.icon),
        ):
            if value:
                lines.append(f"{key}: {value}")
        lines.append("distribution:")
        for kind, package in (("npx", entry.npx), ("uvx", entry.uvx)):
            if package is not None:
                env_text = " ".join(f"{k}={v}" for k, v in package.env.items())
                lines.append(f"  {kind}: {' '.join([package.package, *package.args])}" + (f"  (env {env_text})" if env_text else ""))
        for plat, target in sorted(entry.binary.items()):
            lines.append(f"  binary {plat}: {target.archive} → {' '.join([target.cmd, *target.args])}")
        from acpcli.agents import install

        how = registry.launch(entry)
        have = install.installed(entry.id)
        if have is not None:
            lines.append(f"installed: {have.version} in {have.folder} (sha256 {have.sha256})")
            how = registry.Launch("binary", have.argv(), have.env, str(have.cmd))
        if how.found:
            lines.append(f"runs here: {' '.join(how.argv)}  ({how.how}: {how.found})")
        else:
            lines.append(f"runs here: no: {registry.not_runnable(entry, how)}")
    env.stdout.write("".join(safe_line(line) + "\n" for line in lines))
    return int(ExitCode.OK)
