"""``acpcli doctor``: check the local index for damage; ``--repair`` salvages what is readable.

The checking and salvaging are :mod:`acpcli.history.doctor`'s; this module prints what they found
(on stdout: it is the command's output) and maps the verdict to an exit code: 0 healthy (or
repaired), 19 (:class:`~acpcli.errors.DamagedState`) damaged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.history.doctor import Report, Salvage

app = typer.Typer()


@app.command(short_help="Check the local history for damage; --repair salvages it.")
def doctor(
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Salvage what is readable into a fresh index; the damaged file is renamed "
            "acpcli.db.damaged-DATE and kept, never deleted. A damaged search index alone is "
            "rebuilt in place.",
        ),
    ] = False,
) -> None:
    """Check the local session index for damage; --repair salvages what is readable.

    Reads it whole: SQLite's integrity check, every stored event, the search index.
    Nothing is sent to an agent.

    Exit 0 when it is healthy, 19 when something is damaged (what is damaged is listed),
    schema objects acpcli did not create included (a planted trigger); 3 for an index a
    newer acpcli wrote (not touched). With --repair, what is readable is salvaged into a
    fresh index (sessions, events; the search index is rebuilt), the damaged file is kept
    beside it, and what could not be read is listed; objects acpcli did not create are
    dropped in place (a copy of the file as it was is kept). Run it while no other acpcli
    command is running.

    Examples:

    \b
      acpcli doctor
      acpcli doctor --repair
    """
    raise typer.Exit(run(repair=repair))


def run(*, repair: bool) -> int:
    from acpcli.cli.streams import environment
    from acpcli.errors import DamagedState, ExitCode
    from acpcli.history import doctor as checks
    from acpcli.history.damage import DOCTOR_HINT
    from acpcli.history.index import check_home, newer_error
    from acpcli.paths import db_path

    env = environment()
    path = db_path()
    check_home(path)
    report = checks.check(path)
    if not report.exists:
        env.stdout.write(f"no session index at {path} yet: nothing to check\n")
        return int(ExitCode.OK)
    if report.newer is not None:
        raise newer_error(path, report.newer)  # neither checked nor touched: not ours to judge
    if report.healthy:
        _healthy(env, report)
        return _checkpoint_stores(env)
    _findings(env, report)
    if not repair:
        raise DamagedState(
            f"the session index {path} is damaged ({_count(len(report.findings), 'problem')}, listed above)",
            hint="`acpcli doctor --repair` drops what acpcli did not create and makes what it lacks (a copy of the file is kept)"
            if (report.unknown or report.missing) and not report.database_damaged
            else DOCTOR_HINT.split("; ", 1)[1],
        )
    if not report.database_damaged and {f.part for f in report.findings} <= {"search index", "schema"}:
        if report.unknown or report.missing:
            aside = checks.drop_unknown(path, report.unknown, report.missing)
            _dropped(env, report, aside)
        _rebuild_search(env)
    else:
        _salvaged(env, checks.repair(path), path)
        _rebuild_search(env)
    after = checks.check(path)
    if not after.healthy:
        _findings(env, after)
        raise DamagedState(f"the session index {path} is still damaged after the repair", hint=None)
    _healthy(env, after)
    return int(ExitCode.OK)


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _healthy(env: Environment, report: Report) -> None:
    env.stdout.write(
        f"{report.path}: healthy — {_count(report.sessions, 'session')}, {_count(report.events, 'event')}; "
        "SQLite's integrity check, the event log and the search index read whole\n"
    )


def _checkpoint_stores(env: Environment) -> int:
    """The sessions' checkpoint stores (``acpcli checkpoints``), read: one line for them all when
    they are sound, one a problem otherwise (exit 19: ``DamagedState``). A damaged store costs
    only its own checkpoints; no turn is ever stopped by it."""
    from acpcli.errors import DamagedState, ExitCode
    from acpcli.text.safe import safe_line, shown_id
    from acpcli.worktree import check_all

    reports = check_all()
    damaged = [r for r in reports if r.problems]
    if not damaged:
        if reports:
            env.stdout.write(f"checkpoints: {_count(len(reports), 'session store')} sound\n")
        return int(ExitCode.OK)
    for store in damaged:
        for problem in store.problems:
            env.stdout.write(f"  checkpoints of {shown_id(store.session_id)}: {safe_line(problem)}\n")
    raise DamagedState(
        f"{_count(len(damaged), 'checkpoint store')} of {len(reports)} damaged (listed above)",
        hint="only their checkpoints are lost; `acpcli sessions rm ID` removes a session with its store",
    )


def _findings(env: Environment, report: Report) -> None:
    from acpcli.text.safe import safe_line

    env.stdout.write(f"{report.path}: damaged\n")
    for finding in report.findings:
        env.stdout.write(f"  {finding.part}: {safe_line(finding.text)}\n")


def _salvaged(env: Environment, salvage: Salvage, path: object) -> None:
    from acpcli.text.safe import safe_line

    out = env.stdout
    if salvage.not_a_database:
        out.write("nothing could be read: the file is not an SQLite database; a fresh, empty index replaces it\n")
    else:
        out.write(f"kept {_count(salvage.sessions, 'session')} and {_count(salvage.events, 'event')} in a fresh index\n")
    if salvage.recovered:
        out.write(
            f"recovered {_count(len(salvage.recovered), 'session')} from the events alone (agent and directory "
            f"unknown): {', '.join(safe_line(s) for s in salvage.recovered[:10])}"
            f"{', …' if len(salvage.recovered) > 10 else ''}\n"
        )
    if salvage.lost_rows:
        out.write(f"could not read {_count(salvage.lost_rows, 'row')} (session records or event pages SQLite cannot read)\n")
    for session_id, seqs in salvage.unreadable.items():
        out.write(f"could not read events of session {safe_line(session_id)}: seq {seqs}\n")
    out.write(f"the damaged file is kept at {salvage.aside}\n")


def _dropped(env: Environment, report: Report, aside: object) -> None:
    from acpcli.text.safe import safe_line

    for kind, name, table in report.unknown:
        on = f" on {safe_line(table)!r}" if kind in ("trigger", "index") else ""
        env.stdout.write(f"dropped {kind} {safe_line(name)!r}{on} (not created by acpcli)\n")
    for kind, name, _sql in report.missing:
        env.stdout.write(f"made acpcli's {kind} {name!r} again\n")
    env.stdout.write(f"the file as it was is kept at {aside}\n")


def _rebuild_search(env: Environment) -> None:
    """Make the search index again from the event log (it is derived data)."""
    from acpcli.history.index import Index
    from acpcli.history.indexing import catch_up

    with Index.open() as index:
        if index.search_damage() is not None:
            index.discard_search_index()
        done = catch_up(index)
    env.stdout.write(f"rebuilt the search index ({_count(done, 'session')} indexed)\n")
