"""The agent→client methods acpcli serves besides permissions: files and terminals (ACP v1).

Terminals: :mod:`acpcli.services.terminals`. A terminal's ``cwd`` is confined like a path; the default is
the session's ``cwd``.

Which methods exist: :meth:`ClientServices.handlers` holds only what was offered (fs, terminal),
so the connection answers anything else -32601. After ``initialize``,
:meth:`ClientServices.restrict` narrows that to what the negotiated version allows (v2 has no
client file system or terminals): a handler then answers -32601 itself.

What each permission policy lets these methods do: :mod:`acpcli.services.permissions`.

A live session's host serves many commands' turns through one set of services: it passes a
:class:`TurnPolicy`, whose grant it sets at each turn's start to the policy of the command or
terminal that sent the prompt (a :class:`~acpcli.services.permissions.Grant`) and clears at the
turn's end. Under it, a turn sent with ``--no-fs`` or ``--no-terminal`` is refused those methods
(with :data:`~acpcli.services.permissions.POLICY_REFUSED` and a line: the capabilities were
advertised when the host started), and between turns every file and terminal request is refused
(nobody is there to answer for it) and reported to :attr:`TurnPolicy.between`, but
``terminal/kill`` and ``terminal/release``, which only stop what runs.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from acpcli.errors import RpcError
from acpcli.services.files import (
    MISSING_META,
    Handler,
    SessionRoots,
    confine,
    read_text,
    write_text,
)
from acpcli.services.permissions import POLICY_REFUSED, READ_ONLY_POLICIES, Grant, Refusals
from acpcli.text.safe import shown_id

if TYPE_CHECKING:
    from collections.abc import Callable

    from acpcli.services.terminals import Terminals
    from acpcli.wire.negotiate import AgentFeatures, ClientOffer

logger = logging.getLogger("acpcli.services.requests")

# -- whose policy ------------------------------------------------------------------------------


class TurnPolicy:
    """The policy a live session's host serves the agent's file and terminal requests under:
    the :class:`~acpcli.services.permissions.Grant` of the turn running (:meth:`start`), with
    its refusal lines going to that turn's :class:`~acpcli.services.permissions.Refusals`;
    none between turns (:meth:`end`), when every request is refused and reported to
    ``between`` (what was refused, in the words of a refusal line)."""

    def __init__(self, between: Callable[[str], None] | None = None) -> None:
        self.grant: Grant | None = None
        self.refusals: Refusals | None = None
        self.between = between

    def start(self, grant: Grant, refusals: Refusals | None) -> None:
        """A turn begins: its sender's grant is in force until :meth:`end`."""
        self.grant, self.refusals = grant, refusals

    def end(self) -> None:
        """The turn is over: nobody is there any more."""
        self.grant = self.refusals = None


# -- the services -----------------------------------------------------------------------------


