"""What one command run brings to the session layer: streams, wishes, and maybe a person.

The REPL implements :class:`Person`; scripts have none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from acpcli.env import Environment
    from acpcli.model import Store
    from acpcli.processes.supervisor import Supervisor
    from acpcli.render import View
    from acpcli.services.elicitation import Request
    from acpcli.services.permissions import Asker, Refusals
    from acpcli.session.conversation import Conversation
    from acpcli.session.feed import SessionFeed
    from acpcli.session.link import AgentLink
    from acpcli.wire.negotiate import AgentFeatures


#: How a command sets its session up over a link: a new one, a fork of a recorded one, or a
#: recorded one loaded (replayed) or resumed (not replayed).
Lifecycle = Literal["new", "load", "resume", "fork"]


class Person(Protocol):
    """A person at the keyboard: what the session layer may ask of them and show them."""

    def starting(self, name: str | None) -> None:
        """Say that the agent ``name`` is starting, until whatever is shown next (None: stop
        saying it now)."""
        ...

    async def ask_permission(self, live: SessionFeed, params: dict[str, Any]) -> dict[str, Any] | None:
        """Show a permission request and let them pick an option (None: dismissed)."""
        ...

    async def elicit(self, live: SessionFeed | None, request: Request) -> dict[str, Any] | None:
        """Show the agent's form (or link) and let them answer it (None: dismissed, ``cancel``)."""
        ...

    async def offer_login(self, link: AgentLink, err: BaseException) -> bool:
        """The agent wants a login: offer its methods; True once logged in."""
        ...

    def banner(self, session_id: str, features: AgentFeatures, *, forked_from: str | None = None) -> None:
        """The line an interactive session starts with (``forked_from``: the session it is
        a fork of)."""
        ...

    def held_view(self) -> View:
        """A view that collects a replay and draws it whole when closed."""
        ...

    async def show_replay(
        self, conversation: Conversation, command: Lifecycle, held: View, local: Store | None
    ) -> View:
        """Draw a finished replay (or the local transcript after a silent resume); return the
        streaming view the conversation continues with."""
        ...

    async def converse(self, conversation: Conversation, *, banner: bool) -> int:
        """The conversation (the REPL) until they leave; returns the exit code."""
        ...


@dataclass
class Invocation:
    """What one command run needs beyond its inputs: streams, wishes, the person if any."""

    env: Environment
    person: Person | None = None  # None: a script (nobody to ask; deny by default)
    title: str | None = None
    permissions: str | None = None
    fs: bool = True
    terminal: bool = True
    #: Checkpoints of the files around the turns (``--no-checkpoints``: False).
    checkpoints: bool = True
    raw: bool = False  # --raw: stdout carries the JSON-RPC frames instead of the transcript
    timeout: float | None = None  # --timeout (None: not given; 0: no limit): setup steps, prompt's turn
    refusals: Refusals | None = None  # the run's services.permissions.Refusals, once an agent is linked
    #: Who answers permission questions when no conversation is held (``prompt`` on a
    #: terminal): a services.permissions.Asker, or None (nobody to ask).
    asker: Asker | None = None
    #: ``--answer``/``--answers``: a script's answers to the agent's forms (None: none given,
    #: forms are declined when nobody can be asked).
    answers: dict[str, Any] | None = None
    #: Who fills in the agent's forms when no conversation is held (``prompt`` on a terminal):
    #: the person at it (:meth:`Person.elicit`), or None.
    form_filler: Any = None
    supervisor: Supervisor | None = None  # the acpcli.processes.supervisor.Supervisor of the command, if any
    #: On a session another acpcli is running a turn on: wait for it (True), or SessionBusy
    #: at once (``--no-wait``).
    wait: bool = True
    #: Told the id of a session the run created (``new``, ``fork``, a ``--new-if-missing``
    #: fallback) as soon as the agent chose it, when nobody converses: the CLI writes it on
    #: stdout for scripts. None: nobody is told.
    created: Callable[[str], None] | None = None

    @property
    def repl(self) -> bool:
        """A person is there: the conversation goes on interactively."""
        return self.person is not None

    def say(self, line: str) -> None:
        """One line on stderr, as is (no markup): notes and refusals."""
        if self.person is not None:
            self.person.starting(None)  # the line saying the agent starts gives way
        self.env.stderr.write(line + "\n")
        self.env.stderr.flush()
