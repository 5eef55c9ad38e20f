"""Questions put to the person at the terminal: which option a permission request gets
(:func:`permission_asker`), a login the agent asks for (:func:`offer_login`), and any one of N
(:func:`choose`, over :mod:`acpcli.repl.picker`; the agent's forms use it too).

A question may come during a turn of the REPL driving the session: :data:`TOOLBARS` and
:data:`AGENT_NAMES` hold what that REPL lends to it (its toolbar, its agent's name).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from acpcli.repl.picker import GRACE
from acpcli.text.safe import safe_line

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.session.conversation import ConversationLink
    from acpcli.session.feed import SessionFeed


#: The toolbar of the REPL driving each session: the permission picker shows it too.
TOOLBARS: dict[str, Callable[[], str]] = {}
#: The agent of the REPL driving each session, named by the forms it asks for (elicitation).
AGENT_NAMES: dict[str, str] = {}


def permission_asker(env: Environment) -> Callable[[SessionFeed, dict[str, Any]], Awaitable[dict[str, Any] | None]]:
    """An ``ask`` for :class:`~acpcli.services.permissions.PermissionPolicy` that shows every option.

    What the agent wrote (the title, option names) is shown on one line each, cut to the
    terminal's width with "…": a 1 MB title is not echoed whole."""
    from rich.text import Text

    from acpcli.render.fit import shorten
    from acpcli.services.permissions import note_on_screen, release_screen, shown

    async def ask(live: SessionFeed, params: dict[str, Any]) -> dict[str, Any] | None:
        # A terminal view keeps the call asked about live, drawn above the question, and takes
        # it off the screen afterwards: the call is printed once, in its final state. Other
        # views commit what they show first (`prompt --format jsonl` on a terminal asks too,
        # and its stream must not be cut mid-message).
        options = [o for o in params.get("options", []) if isinstance(o, dict)]
        sink = live.sink
        hold = getattr(sink, "hold", None)
        # (the question's line, the picker's, its options, its hint line and the toolbar, with a row to spare)
        held = bool(hold(min(len(options), 8) + 6)) if hold is not None else False
        if not held:
            release_screen(live)
        raw_call = params.get("toolCall")
        call: dict[str, Any] = raw_call if isinstance(raw_call, dict) else {}
        title = call.get("title") or call.get("toolCallId") or "a tool call"
        width = max(40, env.err.width)
        kind = shown(str(call.get("kind") or "other"), 30)
        question = Text.assemble(
            ("permission:", "bold yellow"), " ", shorten(safe_line(str(title)), width - len(kind) - 16), " ", (f"({kind})", "dim")
        )
        env.err.print(question)
        labels = [  # (the picker shortens them to its width, at a word)
            f"{shorten(safe_line(str(option.get('name'))), width - 30)}  ({shown(str(option.get('kind')), 20)})"
            for option in options
        ]
        try:
            # It pops up by itself: keys typed before are not its own (a grace), and an
            # "always" is never picked by a filter alone (:mod:`acpcli.repl.picker`).
            picked = await choose(
                f"choose 1-{len(options)}:", labels, default=narrowest_allow(options),
                toolbar=TOOLBARS.get(live.session_id), erase=True, grace=GRACE, careful=lasting(options),
            )
        finally:
            if held:  # the question's line goes too: it is said again below, with the answer
                sink.release(max(1, -(-question.cell_len // max(1, env.err.width))))  # type: ignore[union-attr]

        def say(line: Text) -> None:
            if not (held and note_on_screen(live.sink, line)):
                env.err.print(line)

        if held:
            say(question)
        # The picker is erased when done: say what happened, so no option looks chosen
        # after a dismissal and the choice stays on record after a pick.
        if picked is None:
            say(Text.assemble("  ", ("dismissed:", "yellow"), " no option chosen; the turn is cancelled"))
            return None
        say(Text.assemble("  ", ("chose:", "dim"), " ", labels[picked]))
        return {"outcome": {"outcome": "selected", "optionId": options[picked]["optionId"]}}

    return ask


def lasting(options: Sequence[dict[str, Any]]) -> list[int]:
    """The options whose answer lasts beyond this call (``allow_always``, ``reject_always``):
    a filter alone never picks them."""
    return [i for i, option in enumerate(options) if option.get("kind") in ("allow_always", "reject_always")]


def narrowest_allow(options: Sequence[dict[str, Any]]) -> int:
    """The option a permission question highlights: the narrowest allow (``allow_once``,
    else another allow), else the first. Never an "always" when a "once" is offered."""
    kinds = [option.get("kind") for option in options]
    for wanted in ("allow_once", "allow_always"):
        if wanted in kinds:
            return kinds.index(wanted)
    return 0


async def choose(
    question: str,
    labels: Sequence[str],
    *,
    default: int = 0,
    toolbar: Callable[[], str] | None = None,
    erase: bool = False,
    grace: float = 0.0,
    careful: Sequence[int] = (),
) -> int | None:
    """Let the person pick one of ``labels`` (:mod:`acpcli.repl.picker`: arrow keys, its
    number, or typing to filter, then Enter); the 0-based index, or ``None`` when the question
    is dismissed (Ctrl-C, Ctrl-D, Escape). ``default`` is highlighted first; ``toolbar`` (the
    REPL's) stays at the bottom. ``erase``: take the list off the screen when done (the
    caller then says what was chosen). ``grace`` and ``careful``: for a question that pops up
    by itself (see :func:`acpcli.repl.picker.pick`)."""
    from acpcli.repl.picker import pick

    if not labels:
        return None
    try:
        # The labels quote the agent (permission option names): shown, never obeyed.
        return await pick(
            safe_line(question), [safe_line(label) for label in labels], default=default, toolbar=toolbar, erase=erase,
            grace=grace, careful=careful,
        )
    except (KeyboardInterrupt, EOFError):
        return None


async def offer_login(env: Environment, link: ConversationLink, err: BaseException) -> bool:
    """The agent answered ``auth_required``: explain, list its login methods, let the person
    pick one and log in. True when logged in (the caller retries what failed)."""
    from acpcli.errors import RpcError
    from acpcli.protocol import wire
    from acpcli.render.fit import wrap

    def say(text: str, style: str, hang: int) -> None:  # wrapped at words, under a hanging indent
        env.err.print("\n".join(wrap(safe_line(text), env.err.width, hang)), style=style, markup=False, highlight=False)

    say(f"{link.features.display_name} asks you to log in ({err})", "bold yellow", 2)
    methods = wire.login_methods(link.features.auth_methods)
    usable = [m for m in methods if m.type == "agent"]
    for method in methods:
        if method not in usable:
            say(f"  {method.id}: a {method.type} login — run `acpcli auth` for this agent in a terminal", "dim", 4)
    if not usable:
        if not methods:
            env.err.print("  it lists no login methods: log in with the agent's own tools, then try again")
        return False
    while True:
        picked = await choose(f"log in with 1-{len(usable)} (Ctrl-C: not now):", [m.label for m in usable])
        if picked is None:
            return False
        method_id = usable[picked].id
        try:
            await link.login(method_id)
        except RpcError as failure:  # refused: ask again; anything else (the agent died) ends it
            env.err.print(f"[red]login failed:[/] {escape(failure.message)}", highlight=False)
            continue
        env.err.print(f"[green]logged in[/] with {escape(method_id)}", highlight=False)
        return True
