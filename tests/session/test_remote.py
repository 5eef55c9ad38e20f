"""acpcli.session.remote: what the agent itself keeps, asked of the agent (``session/list``,
all pages; ``session/delete``, gated on its capability), and the listed titles saved here.

These functions start their agent themselves (they open their own link): the demo agent and
an SDK agent run as processes here, with few of them."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import anyio
import pytest

from acpcli.errors import CapabilityMissing, UsageError
from acpcli.history.index import Index
from acpcli.paths import db_path
from acpcli.session.attach import attach
from acpcli.session.context import Invocation
from acpcli.session.inputs import Options
from acpcli.session.remote import delete_remote, list_remote, titles_from_list
from acpcli.session.turn import run_turn
from tests.helpers.records import rec
from tests.peers import agent_argv
from tests.session.demo_peer import demo_link, quiet_env, text

#: The demo agent as a process, one session per page of its list.
DEMO_CMD = shlex.join([sys.executable, "-m", "acpcli.demo_agent", "--delay", "0", "--page-size", "1"])


def prompted_sessions(workdir: Path, *prompts: str) -> list[str]:
    """Sessions made (in this process) with the demo agent, each prompted once, recorded here
    as made by ``--cmd DEMO_CMD``; they share its sessions on disk with the process."""
    made: list[str] = []

    async def main() -> None:
        inputs = Options(cmd=DEMO_CMD, cwd=workdir).inputs()
        run = Invocation(env=quiet_env())
        with Index.open() as index:
            writer = index.writer()
            async with demo_link() as link:
                for prompt in prompts:
                    live = await attach(link, "new", inputs, run, index, writer, None, None)
                    await run_turn(link, live, [text(prompt)], notice=lambda line: None)
                    made.append(live.session_id)
            writer.close()

    anyio.run(main)
    return made


# -- list -------------------------------------------------------------------------------------


def test_list_needs_an_agent_named() -> None:
    with pytest.raises(UsageError, match="--remote asks an agent: pass --agent NAME or --cmd"):
        list_remote(None, None, None)


def test_list_with_a_bad_protocol_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--protocol must be"):
        list_remote("demo", None, None, "v9")


def test_list_follows_every_page_and_saves_the_titles_here(workdir: Path) -> None:
    first, second = prompted_sessions(workdir, "alpha no-permission", "beta no-permission")
    with Index.open(read_only=True) as index:
        assert index.get(first).title is None  # the agent's title is not recorded yet
    infos = list_remote(None, DEMO_CMD, str(workdir))
    listed = {info["sessionId"]: info.get("title") for info in infos}
    assert set(listed) == {first, second}  # two pages of one
    with Index.open(read_only=True) as index:
        assert index.get(first).title == listed[first] and listed[first]


def test_list_elsewhere_lists_nothing_of_here(workdir: Path, tmp_path: Path) -> None:
    prompted_sessions(workdir, "alpha no-permission")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert list_remote(None, DEMO_CMD, str(elsewhere)) == []


def test_list_creates_no_index(workdir: Path) -> None:
    assert list_remote(None, DEMO_CMD, str(workdir)) == []
    assert not db_path().exists()


def test_titles_from_list_match_the_agents_id_and_command_line(index: Index) -> None:
    index.upsert_session(rec("a", argv=["agent-x"]))
    index.upsert_session(rec("b.2", argv=["agent-x"]))
    index.set_agent_session_id("b.2", "b")  # recorded under a local id; the agent's is "b"
    index.upsert_session(rec("c", argv=["agent-y"]))  # another agent's session with the same id
    index.upsert_session(rec("d", argv=["agent-x"], title="kept"))
    infos = [
        {"sessionId": "a", "title": "Alpha"},
        {"sessionId": "b", "title": "Beta"},
        {"sessionId": "c", "title": "Gamma"},
        {"sessionId": "d", "title": "kept"},  # unchanged: not counted
        {"sessionId": "e", "title": "not recorded here"},
        {"sessionId": "a", "title": ""},  # no title says nothing
    ]
    assert titles_from_list(index, infos, ["agent-x"]) == 2
    assert [index.get(sid).title for sid in ("a", "b.2", "c", "d")] == ["Alpha", "Beta", None, "kept"]
    assert titles_from_list(index, [{"sessionId": "c", "title": "Gamma"}]) == 1  # any agent's
    assert titles_from_list(index, [{"sessionId": 7, "title": "odd"}, {"title": "no id"}]) == 0


# -- delete -----------------------------------------------------------------------------------


def sessions_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workdir: Path, *flags: str) -> tuple[Path, str]:
    """The SDK sessions agent with one session on disk, recorded here; its state file and id."""
    state = tmp_path / "sdk-sessions.json"
    state.write_text(json.dumps({"ses-1": {"cwd": str(workdir), "said": [], "parent": None, "deleted": False}}))
    monkeypatch.setenv("SDK_SESSIONS_STATE", str(state))
    with Index.open() as index:
        index.upsert_session(rec("ses-1", agent="sdk-sessions", cwd=str(workdir), argv=agent_argv("sdk_sessions_agent.py", *flags)))
    return state, "ses-1"


def test_delete_asks_the_agent_that_runs_the_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workdir: Path) -> None:
    state, sid = sessions_agent(tmp_path, monkeypatch, workdir, "--delete")
    with Index.open(read_only=True) as index:
        record = index.get(sid)
    assert delete_remote(record, Options()) == "sdk-sessions 0.1"  # the agent's display name
    assert json.loads(state.read_text())[sid]["deleted"] is True


def test_delete_without_the_capability_sends_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workdir: Path) -> None:
    state, sid = sessions_agent(tmp_path, monkeypatch, workdir)  # no --delete: not advertised
    record_file = tmp_path / "record.jsonl"
    monkeypatch.setenv("RECORD_FILE", str(record_file))
    with Index.open(read_only=True) as index:
        record = index.get(sid)
    with pytest.raises(CapabilityMissing, match="does not support session/delete") as err:
        delete_remote(record, Options())
    assert err.value.exit_code == 6
    assert json.loads(state.read_text())[sid]["deleted"] is False
    methods = [json.loads(line).get("method") for line in record_file.read_text().splitlines()]
    assert "session/delete" not in methods and "initialize" in methods
