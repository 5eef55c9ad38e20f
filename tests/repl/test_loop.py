"""The REPL's loop (:class:`acpcli.repl.loop.Repl`) in-process: keys from a pipe (no
terminal), the real demo agent over the memory transport (no subprocess). Each test is a
short conversation through :meth:`~acpcli.repl.loop.Repl.run`: a prompt turn and the goodbye
lines, an unknown ``/word`` that is not sent, a local command that ends the loop, a queued
prompt sent without a key pressed. The pty tests (tests/cli/test_repl*.py) hold the screen."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from acpcli.errors import ExitCode
from acpcli.history.eventlog import EventWriter
from acpcli.history.index import Index
from acpcli.repl.loop import Repl
from acpcli.session.attach import attach
from acpcli.session.context import Invocation
from acpcli.session.conversation import Conversation
from acpcli.session.inputs import Options
from tests.session.demo_peer import QUIET, demo_link, quiet_env

pytestmark = pytest.mark.anyio

CTRL_C, CTRL_D = "\x03", "\x04"  # Ctrl-C clears the line; Ctrl-D leaves from an empty one


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def writer(index: Index) -> Iterator[EventWriter]:
    w = index.writer()
    yield w
    w.close()


async def converse(
    keys: str, index: Index, writer: EventWriter, cwd: Path, queued: tuple[str, ...] = (), width: int | None = None
) -> tuple[Repl, int, str]:
    """A new demo session, then :meth:`Repl.run` over it with ``keys`` typed (and ``queued``
    in its queue first; stderr ``width`` columns wide): the loop, its exit code and what it
    wrote on stderr."""
    run = Invocation(env=quiet_env())
    if width is not None:
        run.env.err.width = width
    async with demo_link() as link:
        live = await attach(link, "new", Options(agent="demo", cwd=cwd).inputs(), run, index, writer, None, None)
        assert live.lock is not None
        live.lock.release()  # as the REPL holds it: each turn takes it again
        conversation = Conversation(link, live, index, writer, "demo")
        with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
            pipe.send_text(keys)
            repl = Repl(run.env, conversation, banner=False)
            for text in queued:
                repl.queue.add(text)
            code = await repl.run()
    stderr = run.env.stderr
    assert isinstance(stderr, io.StringIO)
    return repl, code, stderr.getvalue()


def said_by_agent(repl: Repl) -> str:
    return "".join(getattr(e, "text", "") for e in repl.live.store.entries if getattr(e, "kind", "") == "agent")


async def test_a_turn_then_ctrl_d_says_how_to_come_back(index: Index, writer: EventWriter, tmp_path: Path) -> None:
    repl, code, err = await converse(f"{QUIET}\r{CTRL_D}", index, writer, tmp_path)
    assert code == int(ExitCode.OK)
    assert said_by_agent(repl)  # the turn ran and its answer reached the store
    assert repl.record is not None and repl.record.shown_title == QUIET  # read again after the turn
    assert "bye — come back with:" in err and repl.live.session_id in err
    assert repl.keep == repl.typed == ""


async def test_an_unknown_word_is_not_sent_and_comes_back_on_the_line(
    index: Index, writer: EventWriter, tmp_path: Path
) -> None:
    # The line comes back as the next input line's default: Enter sends it again, unknown again.
    repl, code, err = await converse(f"/nosuchcommand\r\r{CTRL_C}{CTRL_D}", index, writer, tmp_path)
    assert code == int(ExitCode.OK)
    assert err.count("› /nosuchcommand") == 2  # echoed each time, never sent
    assert not said_by_agent(repl)
    assert repl.keep == "/nosuchcommand"  # still there when Ctrl-D left the cleared line


async def test_quit_ends_the_loop_with_the_goodbye_lines(index: Index, writer: EventWriter, tmp_path: Path) -> None:
    repl, code, err = await converse("/quit\rnever read\r", index, writer, tmp_path)
    assert code == int(ExitCode.OK)
    assert "› /quit" in err and "bye — come back with:" in err
    assert not said_by_agent(repl)


async def test_a_queued_prompt_is_sent_before_the_line_is_read(index: Index, writer: EventWriter, tmp_path: Path) -> None:
    repl, code, err = await converse(CTRL_D, index, writer, tmp_path, queued=(QUIET, "second"))
    assert code == int(ExitCode.OK)
    assert said_by_agent(repl)
    assert not repl.queue  # both sent, one turn each
    assert [e.text for e in repl.live.store.entries if getattr(e, "kind", "") == "user"] == [QUIET, "second"]
    assert "queued prompt" not in err



async def test_the_goodbye_wraps_at_words_and_keeps_the_command_whole(
    index: Index, writer: EventWriter, tmp_path: Path
) -> None:
    from acpcli.repl.banner import come_back

    repl, code, err = await converse(f"{CTRL_D}", index, writer, tmp_path, width=60)
    assert code == int(ExitCode.OK)
    command = come_back(repl.link.features, repl.live.session_id)
    assert len(f"bye — come back with: {command}") > 60  # too long for one line
    lines = err.splitlines()
    assert all(len(line) <= 60 for line in lines), lines
    assert any(line.strip() == command for line in lines), lines  # never cut between its words
    assert "\u00a0" not in err
