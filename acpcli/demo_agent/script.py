"""What the demo agent says: prompt keywords, and the texts of a turn (pure functions, no I/O)."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from typing import Any

_FLAGS = {
    "slow": re.compile(r"\bslow\b", re.I),
    "refuse": re.compile(r"\brefuse\b", re.I),
    "max_tokens": re.compile(r"\bmax[ _-]?tokens\b", re.I),
    "crash": re.compile(r"\bcrash\b", re.I),
    "no_permission": re.compile(r"\bno[ _-]permission\b", re.I),
    "plan_mode": re.compile(r"\bplan[ _-]mode\b", re.I),
    "status": re.compile(r"\bstatus\b", re.I),
    "form": re.compile(r"\bform\b", re.I),
}
_READ = re.compile(r"\bread\s+(\S+)", re.I)
_WRITE = re.compile(r"\bwrite\s+(\S+)", re.I)
_RUN = re.compile(r"\brun\s+([^\n]+)", re.I)

DEMO_FILE = "DEMO.md"
DEMO_OLD_TEXT = "# Demo\n\nHello.\n"
SLOW_LINES = 400


@dataclass(frozen=True)
class Directives:
    """The keywords found in a prompt (documented in the package docstring and ``--help``)."""

    slow: bool = False
    refuse: bool = False
    max_tokens: bool = False
    crash: bool = False
    no_permission: bool = False
    plan_mode: bool = False
    status: bool = False
    form: bool = False
    read_path: str | None = None
    write_path: str | None = None
    run_argv: tuple[str, ...] | None = None


def prompt_text(prompt: list[Any]) -> str:
    """The text blocks of a prompt, joined by newlines (keywords are looked for only here)."""
    return "\n".join(
        block["text"]
        for block in prompt
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    )


def parse_directives(text: str) -> Directives:
    """Find the keywords in ``text``; paths keep whatever quoting the user put around them."""
    flags = {name: bool(rx.search(text)) for name, rx in _FLAGS.items()}
    read = _READ.search(text)
    write = _WRITE.search(text)
    run = _RUN.search(text)
    argv: tuple[str, ...] | None = None
    if run:
        try:
            argv = tuple(shlex.split(run.group(1)))
        except ValueError:  # unbalanced quotes: fall back to whitespace
            argv = tuple(run.group(1).split())
    return Directives(
        **flags,
        read_path=_unquote(read.group(1)) if read else None,
        write_path=_unquote(write.group(1)) if write else None,
        run_argv=argv or None,
    )


def resolve(cwd: str, path: str) -> str:
    """``path`` made absolute against the session's cwd."""
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))


def first_line(text: str, limit: int) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return clip(" ".join(line.split()), limit)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def fenced(text: str, lang: str = "") -> str:
    """A fenced code block that survives backticks inside ``text``."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{lang}\n{body}{fence}"


def thought_text(text: str) -> str:
    return (
        f"The user wrote {len(text)} characters, starting with “{first_line(text, 60)}”. "
        "Plan: take stock, propose a small edit, ask for permission, then answer in Markdown."
    )


def demo_new_text(turn: int, text: str) -> str:
    return f"# Demo\n\nHello from the acpcli demo agent.\nTurn {turn}: {first_line(text, 60)}\n"


def status_text(settings_line: str, received: list[str]) -> str:
    """The whole answer of a ``status`` turn: the settings line, then what arrived."""
    return "\n".join([settings_line, *received]) + "\n"


def refusal_text() -> str:
    return "I won't do that: the prompt said `refuse`, so this turn ends with stop reason *refusal*.\n"


def answer_text(
    *,
    text: str,
    turn: int,
    plan_steps: int,
    edit_target: str,
    edit: str,
    notes: list[str],
    blocks: list[str],
    slow: bool,
    settings_line: str = "",
    received: list[str] | None = None,
    switched: bool = False,
) -> str:
    """The Markdown answer: heading, the user's words, what arrived, a list, fenced code, the
    settings line, the keyword hint."""
    quote = first_line(text, 160) or "(no text)"
    parts = [
        "## Demo agent reply",
        "",
        "You wrote:",
        "",
        f"> {quote}",
        "",
    ]
    if received:
        parts += ["Along with it:", "", *(f"- {line}" for line in received), ""]
    parts += [
        "What happened in this turn:",
        "",
        *(["- I switched myself to plan mode, as asked (`plan mode`)."] if switched else []),
        f"- I thought about it and made a plan with {plan_steps} steps.",
        f"- I proposed an edit to `{edit_target}`: {edit}.",
        *(f"- {note}" for note in notes),
        "",
    ]
    for block in blocks:
        parts += [block, ""]
    parts += [
        "Here is some code, so you can see a fenced block:",
        "",
        fenced(f'def greet(name: str) -> str:\n    return f"Hello, {{name}}! (turn {turn})"\n', "python"),
        "",
    ]
    if slow:
        parts += ["Streaming slowly, as asked (`slow`):", ""]
        parts += [f"{i}. still streaming, line {i} of {SLOW_LINES}" for i in range(1, SLOW_LINES + 1)]
        parts.append("")
    if settings_line:
        parts += [f"Settings: {settings_line}", ""]
    parts.append(
        # The hint ends with `run CMD`. (the CLI's tests look for the end of the answer there)
        "Keywords to try: `status`, `form`, `plan mode`, `slow`, `refuse`, `max tokens`, `crash`, "
        "`no-permission`, `read PATH`, `write PATH`, `run CMD`."
    )
    return "\n".join(parts) + "\n"


def _unquote(token: str) -> str:
    return token.strip("`'\"")


#: The form the ``form`` keyword asks for (``elicitation/create``, form mode).
ORDER_FORM: dict[str, Any] = {
    "type": "object",
    "title": "Coffee order",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "for the cup", "minLength": 1, "maxLength": 40},
        "drink": {
            "type": "string",
            "title": "Drink",
            "oneOf": [
                {"const": "espresso", "title": "Espresso"},
                {"const": "latte", "title": "Caffè latte"},
                {"const": "tea", "title": "Tea"},
            ],
        },
        "cups": {"type": "integer", "title": "Cups", "minimum": 1, "maximum": 9, "default": 1},
        "sugar": {"type": "boolean", "title": "Sugar", "default": False},
    },
    "required": ["name", "drink"],
}


def form_text(result: Any, offered: bool, v2: bool = False) -> str:
    """What a ``form`` turn answers, from the client's ``elicitation/create`` answer."""
    if v2:
        return (
            "Forms (elicitation) are ACP v1 and this session speaks v2, so no form was asked: "
            "try `acpcli new --agent demo --protocol 1`, then `form`.\n"
        )
    if not offered:
        return "The client did not advertise elicitation.form: no form was asked.\n"
    action = result.get("action") if isinstance(result, dict) else None
    content = result.get("content") if isinstance(result, dict) else None
    if action == "accept" and isinstance(content, dict):
        cups = content.get("cups", 1)
        sugar = "with sugar" if content.get("sugar") else "no sugar"
        return f"Order taken: {cups} × {content.get('drink')} for {content.get('name')}, {sugar}.\n"
    if action == "decline":
        return "You declined the order form: no coffee.\n"
    return "The order form was dismissed (cancel): no coffee.\n"
