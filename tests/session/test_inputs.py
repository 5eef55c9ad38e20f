"""acpcli.session.inputs: which session, agent, roots, MCP servers and protocol a command gets,
every input checked before an agent starts or the index is written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from acpcli.errors import ConfigError, SessionNotFound, UsageError
from acpcli.history.index import Index
from acpcli.paths import db_path
from acpcli.session.agent import AgentChoice, pick_agent
from acpcli.session.inputs import (
    Options,
    choose_protocol,
    for_prompt,
    for_reattach,
    last_session,
    lookup,
    resolve_dir,
    session_inputs,
)
from tests.helpers.records import rec


def demo_argv() -> list[str]:
    return pick_agent("demo", None).argv


def program(directory: Path, name: str) -> str:
    """An executable file (an MCP server's command is checked where it is resolved)."""
    path = directory / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def write_mcp(path: Path, **servers: dict[str, object]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def record(sid: str, cwd: Path, **kw: object) -> None:
    with Index.open() as index:
        index.upsert_session(rec(sid, cwd=str(cwd), argv=demo_argv(), **kw))


# -- directories --------------------------------------------------------------------------


def test_resolve_dir_gives_an_absolute_normalized_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert resolve_dir("a/./b/..", "--cwd") == str(tmp_path / "a")


def test_resolve_dir_names_the_option_and_what_is_wrong(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match=r"^--add-dir .*missing: does not exist$"):
        resolve_dir(tmp_path / "missing", "--add-dir")
    with pytest.raises(UsageError, match=r"^--cwd .*file: is not a directory$"):
        resolve_dir(tmp_path / "file", "--cwd")


def test_a_cwd_that_is_not_a_directory_fails_before_the_index_exists(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        Options(agent="demo", cwd=tmp_path / "nowhere").inputs()
    assert not db_path().exists()


def test_roots_are_resolved_and_checked(tmp_path: Path, workdir: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    inputs = Options(agent="demo", cwd=workdir, add_dir=[extra]).inputs()
    assert (inputs.cwd, inputs.additional_directories) == (str(workdir), [str(extra)])
    with pytest.raises(UsageError, match="--add-dir"):
        Options(agent="demo", cwd=workdir, add_dir=[tmp_path / "gone"]).inputs()


def test_add_dir_and_no_add_dirs_together_are_a_usage_error(workdir: Path) -> None:
    with pytest.raises(UsageError, match="either --add-dir or --no-add-dirs"):
        Options(agent="demo", cwd=workdir, add_dir=[workdir], no_add_dirs=True).inputs()


# -- the agent and the protocol -------------------------------------------------------------


def test_an_unknown_agent_is_a_usage_error_before_anything_starts(workdir: Path) -> None:
    # (the registry is asked too: a closed port in tests, which the hint says)
    with pytest.raises(UsageError, match="no-such-agent") as err:
        Options(agent="no-such-agent", cwd=workdir).inputs()
    assert "registry" in (err.value.hint or "")
    assert not db_path().exists()


def test_agent_and_cmd_together_are_a_usage_error(workdir: Path) -> None:
    with pytest.raises(UsageError, match="either --agent or --cmd"):
        Options(agent="demo", cmd="some-agent --acp", cwd=workdir).inputs()


def test_a_cmd_agent_is_recorded_by_its_command_line(workdir: Path) -> None:
    inputs = Options(cmd="my-agent --acp 'two words'", cwd=workdir).inputs()
    assert (inputs.agent.name, inputs.agent.argv) == ("cmd", ["my-agent", "--acp", "two words"])


def test_a_bad_protocol_is_a_usage_error(workdir: Path) -> None:
    with pytest.raises(UsageError, match="--protocol must be"):
        Options(agent="demo", cwd=workdir, protocol="3").inputs()


def test_choose_protocol_flag_then_config_then_record_then_auto() -> None:
    agent = AgentChoice("demo", ["demo-agent"])
    spoken_v1 = rec("s", argv=["demo-agent"], protocol="1")
    assert choose_protocol("2", agent, spoken_v1) == "2"  # --protocol wins
    assert choose_protocol(None, agent, spoken_v1) == "1"  # the continued session's
    assert choose_protocol(None, agent, None) == "auto"
    configured = AgentChoice("demo", ["demo-agent"], protocol="2-latest")
    assert choose_protocol(None, configured, spoken_v1) == "2-latest"
    # Another command line may not speak what the session was recorded with.
    other = AgentChoice("demo", ["other-agent"])
    assert choose_protocol(None, other, spoken_v1) == "auto"


# -- MCP servers ----------------------------------------------------------------------------


def test_mcp_servers_from_a_file_become_acp_servers_and_references(tmp_path: Path, workdir: Path) -> None:
    command = program(tmp_path, "mcp-fs")
    path = write_mcp(tmp_path / "mcp.json", fs={"command": command, "args": ["--root", "."]})
    inputs = Options(agent="demo", cwd=workdir, mcp_config=path).inputs()
    assert inputs.mcp_names == ["fs"]
    assert [(s["name"], s["command"], s["args"]) for s in inputs.mcp_servers] == [("fs", command, ["--root", "."])]
    assert inputs.mcp_refs == {"config": str(path), "names": []}


def test_no_mcp_with_mcp_is_a_usage_error(tmp_path: Path, workdir: Path) -> None:
    path = write_mcp(tmp_path / "mcp.json", fs={"command": "mcp-fs"})
    with pytest.raises(UsageError, match="--no-mcp"):
        Options(agent="demo", cwd=workdir, mcp_config=path, no_mcp=True).inputs()


def test_recorded_mcp_servers_and_roots_come_back_on_load(tmp_path: Path, workdir: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    path = write_mcp(tmp_path / "mcp.json", fs={"command": program(tmp_path, "mcp-fs")})
    record("s-1", workdir, additional_dirs=[str(extra)], mcp_servers=["fs"])
    with Index.open() as index:
        index.set_mcp_refs("s-1", {"config": str(path), "names": []})
    # The file changed since: the servers are resolved again from it, as it is now.
    write_mcp(path, fs={"command": program(tmp_path, "mcp-fs-2")}, web={"url": "https://e.com/mcp"})
    inputs, found = for_reattach("load", "s-1", Options())
    assert found is not None and found.id == "s-1"
    assert (inputs.agent.name, inputs.agent.argv, inputs.cwd) == ("demo", demo_argv(), str(workdir))
    assert inputs.additional_directories == [str(extra)]
    assert inputs.mcp_names == ["fs", "web"]
    assert [s.get("command") for s in inputs.mcp_servers] == [str(tmp_path / "mcp-fs-2"), None]
    assert inputs.mcp_refs is None  # nothing given on this command line


def test_no_mcp_drops_the_recorded_servers(tmp_path: Path, workdir: Path) -> None:
    path = write_mcp(tmp_path / "mcp.json", fs={"command": program(tmp_path, "mcp-fs")})
    record("s-1", workdir)
    with Index.open() as index:
        index.set_mcp_refs("s-1", {"config": str(path), "names": []})
    inputs, _ = for_reattach("resume", "s-1", Options(no_mcp=True))
    assert (inputs.mcp_servers, inputs.mcp_refs) == ([], {"config": None, "names": []})


def test_recorded_mcp_that_cannot_be_resolved_again_says_how_to_go_on(tmp_path: Path, workdir: Path) -> None:
    record("s-1", workdir)
    with Index.open() as index:
        index.set_mcp_refs("s-1", {"config": str(tmp_path / "deleted.json"), "names": []})
    with pytest.raises(ConfigError) as err:
        for_reattach("load", "s-1", Options())
    assert "--no-mcp" in (err.value.hint or "")


# -- which session --------------------------------------------------------------------------


def test_lookup_of_a_bad_id_creates_nothing() -> None:
    with pytest.raises(SessionNotFound, match="no session 'nope'"):
        lookup("nope")
    assert not db_path().exists()


def test_lookup_by_unique_prefix(workdir: Path) -> None:
    record("abc-123", workdir)
    record("abd-456", workdir)
    assert lookup("abc").id == "abc-123"
    with pytest.raises(SessionNotFound):
        lookup("zzz")


def test_reattach_to_an_unrecorded_id_needs_an_agent(workdir: Path) -> None:
    with pytest.raises(SessionNotFound, match="not in the local index") as err:
        for_reattach("resume", "elsewhere-1", Options())
    assert "acpcli resume elsewhere-1 --agent NAME" in (err.value.hint or "")
    # Named, it is an agent's session made by another client: no record yet.
    inputs, found = for_reattach("resume", "elsewhere-1", Options(agent="demo", cwd=workdir))
    assert found is None and inputs.cwd == str(workdir)


def test_reattach_with_another_cwd_is_refused(tmp_path: Path, workdir: Path) -> None:
    record("s-1", workdir)
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(UsageError, match=r"belongs to .*project; --cwd .*other differs"):
        for_reattach("load", "s-1", Options(cwd=other))
    inputs, _ = for_reattach("load", "s-1", Options(cwd=workdir))  # the same one is fine
    assert inputs.cwd == str(workdir)


def test_last_session_is_the_latest_active_one_of_that_agent_here(workdir: Path, tmp_path: Path) -> None:
    agent = pick_agent("demo", None)
    record("old", workdir, last_used_at=1.0)
    record("new", workdir, last_used_at=3.0)
    record("closed", workdir, last_used_at=4.0, state="closed")
    record("elsewhere", tmp_path, last_used_at=5.0)
    with Index.open() as index:
        index.upsert_session(rec("other-cmd", cwd=str(workdir), argv=["other"], last_used_at=6.0))
    assert last_session(agent, str(workdir)) == "new"
    with pytest.raises(SessionNotFound, match="no earlier session of `demo`") as err:
        last_session(agent, str(tmp_path / "empty"))
    assert err.value.hint == "drop --last to start a new session"


def test_prompt_last_continues_the_last_session_with_its_roots(workdir: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    record("s-1", workdir, additional_dirs=[str(extra)], protocol="1")
    inputs, found = for_prompt(Options(agent="demo", cwd=workdir), None, True)
    assert found is not None and found.id == "s-1"
    assert (inputs.additional_directories, inputs.protocol) == ([str(extra)], "1")


def test_prompt_with_session_and_last_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="either --session or --last"):
        for_prompt(Options(agent="demo"), "s-1", True)


def test_prompt_session_that_is_not_recorded_is_session_not_found(workdir: Path) -> None:
    with pytest.raises(SessionNotFound):
        for_prompt(Options(agent="demo", cwd=workdir), "nope", False)


def test_session_inputs_falls_back_to_the_process_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    inputs = session_inputs(
        agent="demo", cmd=None, cwd=None, add_dir=None, mcp_config=None, mcp=None, protocol=None, log_file=None
    )
    assert inputs.cwd == os.getcwd() and inputs.protocol == "auto" and inputs.mcp_refs is None
