"""One prompt turn, run on its own thread so ``session/cancel`` and client answers get through.

The script: (v2) echo the user message and go ``running``; stream a thought; on ``plan mode``,
switch the session to mode ``plan`` and announce it (``current_mode_update`` in v1,
``config_option_update``, each only if advertised); on ``status``, answer with the settings line
and stop there. Otherwise: a plan whose
entries progress; optional ``read PATH``; an edit tool call with ``diff`` content and a
``session/request_permission`` offering all four option kinds (v2 goes ``requires_action``
first), honoured (reject → the tool call ends ``failed``); optional ``run CMD``; the Markdown
answer (which states the settings and lists the prompt's non-text blocks) streamed in
``--chunk-size`` pieces ``--delay`` apart; the plan completed;
``usage_update``; a ``session_info_update`` title after the first turn.

How a turn ends: v1 answers the ``session/prompt`` request with ``stopReason``; v2 (whose
prompt request was acknowledged at once) sends ``state_update`` idle with ``stopReason``.
Invariant: the history is saved and the session marked not busy *before* that final message,
so a client reacting to it (next prompt, load from another process) sees the finished turn.
"""

from __future__ import annotations

import os
import traceback
import uuid
from typing import Any

from acpcli.demo_agent import script, session_config
from acpcli.demo_agent.active import ActiveSession
from acpcli.demo_agent.caps import ClientFacts
from acpcli.demo_agent.flags import Options
from acpcli.demo_agent.rpc import CancelToken, PeerGone, TurnCancelled, log
from acpcli.demo_agent.storage import now_iso
from acpcli.demo_agent.translate import text_block
from acpcli.errors import RpcError

PERMISSION_OPTIONS = (
    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"},
)
INTERNAL_ERROR_STOP = "_internal_error"  # custom stop reasons start with "_" (v2 draft)


