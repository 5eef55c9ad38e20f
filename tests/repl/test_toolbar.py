"""The REPL toolbar: its text, and the callable prompt-toolkit draws at each redraw."""

from __future__ import annotations

from acpcli.protocol import settings
from acpcli.render.usage import usage_text
from acpcli.repl.toolbar import shown_title, status_line

CHOICES = settings.choices(
    [
        {"configId": "mode", "name": "Mode", "category": "mode", "currentValue": "code",
         "options": [{"value": "code", "name": "Code"}]},
        {"configId": "model", "name": "Model", "category": "model", "currentValue": "m2",
         "options": [{"value": "m2", "name": "Model Two"}]},
    ],
    None,
    None,
)


def test_everything_known_is_shown_in_order() -> None:
    usage = {"used": 12_345, "size": 200_000, "cost": {"amount": 0.0412, "currency": "USD"}}
    line = status_line("claude", "Fix the bug", "running", CHOICES, usage)
    assert line == " claude · Fix the bug · running · mode: Code · model: Model Two · 12.3k/200k tokens (6%) · $0.04 "


def test_unknowns_are_left_out_and_waiting_wins() -> None:
    assert status_line("demo", None, None, [], None) == " demo · (untitled) · idle "
    assert "waiting for you" in status_line("demo", "t", "running", [], None, waiting=True)
    assert "requires action" in status_line("demo", "t", "requires_action", [], None)


def test_usage_shapes() -> None:
    assert usage_text(None) is None
    assert usage_text({"used": 999}) == "999 tokens"
    assert usage_text({"used": 2_500_000, "size": 0}) == "2.5M tokens"
    assert usage_text({"used": 10, "size": 100, "cost": {"amount": 3, "currency": "EUR"}}) == "10/100 tokens (10%) · 3.00 EUR"
    assert usage_text({"cost": "free"}) is None


def test_the_title_is_the_one_sessions_shows() -> None:
    from acpcli.history.index import SessionRecord

    def record(title: str | None = None, prompt_title: str | None = None, by_user: bool = False) -> SessionRecord:
        return SessionRecord(
            id="s1", agent="demo", argv=["demo"], cwd="/", title=title, prompt_title=prompt_title, titled_by_user=by_user
        )

    assert shown_title(None, None, None) is None
    assert shown_title(None, None, "  Fix   the bug\nin login") == "Fix the bug"  # sent, not stored yet
    assert shown_title(None, record(prompt_title="Fix the bug"), "") == "Fix the bug"
    assert shown_title("Agent's title", record(prompt_title="Fix the bug"), "") == "Agent's title"
    assert shown_title(None, record(title="Stored agent title", prompt_title="Fix the bug"), "") == "Stored agent title"
    assert shown_title("Agent's title", record(title="Mine", by_user=True), "") == "Mine"  # --title wins


def test_the_drawn_toolbar_follows_the_session_on_one_safe_row() -> None:
    import anyio

    from acpcli.history.index import SessionRecord
    from acpcli.model import Store
    from acpcli.repl.toolbar import bottom_toolbar
    from acpcli.session.feed import SessionFeed

    live = SessionFeed(session_id="s1", store=Store())
    record: list[SessionRecord | None] = [None]
    choices: list[settings.Choice] = []
    draw = bottom_toolbar("demo", live, lambda: choices, lambda: record[0], "allow-reads")
    # (outside a running application, prompt-toolkit's output is 80 columns wide)
    assert draw() == " demo · (untitled) · idle · permissions: allow-reads "
    live.first_prompt = "Fix the bug"  # sent, not stored yet
    live.pending_permissions.add(anyio.Event())
    assert draw() == " demo · Fix the bug · waiting for you · permissions: allow-reads "
    choices.extend(CHOICES)  # the settings as they are at this redraw
    live.store.usage = {"used": 12_345, "size": 200_000}
    full = status_line("demo", "Fix the bug", "idle", CHOICES, live.store.usage, waiting=True, policy="allow-reads")
    line = draw()
    assert len(full) > 80 and len(line) <= 80 and line.endswith("…")  # one row, cut at a word
    assert full.startswith(line[:-1].rstrip(" ·")) and "12.3k" not in line
    live.pending_permissions.clear()
    live.store.title = "the agent's \x1b[2J title"
    assert "\x1b" not in draw() and "title" in draw()  # shown, never obeyed
    record[0] = SessionRecord(id="s1", agent="demo", argv=["demo"], cwd="/", title="Mine", titled_by_user=True)
    assert draw().startswith(" demo · Mine · idle · ")  # the record as last read: a --title wins
