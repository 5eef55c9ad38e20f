"""The Python API's client: :func:`connect` an agent, open sessions on it, run turns.

Built on the session layer, the way the CLI's commands are: the agent is resolved as
``--agent``/``--cmd`` resolve it (:mod:`acpcli.session.agent`), one link carries every
session (:func:`acpcli.session.link.open_link`), sessions are set up and recorded by
:func:`acpcli.session.attach.attach` (so they are in ``acpcli sessions`` and ``show`` like the
CLI's), each :class:`Session` wraps the session layer's
:class:`~acpcli.session.conversation.Conversation` (the REPL's too), whose turn is
:func:`acpcli.session.turn.run_turn` here without the Ctrl-C handling (a library leaves signals
to its program), and every update reaches the caller through the same
:meth:`~acpcli.session.feed.SessionFeed.feed` that draws the CLI's screen: a :class:`_Feed` sink
turns the store's changes into :mod:`acpcli.api.types` events.

A session whose live-session host runs is joined, not attached again: a :class:`HostedSession`
(the same methods) carries its turns over the host's socket (:mod:`acpcli.session.hostwire`),
the host's agent runs them: never a second agent on one session.

Never prints, never exits: what the CLI says on stderr arrives as :class:`~acpcli.api.types.Notice`
events; failures are the :mod:`acpcli.errors` exception tree.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.lowlevel

from acpcli.api.convert import event_of, input_request, permission_request, setting
from acpcli.api.types import (
    ChangedFile,
    Checkpoint,
    Event,
    InputAnswer,
    InputAnswered,
    InputCallback,
    Notice,
    PermissionAnswered,
    PermissionAsked,
    PermissionCallback,
    PermissionOption,
    Permissions,
    Rewind,
    Setting,
    Transcript,
    TurnEnded,
    TurnResult,
)
from acpcli.errors import AcpcliError, ExitCode, HostLost, HostReported, SessionBusy, UsageError
from acpcli.session.hostwire.channel import LOST_HINT
from acpcli.session.hostwire.messages import ChannelClosed, apply_event

if TYPE_CHECKING:
    import anyio.abc
    from anyio.streams.memory import MemoryObjectSendStream

    from acpcli.history.eventlog import EventWriter
    from acpcli.history.guarded import SafeIndex
    from acpcli.model import Change, Store
    from acpcli.services import elicitation as el
    from acpcli.services.permissions import Refusals
    from acpcli.session.context import Invocation, Lifecycle
    from acpcli.session.conversation import Conversation
    from acpcli.session.feed import SessionFeed
    from acpcli.session.hostwire.channel import Channel, Ready
    from acpcli.session.inputs import Options, SessionInputs
    from acpcli.session.link import AgentLink
    from acpcli.wire.transport import Transport

# A library's logs are its program's to show: without this, Python's last-resort handler would
# print acpcli's warnings (an agent's bad line, a failed write) on stderr.
logging.getLogger("acpcli").addHandler(logging.NullHandler())

#: How to change the policy, as a refusal says it.
CHANGE_POLICY = 'pass permissions="allow" or a callback to acpcli.connect'
#: The most notices kept on :attr:`Agent.notices` (every one still reaches a running turn).
_NOTICES_KEPT = 200
#: Event-loop turns a new prompt gives the generator of a turn its reader broke out of, to be
#: closed (asyncio closes a dropped async generator in a task of its own, at once).
_CLOSE_SPINS = 8
#: How long a turn its caller left is waited for after ``session/cancel`` (an agent that does
#: not end it by then is left to the connection's end).
_ABANDON_WAIT = 30.0


def connect(
    agent: str | None = None,
    *,
    argv: Sequence[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    permissions: Permissions | PermissionCallback | None = None,
    on_input: InputCallback | None = None,
    add_dirs: Sequence[str | os.PathLike[str]] = (),
    mcp: Sequence[str] = (),
    mcp_config: str | os.PathLike[str] | None = None,
    protocol: str | None = None,
    fs: bool = True,
    terminal: bool = True,
    timeout: float | None = None,
    home: str | os.PathLike[str] | None = None,
    log_file: str | os.PathLike[str] | None = None,
    transport: Transport | None = None,
    keep_alive: float | None = None,
) -> AbstractAsyncContextManager[Agent]:
    """Start an agent and connect to it: ``async with acpcli.connect("claude") as agent:``.

    ``agent`` names a configured, built-in (``demo``) or ACP-registry agent, as ``--agent``
    does; ``argv`` runs a command line instead (as ``--cmd``); neither: the config's
    ``default_agent``. ``transport`` carries the frames over any
    :class:`~acpcli.wire.transport.Transport` instead of a process (a memory pair in tests).

    ``cwd`` and ``add_dirs`` are the sessions' roots (default: the current directory);
    ``mcp`` names configured MCP servers and ``mcp_config`` is an MCP config file (as
    ``--mcp``/``--mcp-config``); ``protocol`` is ``auto``, ``1`` or ``2``; ``fs`` and ``terminal``
    offer the agent file access inside the roots and terminals.

    ``permissions``: ``"allow"``, ``"deny"``, ``"read-only"``, ``"ask"`` (with nobody to ask:
    every request is answered ``cancelled``, which cancels the turn), or an async callback
    that receives a :class:`~acpcli.api.types.PermissionRequest` and returns the
    :class:`~acpcli.api.types.PermissionOption` chosen (None dismisses it). Default: the config's
    ``permissions`` key, else ``deny``. ``on_input`` answers the agent's forms and links
    (default: declined).

    ``timeout`` (seconds) bounds every setup step and each turn (a turn that outlasts it is
    cancelled and :class:`~acpcli.errors.StepTimeout` raised); default as the CLI's. ``home``
    is the state directory (default ``$ACPCLI_HOME``, else the platform's): sessions made here
    are listed by ``acpcli sessions`` with that home. ``log_file`` logs the wire frames.

    ``keep_alive`` (seconds) makes the sessions :meth:`Agent.new_session` opens live: each is
    made by a live-session host of its own (as ``acpcli new --keep-alive``), which keeps its
    agent for that long after the last turn and client, so that ``acpcli prompt --session``,
    ``attach`` and other scripts reach the same agent (default: no host; the session lives as
    long as the connection). :meth:`Agent.load` and :meth:`Agent.resume` join a session whose
    host runs, whatever ``keep_alive`` says: never a second agent on one session.
    """
    # Nothing runs until the connection is entered, inside ``home`` (every path derives from it).
    return _connected(
        home,
        _open(
            agent, argv=argv, cwd=cwd, permissions=permissions, on_input=on_input, add_dirs=add_dirs, mcp=mcp,
            mcp_config=mcp_config, protocol=protocol, fs=fs, terminal=terminal, timeout=timeout,
            log_file=log_file, transport=transport, keep_alive=keep_alive,
        ),
    )


@asynccontextmanager
async def _connected(
    home: str | os.PathLike[str] | None, opening: AbstractAsyncContextManager[Agent]
) -> AsyncIterator[Agent]:
    """``opening`` entered with ``home`` as acpcli's home (:func:`~acpcli.paths.home_for`: this
    connection's code and tasks only; without ``home``, the home of the environment as it is
    now, whatever another connection's), its errors unwrapped from the task groups they come
    through (a script catches ``AcpcliError``, not an exception group)."""
    from acpcli import paths

    pinned = Path(os.path.abspath(os.path.expanduser(os.fspath(home)))) if home is not None else paths.home_dir(given=False)
    with paths.home_for(pinned):
        try:
            async with opening as opened:
                yield opened
        except BaseException as err:
            leaf = _unwrapped(err)
            if leaf is err:
                raise
            raise leaf from None


#: What the session layer's messages say in the CLI's words, and the same in the API's, longest
#: first (a script passes arguments to ``acpcli.connect``, not flags).
_API_WORDS = (
    ("wait longer with --timeout SECONDS, ACPCLI_TIMEOUT=SECONDS or timeout = SECONDS in config.toml",
     "wait longer with timeout=SECONDS (acpcli.connect) or timeout = SECONDS in config.toml"),
    ("pass --agent NAME or --cmd 'COMMAND'", "give acpcli.connect an agent name or argv=[...]"),
    ("(try --agent demo)", '(the built-in demo agent is "demo")'),
    ("--permissions ask|allow", 'permissions="allow" or a callback'),
    ("outlasted --timeout", "outlasted timeout="),
    ("--timeout", "timeout="),
    ("--permissions", "permissions="),
    ("--cwd", "cwd="),
    ("--add-dir", "add_dirs="),
    ("--mcp-config", "mcp_config="),
    ("--protocol", "protocol="),
    ("--force overwrites them", "force=True overwrites them"),
)


def _in_api_words(err: BaseException) -> BaseException:
    """``err`` (one of acpcli's errors) saying what to change in the API's words: arguments of
    :func:`connect`, not the CLI's flags. The error itself, changed in place."""
    if isinstance(err, AcpcliError):
        message, hint = err.message, err.hint
        for cli, api in _API_WORDS:
            message = message.replace(cli, api)
            hint = hint.replace(cli, api) if hint is not None else None
        if message != err.message:
            err.message = message
            err.args = (message, *err.args[1:])
        err.hint = hint
    return err


def _unwrapped(err: BaseException) -> BaseException:
    """The error itself rather than the exception group a task group wraps it in: the one
    exception inside, else the acpcli error (:func:`~acpcli.errors.leaf_error`)."""
    inner = getattr(err, "exceptions", None)
    if not inner:
        return err
    if len(inner) == 1:
        return _unwrapped(inner[0])
    from acpcli.errors import leaf_error

    return leaf_error(err)


def _choose(agent: str | None, argv: Sequence[str] | None, transport: Transport | None) -> Any:
    """The :class:`~acpcli.session.agent.AgentChoice` for ``agent`` / ``argv`` (a transport
    needs neither)."""
    from acpcli.session.agent import AgentChoice, pick_agent

    if agent is not None and argv is not None:
        raise UsageError("give either an agent name or argv, not both")
    if argv is not None:
        if isinstance(argv, str) or not argv:
            raise UsageError("argv must be a non-empty list of strings (the agent's command line)")
        return AgentChoice("cmd", [str(a) for a in argv])
    if agent is None and transport is not None:
        return AgentChoice("cmd", [])
    if agent is None:
        from acpcli import config

        agent = getattr(config.load_config(), "default_agent", None)
        if not agent:
            raise UsageError(
                "no agent chosen: give acpcli.connect an agent name or argv=[...]",
                hint="or set default_agent in the config; the built-in demo agent is \"demo\"",
            )
    return pick_agent(agent, None)


@asynccontextmanager
async def _open(
    agent: str | None,
    *,
    argv: Sequence[str] | None,
    cwd: str | os.PathLike[str] | None,
    permissions: Permissions | PermissionCallback | None,
    on_input: InputCallback | None,
    add_dirs: Sequence[str | os.PathLike[str]],
    mcp: Sequence[str],
    mcp_config: str | os.PathLike[str] | None,
    protocol: str | None,
    fs: bool,
    terminal: bool,
    timeout: float | None,  # noqa: ASYNC109 - bounds each step and turn, not this call
    log_file: str | os.PathLike[str] | None,
    transport: Transport | None,
    keep_alive: float | None,
) -> AsyncIterator[Agent]:
    import anyio

    from acpcli import paths
    from acpcli.config import step_timeout
    from acpcli.history.guarded import open_index, verdict
    from acpcli.services.permissions import PermissionPolicy, Refusals
    from acpcli.session.agent import agent_stderr_log, env_extra
    from acpcli.session.inputs import session_inputs
    from acpcli.session.link import open_link
    from acpcli.wire.negotiate import ClientOffer

    home = paths.home_dir()  # this connection's (entered by _connected)
    choice = _choose(agent, argv, transport)
    inputs = session_inputs(
        agent=None, cmd=None, cwd=Path(cwd) if cwd is not None else None, add_dir=[Path(d) for d in add_dirs] or None,
        mcp_config=Path(mcp_config) if mcp_config is not None else None, mcp=list(mcp) or None, protocol=protocol,
        log_file=Path(log_file) if log_file is not None else None, default_agent=choice,
    )
    policy_name, ask = _policy(permissions, choice)
    owner = Agent.__new__(Agent)  # the refusals and answers need somewhere to go first
    refusals = Refusals(owner._notice, change=CHANGE_POLICY)
    decider: Any = None
    if ask is not None or policy_name != "ask":
        decider = PermissionPolicy(policy_name, _asker(ask, owner) if ask is not None else None, refusals)
    services_policy = decider.policy if decider is not None else "deny"  # "ask", nobody: no writes
    decide = _observed(owner, decider)
    elicit = _elicitor(on_input, refusals, owner)
    index = open_index()
    writer = index.writer()
    failed = True
    try:
        link_cm = open_link(
            inputs.agent.argv,
            # (the agent's own state, the demo agent's stored sessions, under the same home)
            env_extra={**env_extra(inputs.agent), "ACPCLI_HOME": str(home)} if transport is None else None,
            choice=inputs.protocol,  # type: ignore[arg-type]  # checked by session_inputs
            offer=ClientOffer(read_text_file=fs, write_text_file=fs, terminal=terminal, auth_terminal=False),
            log_file=inputs.log_file,
            stderr_log=agent_stderr_log(inputs.agent) if transport is None else None,
            decide_permission=decide,
            elicit=elicit,
            policy=services_policy,
            refusals=refusals,
            step_timeout=step_timeout(flag=timeout),
            transport=transport,
        )
        async with link_cm as link, anyio.create_task_group() as tg:
            owner._setup(link, inputs, index, writer, tg, refusals, timeout, home)
            owner._decide, owner._elicit = decide, elicit
            owner._grant = _grant_of(decider, fs=fs, terminal=terminal)
            owner._keep_alive = keep_alive
            owner._host_options = None if transport is not None else _host_options(choice, inputs, mcp, mcp_config)
            owner._fs, owner._terminal = fs, terminal
            try:
                yield owner
            finally:
                tg.cancel_scope.cancel()  # turns still running end with the connection
                owner._closed = True
        failed = False
    finally:
        writer.close()
        index.close()
        if not failed:
            verdict(index)  # a storage failure met on the way: StorageError


def _policy(permissions: Permissions | PermissionCallback | None, choice: Any) -> tuple[str, PermissionCallback | None]:
    """The policy name and the callback, if any: a callback is ``ask`` with someone to ask;
    no policy: the config's ``permissions`` key, else ``deny``."""
    from acpcli.services.permissions import POLICIES

    if callable(permissions):
        return "ask", permissions
    named: str | None = permissions
    if named is None:
        from acpcli.config import configured_permissions

        try:
            named = configured_permissions(choice.name if choice.name != "cmd" else None, choice.argv)
        except AcpcliError:
            named = None
    policy = named or "deny"
    if policy not in POLICIES:
        raise UsageError(f"permissions must be one of {', '.join(POLICIES)} or a callback (got {policy!r})")
    return policy, None


def _host_options(
    choice: Any, inputs: SessionInputs, mcp: Sequence[str], mcp_config: str | os.PathLike[str] | None
) -> Options:
    """The connection's agent and roots as a host started for one of its sessions resolves
    them (the options of ``acpcli new --keep-alive``, the agent named or its command line)."""
    import shlex

    from acpcli.session.inputs import Options

    named = choice.name != "cmd"
    return Options(
        agent=choice.name if named else None, cmd=None if named else shlex.join(choice.argv),
        cwd=Path(inputs.cwd), add_dir=[Path(d) for d in inputs.additional_directories] or None,
        mcp_config=Path(mcp_config) if mcp_config is not None else None, mcp=list(mcp) or None,
        protocol=inputs.protocol,
        log_file=inputs.log_file,
    )


def _grant_of(decider: Any, *, fs: bool, terminal: bool) -> dict[str, Any]:
    """What a hosted session's prompts say of this connection's policy, for the host to apply
    to their turns (:class:`~acpcli.services.permissions.Grant`); ``ask`` with nobody to ask
    (no decider): the strictest policy, as every question would be answered ``cancelled``."""
    from acpcli.services.permissions import Grant

    if decider is None:
        return Grant(fs=fs, terminal=terminal).message()
    return Grant.of(decider, fs=fs, terminal=terminal).message()


def _asker(callback: PermissionCallback, owner: Agent) -> Any:
    """The callback as the permission policy's asker (``(live, params) -> answer | None``).
    An error of the callback's own is raised from the turn's ``async for`` once the turn has
    ended (the question is dismissed, so the agent is told ``cancelled`` and the turn is
    cancelled): the session is ready for the next prompt then."""
    from acpcli.services.permissions import selected

    async def ask(live: SessionFeed, params: dict[str, Any]) -> dict[str, Any] | None:
        try:
            chosen = await callback(permission_request(live, params))
            if chosen is not None and not isinstance(chosen, PermissionOption):
                raise UsageError(f"the permission callback must return a PermissionOption or None (got {chosen!r})")
        except Exception as err:  # noqa: BLE001 - the caller's error, raised where the caller reads
            owner._failed(live, err)
            return None
        return selected({"optionId": chosen.option_id}) if chosen is not None else None

    return ask


def _observed(owner: Agent, decider: Any) -> Any:
    """The dispatcher's decider: the policy (or ``cancelled``), with the turn told of the
    question and of its answer (:class:`PermissionAsked`, :class:`PermissionAnswered`)."""
    from acpcli.services.permissions import CANCELLED

    async def decide(live: SessionFeed, params: dict[str, Any]) -> dict[str, Any]:
        request = permission_request(live, params)
        owner._emit(live, PermissionAsked(request))
        answer: dict[str, Any] = CANCELLED
        try:
            if decider is not None:
                answer = await decider(live, params)
            return answer
        finally:
            outcome = answer.get("outcome") if isinstance(answer, dict) else None
            chosen = outcome.get("optionId") if isinstance(outcome, dict) else None
            option = next((o for o in request.options if o.option_id == chosen), None)
            owner._emit(live, PermissionAnswered(request, option))

    return decide


def _elicitor(callback: InputCallback | None, refusals: Refusals, owner: Agent) -> Any:
    """Who answers ``elicitation/create``: the callback (its own error is raised from the turn's
    ``async for`` once the turn has ended; the request is cancelled), else nobody (declined,
    one notice)."""
    from acpcli.services import elicitation

    if callback is None:

        async def decline(live: Any, request: el.Request) -> dict[str, Any]:
            refusals.note(
                f"acpcli: declined the agent's {elicitation.described(request)}: "
                "no on_input callback was given to acpcli.connect"
            )
            return elicitation.answer(elicitation.DECLINE)

        return decline

    async def elicit(live: Any, request: el.Request) -> dict[str, Any] | None:
        try:
            answered = await callback(input_request(request))
            if answered is not None and not isinstance(answered, InputAnswer):
                raise UsageError(f"the input callback must return an InputAnswer or None (got {answered!r})")
        except Exception as err:  # noqa: BLE001 - the caller's error, raised where the caller reads
            owner._failed(live, err)
            return None
        if answered is None:
            return None
        content = dict(answered.content) if answered.content is not None else None
        return elicitation.answer(answered.action, content)

    return elicit


class _Feed:
    """The sink of an API session (:class:`~acpcli.session.feed.Sink`): each change of its
    store becomes an event of the running turn."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def on_change(self, session: SessionFeed, change: Change) -> None:
        event = event_of(session, change)
        if event is not None:
            self._session._emit(event)

    def begin_turn(self, store: Store | None = None) -> None:
        pass

    def turn_ended(self, stop_reason: str | None) -> None:
        pass

    def flush(self) -> None:
        pass

    def elicitation(self, request: el.Request, result: dict[str, Any]) -> None:
        """What :meth:`~acpcli.session.link.Dispatcher.on_elicitation` shows a view."""
        from acpcli.services.elicitation import action_of

        self._session._emit(InputAnswered(input_request(request), action_of(result)))


class _Failed:
    """A turn's error, carried to the caller's ``async for``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class Agent:
    """A connected agent (from :func:`connect`): opens, loads, resumes and lists sessions."""

    _link: AgentLink
    _inputs: SessionInputs
    _index: SafeIndex
    _writer: EventWriter
    _tg: anyio.abc.TaskGroup
    _refusals: Refusals
    _timeout: float | None
    _home: Path
    _sessions: list[Session]
    _closed: bool
    #: The connection's permission decider and elicitor (``(live, params)``), and its grant: a
    #: hosted session answers its host's questions with them (:class:`HostedSession`).
    _decide: Any
    _elicit: Any
    _grant: dict[str, Any]
    _keep_alive: float | None
    #: What a host started for a new session (``keep_alive``) is told to run (None: a
    #: transport's connection, which no host can start again).
    _host_options: Options | None
    _fs: bool
    _terminal: bool
    #: The notices (what the CLI would say on stderr) that came while no turn was running.
    notices: list[str]

    def __init__(self) -> None:
        raise TypeError("use acpcli.connect(...) to connect an agent")

    def _setup(
        self,
        link: AgentLink,
        inputs: SessionInputs,
        index: SafeIndex,
        writer: EventWriter,
        tg: anyio.abc.TaskGroup,
        refusals: Refusals,
        timeout: float | None,
        home: Path,
    ) -> None:
        self._link, self._inputs, self._index, self._writer, self._tg = link, inputs, index, writer, tg
        self._refusals, self._timeout, self._home = refusals, timeout, home
        self._sessions = []
        self._closed = False
        if not hasattr(self, "notices"):
            self.notices = []

    @property
    def name(self) -> str:
        """The name sessions are recorded under (the configured name, else the agent's own)."""
        from acpcli.session.agent import agent_label

        return agent_label(self._inputs.agent, self._link.features)

    @property
    def protocol_version(self) -> int:
        """The ACP version spoken (1 or 2)."""
        return self._link.features.protocol_version

    @property
    def can_load(self) -> bool:
        """The agent can load a session (``session/load``)."""
        return bool(self._link.features.load)

    @property
    def can_resume(self) -> bool:
        """The agent can resume a session without replaying it (``session/resume``)."""
        return bool(self._link.features.resume)

    def _notice(self, line: str) -> None:
        running = [s for s in getattr(self, "_sessions", ()) if s._send is not None]
        for session in running:
            session._emit(Notice(line))
        if not running:
            notices = self.__dict__.setdefault("notices", [])
            notices.append(line)
            del notices[:-_NOTICES_KEPT]

    def _emit(self, live: SessionFeed | None, event: Event | _Failed) -> None:
        for session in getattr(self, "_sessions", ()):
            if session._live is live:
                session._emit(event)

    def _failed(self, live: SessionFeed | None, error: Exception) -> None:
        """A callback of the caller's failed during a turn of ``live``: raised from that
        turn's ``async for`` when the turn has ended (the first such error of a turn)."""
        for session in getattr(self, "_sessions", ()):
            if session._live is live and session._error is None:
                session._error = error

    def _run(self) -> Invocation:
        """The session layer's :class:`~acpcli.session.context.Invocation` of this connection: no
        person, no streams of its own (what it would say goes to :meth:`_notice`)."""
        from acpcli.env import Environment
        from acpcli.session.context import Invocation

        return Invocation(env=Environment(stdin=io.StringIO(), stdout=_Lines(self._notice), stderr=_Lines(self._notice)))

    def _check(self) -> None:
        if self._closed:
            raise UsageError("this agent's connection is closed")

    def _at_home(self) -> AbstractContextManager[None]:
        """This connection's home for the code inside (another connection's may be in force
        in the caller's context: :func:`~acpcli.paths.home_for`)."""
        from acpcli import paths

        return paths.home_for(self._home)

    async def new_session(self, *, title: str | None = None, keep_alive: float | None = None) -> Session:
        """``session/new`` in the connection's ``cwd``, recorded in the index (``acpcli
        sessions`` lists it); ``title`` names it there.

        ``keep_alive`` (seconds; default: :func:`connect`'s): the session is made by a
        live-session host of its own, as ``acpcli new --keep-alive`` makes one, which runs its
        agent until ``keep_alive`` seconds after the last turn and client: the session returned
        is :attr:`~Session.hosted`, and ``acpcli prompt --session``, ``attach`` and
        :meth:`resume` reach the same agent, during this connection and after it. 0: no host."""
        from acpcli.session.attach import attach

        self._check()
        keep = self._keep_alive if keep_alive is None else keep_alive
        if keep:
            return await self._hosted_new(title, keep)
        run = self._run()
        run.title = title
        with self._at_home():
            try:
                live = await attach(self._link, "new", self._inputs, run, self._index, self._writer, None, None)
            except AcpcliError as err:
                raise _in_api_words(err) from err.__cause__
            return self._opened(live)

    async def _hosted_new(self, title: str | None, keep_alive: float) -> Session:
        """A new session made by a host started for it (see :meth:`new_session`), joined."""
        import functools

        import anyio.to_thread

        from acpcli.session.hostwire.start import spec_for, start_host

        if self._host_options is None:
            raise UsageError("keep_alive needs an agent acpcli starts (a name or argv=), not a transport")
        if not 0 < keep_alive < math.inf:
            raise UsageError(f"keep_alive must be a positive number of seconds (got {keep_alive!r})")
        run = self._run()
        run.title, run.timeout, run.fs, run.terminal = title, self._timeout, self._fs, self._terminal
        spec = spec_for(None, self._host_options, str(self._grant.get("policy") or "deny"), run, keep_alive)
        with self._at_home():
            try:
                answer = await anyio.to_thread.run_sync(functools.partial(start_host, spec, home=self._home))
                if answer.get("t") != "ready" or not isinstance(answer.get("session"), str):
                    raise HostReported(
                        str(answer.get("message")), int(answer.get("exit") or 1), hint=answer.get("hint")
                    )
                hosted = await _joined(self, str(answer["session"]))
            except AcpcliError as err:
                raise _in_api_words(err) from err.__cause__
        if hosted is None:
            raise HostLost("the session host started but cannot be reached", hint=LOST_HINT)
        self._sessions.append(hosted)
        return hosted

    async def load(self, session_id: str, *, join: bool = True) -> Session:
        """``session/load``: the session (an id or a unique prefix of one recorded here, or an
        id the agent knows) with its history replayed into :attr:`Session.transcript` (the
        record acpcli kept, the replay merged in). While another acpcli runs a turn on it, this
        waits for that turn to end.

        A session whose live-session host runs (``acpcli sessions --live``) is joined rather
        than loaded: the session returned talks to that host, whose agent runs its turns
        (never a second agent on one session); its transcript is what the host had stored.
        ``join=False`` refuses such a session instead (:class:`~acpcli.errors.SessionBusy`)."""
        return await self._reattach("load", session_id, join)

    async def resume(self, session_id: str, *, join: bool = True) -> Session:
        """``session/resume``: the session continued without a replay (its transcript is what
        acpcli recorded of it). A session whose host runs is joined, as :meth:`load` says."""
        return await self._reattach("resume", session_id, join)

    async def _reattach(self, command: Lifecycle, session_id: str, join: bool = True) -> Session:
        with self._at_home():
            try:
                return await self._reattached(command, session_id, join)
            except AcpcliError as err:
                raise _in_api_words(err) from err.__cause__

    async def _reattached(self, command: Lifecycle, session_id: str, join: bool) -> Session:
        from acpcli.history.lock import SessionLock
        from acpcli.session.attach import attach
        from acpcli.session.inputs import lookup_or_none, recorded_mcp
        from acpcli.wire import capabilities

        self._check()
        record = lookup_or_none(session_id)
        sid = record.id if record is not None else session_id
        hosted = await _joined(self, sid, refuse=not join)
        if hosted is not None:
            self._sessions.append(hosted)
            return hosted
        capabilities.require(self._link.features, f"session/{command}")
        inputs = self._inputs
        if record is not None:
            inputs = replace(inputs, cwd=record.cwd, additional_directories=list(record.additional_dirs))
            recorded_mcp(inputs, record)
        lock = SessionLock(sid)
        await lock.acquire()  # one writer per session: another acpcli's turn ends first
        try:
            live = await attach(self._link, command, inputs, self._run(), self._index, self._writer, None, sid)
        except BaseException:
            lock.release()
            raise
        live.lock = lock
        if command == "load" and record is not None:
            from acpcli.history.records import rebuild
            from acpcli.session.feed import seed_settings

            # The transcript is the record acpcli kept with the replay merged in (what `acpcli
            # show` and the CLI's load draw), not the agent's raw replay.
            self._writer.flush()
            live.store = rebuild(self._index, sid)
            seed_settings(live, live.response)
        if command == "resume" and record is not None and not live.store.entries:
            from acpcli.history.records import rebuild
            from acpcli.session.feed import seed_settings

            # No replay (as resume promises): the transcript is what acpcli recorded, and the
            # session goes on in it, as `show` will read it.
            live.store = rebuild(self._index, sid)
            seed_settings(live, live.response)
        return self._opened(live)

    def _opened(self, live: SessionFeed) -> Session:
        if live.store.title:
            self._index.set_title(live.session_id, live.store.title)
        self._writer.flush()
        if live.lock is not None:
            live.lock.release()  # between turns nobody writes: each turn takes it again
        from acpcli.session.conversation import Conversation

        session = Session(self, Conversation(self._link, live, self._index, self._writer, self.name))
        self._sessions.append(session)
        return session

    async def sessions(self) -> list[SessionInfo]:
        """The sessions the agent lists (``session/list``) in the connection's ``cwd``."""
        from acpcli.wire import capabilities

        self._check()
        capabilities.require(self._link.features, "session/list")
        found = []
        async for info in self._link.list_remote(self._inputs.cwd):
            sid = info.get("sessionId")
            if isinstance(sid, str):
                title = info.get("title")
                updated = info.get("updatedAt")
                found.append(
                    SessionInfo(
                        sid, str(info.get("cwd") or ""), title if isinstance(title, str) else None,
                        updated if isinstance(updated, str) else None,
                    )
                )
        return found


class _Lines(io.StringIO):
    """A text stream whose lines become notices (the session layer's stderr, in the API)."""

    def __init__(self, notice: Any) -> None:
        super().__init__()
        self._notice = notice
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            if line.strip():
                self._notice(line)
        return len(text)

    def isatty(self) -> bool:
        return False


class SessionInfo:
    """A session as the agent lists it."""

    __slots__ = ("cwd", "session_id", "title", "updated_at")

    def __init__(self, session_id: str, cwd: str, title: str | None, updated_at: str | None) -> None:
        self.session_id, self.cwd, self.title, self.updated_at = session_id, cwd, title, updated_at

    def __repr__(self) -> str:
        return f"SessionInfo({self.session_id!r}, cwd={self.cwd!r}, title={self.title!r})"


class Session:
    """One session over a connected :class:`Agent`: prompt it, cancel a turn, change a setting,
    read its transcript, close it. Built on the session layer's
    :class:`~acpcli.session.conversation.Conversation`, as the REPL is."""

    def __init__(self, agent: Agent, conversation: Conversation) -> None:
        self._agent = agent
        self._conversation = conversation
        #: The session as it is kept here: its store, its settings, its turn state.
        self._live = conversation.live
        self._send: MemoryObjectSendStream[Event | _Failed] | None = None
        #: Set while a turn whose reader left is being cancelled (it is set when it has ended).
        self._leaving: anyio.Event | None = None
        #: A callback's error during the running turn, raised when the turn has ended.
        self._error: Exception | None = None
        conversation.live.sink = _Feed(self)
        conversation.live.lock_wait = True

    @property
    def id(self) -> str:
        """The session's id as recorded (``acpcli show ID``)."""
        return self._live.session_id

    @property
    def cwd(self) -> str | None:
        return self._live.cwd

    @property
    def hosted(self) -> bool:
        """The session lives in a live-session host (``acpcli sessions --live``), whose agent
        runs its turns; False: in this connection's agent."""
        return False

    @property
    def transcript(self) -> Transcript:
        """The transcript so far (``.markdown()``, ``.text()``, ``.jsonl()``), read from the
        store every update went into: what ``acpcli show`` prints of it."""
        live = self._live
        return Transcript(live.store, live.session_id)

    @property
    def settings(self) -> tuple[Setting, ...]:
        """The settings the session offers now (modes, models, config options)."""
        return tuple(setting(c) for c in self._live.settings())

    @property
    def running(self) -> bool:
        """A turn is running."""
        return self._send is not None

    def _emit(self, event: Event | _Failed) -> None:
        send = self._send
        if send is None:
            return
        try:
            send.send_nowait(event)
        except Exception:  # noqa: BLE001 - the caller stopped reading: the turn goes on unread
            pass

    async def prompt(
        self, text: str, *, attach: Sequence[str | os.PathLike[str]] = (), mentions: bool = False
    ) -> AsyncIterator[Event]:
        """Send ``text`` and yield the turn's events as they come; the last is
        :class:`~acpcli.api.types.TurnEnded` with the :class:`~acpcli.api.types.TurnResult`.
        One turn at a time per session.

        ``attach``: files (inside the session's folders) sent with the text, as ``@path`` is
        at the CLI's prompt. The text itself is sent as it is: an ``@word`` in it attaches
        nothing unless ``mentions=True`` (then ``@path`` mentions are resolved as the CLI does).

        The caller owns the turn: leaving the loop early (``break``, an exception) or
        cancelling the task that reads it cancels the turn (``session/cancel``) and waits for
        the agent to end it, so the session is ready for the next prompt."""
        import anyio

        agent = self._agent
        agent._check()
        if self._send is not None:
            # A reader that broke out of the last turn's loop: its generator is closed by the
            # event loop a moment later (that cancels the turn); let it, and wait for the end.
            for _ in range(_CLOSE_SPINS):
                if self._leaving is not None:
                    break
                await anyio.lowlevel.checkpoint()
            if self._leaving is not None:
                await self._leaving.wait()
        if self._send is not None:
            raise SessionBusy(f"a turn is running on session {self.id}: one turn at a time")
        send, receive = anyio.create_memory_object_stream[Event | _Failed](math.inf)
        ended = anyio.Event()
        try:
            await self._begin(text, [os.fspath(path) for path in attach], mentions, send, ended)
        except BaseException:
            send.close()
            receive.close()
            raise
        finished = False
        try:
            async with receive:
                async for item in receive:
                    if isinstance(item, _Failed):
                        finished = True
                        raise _in_api_words(item.error)
                    yield item
                    if isinstance(item, TurnEnded):
                        finished = True
                        return
        finally:
            if not finished and not ended.is_set():
                # The caller left the turn (break, an error, a cancelled task): it is cancelled,
                # and the session is ready again once the agent has ended it.
                self._leaving = ended
                try:
                    with anyio.CancelScope(shield=True):
                        await self._abandon(ended)
                finally:
                    self._leaving = None

    async def _begin(
        self, text: str, attach: list[str], mentions: bool, send: MemoryObjectSendStream[Event | _Failed],
        ended: anyio.Event,
    ) -> None:
        """Start the turn of ``text`` (its events go to ``send``; ``ended`` is set when it is
        over): the prompt's blocks built here, the turn run in the connection's task group."""
        from acpcli.services.mentions import build_prompt

        agent, live = self._agent, self._live
        roots = [live.cwd or agent._inputs.cwd, *live.additional_directories]
        blocks = build_prompt(
            text, roots[0], roots, self._conversation.features, strict=False, mentions=mentions, attach=attach,
        )
        self._send = send
        with agent._at_home():  # (the turn's task takes the context it is started in)
            agent._tg.start_soon(self._turn, text, blocks, send, ended)

    async def _abandon(self, ended: anyio.Event) -> None:
        """Cancel the running turn for a caller that left it, and wait for it to end (its
        events are dropped; what arrived is stored as always)."""
        import anyio

        await self.cancel()
        with anyio.move_on_after(_ABANDON_WAIT):
            await ended.wait()

    async def ask(
        self, text: str, *, attach: Sequence[str | os.PathLike[str]] = (), mentions: bool = False
    ) -> TurnResult:
        """:meth:`prompt`, its events left unread: the turn's result."""
        result: TurnResult | None = None
        async for event in self.prompt(text, attach=attach, mentions=mentions):
            if isinstance(event, TurnEnded):
                result = event.result
        assert result is not None  # prompt ends with TurnEnded or raises
        return result

    async def _turn(
        self, text: str, blocks: list[dict[str, Any]], send: MemoryObjectSendStream[Event | _Failed], ended: anyio.Event
    ) -> None:
        from acpcli.model import AGENT, Message
        from acpcli.session.outcome import turn_timed_out

        agent, conversation = self._agent, self._conversation
        live = conversation.live
        try:
            try:
                stop = await conversation.turn(text, blocks, notice=agent._notice, limit=agent._timeout, interrupts=False)
            finally:
                conversation.flush()
                conversation.after_turn()
            if live.timed_out:
                raise turn_timed_out(agent._timeout, live.session_id, answered=live.timed_out == "cancelled")
            said = "".join(
                e.text for e in live.store.entries[live.turn_first_entry :] if isinstance(e, Message) and e.kind == AGENT
            )
            if self._error is not None:  # a callback failed: the caller's own error, now the turn is over
                self._emit(_Failed(self._error))
            else:
                self._emit(TurnEnded(TurnResult(stop, live.session_id, said)))
        except Exception as err:  # noqa: BLE001 - carried to the caller, who raises it
            leaf = _unwrapped(err)
            self._emit(_Failed(self._error or (leaf if isinstance(leaf, Exception) else err)))
        finally:
            self._error = None
            self._send = None
            send.close()
            ended.set()

    async def cancel(self) -> None:
        """``session/cancel`` the running turn (it ends with stop reason ``cancelled``);
        nothing when no turn is running."""
        if self._send is not None and not self._conversation.live.cancel_requested:
            await self._conversation.cancel()

    async def set(self, key: str, value: str) -> Setting:
        """Set one of the session's settings (``"mode"``, ``"model"``, a config option's id or
        name) to ``value``; returns it as it now is. :class:`~acpcli.errors.UsageError` names
        what is offered when there is no such setting or value."""
        self._agent._check()
        with self._agent._at_home():
            return setting(await self._conversation.set(key, value))

    # -- checkpoints --------------------------------------------------------------------------

    def _checkpoints(self) -> Any:
        from acpcli.worktree import Checkpoints

        live = self._conversation.live
        return Checkpoints(live.session_id, [live.cwd or self._agent._inputs.cwd, *live.additional_directories])

    async def checkpoints(self) -> list[Checkpoint]:
        """The session's checkpoints, by turn (0: the files before the first turn; then one
        after each turn), each with what the turn changed. [] when none was taken (checkpoints
        off). :class:`~acpcli.errors.CheckpointError` when the store cannot be read."""
        import anyio.to_thread

        with self._agent._at_home():
            found = await anyio.to_thread.run_sync(lambda: self._checkpoints().list())
        return [
            Checkpoint(cp.turn, cp.label, cp.time, tuple(_changed(f) for f in cp.files)) for cp in found
        ]

    async def diff(self, turn: int | None = None, *, stat: bool = False) -> str:
        """What ``turn`` did to the files (default: the last turn) as a unified diff (``stat``:
        a summary), "" when it changed none. The files' lines as they are: make them safe
        before a terminal. :class:`~acpcli.errors.NoCheckpoint` for a turn without one."""
        import anyio.to_thread

        with self._agent._at_home():
            return str(await anyio.to_thread.run_sync(lambda: self._checkpoints().diff(turn, stat=stat)))

    async def rewind(self, turn: int, *, files: bool = True, conversation: bool = True, force: bool = False) -> Rewind:
        """Go back to before ``turn``, as ``acpcli rewind`` does: ``files``, the paths the turns
        since changed as they were (files changed by hand since the last checkpoint:
        :class:`~acpcli.errors.RewindRefused` unless ``force``, nothing written); ``conversation``,
        a new :class:`Session` on this agent holding the turns before ``turn`` (this one stays
        as it is). Checked first, both, before anything changes; the new session is made
        before the files are written. :class:`~acpcli.errors.SessionBusy` while a turn runs."""

        agent = self._agent
        agent._check()
        if self._send is not None:
            raise SessionBusy(f"a turn is running on session {self.id}: rewind after it")
        if not files and not conversation:
            raise UsageError("a rewind puts back the files, the conversation, or both: not neither")
        from acpcli.history.lock import SessionLock, busy_message

        with agent._at_home():
            lock = SessionLock(self.id)  # no other acpcli's turn on it meanwhile
            if not lock.try_acquire():
                raise SessionBusy(busy_message(self.id, lock.holder()))
            try:
                return await self._rewound(turn, files=files, conversation=conversation, force=force)
            except AcpcliError as err:
                raise _in_api_words(err) from err.__cause__
            finally:
                lock.release()

    async def _rewound(self, turn: int, *, files: bool, conversation: bool, force: bool) -> Rewind:
        import anyio.to_thread

        agent = self._agent
        store = self._checkpoints() if files else None
        if conversation:
            from acpcli.session.rewinding import check_turn

            self._conversation.flush()
            check_turn(agent._index, self.id, turn)
        if store is not None:
            plan = await anyio.to_thread.run_sync(lambda: store.rewind(turn, dry_run=True, force=force))
            if plan.conflicts and not force:
                await anyio.to_thread.run_sync(lambda: store.rewind(turn, force=force))  # RewindRefused
        new: Session | None = None
        how = None
        if conversation:
            from acpcli.session.rewinding import rewind_conversation

            record = agent._index.get(self.id)
            inputs = replace(agent._inputs, cwd=record.cwd, additional_directories=list(record.additional_dirs))
            rewound = await rewind_conversation(agent._link, agent._index, agent._writer, record, turn, inputs, agent._run())
            new, how = agent._opened(rewound.live), rewound.how
        done = await anyio.to_thread.run_sync(lambda: store.rewind(turn, force=force)) if store is not None else None
        return Rewind(
            turn,
            tuple(_changed(f) for f in done.changes) if done is not None else (),
            tuple((_changed(f), why) for f, why in done.skipped) if done is not None else (),
            new,
            how,
        )

    async def close(self) -> None:
        """``session/close`` (the agent forgets it; it stays in the local index, marked
        closed). :class:`~acpcli.errors.CapabilityMissing` when the agent cannot close one."""
        from acpcli.wire import capabilities

        agent = self._agent
        agent._check()
        if self._send is not None:
            await self.cancel()
        capabilities.require(self._conversation.features, "session/close")
        with agent._at_home():
            await self._conversation.close()
        if self in agent._sessions:
            agent._sessions.remove(self)


def _changed(change: Any) -> ChangedFile:
    """A :class:`~acpcli.worktree.FileChange` as the API gives it."""
    return ChangedFile(change.path, change.status, os.fspath(change.root), change.added, change.removed, change.old_path)


# -- a session whose live-session host runs ----------------------------------------------------
#
# A session whose host runs (``acpcli new --keep-alive``, ``acpcli sessions --live``) has its
# agent in that host, which owns the queue and the writes. :meth:`Agent.load
# <acpcli.api.client.Agent.load>` and :meth:`~acpcli.api.client.Agent.resume` join it
# (:func:`_joined`) instead of starting a second agent on the session: the
# :class:`HostedSession` says hello as a watcher (:func:`acpcli.session.hostwire.channel.join`),
# keeps a mirror of the session (its transcript as the host had stored it, then every update the
# host sends, whoever's turn it is), and sends its prompts to the host, which runs each under
# this connection's policy (the prompt's ``grant``) and asks this connection's callbacks its
# permission questions and forms. One turn at a time: a prompt while another client's turn runs
# or waits in the host raises :class:`~acpcli.errors.SessionBusy` (the host is told not to
# queue it). Never prints: what the host says for stderr arrives as
# :class:`~acpcli.api.types.Notice` events.


async def _joined(agent: Agent, session_id: str, *, refuse: bool = False) -> HostedSession | None:
    """``session_id``'s host joined, when one runs (None: none does, nothing was made).
    ``refuse``: raise :class:`~acpcli.errors.SessionBusy` for a running host instead."""
    from acpcli import paths
    from acpcli.session.hostwire import address
    from acpcli.session.hostwire.channel import connect, join

    if not (paths.home_dir() / "run").is_dir():  # no host ever ran in this home
        return None
    try:
        path = str(address.socket_path(session_id))
    except AcpcliError:  # run/ unusable: no host can be there
        return None
    try:
        channel = await connect(path)
    except OSError:
        return None
    try:
        if refuse:
            from acpcli.text.safe import shown_id

            raise SessionBusy(
                f"session {shown_id(session_id)} is live: its host runs its agent (join=False)",
                hint="join it (the default), or end its host first: `acpcli stop ID`",
            )
        ready = await join(channel, session_id)
        live = _mirror(agent, session_id, ready)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await channel.aclose()
        raise
    session = HostedSession(agent, channel, ready, live)
    with agent._at_home():
        agent._tg.start_soon(session._read)
    return session


def _mirror(agent: Agent, session_id: str, ready: Ready) -> SessionFeed:
    """The session as the host had it when this connection joined: the transcript it had
    stored (the record acpcli keeps, as ``acpcli show`` reads it), its settings and roots."""
    from acpcli.history.records import rebuild
    from acpcli.model import Store
    from acpcli.session.feed import SessionFeed

    state = ready.state
    if ready.stored == 0:  # nothing on disk yet
        store = Store()
    else:
        store = rebuild(agent._index, session_id, upto=ready.stored if ready.stored > 0 else None)
    features = state.get("features")
    version = features.get("protocol_version") if isinstance(features, dict) else None
    cwd = state.get("cwd")
    extra = state.get("additional_directories")
    live = SessionFeed(
        session_id, store, cwd=cwd if isinstance(cwd, str) else None,
        additional_directories=[d for d in extra if isinstance(d, str)] if isinstance(extra, list) else [],
        protocol_version=version if isinstance(version, int) else 1,
    )
    _apply_state(live, state)
    return live


def _apply_state(live: SessionFeed, state: dict[str, Any]) -> None:
    """The host's ``state`` (in its ``ready``, and when a setting changed): v1 modes, and the
    settings, commands, title and usage as updates the store's reducer takes."""
    modes = state.get("modes")
    if isinstance(modes, dict):
        live.modes = modes
    for update in state.get("updates") or []:
        if isinstance(update, dict):
            live.store.apply(update)


class HostedSession(Session):
    """A :class:`~acpcli.api.client.Session` whose turns its live-session host runs (see the
    module docstring): :meth:`prompt` streams the same events, :meth:`cancel`, :meth:`set` and
    :meth:`close` go to the host. Leaving the connection leaves the host running (for its
    keep-alive); :meth:`close` closes the session, and its host ends."""

    def __init__(self, agent: Agent, channel: Channel, ready: Ready, live: SessionFeed) -> None:
        self._agent = agent
        self._channel = channel
        self._ready = ready
        self._live = live
        self._send: MemoryObjectSendStream[Event | _Failed] | None = None
        self._leaving: anyio.Event | None = None
        self._error: Exception | None = None
        self._ended: anyio.Event | None = None
        self._started = False  # the host began this connection's turn (its ``start``)
        self._cancelled = False
        self._calls: dict[int, tuple[anyio.Event, list[dict[str, Any]]]] = {}
        self._next_call = 0
        #: Why the host can no longer be reached (it went away, or was stopped or closed).
        self._lost: AcpcliError | None = None
        live.sink = _Feed(self)

    @property
    def hosted(self) -> bool:
        return True

    @property
    def host_pid(self) -> int | None:
        """The pid of the session's host (``acpcli sessions --live``)."""
        return self._ready.host_pid

    def _check_host(self) -> None:
        if self._lost is not None:
            raise self._lost

    async def _post(self, message: dict[str, Any]) -> None:
        self._check_host()
        try:
            await self._channel.send(message)
        except ChannelClosed:
            raise self._lost or HostLost("the session host went away", hint=LOST_HINT) from None

    # -- a turn ------------------------------------------------------------------------------

    async def _begin(
        self, text: str, attach: list[str], mentions: bool, send: MemoryObjectSendStream[Event | _Failed],
        ended: anyio.Event,
    ) -> None:
        """The prompt to the host, which runs it at once or answers busy: not queued behind
        another client's turn (one turn at a time, as without a host)."""
        self._check_host()
        self._send, self._ended, self._started, self._cancelled = send, ended, False, False
        try:
            await self._post({
                "t": "prompt", "text": text, "settings": [], "wait": False, "grant": self._agent._grant,
                "mentions": mentions, "attach": attach,
            })
        except BaseException:
            self._send = self._ended = None
            raise
        timeout = self._agent._timeout
        if timeout:
            with self._agent._at_home():
                self._agent._tg.start_soon(self._deadline, timeout, ended)

    async def _deadline(self, seconds: float, ended: anyio.Event) -> None:
        """A turn that outlasts the connection's ``timeout`` is cancelled (the host stops an
        agent that does not end it within a grace), and ends in
        :class:`~acpcli.errors.StepTimeout`."""
        from acpcli.session.control import CANCEL_GRACE
        from acpcli.session.outcome import turn_timed_out

        with anyio.move_on_after(seconds):
            await ended.wait()
            return
        if ended.is_set():
            return
        if self._error is None:
            self._error = turn_timed_out(seconds, self.id, answered=True)
        with contextlib.suppress(AcpcliError):
            await self._post({"t": "cancel", "kill_after": CANCEL_GRACE})  # the host stops the agent after it

    def _finish(self, item: Event | _Failed) -> None:
        """The turn is over: its last event (or error) to the caller, the session free again."""
        send, ended = self._send, self._ended
        if send is None:
            return
        if self._error is not None and not isinstance(item, _Failed):
            item = _Failed(self._error)  # a callback failed: the caller's own error, now the turn is over
        self._emit(item)
        self._error = None
        self._send = self._ended = None
        self._started = False
        send.close()
        if ended is not None:
            ended.set()

    async def cancel(self) -> None:
        """Cancel the running turn (the host sends ``session/cancel``; it ends with stop
        reason ``cancelled``); nothing when no turn of this session object is running."""
        if self._send is not None and not self._cancelled and self._lost is None:
            self._cancelled = True
            with contextlib.suppress(AcpcliError):
                await self._post({"t": "cancel"})

    # -- what the host says ------------------------------------------------------------------

    async def _read(self) -> None:
        """Read the host's messages for as long as the connection lasts (run in its task group)."""
        try:
            while True:
                message = await self._channel.receive()
                await self._handle(message)
        except ChannelClosed:
            if self._lost is None:
                mid = " mid-turn" if self._started else ""
                self._lost = HostLost(f"the session host went away{mid}", hint=LOST_HINT)
        finally:
            if self._lost is None:
                self._lost = UsageError("this agent's connection is closed")
            for event, _ in self._calls.values():
                event.set()  # nothing waits for an answer that cannot come
            if self._send is not None:
                self._finish(_Failed(self._lost))
            with anyio.CancelScope(shield=True):
                await self._channel.aclose()

    async def _handle(self, message: dict[str, Any]) -> None:
        kind = message["t"]
        live = self._live
        if kind == "u":
            apply_event(live, str(message.get("k")), str(message.get("p")))
        elif kind == "start":
            self._started = True
            live.store.turn_boundary()  # a turn's messages are its own
            live.turn_first_entry = len(live.store.entries)
        elif kind in ("other-turn", "other-end"):
            live.store.turn_boundary()  # another client's turn: mirrored, not this one's events
        elif kind == "end" and self._send is not None:
            stop = message.get("stop")
            stop = stop if isinstance(stop, str) else "end_turn"
            live.store.end_turn(stop, None)
            self._finish(TurnEnded(TurnResult(stop, self.id, self._said())))
        elif kind in ("error", "withdrawn", "ending") and self._send is not None:
            self._finish(_Failed(_turn_error(message, self.id)))
        elif kind == "note":
            text = str(message.get("text"))
            if self._send is not None:
                self._emit(Notice(text))
            else:
                self._agent._notice(text)
        elif kind == "state":
            _apply_state(live, message)
        elif kind == "ask":
            params = message.get("params")
            result = await self._agent._decide(live, params) if isinstance(params, dict) else None
            await self._answer(message.get("id"), result)
        elif kind == "elicit":
            await self._answer(message.get("id"), await self._form(message))
        elif kind in ("result", "failed"):
            waiting = self._calls.get(message.get("id"))  # type: ignore[arg-type]
            if waiting is not None:
                waiting[1].append(message)
                waiting[0].set()
        elif kind in ("closed", "stopping"):  # closed or stopped elsewhere: the host ends
            why = "closed" if kind == "closed" else "stopped"
            self._lost = HostLost(f"the session's host was {why} from elsewhere", hint=LOST_HINT)

    async def _answer(self, ask_id: Any, result: Any) -> None:
        with contextlib.suppress(AcpcliError):  # the host went away: the reader says so
            await self._post({"t": "answer", "id": ask_id, "result": result})

    async def _form(self, message: dict[str, Any]) -> dict[str, Any]:
        """The agent's request for input (the host read it already), answered by the
        connection's ``on_input`` (declined without one), and shown as
        :class:`~acpcli.api.types.InputAnswered`."""
        from acpcli.services import elicitation as el

        try:
            request = el.read_request(message.get("params"))
        except ValueError:
            return el.answer(el.DECLINE)
        agent = message.get("agent")
        request.agent = agent if isinstance(agent, str) else ""
        settled = el.settled(request, await self._agent._elicit(self._live, request))
        if self._send is not None:
            self._emit(InputAnswered(input_request(request), el.action_of(settled)))
        return settled

    def _said(self) -> str:
        from acpcli.model import AGENT, Message

        live = self._live
        return "".join(
            e.text for e in live.store.entries[live.turn_first_entry :] if isinstance(e, Message) and e.kind == AGENT
        )

    # -- between turns -----------------------------------------------------------------------

    async def _call(self, op: str, **fields: Any) -> Any:
        self._next_call += 1
        call_id = self._next_call
        answered: tuple[anyio.Event, list[dict[str, Any]]] = (anyio.Event(), [])
        self._calls[call_id] = answered
        try:
            await self._post({"t": "call", "id": call_id, "op": op, **fields})
            await answered[0].wait()
        finally:
            del self._calls[call_id]
        if not answered[1]:
            raise self._lost or HostLost("the session host went away", hint=LOST_HINT)
        answer = answered[1][0]
        if answer["t"] == "failed":
            raise _reported(answer)
        return answer.get("value")

    async def set(self, key: str, value: str) -> Setting:
        """Set one of the session's settings through its host (between turns); returns it as
        it now is."""
        from acpcli.protocol import settings

        self._agent._check()
        answer = await self._call("set", key=key, value=value)
        found_key = answer.get("key") if isinstance(answer, dict) else key
        found = settings.find(self._live.settings(), str(found_key))
        if found is None:
            raise UsageError(f"the session has no setting {key!r}")
        return setting(found)

    async def close(self) -> None:
        """``session/close`` through the host (refused while a turn runs or waits there:
        :class:`~acpcli.errors.SessionBusy`); the host then ends, its agent with it."""
        agent = self._agent
        agent._check()
        if self._send is not None:
            await self.cancel()
        await self._call("close")
        self._lost = UsageError(f"session {self.id} is closed")
        if self in agent._sessions:
            agent._sessions.remove(self)
        with anyio.CancelScope(shield=True):
            await self._channel.aclose()



def _reported(message: dict[str, Any]) -> AcpcliError:
    """An error the host reported (``error``, ``failed``): a busy session is
    :class:`~acpcli.errors.SessionBusy`, the rest the error it was, by its exit code."""
    text, code, hint = str(message.get("message")), int(message.get("exit") or 1), message.get("hint")
    hint = hint if isinstance(hint, str) else None
    if code == int(ExitCode.BUSY):
        return SessionBusy(text, hint=hint)
    return HostReported(text, code, hint=hint)


def _turn_error(message: dict[str, Any], session_id: str) -> AcpcliError:
    kind = message["t"]
    if kind == "withdrawn":
        return SessionBusy(f"the prompt to session {session_id} was withdrawn before its turn: nothing was sent")
    if kind == "ending":
        return HostLost("the session host ended before this prompt's turn: it was not sent", hint=LOST_HINT)
    return _reported(message)
