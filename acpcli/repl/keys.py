"""The REPL's key bindings, on top of prompt-toolkit's own (Emacs mode).

Enter sends (prompt-toolkit's accept); Alt-Enter (or Esc then Enter) inserts a newline;
Ctrl-C clears the line; Ctrl-D on an empty line leaves (prompt-toolkit raises ``EOFError``,
which the loop, :func:`acpcli.repl.run_repl`, turns into leaving). During a turn the keys are
read by :mod:`acpcli.repl.typeahead` instead.
"""

from __future__ import annotations

from typing import Any

from prompt_toolkit.key_binding import KeyBindings


def key_bindings() -> KeyBindings:
    """The bindings of the REPL's input line (see the module docstring)."""
    keys = KeyBindings()

    @keys.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("c-c")
    def _clear(event: Any) -> None:
        event.current_buffer.reset()

    return keys
