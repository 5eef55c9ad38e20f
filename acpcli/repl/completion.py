"""What TAB offers in the REPL: a pure function of the line, tested without a terminal.

* ``/`` then a word: local commands, then the agent's own (``available_commands_update``);
  ``//`` then a word: the agent's own only (shadowed ones included: ``//help``);
* ``/mode ``, ``/model ``: the values of that setting; ``/config ``: the settings, then the
  values of the one named; ``/login ``: the advertised login methods;
* a word starting with ``@`` anywhere: file names inside the session's directories (the
  ``mention`` callback, which reads the file system, is injected).

:class:`ReplCompleter` is what prompt-toolkit calls on TAB: it asks :func:`complete` and hands
the offers over as prompt-toolkit ``Completion`` objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prompt_toolkit.completion import Completer, Completion

from acpcli.protocol.settings import Choice, find
from acpcli.services.mentions import mention_prefix
from acpcli.text.safe import safe_line

if TYPE_CHECKING:
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document


@dataclass(frozen=True)
class Offer:
    """One completion: replace the last ``replace`` characters before the cursor by ``text``."""

    text: str
    replace: int
    meta: str = ""


@dataclass(frozen=True)
class Inputs:
    """What completion may offer besides the local commands (all optional)."""

    agent_commands: Sequence[dict[str, Any]] = ()
    choices: Sequence[Choice] = ()
    login_methods: Sequence[tuple[str, str]] = ()  # (id, name)
    mention: Callable[[str], list[tuple[str, str]]] | None = None


def complete(text: str, commands: Sequence[tuple[str, str]], inputs: Inputs = Inputs()) -> list[Offer]:
    """Completions for ``text`` (the line up to the cursor). ``commands``: local (name, help)."""
    if text.startswith("/"):
        if " " not in text:
            return _commands(text[1:], commands, inputs.agent_commands)
        name, _, rest = text[1:].partition(" ")
        offers = _arguments(name, rest, inputs)
        if offers is not None:
            return offers
    if inputs.mention is not None:
        word = mention_prefix(text)
        if word is not None:
            return [Offer(value, len(word), meta) for value, meta in inputs.mention(word)]
    return []


def _commands(prefix: str, commands: Sequence[tuple[str, str]], agent_commands: Sequence[dict[str, Any]]) -> list[Offer]:
    replace = len(prefix) + 1
    if prefix.startswith("/"):  # `//word`: any of the agent's own, shadowed ones included
        return [
            Offer(f"//{cmd['name']}", replace, str(cmd.get("description") or ""))
            for cmd in agent_commands
            if isinstance(cmd, dict) and isinstance(cmd.get("name"), str) and cmd["name"].startswith(prefix[1:])
        ]
    out = [Offer(f"/{name}", replace, help) for name, help in commands if name.startswith(prefix)]
    local = {name for name, _ in commands}
    for cmd in agent_commands:
        name = cmd.get("name") if isinstance(cmd, dict) else None
        if isinstance(name, str) and name.startswith(prefix) and name not in local:
            out.append(Offer(f"/{name}", replace, str(cmd.get("description") or "")))
    return out


def _values(choice: Choice | None, typed: str) -> list[Offer]:
    if choice is None:
        return []
    if choice.kind == "boolean":
        pairs = [("on", ""), ("off", "")]
    else:
        pairs = [(value, name if name != value else description) for value, name, description in choice.values]
    return [Offer(value, len(typed), meta) for value, meta in pairs if value.startswith(typed)]


def _arguments(name: str, rest: str, inputs: Inputs) -> list[Offer] | None:
    """Completions of a local command's arguments; ``None`` when the command takes none
    we can offer (the line may still hold an ``@`` mention)."""
    if name in ("mode", "model") and " " not in rest:
        return _values(find(inputs.choices, name), rest)
    if name == "config":
        key, space, typed = rest.partition(" ")
        if not space:
            return [Offer(c.key, len(key), f"{c.name}: {c.current}") for c in inputs.choices if c.key.startswith(key)]
        if " " not in typed:
            return _values(find(inputs.choices, key), typed)
        return []
    if name == "login" and " " not in rest:
        return [Offer(mid, len(rest), label) for mid, label in inputs.login_methods if mid.startswith(rest)]
    return None


class ReplCompleter(Completer):
    """The REPL's completer: :func:`complete` on the line up to the cursor. ``commands``: the
    local (name, help) pairs; ``inputs``: what else may be offered, asked again on every TAB
    (the agent's commands and settings change during the session). What is shown of an offer
    passes :func:`~acpcli.text.safe.safe_line`: the agent's names are shown, never obeyed."""

    def __init__(self, commands: Sequence[tuple[str, str]], inputs: Callable[[], Inputs]) -> None:
        self.commands = commands
        self.inputs = inputs

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        for offer in complete(document.text_before_cursor, self.commands, self.inputs()):
            yield Completion(
                offer.text, start_position=-offer.replace, display=safe_line(offer.text), display_meta=safe_line(offer.meta)
            )
