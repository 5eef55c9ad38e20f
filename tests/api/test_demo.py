"""The Python API against the built-in demo agent (a real process): requests for input,
settings, listing, ``acpcli.run`` continuing a session, and ``home=``."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

import acpcli


def test_a_form_is_answered_by_the_callback_or_declined(tmp_path: Path) -> None:
    asked: list[acpcli.InputRequest] = []

    async def fill(request: acpcli.InputRequest) -> acpcli.InputAnswer | None:
        asked.append(request)
        return acpcli.InputAnswer.accept({"name": "Ada", "drink": "tea"})

    async def main() -> tuple[list[acpcli.Event], list[acpcli.Event]]:
        async with acpcli.connect("demo", cwd=tmp_path, protocol="1", on_input=fill) as agent:
            answered = [e async for e in (await agent.new_session()).prompt("form")]
        async with acpcli.connect("demo", cwd=tmp_path, protocol="1") as agent:
            declined = [e async for e in (await agent.new_session()).prompt("form")]
        return answered, declined

    answered, declined = anyio.run(main)
    (request,) = asked
    assert isinstance(request, acpcli.FormRequest) and request.message == "What may I bring you?"
    drink = next(f for f in request.fields if f.name == "drink")
    assert drink.required and ("tea", "Tea") in drink.options
    assert acpcli.InputAnswered(request, "accept") in answered
    ended = answered[-1]
    assert isinstance(ended, acpcli.TurnEnded) and "tea for Ada" in ended.result.text

    assert [e.action for e in declined if isinstance(e, acpcli.InputAnswered)] == ["decline"]
    notices = [e.text for e in declined if isinstance(e, acpcli.Notice)]
    assert len(notices) == 1 and "no on_input callback was given to acpcli.connect" in notices[0], notices


def test_settings_are_typed_and_set_by_name(tmp_path: Path) -> None:
    async def main() -> tuple[acpcli.Setting, acpcli.Setting, str]:
        async with acpcli.connect("demo", cwd=tmp_path) as agent:
            session = await agent.new_session()
            before = next(s for s in session.settings if s.key == "mode")
            after = await session.set("mode", "plan")
            with pytest.raises(acpcli.UsageError, match="offers no colour setting"):
                await session.set("colour", "blue")
            listed = await agent.sessions()
            assert session.id in [info.session_id for info in listed]
            return before, after, session.id

    before, after, _ = anyio.run(main)
    assert (before.current, before.category) == ("ask", "mode") and ("plan", "Plan") in before.values
    assert (after.key, after.current, after.current_name) == ("mode", "plan", "Plan")


def test_run_continues_a_session_under_the_given_home(tmp_path: Path) -> None:
    home = tmp_path / "elsewhere"
    first = acpcli.run("demo", "hello", cwd=tmp_path, permissions="allow", home=home)
    assert first.ok and first.session_id.startswith("demo-") and "Keywords to try" in first.text
    assert first.markdown.startswith("# hello\n") and "hello" in first.transcript_text
    assert os.environ["ACPCLI_HOME"] != str(home)  # restored after the call
    assert (home / "acpcli.db").exists()

    again = acpcli.run("demo", "refuse", cwd=tmp_path, session=first.session_id, home=home)
    assert (again.session_id, again.stop_reason, again.ok) == (first.session_id, "refusal", False)
    assert again.markdown.count("## User") == 2  # the stored turn and this one

    with pytest.raises(acpcli.UnknownSession):  # neither recorded nor known under the default home
        acpcli.run("demo", "hi", cwd=tmp_path, session=first.session_id)
