"""TAB completion in the REPL: a pure function of the line (no terminal, no agent)."""

from __future__ import annotations

from pathlib import Path

from acpcli.protocol import settings
from acpcli.repl.commands import COMMANDS, classify, lookup
from acpcli.repl.completion import Inputs, Offer, ReplCompleter, complete
from acpcli.services.mentions import complete_mention

LOCAL = [(c.name, c.help) for c in COMMANDS]
AGENT_COMMANDS = [{"name": "review", "description": "review the diff"}, {"name": "help", "description": "agent help"}]
CHOICES = settings.choices(
    [
        {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "fast",
         "options": [{"value": "fast", "name": "Fast"}, {"value": "smart", "name": "Smart"}]},
        {"id": "brave", "name": "Brave", "type": "boolean", "currentValue": False},
    ],
    {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]},
    "ask",
)
FULL = Inputs(agent_commands=AGENT_COMMANDS, choices=CHOICES, login_methods=[("demo-login", "Demo login")])


def texts(offers: list[Offer]) -> list[str]:
    return [o.text for o in offers]


def test_slash_lists_local_commands_then_the_agents_own() -> None:
    offers = complete("/", LOCAL, FULL)
    assert texts(offers)[: len(LOCAL)] == [f"/{name}" for name, _ in LOCAL]
    # the agent's /help is shadowed by the local one; its /review is offered with its hint
    assert texts(offers)[len(LOCAL):] == ["/review"]
    assert offers[-1].meta == "review the diff"
    assert all(o.replace == 1 for o in offers)


def test_a_prefix_narrows_and_replaces_what_was_typed() -> None:
    assert complete("/mo", LOCAL, FULL) == [
        Offer("/mode", 3, "pick or set the agent's mode"),
        Offer("/model", 3, "pick or set the model"),
    ]
    assert texts(complete("/rev", LOCAL, FULL)) == ["/review"]
    assert texts(complete("/re", LOCAL, FULL)) == ["/rewind", "/review"]
    assert complete("/zzz", LOCAL, FULL) == []


def test_setting_values_complete_after_mode_model_and_config() -> None:
    assert texts(complete("/mode ", LOCAL, FULL)) == ["ask", "code"]  # v1 modes stand in
    assert complete("/model sm", LOCAL, FULL) == [Offer("smart", 2, "Smart")]
    assert texts(complete("/config ", LOCAL, FULL)) == ["model", "brave", "mode"]
    assert complete("/config b", LOCAL, FULL)[0].meta == "Brave: off"
    assert texts(complete("/config brave ", LOCAL, FULL)) == ["on", "off"]
    assert texts(complete("/config model f", LOCAL, FULL)) == ["fast"]
    assert complete("/config model fast x", LOCAL, FULL) == []
    assert complete("/mode ", LOCAL, Inputs()) == []  # an agent without modes offers nothing


def test_login_methods_complete() -> None:
    assert complete("/login d", LOCAL, FULL) == [Offer("demo-login", 1, "Demo login")]


def test_plain_text_completes_nothing_without_a_mention() -> None:
    assert complete("hello wor", LOCAL, FULL) == []
    assert complete("", LOCAL, FULL) == []


def test_mentions_complete_anywhere_in_the_line(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print(1)\n")
    (tmp_path / "setup.cfg").write_text("")
    inputs = Inputs(mention=lambda word: complete_mention(word, str(tmp_path), [str(tmp_path)]))
    offers = complete("explain @s", LOCAL, inputs)
    assert [(o.text, o.replace) for o in offers] == [("@src/", 2), ("@setup.cfg", 2)]
    assert texts(complete("look at @src/m", LOCAL, inputs)) == ["@src/main.py"]
    # after a command's arguments run out, a mention still completes (/export has none we offer)
    assert texts(complete("/export @src/", LOCAL, inputs)) == ["@src/main.py"]
    assert complete("mail me@s", LOCAL, inputs) == []  # not a mention: no space before @


def test_lookup_finds_local_commands_and_aliases_only() -> None:
    found = lookup("/config model smart")
    assert found is not None and found[0].name == "config" and found[1] == "model smart"
    assert lookup("/exit") is not None and lookup("/exit")[0].name == "quit"  # type: ignore[index]
    assert lookup("/review please") is None  # the agent's own: sent as a prompt
    assert lookup("plain text") is None


def test_classify_sorts_commands_escapes_prompts_and_typos() -> None:
    agent = ["review", "help"]
    assert classify("/mode plan", agent) == ("local", "/mode plan")
    assert classify("/cancel", agent) == ("local", "/cancel")
    assert classify("/review the diff", agent) == ("agent", "/review the diff")
    assert classify("//help me", agent) == ("agent", "/help me")  # the agent's /help, shadowed by ours
    assert classify("//anything", []) == ("agent", "/anything")
    for prompt in ("/etc/hosts is empty?", "/ spaced", "plain @x text", "//"):
        assert classify(prompt, agent) == ("agent", prompt)
    kind, said = classify("/modle plan", agent)
    assert kind == "unknown" and said.startswith("unknown command /modle: did you mean /mode?"), said
    assert "//modle sends it" in said
    kind, said = classify("/revew", agent)
    assert kind == "unknown" and "did you mean /review?" in said
    kind, said = classify("/zzzzzz", agent)
    assert kind == "unknown" and "/help lists the commands" in said


def test_a_double_slash_completes_the_agents_commands_shadowed_ones_too() -> None:
    assert texts(complete("//", LOCAL, FULL)) == ["//review", "//help"]
    assert complete("//he", LOCAL, FULL) == [Offer("//help", 4, "agent help")]


def test_the_prompt_toolkit_completer_hands_over_the_offers_and_asks_for_inputs_each_tab() -> None:
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    agent = [{"name": "revie\x1b[2Jw", "description": "wipes\nthe screen"}]
    asked: list[int] = []

    def inputs() -> Inputs:
        asked.append(1)
        return Inputs(agent_commands=agent if len(asked) > 1 else [])

    completer = ReplCompleter(LOCAL, inputs)
    first = list(completer.get_completions(Document("/rev"), CompleteEvent(completion_requested=True)))
    assert first == [] and len(asked) == 1
    (offer,) = completer.get_completions(Document("/rev"), CompleteEvent(completion_requested=True))
    assert len(asked) == 2  # the agent's commands, as they are at this TAB
    assert offer.text == "/revie\x1b[2Jw" and offer.start_position == -len("/rev")
    # what is drawn of it shows the control characters instead of obeying them
    assert "\x1b" not in offer.display_text and "\n" not in offer.display_meta_text
    assert offer.display_meta_text.startswith("wipes")
