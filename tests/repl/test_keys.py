"""The REPL's key bindings, driven through a real prompt-toolkit prompt (keys from a pipe, no
terminal): Alt-Enter inserts a newline rather than sending, Ctrl-C clears what was typed."""

from __future__ import annotations

import pytest
from prompt_toolkit import PromptSession
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.output import DummyOutput

from acpcli.repl.keys import key_bindings


def typed(keys: str, bindings: KeyBindings | None = None) -> str:
    """The line a prompt with ``bindings`` (the REPL's by default) returns after ``keys``."""
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        session: PromptSession[str] = PromptSession(
            input=pipe, output=DummyOutput(), key_bindings=bindings or key_bindings(), multiline=False
        )
        return session.prompt()


def test_alt_enter_inserts_a_newline_and_enter_sends() -> None:
    assert typed("first\x1b\rsecond\r") == "first\nsecond"


def test_ctrl_c_clears_the_line_instead_of_leaving() -> None:
    assert typed("a typo\x03what I meant\r") == "what I meant"


def test_without_the_bindings_the_same_keys_do_otherwise() -> None:
    # the checks above can fail: prompt-toolkit's own Ctrl-C interrupts, and Alt-Enter alone
    # does not insert a newline
    with pytest.raises(KeyboardInterrupt):
        typed("a typo\x03", KeyBindings())
    assert "\n" not in typed("first\x1b\rsecond\r", KeyBindings())
