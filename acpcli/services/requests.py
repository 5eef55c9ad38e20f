"""The agent→client methods acpcli serves besides permissions: files and terminals (ACP v1).

Terminals: :mod:`acpcli.services.terminals`. A terminal's ``cwd`` is confined like a path; the default is
the session's ``cwd``.

Which methods exist: :meth:`ClientServices.handlers` holds only what was offered (fs, terminal),
so the connection answers anything else -32601. After ``initialize``,
:meth:`ClientServices.restrict` narrows that to what the negotiated version allows (v2 has no
client file system or terminals): a handler then answers -32601 itself.

What each permission policy lets these methods do: :mod:`acpcli.services.permissions`.
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
from acpcli.services.permissions import POLICY_REFUSED, READ_ONLY_POLICIES, Refusals
from acpcli.text.safe import shown_id

if TYPE_CHECKING:

    from acpcli.services.terminals import Terminals
    from acpcli.wire.negotiate import AgentFeatures, ClientOffer

logger = logging.getLogger("acpcli.services.requests")

# -- the services -----------------------------------------------------------------------------


class ClientServices:
    """The agent→client methods acpcli serves besides permissions: files and terminals.

    Use as ``async with ClientServices(roots, fs=..., terminal=...) as services:`` around the
    connection, and pass :meth:`handlers` as its extra handlers; leaving the block kills and
    reaps every terminal still alive. ``session_roots`` gives a session's root set (the
    session layer's ``Dispatcher.roots``). ``fs_write`` defaults to ``fs``. ``policy`` (``deny`` or ``read-only``)
    refuses file writes and terminals (see the module docstring), reporting each refusal to
    ``refusals``; ``None``, ``ask`` and ``allow`` serve everything offered.
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
    ) -> None:
        self._roots = session_roots
        self.policy = policy
        self.refusals = refusals
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

    def _refuse(self, method: str, what: str | None) -> RpcError:
        """The error answering ``method`` under a policy that forbids it; reported to the
        user when ``what`` names what was refused."""
        policy = str(self.policy)
        if what is not None and self.refusals is not None:
            self.refusals(what, policy)
        return RpcError(
            POLICY_REFUSED,
            f"{method} refused by the client's permission policy {policy!r} "
            f"(the user can change it: --permissions ask|allow, or the permissions config key)",
            {"policy": policy},
        )

    def _terminals_for(self, method: str) -> Terminals:
        if not self._terminal:
            raise self._not_offered(method)
        if self.policy in READ_ONLY_POLICIES and method != "terminal/create":
            raise self._refuse(method, None)  # no terminal exists to act on: nothing to report
        if self._terminals is None:
            raise RpcError(RpcError.INTERNAL_ERROR, "terminals are not available (services not started)")
        return self._terminals

    # -- fs -------------------------------------------------------------------------------------

    async def read_text_file(self, params: Any) -> dict[str, Any]:
        """``fs/read_text_file``."""
        import anyio.to_thread

        from acpcli.protocol import dump, models

        method = "fs/read_text_file"
        if not self._fs_read:
            raise self._not_offered(method)
        req = self._parse(method, params)
        path = confine(req.path, self._roots_for(req.session_id))
        text = await anyio.to_thread.run_sync(read_text, path, req.line, req.limit)
        v1 = models(1)
        if text is None:
            return dump(v1.ReadTextFileResponse(content="", meta=MISSING_META))
        return dump(v1.ReadTextFileResponse(content=text))

    async def write_text_file(self, params: Any) -> dict[str, Any]:
        """``fs/write_text_file``."""
        import anyio.to_thread

        from acpcli.protocol import dump, models

        method = "fs/write_text_file"
        if not self._fs_write:
            raise self._not_offered(method)
        req = self._parse(method, params)
        if self.policy in READ_ONLY_POLICIES:
            raise self._refuse(method, f"a file write ({method} {req.path})")
        path = confine(req.path, self._roots_for(req.session_id))
        await anyio.to_thread.run_sync(write_text, path, req.content)
        return dump(models(1).WriteTextFileResponse())

    # -- terminals ------------------------------------------------------------------------------

    async def terminal_create(self, params: Any) -> dict[str, Any]:
        """``terminal/create``: start the command; answer at once with its id."""
        from acpcli.protocol import dump, models

        terminals = self._terminals_for("terminal/create")
        req = self._parse("terminal/create", params)
        if self.policy in READ_ONLY_POLICIES:
            import shlex

            command = shlex.join([req.command, *(req.args or [])])
            raise self._refuse("terminal/create", f"a command (terminal/create: {command})")
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
        return dump(models(1).CreateTerminalResponse(terminal_id=terminal.terminal_id))

    async def terminal_output(self, params: Any) -> dict[str, Any]:
        """``terminal/output``: the output so far, and the exit status once exited."""
        from acpcli.protocol import dump, models

        terminals = self._terminals_for("terminal/output")
        req = self._parse("terminal/output", params)
        terminal = terminals.get(req.session_id, req.terminal_id)
        text, truncated = terminal.output()
        v1 = models(1)
        answer = v1.TerminalOutputResponse(output=text, truncated=truncated)
        status = terminal.exit_status
        if status is not None:
            answer.exit_status = v1.TerminalExitStatus(exit_code=status[0], signal=status[1])
        return dump(answer)

    async def terminal_wait_for_exit(self, params: Any) -> dict[str, Any]:
        """``terminal/wait_for_exit``."""
        from acpcli.protocol import dump, models

        terminals = self._terminals_for("terminal/wait_for_exit")
        req = self._parse("terminal/wait_for_exit", params)
        code, sig = await terminals.get(req.session_id, req.terminal_id).wait_for_exit()
        return dump(models(1).WaitForTerminalExitResponse(exit_code=code, signal=sig))

    async def terminal_kill(self, params: Any) -> dict[str, Any]:
        """``terminal/kill``: kill the command; the terminal stays until released."""
        from acpcli.protocol import dump, models

        terminals = self._terminals_for("terminal/kill")
        req = self._parse("terminal/kill", params)
        await terminals.kill(req.session_id, req.terminal_id)
        return dump(models(1).KillTerminalResponse())

    async def terminal_release(self, params: Any) -> dict[str, Any]:
        """``terminal/release``: kill the command if it still runs and forget the terminal."""
        from acpcli.protocol import dump, models

        terminals = self._terminals_for("terminal/release")
        req = self._parse("terminal/release", params)
        await terminals.release(req.session_id, req.terminal_id)
        return dump(models(1).ReleaseTerminalResponse())
