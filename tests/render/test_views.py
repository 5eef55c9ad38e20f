"""make_view picks the view from the environment; acpcli.render stays cheap to import."""

from __future__ import annotations

import io
import subprocess
from types import SimpleNamespace

import pytest

from acpcli.env import Environment
from acpcli.errors import UsageError
from acpcli.model import Store
from acpcli.render import FinalView, SilentView, make_view
from acpcli.render.jsonl import JsonlView
from acpcli.render.plain import PlainView
from acpcli.render.transcript import to_markdown, to_text
from acpcli.render.tty import TtyView


@pytest.fixture(autouse=True)
def _plain_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR", "TTY_INTERACTIVE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


def env() -> Environment:
    return Environment(stdin=io.StringIO(), stdout=io.StringIO(), stderr=io.StringIO())


def test_a_pipe_gets_the_plain_view_and_a_terminal_the_rich_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(make_view(env()), PlainView)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert isinstance(make_view(env()), TtyView)


def test_formats() -> None:
    assert isinstance(make_view(env(), format="jsonl"), JsonlView)
    assert isinstance(make_view(env(), format="markdown"), FinalView)
    with pytest.raises(UsageError, match="unknown output format"):
        make_view(env(), format="html")


def feed(view: object, store: Store) -> None:
    session = SimpleNamespace(store=store, session_id="s")
    for update in (
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Q"}},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "A"}},
    ):
        view.on_change(session, store.apply(update))  # type: ignore[attr-defined]
    view.turn_ended("end_turn")  # type: ignore[attr-defined]


def test_markdown_format_writes_the_transcript_at_close() -> None:
    e = env()
    view = make_view(e, format="markdown")
    store = Store()
    feed(view, store)
    assert e.stdout.getvalue() == ""  # type: ignore[attr-defined]
    view.close()
    view.close()
    assert e.stdout.getvalue() == to_markdown(store)  # type: ignore[attr-defined]


def test_final_only_on_a_pipe_writes_the_text_transcript_at_close() -> None:
    e = env()
    view = make_view(e, final_only=True)
    store = Store()
    feed(view, store)
    assert e.stdout.getvalue() == ""  # type: ignore[attr-defined]
    view.close()
    assert e.stdout.getvalue() == to_text(store) == "> Q\n\nA\n"  # type: ignore[attr-defined]


def test_silent_view_records_what_it_was_given() -> None:
    silent = SilentView()
    feed(silent, Store())
    silent.close()
    assert len(silent.changes) == 2 and silent.stop_reasons == ["end_turn"] and silent.closed


def test_importing_acpcli_render_imports_no_rich_and_no_view(python_exe: str) -> None:
    code = (
        "import sys, acpcli.render\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'rich' or m.startswith('acpcli.render.')"
        " or m == 'markdown_it'))"
    )
    out = subprocess.run([python_exe, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_final_only_views_print_the_store_at_close(monkeypatch: pytest.MonkeyPatch) -> None:
    e = env()
    jsonl = make_view(e, format="jsonl", final_only=True)
    store = Store()
    feed(jsonl, store)
    assert e.stdout.getvalue() == ""  # type: ignore[attr-defined]
    jsonl.close()
    assert [line.count('"type":"message"') for line in e.stdout.getvalue().splitlines()] == [1, 1]  # type: ignore[attr-defined]

    monkeypatch.setenv("FORCE_COLOR", "1")
    e = env()
    tty = make_view(e, final_only=True, quiet=True)
    assert isinstance(tty, TtyView)
    store = Store()
    feed(tty, store)
    assert e.stdout.getvalue() == ""  # type: ignore[attr-defined]
    tty.close()
    tty.close()
    assert e.stdout.getvalue() == "A\n"  # type: ignore[attr-defined]


def test_quiet_final_only_pipe_prints_agent_text_only() -> None:
    e = env()
    view = make_view(e, final_only=True, quiet=True)
    feed(view, Store())
    view.close()
    assert e.stdout.getvalue() == "A\n"  # type: ignore[attr-defined]


ODD_UPDATES = [
    {"sessionUpdate": "plan", "entries": [{"content": {"not": "text"}, "status": {"odd": 1}, "priority": None}, {}]},
    {"sessionUpdate": "tool_call", "toolCallId": "t", "title": None, "kind": "_vendor_kind", "status": "_vendor_status",
     "locations": [{}, {"path": "/x", "line": True}],
     "content": [{"type": "diff", "path": None, "oldText": 3, "newText": None}, {"type": "_future"},
                 {"type": "content", "content": "not a block"}, {"type": "content", "content": {"type": "audio"}},
                 {"type": "terminal"}]},
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "resource", "resource": {"uri": "file:///a", "text": "x"}}},
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "resource_link", "uri": "file:///b", "name": "b"}},
    {"sessionUpdate": "agent_thought_chunk", "content": {"type": "image", "mimeType": "image/png", "data": "AA"}},
    {"sessionUpdate": "plan_update", "plan": {"planId": "p", "type": "_graph", "nodes": []}},
    {"sessionUpdate": "user_message_chunk", "content": {"type": "_vendor_block"}},
    {"sessionUpdate": "agent_message", "messageId": "m", "content": None},
]


