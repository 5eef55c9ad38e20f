"""A turn's control, without I/O: what Ctrl-C, a time limit and its grace mean for a turn.

The rules, here and nowhere else: the first Ctrl-C cancels the turn (``session/cancel``); a
second within :data:`DOUBLE_PRESS` seconds of the one before leaves it (the local backend
stops its agent, a terminal of a host lets go and the host cancels it); a turn that outlasts
its limit is cancelled, and an agent still in it :data:`CANCEL_GRACE` seconds later is
stopped. :class:`TurnControl` is fed what happened and when (a press at ``now``, the clock at
``now``, the turn's stop) and answers what to do (:class:`Act`); every path drives it: the
local turn and the host's (:mod:`acpcli.session.turn`), a terminal's turn through a host
(:mod:`acpcli.session.hosted`) and the blocking warm prompt (:mod:`acpcli.host.client`, which
imports no event loop: this module imports nothing but the standard library's basics).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

#: A second Ctrl-C within so many seconds of the one before leaves the turn.
DOUBLE_PRESS = 3.0
#: Seconds a turn cancelled for outlasting its limit has to end before its agent is stopped.
CANCEL_GRACE = 3.0


class Act(enum.Enum):
    """What the driver of a turn does now."""

    #: Ctrl-C: say "cancelling…" and send ``session/cancel``.
    CANCEL = "cancel"
    #: The limit passed: send ``session/cancel``; the agent has the grace to end the turn.
    TIME_OUT = "time-out"
    #: A second Ctrl-C soon after the first: give the turn up at once.
    LEAVE = "leave"
    #: The grace passed and the turn still runs: stop the agent.
    KILL = "kill"


@dataclass
class TurnControl:
    """One turn's control state (see the module docstring). Times are the caller's clock
    (``time.monotonic()``), handed in: nothing here reads a clock or sends anything."""

    #: Seconds the turn may run (None or 0: no limit), counted from :meth:`start`.
    limit: float | None = None
    grace: float = CANCEL_GRACE
    double_press: float = DOUBLE_PRESS
    #: Whether this side stops the agent when the grace has passed (:attr:`Act.KILL`); False
    #: where another keeps the grace (a warm prompt hands it to the host with its cancel).
    kills: bool = True
    #: Ctrl-C was pressed (and the turn cancelled for it).
    interrupted: bool = False
    #: The limit passed: ``"cancelled"``, then ``"killed"`` if the agent outlasted the grace.
    timed_out: str | None = None
    #: Nothing more to do: the turn stopped, was left, or its agent stopped.
    over: bool = False
    #: Called when :meth:`cancelled` moved the clock from outside (the driver of the turn
    #: looks at :meth:`wait` again).
    wake: Callable[[], None] | None = field(default=None, repr=False)
    _last_press: float | None = field(default=None, repr=False)
    _deadline: float | None = field(default=None, repr=False)
    _kill_at: float | None = field(default=None, repr=False)

    def start(self, now: float) -> None:
        """The turn began (was sent, or began in a host): its limit counts from ``now``."""
        if self.limit and not self.over:
            self._deadline = now + self.limit

    def press(self, now: float) -> Act | None:
        """Ctrl-C at ``now``: :attr:`Act.LEAVE` within :attr:`double_press` of the press
        before, else :attr:`Act.CANCEL`; None once the turn is over."""
        if self.over:
            return None
        last, self._last_press = self._last_press, now
        if last is not None and now - last < self.double_press:
            self.over = True
            return Act.LEAVE
        self.interrupted = True
        return Act.CANCEL

    def cancelled(self, now: float, grace: float) -> None:
        """The turn was cancelled from elsewhere with ``grace`` seconds to end (a warm
        prompt's ``--timeout``, through its host): :meth:`due` says :attr:`Act.KILL` then."""
        if self.over or not self.kills:
            return
        self._kill_after(now, grace)
        if self.wake is not None:
            self.wake()

    def _kill_after(self, now: float, grace: float) -> None:
        at = now + grace
        self._kill_at = at if self._kill_at is None else min(self._kill_at, at)

    def due(self, now: float) -> Act | None:
        """What the clock asks at ``now``: :attr:`Act.TIME_OUT` once the limit has passed,
        :attr:`Act.KILL` once the grace after a cancel has; else None."""
        if self.over:
            return None
        if self._deadline is not None and now >= self._deadline:
            self._deadline = None
            self.timed_out = "cancelled"
            if self.kills:
                self._kill_after(now, self.grace)
            return Act.TIME_OUT
        if self._kill_at is not None and now >= self._kill_at:
            self._kill_at = None
            self.over = True
            if self.timed_out is not None:
                self.timed_out = "killed"
            return Act.KILL
        return None

    def wait(self, now: float) -> float | None:
        """Seconds from ``now`` until :meth:`due` has something to say (0: at once); None:
        nothing is pending on the clock."""
        if self.over:
            return None
        times = [t for t in (self._deadline, self._kill_at) if t is not None]
        return max(0.0, min(times) - now) if times else None

    def stopped(self) -> None:
        """The turn ended (its stop reason arrived): nothing more is due."""
        self.over = True
        self._deadline = self._kill_at = None
