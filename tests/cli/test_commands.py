"""The command bodies (:mod:`acpcli.cli.commands`) called as functions: ``new`` and ``load`` return
an :class:`Outcome` (exit code, session) and write no result themselves; a new session's id
is told to the invocation's ``created``, which the CLI turns into stdout."""

from __future__ import annotations

import io
import shlex
import sys
from pathlib import Path

from acpcli.cli.commands import Outcome, new, reattach
from acpcli.env import Environment
from acpcli.history.records import stored
from acpcli.session.context import Invocation
from acpcli.session.inputs import Options

DEMO = shlex.join([sys.executable, "-m", "acpcli.demo_agent", "--delay", "0"])


def script(told: list[str] | None = None) -> tuple[Invocation, io.StringIO]:
    """A script's invocation (nobody at a terminal) whose stdout the test reads."""
    out = io.StringIO()
    env = Environment(stdin=io.StringIO(), stdout=out, stderr=io.StringIO())
    return Invocation(env=env, created=told.append if told is not None else None), out


def test_new_returns_the_new_session_and_tells_it_without_writing_it(tmp_path: Path) -> None:
    told: list[str] = []
    invocation, out = script(told)
    outcome = new(Options(cmd=DEMO, cwd=tmp_path), invocation)
    assert outcome.exit_code == 0
    assert outcome.session_id is not None
    assert told == [outcome.session_id]
    assert out.getvalue() == ""  # the library writes no result: the CLI does, from what it is told
    record, _ = stored(outcome.session_id)
    assert record.id == outcome.session_id


def test_nobody_told_is_nobody_written_to(tmp_path: Path) -> None:
    invocation, out = script(None)
    outcome = new(Options(cmd=DEMO, cwd=tmp_path), invocation)
    assert outcome.exit_code == 0 and outcome.session_id is not None
    assert out.getvalue() == ""


def test_load_returns_the_session_it_loaded_and_tells_nothing(tmp_path: Path) -> None:
    parent = new(Options(cmd=DEMO, cwd=tmp_path), script()[0]).session_id
    assert parent is not None
    told: list[str] = []
    loaded = reattach("load", parent, Options(cmd=DEMO), script(told)[0])
    assert loaded == Outcome(0, parent)
    assert told == []  # an existing session: no new id to tell
