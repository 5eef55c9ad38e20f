"""After a load, what acpcli recorded stays the record; the replay only adds what it lacks.

Replays shaped like the real agents' (as observed): codex glues a failed prompt to the
next one, claude adds its slash-command artefacts as user messages, gemini prefixes its
``<session_context>`` block; none send messageIds.
"""

from __future__ import annotations

from acpcli.history.replay_merge import merge_replay
from acpcli.model import Message, Store, ToolCall


def user(text: str) -> dict:
    return {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}}


def agent(text: str) -> dict:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


def local_record(*turns: tuple[str, str | None]) -> Store:
    """What acpcli records: a boundary, the prompt, the answer (None: the turn failed)."""
    store = Store()
    for prompt, answer in turns:
        store.turn_boundary()
        store.apply(user(prompt))
        if answer is not None:
            store.apply(agent(answer))
    return store


def replayed(*updates: dict) -> Store:
    store = Store()
    for update in updates:
        store.apply(update)
    return store


def messages(store: Store) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in store.entries if isinstance(e, Message)]


def test_codex_gluing_a_failed_prompt_to_the_next_changes_nothing() -> None:
    local = local_record(("fail", None), ("hello", "hi there"))
    before = messages(local)
    merged = merge_replay(local, replayed(user("fail"), user("hello"), agent("hi there")))
    assert messages(merged) == before == [("user", "fail"), ("user", "hello"), ("agent", "hi there")]


def test_claude_command_artefacts_and_gemini_context_are_not_taken() -> None:
    local = local_record(("hello", "hi"), ("more", "ok"))
    before = messages(local)
    claude = replayed(
        user("<command-name>/model</command-name>"), user("<local-command-stdout>Set model</local-command-stdout>"),
        user("hello"), agent("hi"), user("<command-name>/model</command-name>"), user("more"), agent("ok"),
        user("<command-name>/model</command-name>"),
    )
    assert messages(merge_replay(local, claude)) == before
    local = local_record(("hello", "hi"))
    gemini = replayed(user("<session_context>\nThis is the Gemini CLI.\n</session_context>"), user("hello"), agent("hi"))
    assert messages(merge_replay(local, gemini)) == [("user", "hello"), ("agent", "hi")]


def test_turns_made_by_another_client_after_ours_are_added_once() -> None:
    local = local_record(("hello", "hi"))
    tool = {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "ls", "status": "in_progress"}
    replay = replayed(user("hello"), agent("hi"), user("from elsewhere"), tool, agent("done"))
    merged = merge_replay(local, replay)
    assert messages(merged) == [("user", "hello"), ("agent", "hi"), ("user", "from elsewhere"), ("agent", "done")]
    assert [e.tool_call_id for e in merged.entries if isinstance(e, ToolCall)] == ["t1"]
    # the added tool call is known to the merged store: an update patches it, not a new entry
    merged.apply({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed"})
    assert [e.status for e in merged.entries if isinstance(e, ToolCall)] == ["failed"]
    # and merging the same replay again adds nothing more
    again = merge_replay(merged, replayed(user("hello"), agent("hi"), user("from elsewhere"), tool, agent("done")))
    assert len(again.entries) == len(merged.entries)


def test_a_replay_that_does_not_line_up_adds_nothing() -> None:
    local = local_record(("hello", "hi"), ("second", "ok"))
    merged = merge_replay(local, replayed(user("something else"), agent("x"), user("more"), agent("y")))
    assert messages(merged) == [("user", "hello"), ("agent", "hi"), ("user", "second"), ("agent", "ok")]


def test_without_a_local_prompt_the_replay_is_the_record() -> None:
    replay = replayed(user("made elsewhere"), agent("answer"))
    replay.title = "elsewhere"
    merged = merge_replay(Store(), replay)
    assert merged is replay and messages(merged) == [("user", "made elsewhere"), ("agent", "answer")]


def test_session_state_from_the_replay_is_taken() -> None:
    local = local_record(("hello", "hi"))
    replay = replayed(
        user("hello"), agent("hi"),
        {"sessionUpdate": "session_info_update", "title": "Greeting"},
        {"sessionUpdate": "current_mode_update", "currentModeId": "plan"},
    )
    merged = merge_replay(local, replay)
    assert merged.title == "Greeting" and merged.current_mode_id == "plan"


ECHO = "[Function Response: run_shell_command]"


def test_gemini_tool_response_echoes_are_not_user_messages() -> None:
    tool = {"sessionUpdate": "tool_call", "toolCallId": "run_shell_command__1", "title": "Shell", "status": "completed"}
    local = local_record(("hello", "hi"), ("run it", "I will run it."))
    local.apply(tool)
    local.apply(agent("All done."))
    before = messages(local)
    gemini = replayed(
        user("<session_context>\nctx\n</session_context>"), user("hello"), agent("hi"),
        user("run it"), agent("I will run it."), tool, user(ECHO), agent("All done."),
    )
    assert messages(merge_replay(local, gemini)) == before  # neither the echo nor what follows it is added


def test_an_echo_inside_turns_made_elsewhere_is_dropped_and_the_rest_kept() -> None:
    local = local_record(("hello", "hi"))
    tool = {"sessionUpdate": "tool_call", "toolCallId": "t9", "title": "Shell", "status": "completed"}
    replay = replayed(
        user("hello"), agent("hi"), user("elsewhere"), agent("I will."), tool,
        user(f"{ECHO}\n[Function Response: read_file]"), agent("Done."),
    )
    merged = merge_replay(local, replay)
    assert messages(merged) == [("user", "hello"), ("agent", "hi"), ("user", "elsewhere"), ("agent", "I will."), ("agent", "Done.")]


def test_a_replay_only_record_leaves_echoes_out_without_changing_the_replay() -> None:
    replay = replayed(user("made elsewhere"), agent("on it"), user(ECHO), agent("done"))
    replay.title = "elsewhere"
    merged = merge_replay(Store(), replay)
    assert messages(merged) == [("user", "made elsewhere"), ("agent", "on it"), ("agent", "done")]
    assert merged.title == "elsewhere"
    assert len(replay.entries) == 4  # the live session's store is left as it is
    merged.apply(agent(" and more"))  # a new turn's chunk after the record starts its own message
    assert messages(merged)[-1] == ("agent", " and more")


def test_a_prompt_that_only_mentions_a_function_response_is_still_a_prompt() -> None:
    local = local_record(("hello", "hi"))
    replay = replayed(user("hello"), agent("hi"), user(f"what does {ECHO} mean?"), agent("it is gemini's"))
    assert messages(merge_replay(local, replay))[2] == ("user", f"what does {ECHO} mean?")
