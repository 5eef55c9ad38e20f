"""The Python API's checkpoints (issue 34): ``session.checkpoints()``, ``session.diff(turn)``,
``session.rewind(turn, files=..., conversation=...)``, async and blocking, against the demo agent
(which writes through the client's file methods) and an SDK agent that forks sessions."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import acpcli
import acpcli.sync
from tests.peers import agent_argv


def _said(session: object) -> list[str]:
    """The prompts of a session's transcript, in order."""
    return [e.text.strip() for e in session.transcript.entries if isinstance(e, acpcli.UserText)]  # type: ignore[attr-defined]


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_checkpoints_diff_and_a_rewind_of_both(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()

    async def main() -> None:
        async with acpcli.connect("demo", cwd=work, protocol="1", permissions="allow") as agent:
            session = await agent.new_session()
            for name in ("one.txt", "two.txt", "three.txt"):
                await session.ask(f"write {name}")
            found = await session.checkpoints()
            assert [c.turn for c in found] == [0, 1, 2, 3]
            assert all(isinstance(c, acpcli.Checkpoint) for c in found)
            assert found[2].prompt == "write two.txt" and found[2].added == 4
            assert found[2].files == (acpcli.ChangedFile("two.txt", "A", str(work.resolve()), 4, 0),)
            assert "+++ b/two.txt" in await session.diff(2) and "three.txt" in await session.diff()
            assert "two.txt | 4 ++++" in await session.diff(2, stat=True)

            done = await session.rewind(2)
            assert isinstance(done, acpcli.Rewind) and done.how == "transcript"
            assert sorted((f.path, f.status) for f in done.files) == [("three.txt", "D"), ("two.txt", "D")]
            assert _names(work) == ["one.txt"]
            new = done.session
            assert isinstance(new, acpcli.Session) and new.id != session.id
            said = _said(new)
            assert said == ["write one.txt"], said
            answer = await new.ask("go on")
            assert "received resource acpcli:conversation-so-far" in answer.text
            assert "received resource" not in (await new.ask("and on")).text  # sent once
            assert _said(session)[-1] == "write three.txt"

            # the files only, then the conversation only
            files_only = await session.rewind(1, conversation=False)
            assert files_only.session is None and _names(work) == []
            talk = await session.rewind(3, files=False)
            assert talk.files == () and _names(work) == []
            assert _said(talk.session) == ["write one.txt", "write two.txt"]
            with pytest.raises(acpcli.UsageError, match="from 1 to 4"):
                await session.rewind(9, files=False)

    anyio.run(main)


def test_a_hand_edit_is_refused_unless_forced_and_nothing_is_made(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()

    async def main() -> None:
        async with acpcli.connect("demo", cwd=work, protocol="1", permissions="allow") as agent:
            session = await agent.new_session()
            await session.ask("write mine.txt")
            (work / "mine.txt").write_text("my own\n")
            with pytest.raises(acpcli.AcpcliError, match="changed by hand") as refused:
                await session.rewind(1)
            assert "force=True" in (refused.value.hint or "")
            assert (work / "mine.txt").read_text() == "my own\n"
            assert [s.id for s in acpcli.sessions()] == [session.id]  # no new session
            forced = await session.rewind(1, force=True, conversation=False)
            assert [f.path for f in forced.files] == ["mine.txt"] and not (work / "mine.txt").exists()

    anyio.run(main)


def test_an_agent_that_forks_gets_session_fork_for_a_whole_conversation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SDK_SESSIONS_STATE", str(tmp_path / "agent-sessions.json"))
    argv = agent_argv("sdk_sessions_agent.py", "--fork")
    with acpcli.sync.connect(argv=argv, cwd=tmp_path) as agent:
        session = agent.new_session()
        session.ask("alpha")
        session.ask("beta")
        whole = session.rewind(3, files=False)
        assert whole.how == "fork" and isinstance(whole.session, acpcli.sync.SyncSession)
        assert "(I remember: alpha, beta;" in whole.session.ask("gamma").text
        part = session.rewind(2, files=False)
        assert part.how == "transcript"
        text = part.session.ask("delta").text
        assert "(I remember: nothing;" in text and "alpha" in text and "beta" not in text
