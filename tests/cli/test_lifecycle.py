"""The session lifecycle through the real program: new, sessions, show, prompt, load, resume,
close, sessions created elsewhere, an agent dying mid-turn, and concurrent processes.

Agent: the built-in demo agent (v1 and v2) under the tracing wrapper of ``conftest.py``, so
every test also checks that no agent process outlives the command and that the agent never
saw a method or field it had not advertised. Independent commands run side by side
(``run_all``) to keep the suite fast on two cores.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from acpcli.demo_agent.flags import REPLAY_STYLES
from acpcli.errors import ExitCode

from .conftest import DEMO_ID, AgentTrace, Cli, error_line, run_concurrently

SESSION_ON_STDERR = re.compile(r"session (demo-[0-9a-f]{32})")


def test_new_prints_only_the_id_and_the_index_lists_it_v1_and_v2(
    cli: Cli, trace: AgentTrace, workdir: Path
) -> None:
    made = cli.run_all(*[("new", "--no-repl", "--cmd", trace.demo_cmd(protocol=p), "--title", f"v{p}") for p in (1, 2)])
    ids = {}
    for protocol, proc in zip((1, 2), made, strict=False):
        assert proc.returncode == 0, proc.stderr
        sid = proc.stdout.strip()
        assert DEMO_ID.match(sid) and proc.stdout == sid + "\n"  # alone: ID=$(acpcli new ...) works
        ids[sid] = protocol

    listed_all, listed, table = cli.run_all(("sessions", "--json", "--all"), ("sessions", "--json"), ("sessions",))
    rows = [json.loads(line) for line in listed_all.stdout.splitlines()]
    assert listed.stdout == listed_all.stdout  # nothing closed yet
    assert {r["id"]: r["protocolVersion"] for r in rows} == ids
    for row in rows:
        assert row["agent"] == "acpcli-demo-agent"  # --cmd: recorded under the agent's own name
        assert row["cwd"] == str(workdir.resolve())
        assert row["state"] == "active"
        assert row["title"] == f"v{row['protocolVersion']}"
    for sid, protocol in ids.items():
        [line] = [ln for ln in table.stdout.splitlines() if sid in ln]
        fields = line.split()
        assert {"acpcli-demo-agent", f"v{protocol}", str(protocol), "active"} <= set(fields), line
        assert str(workdir.resolve()) in fields or any(f.startswith("~") for f in fields), line

    assert len(trace.pids()) == 2
    trace.assert_all_gone()
    trace.assert_no_unadvertised()


#: Replay styles that differ on the wire. v1 has no whole-message update (the demo agent
#: replays chunks-then-whole as chunks there) and interleaves only with v1 messageIds.
STYLES = {
    1: [("whole",), ("chunks",), ("whole-then-chunks",), ("interleaved", "--v1-message-ids")],
    2: [(style,) for style in REPLAY_STYLES],
}


def _two_turns(cli: Cli, trace: AgentTrace, protocol: int) -> tuple[str, str]:
    sid = cli.new(trace.demo_cmd(protocol=protocol))
    cli.ok("prompt", "--session", sid, "first question")
    cli.ok("prompt", "--session", sid, "second question no-permission")
    return sid, cli.show(sid)


def test_load_replays_the_same_transcript_in_every_style_v1_and_v2(
    cli: Cli, trace: AgentTrace, tmp_path: Path
) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:  # the two versions side by side
        recorded = dict(zip((1, 2), pool.map(lambda p: _two_turns(cli, trace, p), (1, 2)), strict=False))
    for _, before in recorded.values():
        assert "> first question" in before and "> second question no-permission" in before
        assert before.count("Demo agent reply") == 2

    # One copy of the acpcli home (index with its events, demo agent state) per style, so
    # the loads can run at the same time; each copy still knows the session and its
    # transcript, so each load takes the path of a locally recorded session.
    jobs = []
    for protocol, styles in STYLES.items():
        sid = recorded[protocol][0]
        for style, *extra in styles:
            home = tmp_path / f"home-v{protocol}-{style}"
            shutil.copytree(cli.home, home)
            cmd = trace.demo_cmd(protocol=protocol, replay=style, extra=extra)
            jobs.append((protocol, style, sid, cli.elsewhere(home), cmd))
    loads = run_concurrently([(c, ("load", sid, "--no-repl", "--cmd", cmd)) for _, _, sid, c, cmd in jobs])
    shows = run_concurrently([(c, ("show", sid)) for _, _, sid, c, _ in jobs])

    problems = []
    for (protocol, style, _, _, _), loaded, shown in zip(jobs, loads, shows, strict=False):
        before = recorded[protocol][1]
        if loaded.returncode != 0 or loaded.stdout != before:
            problems.append(
                f"v{protocol} {style}: load exit {loaded.returncode}, printed\n{loaded.stdout}{loaded.stderr}"
                f"\ninstead of\n{before}"
            )
        if shown.stdout != before:  # e.g. the replay appended to the stored turns, not replacing them
            problems.append(f"v{protocol} {style}: show after load is\n{shown.stdout}\ninstead of\n{before}")
    assert not problems, "\n\n".join(problems)
    assert len(trace.pids()) == 2 * 3 + len(jobs)
    trace.assert_all_gone()
    trace.assert_no_unadvertised()


def test_load_keeps_a_replay_that_arrives_after_the_response(cli: Cli, trace: AgentTrace) -> None:
    """gemini answers session/load first and replays afterwards: nothing may be lost, neither
    in what load prints nor in the stored transcript (which a lost replay would empty)."""
    # Small chunks make the late replay long enough that acpcli cannot read it by accident.
    cmd = trace.demo_cmd(extra=["--replay", "chunks", "--chunk-size", "2", "--load-answers-first"])
    sid = cli.new(cmd)
    cli.ok("prompt", "--session", sid, "hello no-permission")
    before = cli.show(sid)

    loaded = cli.ok("load", sid, "--no-repl").stdout

    assert (loaded, cli.show(sid)) == (before, before)


def test_show_resume_and_close(cli: Cli, trace: AgentTrace) -> None:
    sid = cli.new(trace.demo_cmd())
    cli.ok("prompt", "--session", sid, "hello there")
    started = len(trace.pids())

    transcript = cli.show(sid)
    assert "> hello there" in transcript and "Demo agent reply" in transcript
    # The recorded argv is the tracing wrapper: any agent start would add a pid.
    assert len(trace.pids()) == started

    resumed = cli.ok("resume", sid, "--no-repl")
    assert resumed.stdout == ""

    closed = cli.ok("close", sid)
    assert closed.stdout == ""
    assert closed.stderr.strip().splitlines()[-1] == f"closed {sid}"  # an empty answer says nothing more

    active_json, active, every_json, every, shown = cli.run_all(
        ("sessions", "--json"), ("sessions",), ("sessions", "--json", "--all"), ("sessions", "--all"), ("show", sid)
    )
    assert active_json.stdout == "" and sid not in active.stdout + active.stderr  # closed: hidden...
    [row] = [json.loads(line) for line in every_json.stdout.splitlines()]  # ... unless --all
    assert (row["id"], row["state"]) == (sid, "closed")
    assert sid in every.stdout
    assert shown.stdout == transcript  # still readable offline
    trace.assert_all_gone()
    trace.assert_no_unadvertised()


def test_a_session_created_elsewhere_is_loaded_with_an_explicit_agent_and_recorded(
    cli: Cli, trace: AgentTrace, tmp_path: Path, workdir: Path
) -> None:
    shared_state = tmp_path / "shared-demo-state"  # one agent store, three acpcli homes
    cmd = trace.demo_cmd(state_dir=shared_state)
    sid = cli.new(cmd)
    cli.ok("prompt", "--session", sid, "made in the first home")
    other = cli.elsewhere(tmp_path / "other-home")
    third = cli.elsewhere(tmp_path / "third-home")

    # Without --agent/--cmd another home cannot know which agent holds the session: exit 8,
    # like show, close and prompt --session of an unknown id.
    for proc in other.run_all(("load", sid, "--no-repl"), ("resume", sid, "--no-repl")):
        assert "not in the local index" in error_line(proc, ExitCode.SESSION_NOT_FOUND)
    assert other.index() == []

    loaded, resumed = run_concurrently(
        [(other, ("load", sid, "--no-repl", "--cmd", cmd)), (third, ("resume", sid, "--no-repl", "--cmd", cmd))]
    )
    assert loaded.returncode == 0 and resumed.returncode == 0, loaded.stderr + resumed.stderr
    assert "> made in the first home" in loaded.stdout and "Demo agent reply" in loaded.stdout
    assert resumed.stdout == ""
    [row] = other.index()
    assert (row["id"], row["cwd"], row["state"]) == (sid, str(workdir.resolve()), "active")
    assert other.show(sid) == loaded.stdout  # recorded from now on: the replay is its transcript
    assert [r["id"] for r in third.index()] == [sid]
    trace.assert_all_gone()
    trace.assert_no_unadvertised()


def test_new_if_missing_starts_a_new_session_visibly(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.ok("load", "demo-0000", "--no-repl", "--cmd", trace.demo_cmd(), "--new-if-missing")
    new_id = proc.stdout.strip()
    assert DEMO_ID.match(new_id) and proc.stdout == new_id + "\n"
    assert "--new-if-missing" in proc.stderr
    assert [r["id"] for r in cli.index()] == [new_id]
    trace.assert_all_gone()


def test_an_agent_dying_mid_prompt_is_agent_exited_and_the_transcript_survives(cli: Cli, trace: AgentTrace) -> None:
    procs = cli.run_all(*[("prompt", "--cmd", trace.demo_cmd(protocol=p), "please crash now") for p in (1, 2)])

    ids = []
    for proc in procs:
        assert proc.returncode == ExitCode.AGENT_EXITED, proc.stderr
        errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("acpcli: error: ")]
        assert len(errors) == 1 and "status 3" in errors[0], proc.stderr
        match = SESSION_ON_STDERR.search(proc.stderr)
        assert match, proc.stderr
        ids.append(match.group(1))
    # Each session was recorded before its turn, and its updates as they arrived.
    for shown in cli.run_all(*[("show", sid) for sid in ids]):
        assert "> please crash now" in shown.stdout and "[thought]" in shown.stdout
    trace.assert_all_gone()


def test_concurrent_processes_all_record_their_sessions(cli: Cli, trace: AgentTrace) -> None:
    cmd = trace.demo_cmd()
    news = [("new", "--no-repl", "--cmd", cmd)] * 2
    prompts = [("prompt", "-q", "--cmd", cmd, f"{word} no-permission") for word in ("alpha", "beta")]

    results = cli.run_all(*news, *prompts)

    for proc in results:
        assert proc.returncode == 0, proc.stderr
    new_ids = {proc.stdout.strip() for proc in results[:2]}
    assert len(new_ids) == 2 and all(DEMO_ID.match(i) for i in new_ids)
    prompt_ids = []
    for proc in results[2:]:
        match = SESSION_ON_STDERR.search(proc.stderr)
        assert match, proc.stderr
        prompt_ids.append(match.group(1))
    assert {r["id"] for r in cli.index()} == new_ids | set(prompt_ids)
    for word, shown in zip(("alpha", "beta"), cli.run_all(*[("show", sid) for sid in prompt_ids]), strict=False):
        assert f"> {word} no-permission" in shown.stdout and "Demo agent reply" in shown.stdout
    assert len(trace.pids()) == 4
    trace.assert_all_gone()


def test_a_recorded_config_agent_is_restarted_with_its_env(cli: Cli, acpcli_home: Path, tmp_path: Path) -> None:
    seen = tmp_path / "env-seen"
    script = f'echo "$AGENT_MARK" >> {shlex.quote(str(seen))}; exec "$@"'
    argv = ["sh", "-c", script, "agent", sys.executable, "-m", "acpcli.demo_agent", "--delay", "0"]
    (acpcli_home / "config.toml").write_text(
        f"[agents.marked]\ncommand = {json.dumps(argv)}\nenv = {{ AGENT_MARK = \"from-config\" }}\n"
    )
    sid = cli.ok("new", "--no-repl", "--agent", "marked").stdout.strip()

    cli.ok("resume", sid, "--no-repl")

    assert seen.read_text().split() == ["from-config", "from-config"]