class ClientServices:
    """The agent→client methods acpcli serves besides permissions: files and terminals.

    Use as ``async with ClientServices(roots, fs=..., terminal=...) as services:`` around the
    connection, and pass :meth:`handlers` as its extra handlers; leaving the block kills and
    reaps every terminal still alive. ``session_roots`` gives a session's root set (the
    session layer's ``Dispatcher.roots``). ``fs_write`` defaults to ``fs``. ``policy`` (``deny`` or ``read-only``)
    refuses file writes and terminals (see the module docstring), reporting each refusal to
    ``refusals``; ``None``, ``ask`` and ``allow`` serve everything offered. ``turns`` (a live
    session's host): the policy changes with each turn (:class:`TurnPolicy`), and ``policy``
    is not used.
    """

    def __init__(
        self,
        session_roots: SessionRoots,
        *,
        fs: bool = True,
        terminal: bool = True,
        fs_write: bool | None = None,
        kill_grace: float | None = None,
        policy: str | None = None,
        refusals: Refusals | None = None,
        turns: TurnPolicy | None = None,
    ) -> None:
        self._roots = session_roots
        self.policy = policy
        self.refusals = refusals
        self.turns = turns
        self._fs_read = fs
        self._fs_write = fs if fs_write is None else fs_write
        self._terminal = terminal
        self._kill_grace = kill_grace
        self._tg: Any = None
        self._terminals: Terminals | None = None

    @classmethod
    def for_offer(cls, session_roots: SessionRoots, offer: ClientOffer, **kwargs: Any) -> ClientServices:
        """Services matching what ``offer`` advertises in ``initialize``."""
        return cls(
            session_roots,
            fs=offer.read_text_file,
            fs_write=offer.write_text_file,
            terminal=offer.terminal,
            **kwargs,
        )

    # -- lifecycle ------------------------------------------------------------------------------

    async def __aenter__(self) -> ClientServices:
        import anyio

        from acpcli.services.terminals import KILL_GRACE, Terminals

        if self._tg is not None:
            raise RuntimeError("ClientServices can be entered only once")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        grace = KILL_GRACE if self._kill_grace is None else self._kill_grace
        self._terminals = Terminals(tg, kill_grace=grace)
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        try:
            await self.aclose()
        finally:
            tg = self._tg
            tg.cancel_scope.cancel()
            # The group holds only terminal tasks: the body's exception must reach the caller
            # as it is, not wrapped in an exception group.
            await tg.__aexit__(None, None, None)

    async def aclose(self) -> None:
        """Kill and reap every terminal still alive. Idempotent."""
        if self._terminals is not None:
            await self._terminals.aclose()

    def restrict(self, features: AgentFeatures) -> None:
        """Serve only what the negotiated connection lets the agent call (call after
        ``initialize``): a v2 agent gets -32601 for every fs and terminal method."""
        self._fs_read = self._fs_read and features.client_fs_read
        self._fs_write = self._fs_write and features.client_fs_write
        self._terminal = self._terminal and features.client_terminal

    @property
    def terminals(self) -> Terminals | None:
        """The live terminals (for a view showing terminals embedded in tool calls)."""
        return self._terminals

    def handlers(self) -> dict[str, Handler]:
        """The handlers for what was offered; methods not offered are absent (→ -32601)."""
        from acpcli.protocol import methods as m

        out: dict[str, Handler] = {}
        if self._fs_read:
            out[m.FS_READ_TEXT_FILE] = self.read_text_file
        if self._fs_write:
            out[m.FS_WRITE_TEXT_FILE] = self.write_text_file
        if self._terminal:
            out.update(
                {
                    m.TERMINAL_CREATE: self.terminal_create,
                    m.TERMINAL_OUTPUT: self.terminal_output,
                    m.TERMINAL_WAIT_FOR_EXIT: self.terminal_wait_for_exit,
                    m.TERMINAL_KILL: self.terminal_kill,
                    m.TERMINAL_RELEASE: self.terminal_release,
                }
            )
        return out

    # -- helpers --------------------------------------------------------------------------------

    @staticmethod
    def _parse(method: str, params: Any) -> Any:
        from acpcli.wire.negotiate import parse_request

        return parse_request(1, method, params)  # fs and terminals exist in v1 only

    def _roots_for(self, session_id: str) -> list[str]:
        found = self._roots(session_id)
        if found is None:
            raise RpcError(RpcError.INVALID_PARAMS, f"unknown session {shown_id(session_id)!r}")
        cwd, extra = found
        return [cwd, *extra]

    @staticmethod
    def _not_offered(method: str) -> RpcError:
        return RpcError(RpcError.METHOD_NOT_FOUND, f"method not found: {method}")

    def _refuse(
        self, method: str, what: str | None, policy: str | None = None, refusals: Refusals | None = None
    ) -> RpcError:
        """The error answering ``method`` under a policy that forbids it; reported to the
        user when ``what`` names what was refused."""
        policy = str(self.policy if policy is None else policy)
        refusals = self.refusals if refusals is None else refusals
        if what is not None and refusals is not None:
            refusals(what, policy)
        return RpcError(
            POLICY_REFUSED,
            f"{method} refused by the client's permission policy {policy!r} "
            f"(the user can change it: --permissions ask|allow, or the permissions config key)",
            {"policy": policy},
        )

    def _check(self, method: str, need: str, what: str | None) -> None:
        """Raise the refusal when the policy in force forbids ``need`` (``read``, ``write`` or
        ``terminal``); ``what`` names what is refused for the refusal line (None: say nothing,
        as for a terminal that cannot exist under the policy)."""
        turns = self.turns
        if turns is None:
            if need != "read" and self.policy in READ_ONLY_POLICIES:
                raise self._refuse(method, what)
            return
        grant = turns.grant
        if grant is None:
            if what is not None and turns.between is not None:
                turns.between(what)
            raise RpcError(
                POLICY_REFUSED,
                f"{method} refused: no prompt turn is running, so nobody is there to allow it",
                {"policy": "deny"},
            )
        flag = "--no-terminal" if need == "terminal" else "--no-fs"
        if not (grant.terminal if need == "terminal" else grant.fs):
            if what is not None and turns.refusals is not None:
                turns.refusals.refused(what, f"the prompt was sent with {flag}")
            raise RpcError(
                POLICY_REFUSED, f"{method} refused: the user sent this prompt with {flag}", {"policy": grant.policy}
            )
        if need != "read" and grant.policy in READ_ONLY_POLICIES:
            raise self._refuse(method, what, grant.policy, turns.refusals)

    def _terminals_for(self, method: str) -> Terminals:
        if not self._terminal:
            raise self._not_offered(method)
        stopping = method in ("terminal/kill", "terminal/release")
        if method != "terminal/create" and not (stopping and self.turns is not None):
            # (a host's terminal may outlive the turn that started it: stopping it is always let)
            self._check(method, "terminal", None)  # no terminal exists to act on: nothing to report
        if self._terminals is None:
            raise RpcError(RpcError.INTERNAL_ERROR, "terminals are not available (services not started)")
        return self._terminals

    # -- fs -------------------------------------------------------------------------------------

    async def read_text_file(self, params: Any) -> dict[str, Any]:
        """``fs/read_text_file``."""
        import anyio.to_thread

        from acpcli.protocol import models

        method = "fs/read_text_file"
        if not self._fs_read:
            raise self._not_offered(method)
        req = self._parse(method, params)
        self._check(method, "read", f"reading {req.path}")
        path = confine(req.path, self._roots_for(req.session_id))
        text = await anyio.to_thread.run_sync(read_text, path, req.line, req.limit)
        v1 = models(1)
        if text is None:
            return _answer(v1.ReadTextFileResponse(content="", meta=MISSING_META))
        return _answer(v1.ReadTextFileResponse(content=text))

    async def write_text_file(self, params: Any) -> dict[str, Any]:
        """``fs/write_text_file``."""
        import anyio.to_thread

        from acpcli.protocol import models

        method = "fs/write_text_file"
        if not self._fs_write:
            raise self._not_offered(method)
        req = self._parse(method, params)
        self._check(method, "write", f"writing {req.path}")
        path = confine(req.path, self._roots_for(req.session_id))
        await anyio.to_thread.run_sync(write_text, path, req.content)
        return _answer(models(1).WriteTextFileResponse())

    # -- terminals ------------------------------------------------------------------------------

    async def terminal_create(self, params: Any) -> dict[str, Any]:
        """``terminal/create``: start the command; answer at once with its id."""
        from acpcli.protocol import models

        terminals = self._terminals_for("terminal/create")
        req = self._parse("terminal/create", params)
        import shlex

        command = shlex.join([req.command, *(req.args or [])])
        self._check("terminal/create", "terminal", f"running `{command}`")
        roots = self._roots_for(req.session_id)
        cwd = confine(req.cwd, roots) if req.cwd is not None else roots[0]
        env = {var.name: var.value for var in req.env or ()}
        terminal = await terminals.create(
            req.session_id,
            req.command,
            req.args or [],
            cwd=cwd,
            env=env,
            output_limit=req.output_byte_limit,
        )
        return _answer(models(1).CreateTerminalResponse(terminal_id=terminal.terminal_id))

    async def terminal_output(self, params: Any) -> dict[str, Any]:
        """``terminal/output``: the output so far, and the exit status once exited."""
        from acpcli.protocol import models

        terminals = self._terminals_for("terminal/output")
        req = self._parse("terminal/output", params)
        terminal = terminals.get(req.session_id, req.terminal_id)
        text, truncated = terminal.output()
        v1 = models(1)
        answer = v1.TerminalOutputResponse(output=text, truncated=truncated)
        status = terminal.exit_status
        if status is not None:
            answer.exit_status = v1.TerminalExitStatus(exit_code=status[0], signal=status[1])
        return _answer(answer)

    async def terminal_wait_for_exit(self, params: Any) -> dict[str, Any]:
        """``terminal/wait_for_exit``."""
        from acpcli.protocol import models

        terminals = self._terminals_for("terminal/wait_for_exit")
        req = self._parse("terminal/wait_for_exit", params)
        code, sig = await terminals.get(req.session_id, req.terminal_id).wait_for_exit()
        return _answer(models(1).WaitForTerminalExitResponse(exit_code=code, signal=sig))

    async def terminal_kill(self, params: Any) -> dict[str, Any]:
        """``terminal/kill``: kill the command; the terminal stays until released."""
        from acpcli.protocol import models

        terminals = self._terminals_for("terminal/kill")
        req = self._parse("terminal/kill", params)
        await terminals.kill(req.session_id, req.terminal_id)
        return _answer(models(1).KillTerminalResponse())

    async def terminal_release(self, params: Any) -> dict[str, Any]:
        """``terminal/release``: kill the command if it still runs and forget the terminal."""
        from acpcli.protocol import models

        terminals = self._terminals_for("terminal/release")
        req = self._parse("terminal/release", params)
        await terminals.release(req.session_id, req.terminal_id)
        return _answer(models(1).ReleaseTerminalResponse())


def _answer(model: Any) -> dict[str, Any]:
    """A response model's wire JSON (an object, as every answer of these methods is)."""
    from acpcli.protocol import dump

    answer: dict[str, Any] = dump(model)
    return answer
