"""The person at this terminal, as the session layer sees them.

:class:`AtTerminal` implements :class:`acpcli.session.context.Person`: permission questions,
logins, the banner, the replay screen, the conversation (the REPL).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.model import Store
    from acpcli.render import View
    from acpcli.services.elicitation import Request
    from acpcli.session.conversation import Conversation
    from acpcli.session.feed import SessionFeed
    from acpcli.session.link import AgentLink
    from acpcli.wire.negotiate import AgentFeatures


class AtTerminal:
    """A person at this process's terminal (``env``): the REPL and its pickers."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self._starting: Any = None  # the acpcli.repl.starting.Starting line, once shown
        #: A prompt to send first, as if typed (``acpcli "fix the tests"``).
        self.first_prompt: str | None = None

    def starting(self, name: str | None) -> None:
        if name is None:
            if self._starting is not None:
                self._starting.stop()
            return
        if self._starting is None:
            from acpcli.repl.starting import Starting

            self._starting = Starting(self.env)
        self._starting.show(name)

    async def ask_permission(self, live: SessionFeed, params: dict[str, Any]) -> dict[str, Any] | None:
        from acpcli.repl.asking import permission_asker

        self.starting(None)
        return await permission_asker(self.env)(live, params)

    async def elicit(self, live: SessionFeed | None, request: Request) -> dict[str, Any] | None:
        from acpcli.repl.asking import AGENT_NAMES
        from acpcli.repl.form import ask
        from acpcli.services.permissions import release_screen

        release_screen(live)  # the question goes below what the turn has drawn so far
        agent = AGENT_NAMES.get(live.session_id) if live is not None else None
        return await ask(self.env, request, agent=agent or request.agent or None)

    async def offer_login(self, link: AgentLink, err: BaseException) -> bool:
        from acpcli.repl.asking import offer_login

        self.starting(None)
        return await offer_login(self.env, link, err)

    def banner(self, session_id: str, features: AgentFeatures, *, forked_from: str | None = None) -> None:
        from acpcli.repl.banner import print_banner

        self.starting(None)
        print_banner(self.env, session_id, features.display_name, forked_from=forked_from)

    def held_view(self) -> View:
        from acpcli.repl.reattach import held_view

        return held_view(self.env)

    async def show_replay(self, conversation: Conversation, command: str, held: View, local: Store | None) -> View:
        from acpcli.repl.reattach import show_replay

        self.starting(None)
        return await show_replay(self.env, conversation, command, held, local)

    async def converse(self, conversation: Conversation, *, banner: bool) -> int:
        from acpcli.repl import run_repl

        self.starting(None)
        first, self.first_prompt = self.first_prompt, None  # (sent once, in the first conversation)
        return await run_repl(self.env, conversation, banner=banner, first=first)
