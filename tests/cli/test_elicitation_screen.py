"""The agent's forms and links at the terminal (elicitation, issue 25), in a pseudo-terminal on
the emulated screen, against ``tests/peers/sdk_elicit_agent.py`` (official SDK):

* a form with every field type is filled in with the keys and its values reach the agent typed
  (an integer, a number, a boolean, a titled choice, several choices); the sensitive field is
  typed masked and never shown by acpcli;
* Submit with a required field empty shows the problem under that field and keeps the form
  open; fixed, it is sent;
* Escape dismisses the form (``cancel``); the Decline button declines it;
* a link is shown whole with its host, and answered ``accept`` only when the person says so.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import AgentTrace
from .pty import Pty, new_args
from .screen import Screen, screen_text

AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_elicit_agent.py"
CMD = shlex.join([sys.executable, str(AGENT)])
TAB = "\t"
ENTER = "\r"
ESC = "\x1b"
DOWN = "\x1b[B"
BACKSPACE = "\x7f"
FORM_HINT = "Esc: dismiss"
PICKER_TAKES_KEYS = "↑↓ or a number"  # the picker's hint line, drawn once it takes keys


def _until_shown(pty: Pty, text: str, *, gone: bool = False) -> str:
    """Read redraws (each ends by showing the cursor) until ``text`` is on the emulated
    screen (``gone``: is no longer on it); the screen. A redraw moves the cursor over what
    did not change, so the raw stream cannot be searched for what is shown."""
    for _ in range(200):
        screen = screen_text(pty.seen)
        if (text in screen) != gone:
            return screen
        pty.expect(r"\x1b\[\?25h")
    raise AssertionError(
        f"{text!r} never {'went away' if gone else 'shown'}:\n{screen_text(pty.seen)}"
    )


def _answer(pty: Pty) -> str:
    """The agent's report of the answer it got, without spaces (read off the screen, where a
    long one wraps at a space), once the input line is back."""
    pty.expect("ANSWER ")
    pty.prompt()
    screen = screen_text(pty.seen).replace("\n", "")
    said = screen[screen.rindex("ANSWER ") + len("ANSWER ") :]
    return "".join(said[: said.index("›")].split())


def test_a_form_with_every_field_type_is_filled_in_and_sent_typed(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = spawn("new", "--cmd", CMD)
    pty.prompt()
    pty.say("form")
    pty.expect(FORM_HINT)
    keys = [
        "Ada",  # name
        TAB,
        BACKSPACE * 2,
        "41",  # age: 30 -> 41
        TAB,
        "0.25",  # ratio
        TAB,
        " ",  # subscribe: true -> false
        TAB,
        DOWN,
        DOWN,  # colour: (none chosen) -> Red -> Green
        TAB,
        DOWN,  # size: m -> l
        TAB,
        " ",
        DOWN,
        DOWN,
        " ",  # tags: x and z
        TAB,
        "ada@example.com",  # email
        TAB,
        "s3cret-value",  # api_token: sensitive
        TAB,
        ENTER,  # Submit
    ]
    pty.child.send("".join(keys))
    assert _answer(pty) == (
        'accept{"age":41,"api_token":"s3cret-value","colour":"g","email":"ada@example.com",'
        '"name":"Ada","ratio":0.25,"size":"l","subscribe":false,"tags":["x","z"]}'
    )
    assert pty.leave()[0] == ExitCode.OK
    screen = screen_text(pty.seen).replace("\n", "")
    # acpcli itself never showed the secret: its one appearance is the agent's own echo
    assert screen.count("s3cret-value") == 1 and screen.index("s3cret-value") > screen.index(
        "ANSWER accept"
    ), screen
    assert "api_token=***" in screen, screen
    assert "sdk-elicit 0.1 asks for input:" in screen and "Tell me about you" in screen


def test_a_required_field_left_empty_is_shown_in_place_and_the_form_stays(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = spawn("new", "--cmd", CMD)
    pty.prompt()
    pty.say("short")
    pty.expect(FORM_HINT)
    pty.child.send(TAB + TAB + ENTER)  # Submit with Name empty
    rows = _until_shown(pty, "1 field to fix").splitlines()
    at = next(i for i, row in enumerate(rows) if row.startswith("Name *"))
    assert rows[at + 2].strip() == "! required", rows[at : at + 4]  # under the field itself
    pty.child.send("Ada")  # the focus went back to Name; fixed, the problem goes away at once
    _until_shown(pty, "! required", gone=True)
    pty.child.send(TAB + TAB + ENTER)
    assert _answer(pty) == 'accept{"name":"Ada"}'
    assert pty.leave()[0] == ExitCode.OK


def test_escape_dismisses_a_form_and_decline_declines_it(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = spawn("new", "--cmd", CMD)
    pty.prompt()
    pty.say("short")
    pty.expect(FORM_HINT)
    pty.child.send("Ada" + ESC)
    assert _answer(pty) == "cancelnull"
    pty.say("short")
    pty.expect(FORM_HINT)
    pty.child.send(TAB + TAB + TAB + ENTER)  # Name, Note, Submit, Decline
    assert _answer(pty) == "declinenull"
    assert pty.leave()[0] == ExitCode.OK
    screen = screen_text(pty.seen)
    assert "answered: cancelled (dismissed)" in screen and "answered: declined" in screen, screen


def test_a_link_is_shown_whole_and_accepted_only_when_the_person_says_so(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = spawn("new", "--cmd", CMD)
    pty.prompt()
    pty.say("url")
    pty.expect("open this link")
    pty.expect(PICKER_TAKES_KEYS)  # (keys before are not its own: they stay on the input line)
    screen = screen_text(pty.seen)
    assert "host: auth.example.com" in screen
    assert "link: https://auth.example.com/connect?elicitationId=e-1" in screen
    pty.child.send(DOWN + ENTER)  # Decline
    assert _answer(pty) == "declinenull"
    pty.say("url")
    pty.expect("open this link")
    pty.expect(PICKER_TAKES_KEYS)
    pty.child.send(ENTER)  # "I will open it myself"
    assert _answer(pty) == "acceptnull"
    assert pty.leave()[0] == ExitCode.OK
    assert "the agent says the interaction at auth.example.com is complete" in screen_text(pty.seen)


def test_a_warm_prompt_on_a_terminal_fills_the_form_in_through_the_host(spawn) -> None:  # type: ignore[no-untyped-def]
    import subprocess

    def acpcli(*args: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "acpcli", *args], stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=60, check=True,
        ).stdout  # fmt: skip

    sid = acpcli("new", "--no-repl", "--cmd", CMD, "--keep-alive", "300").strip()
    try:
        pty = spawn("prompt", "--session", sid, "--keep-alive", "300", "short")
        pty.expect(FORM_HINT)
        pty.child.send("Ada" + TAB + "a note" + TAB + ENTER)
        assert pty.wait() == ExitCode.OK
        screen = screen_text(pty.seen).replace("\n", "")
        assert "sdk-elicit 0.1 asks for input:" in screen
        assert 'ANSWER accept {"name": "Ada", "note": "a note"}' in screen, screen
        assert sid in acpcli("sessions", "--live", "--json")  # answered through the live host
    finally:
        acpcli("stop", "--all")


def test_the_repl_over_a_host_fills_the_form_in_at_its_terminal(spawn) -> None:  # type: ignore[no-untyped-def]
    """With keep-alive on, the REPL's turns run in the session's host: the agent's form is
    relayed to the terminal whose prompt started the turn and drawn there, as without a host."""
    import subprocess

    pty = spawn("new", "--cmd", CMD, "--keep-alive", "300")
    try:
        pty.prompt()
        pty.say("short")
        pty.expect(FORM_HINT)
        pty.child.send("Ada" + TAB + "a note" + TAB + ENTER)
        pty.expect("ANSWER ")
        pty.prompt()
        screen = screen_text(pty.seen).replace("\n", "")
        assert 'ANSWER accept {"name": "Ada", "note": "a note"}' in screen, screen
        live = subprocess.run(
            [sys.executable, "-m", "acpcli", "sessions", "--live", "--json"], stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
        assert '"session"' in live or '"id"' in live, live  # the turn ran in a live host
        pty.child.send("\x04")  # Ctrl-D: the terminal leaves, the host stays
        pty.expect("the session stays live")
        assert pty.wait() == ExitCode.OK
    finally:
        subprocess.run([sys.executable, "-m", "acpcli", "stop", "--all"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)


def test_a_backtracking_pattern_does_not_freeze_the_form(spawn) -> None:  # type: ignore[no-untyped-def]
    """``^(a+)+$`` against many ``a`` and a ``!`` (issue 31): Submit shows the mismatch under
    the field at once (re would backtrack for hours, deaf to every key); fixed, it is sent."""
    import json

    schema = {"type": "object", "properties": {"code": {"type": "string", "title": "Code", "pattern": "^(a+)+$"}}}
    pty = spawn("new", "--cmd", CMD)
    pty.prompt()
    pty.say("ask " + json.dumps({"mode": "form", "message": "A code", "requestedSchema": schema}))
    pty.expect(FORM_HINT)
    pty.child.send("a" * 34 + "!" + TAB + ENTER)  # Submit
    rows = _until_shown(pty, "1 field to fix").splitlines()
    at = next(i for i, row in enumerate(rows) if row.startswith("Code"))
    assert "! does not match ^(a+)+$" in [row.strip() for row in rows[at : at + 4]], rows[at : at + 4]
    pty.child.send(BACKSPACE)  # the focus went back to Code
    _until_shown(pty, "! does not match", gone=True)
    pty.child.send(TAB + ENTER)
    assert _answer(pty) == 'accept{"code":"' + "a" * 34 + '"}'
    assert pty.leave()[0] == ExitCode.OK


@pytest.mark.parametrize("width", [60, 80, 100])
def test_the_form_draws_its_fields_on_a_scrolled_screen_and_enter_moves_on(  # type: ignore[no-untyped-def]
    spawn, trace: AgentTrace, repl_mode: list[str], width: int
) -> None:
    """The quick start's form (the demo agent's ``form``, ACP v1) after a few turns have
    scrolled the screen: the fields take the rows they need (not only the title and the
    buttons), and Enter in a text field moves to the next field, as documented."""
    pty = spawn(*new_args(trace, protocol=1), *repl_mode, width=width, height=35, true_cpr=True)
    pty.prompt()
    for turn in range(3):
        pty.say(f"turn {turn} no-permission")
        pty.expect("Keywords to try")  # (the answer's last paragraph, at its line's start)
        pty.prompt()
    pty.say("form")
    pty.expect(FORM_HINT)
    screen = Screen(width, 35).feed(pty.seen)
    shown = screen.text().splitlines()[screen.top :]  # the rows on the terminal now
    drawn = "\n".join(shown)
    for caption in ("Coffee order", "Name *", "Drink *", "( ) Espresso", "Cups", "› 1", "Sugar", "[ ] yes", "Submit"):
        assert caption in drawn, drawn
    assert drawn.index("What may I bring you?") < drawn.index("Name *") < drawn.index("Submit"), drawn
    # the hint broken between its keys, never inside a word (60 columns: 'Esc: di' / 'smiss')
    hint = " · ".join(line.strip() for line in shown[[i for i, x in enumerate(shown) if "Submit" in x][-1] + 1 :] if line.strip())
    assert hint == "Tab: next field · Shift-Tab: back · Space: choose · Esc: dismiss", drawn
    pty.child.send("Ada" + ENTER)  # Enter in a text field: on to the next field (Drink)
    pty.child.send(DOWN + DOWN + TAB + TAB + TAB + ENTER)  # Espresso, Caffè latte; Cups, Sugar, Submit
    pty.expect("Order taken")
    pty.prompt()
    said = screen_text(pty.seen, width, 35).replace("\n", " ")
    assert "Order taken: 1 × latte for Ada, no sugar." in said, said
    assert "has no attribute" not in said, said
    assert pty.leave()[0] == ExitCode.OK


def test_keys_typed_before_the_form_are_not_its_own(  # type: ignore[no-untyped-def]
    spawn, trace: AgentTrace, repl_mode: list[str], acpcli_home: Path
) -> None:
    """The form pops up by itself, as a permission question does: what was typed ahead (a
    next prompt, Enter included) stays with the input line -- queued, sent after the turn --
    and none of it lands in the form's first field."""
    import json

    pty = spawn(*new_args(trace, protocol=1), *repl_mode, width=80, height=35, true_cpr=True)
    pty.prompt()
    pty.child.send("form\r" + "later no-permission\r")
    pty.expect(FORM_HINT)  # drawn, and taking keys
    rows = screen_text(pty.seen, 80, 35).splitlines()
    at = max(i for i, row in enumerate(rows) if row.startswith("Name *"))
    assert rows[at + 1].strip() == "›", rows[at : at + 2]  # the name field is empty
    pty.child.send(ESC)  # dismissed: the turn ends (the agent says so), the queue goes on
    pty.expect("order form was dismissed")
    pty.expect("Turn 2: later no-permission")
    pty.prompt()
    status, session_id = pty.leave()
    assert status == ExitCode.OK
    stored = json.loads((acpcli_home / "demo-agent" / "sessions" / f"{session_id}.json").read_text())
    prompts = [
        "".join(block.get("text", "") for block in update["content"])
        for update in stored["history"]
        if update.get("sessionUpdate") == "user_message"
    ]
    assert prompts == ["form", "later no-permission"]