@pytest.mark.parametrize("fmt", ["text", "jsonl", "markdown", "tty"])
def test_odd_but_tolerated_input_renders_without_error(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if fmt == "tty":
        monkeypatch.setenv("FORCE_COLOR", "1")
    e = env()
    view = make_view(e, format="text" if fmt == "tty" else fmt, show_thoughts=True)
    store = Store()
    session = SimpleNamespace(store=store, session_id="s")
    for update in ODD_UPDATES:
        change = store.apply(update)
        if change is not None:
            view.on_change(session, change)
    view.turn_ended("_vendor_reason")
    view.close()
    out = e.stdout.getvalue()  # type: ignore[attr-defined]
    assert out
    if fmt in ("text", "tty"):
        assert "[resource file:///a]" in out and "[link b <file:///b>]" in out


# -- the environment's terminal facts, decided without rich where rich would say no ---------


class _Stream(io.StringIO):
    """A text stream that says whether it is a terminal."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


@pytest.mark.parametrize("tty", [False, True])
@pytest.mark.parametrize("force_color", [None, "", "1", "0"])
@pytest.mark.parametrize("tty_compatible", [None, "", "0", "1"])
def test_stdout_is_terminal_agrees_with_rich(
    tty: bool, force_color: str | None, tty_compatible: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    for var, value in (("FORCE_COLOR", force_color), ("TTY_COMPATIBLE", tty_compatible)):
        if value is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, value)
    stream = _Stream(tty)
    e = Environment(stdin=io.StringIO(), stdout=stream, stderr=io.StringIO())
    assert e.stdout_is_terminal is Console(file=stream).is_terminal
    # rich is asked only when it might say yes
    assert (e._out is None) is (not tty and tty_compatible != "1" and not force_color)


def test_stdout_is_terminal_handles_closed_and_missing_streams() -> None:
    closed = io.StringIO()
    closed.close()
    assert Environment(stdout=closed).stdout_is_terminal is False  # isatty() raises ValueError
    assert Environment(stdout=object()).stdout_is_terminal is False  # type: ignore[arg-type]  # no isatty


NOTE_TEXTS = [
    "session demo-1", "  spaced  ", "x" * 300, "[dim]not markup[/]", "wide 日本語", "", "e\u0301",
    "zero\u200bwidth", "no sessions recorded yet — start one with `acpcli new --agent demo`",
    "an emoji code :smile: goes to rich", "tab\tand\nnewline go to rich", "\x1b[31mescape",
]


@pytest.mark.parametrize("style", [None, "dim", "yellow"])
@pytest.mark.parametrize("force_color", [False, True])
def test_note_prints_what_rich_prints(style: str | None, force_color: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if force_color:
        monkeypatch.setenv("FORCE_COLOR", "1")
    for text in NOTE_TEXTS:
        ours, theirs = io.StringIO(), io.StringIO()
        Environment(stderr=ours).note(text, style=style)
        Environment(stderr=theirs).err.print(text, style=style, markup=False, highlight=False)
        assert ours.getvalue() == theirs.getvalue(), text


def test_note_on_a_pipe_is_rich_free_for_any_printable_text() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None)
    @given(st.text(st.characters(blacklist_characters=":"), max_size=120).filter(str.isprintable))
    def check(text: str) -> None:
        ours, theirs = io.StringIO(), io.StringIO()
        e = Environment(stderr=ours)
        e.note(text, style="yellow")
        assert e._err is None  # written without building a rich console
        Environment(stderr=theirs).err.print(text, style="yellow", markup=False, highlight=False)
        assert ours.getvalue() == theirs.getvalue()

    check()
