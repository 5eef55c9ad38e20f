"""The link of one command run: :func:`link_for` opens the chosen agent's link with its
environment additions, its stderr log, the run's permission policy and form answers, and its
wire tap (``--raw``'s frames on stdout, else the wire log).

Shared by the commands (:mod:`acpcli.cli.commands`), ``acpcli auth`` and what the agent
itself lists or deletes (:mod:`acpcli.session.remote`).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from acpcli.session.agent import AgentChoice, agent_stderr_log, env_extra
from acpcli.session.context import Invocation
from acpcli.session.policy import decider_for, elicitor_for

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from acpcli.session.link import AgentLink, Elicitor
    from acpcli.wire.wiretap import Tap, WireTap


def link_for(
    agent: AgentChoice,
    *,
    protocol: str | None = None,
    log_file: Path | None = None,
    run: Invocation | None = None,
    timeout: float | None = None,
    elicit: Elicitor | None = None,
    one_shot: bool = False,
) -> AbstractAsyncContextManager[AgentLink]:
    """``open_link`` for a chosen agent: its env additions, stderr log, permission policy.

    Without a ``run`` (``acpcli auth``), ``elicit`` answers the agent's requests for input
    (a login's link); else the run's :func:`~acpcli.session.policy.elicitor_for` does.

    ``timeout`` (``--timeout``; else the run's) bounds each setup step instead of
    ``ACPCLI_TIMEOUT`` / the config (:func:`~acpcli.config.step_timeout`). ``one_shot``: the
    command needs nothing of the agent after its body, which has stored what arrived, so an
    agent that does not exit at the end of its input is stopped promptly
    (:func:`~acpcli.session.link.open_link`).

    Terminal logins are offered (v1 ``auth.terminal``) by ``acpcli auth`` (``run`` is None),
    which runs them, and by sessions with a person at the keyboard, who can be sent there; a
    script would only be told to log in elsewhere, so it does not offer them.
    """
    from acpcli.config import step_timeout
    from acpcli.session.link import open_link
    from acpcli.wire.negotiate import ClientOffer

    offer = ClientOffer()
    decider = None
    if run is not None:
        elicit = elicitor_for(run)
        offer = ClientOffer(
            read_text_file=run.fs, write_text_file=run.fs, terminal=run.terminal, auth_terminal=run.env.stdin_isatty
        )
        decider = decider_for(run, agent)
    tap, wire_log = _tap(run, log_file)
    link = open_link(
        agent.argv,
        env_extra=env_extra(agent),
        choice=protocol or agent.protocol or "auto",  # type: ignore[arg-type]  # validated by the caller / config
        offer=offer,
        log_file=log_file,
        stderr_log=agent_stderr_log(agent),
        decide_permission=decider,
        elicit=elicit,
        tap=tap,
        policy=decider.policy if decider is not None else None,
        refusals=decider.refusals if decider is not None else None,
        step_timeout=step_timeout(flag=timeout if timeout is not None else run.timeout if run is not None else None),
        cancelled=run.supervisor.cancelled if run is not None and run.supervisor is not None else None,
        one_shot=one_shot,
    )
    return link if wire_log is None else _logged(link, wire_log)


def _tap(run: Invocation | None, log_file: Path | None) -> tuple[Tap | None, WireTap | None]:
    """The connection's tap, and the wire log when it is one: ``--raw``'s frames on stdout
    (they win), else the wire log (``--log-file``, else ``ACPCLI_LOG_FILE``), opened now so
    that a path that cannot be written is refused before the agent starts (exit 17)."""
    if run is not None and run.raw:
        return _raw_tap(run), None
    from acpcli.errors import OutputError
    from acpcli.wire.wiretap import WireTap

    wire_log = WireTap(log_file) if log_file is not None else WireTap.from_env()
    if wire_log is None:
        return None, None
    if run is not None and run.person is not None:
        say = run.env.note
        wire_log.on_failure = lambda message: say(
            f"acpcli: warning: {message}; the session goes on without it", style="yellow"
        )
    try:
        wire_log.open()
    except OSError as err:
        raise OutputError(f"cannot write the wire log {wire_log.path}: {err.strerror or err}") from None
    return wire_log, wire_log


@asynccontextmanager
async def _logged(link: AbstractAsyncContextManager[AgentLink], wire_log: WireTap) -> AsyncIterator[AgentLink]:
    """The link, and at its end the wire log's verdict: a log that could not be written did
    not stop the conversation (:class:`~acpcli.wire.wiretap.WireTap`), but the command then ends
    with :class:`~acpcli.errors.OutputError` (exit 17) once everything else is done -- or,
    when another error is on its way out, says so in one warning line beside it."""
    try:
        async with link as linked:
            yield linked
    except BaseException:
        if wire_log.failure is not None:
            sys.stderr.write(f"acpcli: warning: {_log_lost(wire_log)}\n")
        raise
    if wire_log.failure is not None:
        from acpcli.errors import OutputError

        raise OutputError(_log_lost(wire_log))


def _log_lost(wire_log: WireTap) -> str:
    lost = wire_log.lost
    return f"{wire_log.failure} ({lost} frame{'s' if lost != 1 else ''} not logged)"


def _raw_tap(run: Invocation) -> Tap:
    """``--raw``: the frames on stdout; under a supervisor, one that cannot be written stops
    the command (exit 17: stdout was the output asked for)."""
    supervisor = run.supervisor
    from acpcli.wire.wiretap import StreamTap

    tap = StreamTap(run.env.stdout)
    if supervisor is None:
        return tap
    from acpcli.processes.supervisor import GuardedTap

    return GuardedTap(tap, "the frames to standard output", supervisor)