def new_id(prefix: str) -> str:
    """An opaque, unique id for a message, tool call or plan: ``<prefix>-<12 hex>``."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


class Turn:
    """The thread body of one prompt turn (see the module docstring)."""

    def __init__(
        self,
        *,
        live: ActiveSession,
        version: int,
        client: ClientFacts,
        options: Options,
        token: CancelToken,
        request_id: Any,
        prompt: list[Any],
        received: list[str] | None = None,
    ) -> None:
        self.live = live
        self.peer = live.peer
        self.v2 = version >= 2
        self.client = client if not self.v2 else ClientFacts()
        self.options = options
        self.token = token
        self.request_id = request_id
        self.prompt = prompt
        self.received = list(received or [])  # "received ..." lines for the prompt's non-text blocks
        self.text = script.prompt_text(prompt)
        self.keys = script.parse_directives(self.text)
        self.cwd = live.record.cwd
        self.turn_no = 0
        self._open_tools: dict[str, str] = {}  # toolCallId -> last status sent
        self._plan_id = new_id("plan")
        self._plan: list[dict[str, str]] = []

    # -- the thread body -------------------------------------------------------------------------

    def run(self) -> None:
        """Play the turn and end it exactly once (see the module docstring)."""
        stop: str | None = None
        try:
            try:
                self._start()
                stop = self._script()
            except TurnCancelled:
                stop = "cancelled"
                self._close_open_tools()
        except PeerGone:
            log("the client went away mid-turn")
        except Exception:  # noqa: BLE001 - a bug: end the turn visibly rather than leave the client hanging
            log("internal error in the turn:\n" + traceback.format_exc())
            stop = INTERNAL_ERROR_STOP
        finally:
            self._end(stop)

    def _start(self) -> None:
        record = self.live.record
        record.turns += 1
        self.turn_no = record.turns
        user = {"sessionUpdate": "user_message", "messageId": new_id("user"), "content": list(self.prompt)}
        if self.v2:
            self.live.emit(user)
            self._state("running")
        else:
            # v1 agents do not echo the prompt live; it is still stored, and replayed on load.
            record.history.append(user)

    def _script(self) -> str:
        keys = self.keys
        self._stream("agent_thought_chunk", script.thought_text(self.text))
        if keys.crash:
            self._crash()
        if keys.plan_mode:
            self._switch_to_plan()
        if keys.status:
            self._stream("agent_message_chunk", script.status_text(self._settings_line(), self.received))
            self._wrap_up()
            return "end_turn"
        if keys.form:
            self._stream("agent_message_chunk", self._form())
            self._wrap_up()
            return "end_turn"
        if keys.refuse:
            self._stream("agent_message_chunk", script.refusal_text())
            self._wrap_up()
            return "refusal"

        steps = ["Take stock of the request"]
        if keys.read_path:
            steps.append(f"Read {keys.read_path}")
        edit_target = script.resolve(self.cwd, keys.write_path) if keys.write_path else script.DEMO_FILE
        steps.append(f"Propose an edit to {os.path.basename(edit_target)}")
        if keys.run_argv:
            steps.append(f"Run {' '.join(keys.run_argv)}")
        steps.append("Write the answer")
        self._plan = [
            {"content": s, "priority": ("high" if i == 0 else "low" if i == len(steps) - 1 else "medium"),
             "status": "pending"}
            for i, s in enumerate(steps)
        ]
        step = iter(range(len(steps)))

        def advance() -> None:
            i = next(step)
            if i > 0:
                self._plan[i - 1]["status"] = "completed"
            self._plan[i]["status"] = "in_progress"
            self._send_plan()

        notes: list[str] = []
        blocks: list[str] = []
        advance()
        if keys.read_path:
            advance()
            note, block = self._read(script.resolve(self.cwd, keys.read_path))
            notes.append(note)
            blocks += [block] if block else []
        advance()
        edit = self._edit()
        if keys.run_argv:
            advance()
            note, block = self._run(list(keys.run_argv))
            notes.append(note)
            blocks += [block] if block else []
        advance()
        answer = script.answer_text(
            text=self.text, turn=self.turn_no, plan_steps=len(steps), edit_target=edit_target,
            edit=edit, notes=notes, blocks=blocks, slow=keys.slow,
            settings_line=self._settings_line(), received=self.received, switched=keys.plan_mode,
        )
        if keys.max_tokens:
            self._stream("agent_message_chunk", answer[: len(answer) // 2])
            self._wrap_up()
            return "max_tokens"
        self._stream("agent_message_chunk", answer, slow=keys.slow)
        self._plan[-1]["status"] = "completed"
        self._send_plan()
        self._wrap_up()
        return "end_turn"

    def _end(self, stop: str | None) -> None:
        live = self.live
        final = None
        if stop is not None and self.v2:
            final = {"sessionUpdate": "state_update", "state": "idle", "stopReason": stop}
            live.record.history.append(final)
        try:
            live.save()
        except OSError as exc:
            log(f"could not save session {live.session_id}: {exc}")
        live.token = None
        live.thread = None
        if stop is None:
            return
        try:
            if final is not None:
                live.send(final)
            elif stop == INTERNAL_ERROR_STOP:
                self.peer.respond_error(
                    self.request_id, RpcError(RpcError.INTERNAL_ERROR, "demo agent bug: see its stderr")
                )
            else:
                self.peer.respond(self.request_id, {"stopReason": stop})
        except PeerGone:
            pass

    # -- steps -----------------------------------------------------------------------------------

    def _settings_line(self) -> str:
        with self.live.lock:
            return session_config.status_line(self.live.record.config, boolean=self._boolean_shown)

    @property
    def _boolean_shown(self) -> bool:
        """Whether this connection sees the boolean option (and so whether it counts)."""
        return self.client.boolean_config and self.options.has("config-options")

    def _switch_to_plan(self) -> None:
        """The agent changes its own mode (saved with the record when the turn ends)."""
        live = self.live
        with live.lock:
            session_config.set_mode(live.record.config, "plan")
            updates = session_config.updates(
                live.record.config, modes=not self.v2 and self.options.has("modes"),
                options=self.options.has("config-options"), boolean=self._boolean_shown,
            )
        log(f"the prompt said 'plan mode': {live.session_id} switched itself to plan")
        for update in updates:
            self._emit(update)

    def _crash(self) -> None:
        log("the prompt said 'crash': exiting with status 3 in the middle of the turn")
        # Hold the output lock so no half-written line is left behind.
        with self.peer.hold_output():
            os._exit(3)

    def _edit(self) -> str:
        keys = self.keys
        if keys.write_path:
            path = script.resolve(self.cwd, keys.write_path)
            old_text, new_text = None, script.demo_new_text(self.turn_no, self.text)
        else:
            path = os.path.join(self.cwd, script.DEMO_FILE)
            old_text, new_text = script.DEMO_OLD_TEXT, script.demo_new_text(self.turn_no, self.text)
        call: dict[str, Any] = {
            "toolCallId": new_id("edit"),
            "title": f"Edit {os.path.basename(path)}",
            "kind": "edit",
            "status": "pending",
            "locations": [{"path": path}],
            "content": [{"type": "diff", "path": path, "oldText": old_text, "newText": new_text}],
        }
        self._tool({**call, "rawInput": {"path": path, "newText": new_text}})
        decision = self._permission(call)
        tool_id = call["toolCallId"]
        if decision == "reject":
            self._tool_text(tool_id, "Rejected: the file was not changed.")
            self._tool({"toolCallId": tool_id, "status": "failed"})
            return "rejected, so nothing changed"
        self._tool({"toolCallId": tool_id, "status": "in_progress"})
        status, outcome = "completed", "allowed (a demo: nothing was written to disk)"
        if keys.write_path:
            if self.client.write_text_file:
                try:
                    self.peer.request(
                        "fs/write_text_file",
                        {"sessionId": self.live.session_id, "path": path, "content": new_text},
                        self.token,
                    )
                    outcome = f"allowed, and written with fs/write_text_file ({len(new_text)} characters)"
                except RpcError as exc:
                    status, outcome = "failed", f"allowed, but fs/write_text_file failed: {exc.rpc_message}"
            else:
                why = "v2 has no client file system" if self.v2 else "the client did not advertise fs.writeTextFile"
                outcome = f"allowed, but not written: {why}"
        if decision == "auto":
            outcome = outcome.replace("allowed", "applied without asking", 1)
        self._tool_text(tool_id, outcome[0].upper() + outcome[1:] + ".")
        self._tool({"toolCallId": tool_id, "status": status})
        return outcome

    def _permission(self, call: dict[str, Any]) -> str:
        """"allow", "reject" or "auto" (not asked). Raises TurnCancelled on a cancelled outcome."""
        if self.keys.no_permission:
            return "auto"
        with self.live.lock:
            brave = session_config.current(self.live.record.config)[session_config.BRAVE_KEY]
        if brave and self._boolean_shown:  # "skip permission prompts", as the option says
            return "auto"
        remembered = self.live.record.permission
        if remembered in ("allow_always", "reject_always"):
            return "auto" if remembered == "allow_always" else "reject"
        if self.v2:
            self._state("requires_action")
        params = {"sessionId": self.live.session_id, "toolCall": call, "options": list(PERMISSION_OPTIONS)}
        try:
            kind = _chosen_kind(self.peer.request("session/request_permission", params, self.token))
        except RpcError as exc:
            log(f"session/request_permission failed ({exc}): treated as a rejection")
            kind = "reject_once"
        if self.v2:
            self._state("running")
        if kind in ("allow_always", "reject_always"):
            self.live.record.permission = kind
        return "allow" if kind.startswith("allow") else "reject"

    def _form(self) -> str:
        """``form``: ask the client to fill in the order form (v1 ``elicitation/create``, only
        if it advertised ``elicitation.form``); say what came back."""
        if self.v2 or not self.client.elicitation_form:
            return script.form_text(None, offered=False, v2=self.v2)
        params = {
            "sessionId": self.live.session_id, "mode": "form", "message": "What may I bring you?",
            "requestedSchema": script.ORDER_FORM,
        }
        try:
            result = self.peer.request("elicitation/create", params, self.token)
        except RpcError as exc:
            log(f"elicitation/create failed ({exc}): no order")
            result = None
        return script.form_text(result, offered=True)

    def _read(self, path: str) -> tuple[str, str | None]:
        tool_id = new_id("read")
        self._tool({"toolCallId": tool_id, "title": f"Read {os.path.basename(path)}", "kind": "read",
                    "status": "in_progress", "locations": [{"path": path}], "rawInput": {"path": path}})
        if not self.client.read_text_file:
            why = "v2 has no client file system" if self.v2 else "the client did not advertise fs.readTextFile"
            return self._tool_failed(tool_id, f"I could not read `{path}`: {why}."), None
        try:
            result = self.peer.request("fs/read_text_file", {"sessionId": self.live.session_id, "path": path},
                                       self.token)
        except RpcError as exc:
            return self._tool_failed(tool_id, f"Reading `{path}` failed: {exc.rpc_message} ({exc.code})."), None
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            return self._tool_failed(tool_id, f"Reading `{path}` gave a malformed answer."), None
        self._tool_text(tool_id, script.clip(content, 2000))
        self._tool({"toolCallId": tool_id, "status": "completed", "rawOutput": {"characters": len(content)}})
        return f"I read `{path}` ({len(content)} characters); it starts with:", script.fenced(
            script.clip(content, 600)
        )

    def _run(self, argv: list[str]) -> tuple[str, str | None]:
        line = " ".join(argv)
        tool_id = new_id("run")
        self._tool({"toolCallId": tool_id, "title": f"Run {line}", "kind": "execute", "status": "pending",
                    "rawInput": {"command": argv[0], "args": argv[1:]}})
        if not self.client.terminal:
            why = "v2 has no client terminals" if self.v2 else "the client did not advertise terminal"
            return self._tool_failed(tool_id, f"I could not run `{line}`: {why}."), None
        sid = self.live.session_id
        try:
            created = self.peer.request(
                "terminal/create",
                {"sessionId": sid, "command": argv[0], "args": argv[1:], "cwd": self.cwd, "outputByteLimit": 65536},
                self.token,
            )
        except RpcError as exc:
            return self._tool_failed(tool_id, f"terminal/create failed: {exc.rpc_message} ({exc.code})."), None
        term_id = created.get("terminalId") if isinstance(created, dict) else None
        if not isinstance(term_id, str):
            return self._tool_failed(tool_id, "terminal/create gave a malformed answer."), None
        self._tool({"toolCallId": tool_id, "status": "in_progress",
                    "content": [{"type": "terminal", "terminalId": term_id}]})
        ref = {"sessionId": sid, "terminalId": term_id}
        try:
            exited = _as_dict(self.peer.request("terminal/wait_for_exit", ref, self.token))
            output = _as_dict(self.peer.request("terminal/output", ref, self.token))
        except RpcError as exc:
            return self._tool_failed(tool_id, f"The terminal failed: {exc.rpc_message} ({exc.code})."), None
        finally:
            # Not cancellable: release also kills a command still running after a cancel.
            try:
                self.peer.request("terminal/release", ref)
            except RpcError as exc:
                log(f"terminal/release failed: {exc}")
        raw = output.get("output")
        text = raw if isinstance(raw, str) else ""
        code = exited.get("exitCode")
        self._tool({"toolCallId": tool_id, "status": "completed",
                    "rawOutput": {"exitCode": code, "signal": exited.get("signal"), "output": script.clip(text, 2000)}})
        return f"I ran `{line}`; it exited with code {code} and printed:", script.fenced(script.clip(text, 1200))

    def _wrap_up(self) -> None:
        record = self.live.record
        self._emit({"sessionUpdate": "usage_update", "used": 1200 * self.turn_no + len(self.text),
                    "size": 200_000, "cost": {"amount": round(0.0021 * self.turn_no, 4), "currency": "USD"}})
        if record.title is None:
            record.title = script.first_line(self.text, 60) or "Demo session"
            self._emit({"sessionUpdate": "session_info_update", "title": record.title, "updatedAt": now_iso()})

    # -- emitting --------------------------------------------------------------------------------

    def _emit(self, update: dict[str, Any]) -> None:
        self.token.check()
        self.live.emit(update)

    def _state(self, state: str) -> None:
        self._emit({"sessionUpdate": "state_update", "state": state})

    def _stream(self, kind: str, text: str, *, slow: bool = False) -> None:
        message_id = new_id("thought" if kind == "agent_thought_chunk" else "agent")
        size = self.options.chunk_size
        delay = max(self.options.delay, 0.02) if slow else self.options.delay
        for i in range(0, len(text), size):
            if i:
                self.token.sleep(delay)
            self._emit({"sessionUpdate": kind, "messageId": message_id, "content": text_block(text[i : i + size])})

    def _send_plan(self) -> None:
        entries = [dict(e) for e in self._plan]  # a snapshot: the history must not alias live state
        self._emit({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": self._plan_id,
                                                             "entries": entries}})

    def _tool(self, fields: dict[str, Any]) -> None:
        self._emit({"sessionUpdate": "tool_call_update", **fields})
        if "status" in fields:
            self._open_tools[fields["toolCallId"]] = fields["status"]

    def _tool_text(self, tool_id: str, text: str) -> None:
        self._emit({"sessionUpdate": "tool_call_content_chunk", "toolCallId": tool_id,
                    "content": {"type": "content", "content": text_block(text)}})

    def _tool_failed(self, tool_id: str, text: str) -> str:
        self._tool_text(tool_id, text)
        self._tool({"toolCallId": tool_id, "status": "failed"})
        return text

    def _close_open_tools(self) -> None:
        """After a cancel: end unfinished tool calls as failed (neither v1 nor v2 has cancelled)."""
        for tool_id, status in list(self._open_tools.items()):
            if status in ("pending", "in_progress"):
                self.live.emit({"sessionUpdate": "tool_call_content_chunk", "toolCallId": tool_id,
                                "content": {"type": "content", "content": text_block("Cancelled.")}})
                self.live.emit({"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": "failed"})
                self._open_tools[tool_id] = "failed"


def _chosen_kind(result: Any) -> str:
    """The option kind the client chose; a cancelled outcome raises TurnCancelled."""
    outcome = result.get("outcome") if isinstance(result, dict) else None
    if isinstance(outcome, dict):
        if outcome.get("outcome") == "cancelled":
            raise TurnCancelled()
        if outcome.get("outcome") == "selected":
            for option in PERMISSION_OPTIONS:
                if option["optionId"] == outcome.get("optionId"):
                    return option["kind"]
    # The spec: an outcome the agent does not understand MUST NOT be treated as approval.
    log(f"unrecognised permission answer {result!r}: treated as a rejection")
    return "reject_once"


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
