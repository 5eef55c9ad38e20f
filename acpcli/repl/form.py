"""The agent's requests for input, at the terminal: a form drawn field by field, or a link.

A **form** (:class:`acpcli.services.elicitation.Form`) is drawn below the transcript with prompt-toolkit:
each field under its title (``*``: required; its description and bounds dimmed), as its schema
type asks -- a line of text (masked for a sensitive field: nothing typed is shown), a number, a
check box, a list of choices (one, or several), its default filled in. Tab and Shift-Tab (or
Enter in a text field) move between fields; Submit checks every value against the schema and
shows what is wrong under the field itself, keeping the form open; Decline answers
``decline``; Escape or Ctrl-C dismisses it (``cancel``). The form is erased when done, and one
line says what was answered (sensitive values ``***``). As the permission picker, it takes
keys only once drawn and a moment has passed (its hint line then shows): keys typed before
go back to the input line they were typed for (:mod:`acpcli.repl.picker`).

A **link** (:class:`acpcli.services.elicitation.UrlPage`) is shown whole, with its host and what about
it deserves care (not https, punycode...); the person says whether they will open it
(``accept``: acpcli opens and fetches nothing itself), declines, or dismisses it (``cancel``).

Everything the agent wrote goes through :func:`~acpcli.text.safe.safe_line` before the terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.markup import escape

from acpcli.services import elicitation as el
from acpcli.text.safe import safe_line

if TYPE_CHECKING:
    from acpcli.env import Environment

#: Choice rows shown at once (a longer list scrolls).
_CHOICE_ROWS = 6
#: The "nothing chosen" entry of a choice with no default.
_NONE = "\x00none"


def _clip(text: str, width: int) -> str:
    text = safe_line(text)
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def _header(env: Environment, agent: str | None, request: el.Request) -> None:
    width = max(40, env.err.width)
    who = agent or "the agent"
    what = "you to open a link" if isinstance(request, el.UrlPage) else "for input"
    env.err.print(f"[bold yellow]{escape(_clip(who, 60))} asks {what}:[/]", highlight=False)
    for line in (request.message or "").splitlines()[:12] or [""]:
        env.err.print(f"  {escape(_clip(line, width - 4))}", highlight=False)


_asking: Any = None  # the event loop -> its lock: one question on the terminal at a time


async def ask(
    env: Environment, request: el.Request, *, agent: str | None = None
) -> dict[str, Any] | None:
    """Ask the person at the terminal; the answer, or None when dismissed (``cancel``). An
    agent that asks twice at once gets its second question once the first is answered."""
    global _asking
    import asyncio
    import weakref

    import anyio

    if _asking is None:
        _asking = weakref.WeakKeyDictionary()
    lock = _asking.setdefault(asyncio.get_running_loop(), anyio.Lock())
    async with lock:
        _header(env, agent, request)
        if isinstance(request, el.UrlPage):
            return await _link(env, request)
        return await _form(env, request)


async def _link(env: Environment, page: el.UrlPage) -> dict[str, Any] | None:
    from acpcli.repl.asking import choose
    from acpcli.repl.picker import GRACE

    env.err.print(
        f"  [bold]host:[/] [bold underline]{escape(safe_line(page.host))}[/]", highlight=False
    )
    env.err.print(
        f"  [bold]link:[/] {escape(safe_line(page.url))}", highlight=False, soft_wrap=True
    )
    for warning in page.warnings:
        env.err.print(f"  [red]careful:[/] {escape(warning)}", highlight=False)
    labels = ["I will open it myself (accept: acpcli opens nothing)", "Decline"]
    # It pops up by itself: keys typed before it was drawn are not its own (a grace).
    picked = await choose("open this link? (Esc: dismiss)", labels, default=0, erase=True, grace=GRACE)
    result = el.answer(
        {0: el.ACCEPT, 1: el.DECLINE}.get(picked, el.CANCEL) if picked is not None else el.CANCEL
    )
    env.err.print(f"  [dim]answered:[/] {escape(el.summary(page, result))}", highlight=False)
    return result


class _Widget:
    """One field's control and how its value is read."""

    def __init__(self, f: el.Field) -> None:
        from prompt_toolkit.layout.dimension import Dimension
        from prompt_toolkit.widgets import Checkbox, CheckboxList, RadioList, TextArea

        self.field = f
        self.control: Any
        if f.kind in (el.TEXT, el.NUMBER, el.INTEGER):
            default = "" if f.default is None else str(f.default)
            self.control = TextArea(
                text="" if f.sensitive else default,
                multiline=False,
                password=f.sensitive,
                height=1,
                prompt="› ",
                style="class:field",
            )
            self.control.buffer.cursor_position = len(
                self.control.text
            )  # typing goes after the default
        elif f.kind == el.BOOLEAN:
            self.control = Checkbox(text="yes", checked=bool(f.default))
        elif f.kind == el.CHOICE:
            values: list[tuple[str, str]] = [
                (value, _clip(title, 70)) for value, title in f.options
            ]
            if f.default is None or f.default not in {v for v, _ in f.options}:
                values.insert(0, (_NONE, "(none chosen)"))
                default = _NONE
            else:
                default = f.default
            self.control = RadioList(values=values, default=default, select_on_focus=True)
            self.control.window.height = Dimension(max=min(len(values), _CHOICE_ROWS))
        else:  # MULTI
            values = [(value, _clip(title, 70)) for value, title in f.options]
            self.control = CheckboxList(values=values, default_values=list(f.default or []))
            self.control.window.height = Dimension(max=min(len(values), _CHOICE_ROWS))

    def value(self) -> Any:
        """The value as the person left it (None: nothing given)."""
        f, control = self.field, self.control
        if f.kind in (el.TEXT, el.NUMBER, el.INTEGER):
            text = control.text
            return text if text.strip() or (f.kind == el.TEXT and text) else None
        if f.kind == el.BOOLEAN:
            return bool(control.checked)
        if f.kind == el.CHOICE:
            chosen = control.current_value
            return None if chosen == _NONE else chosen
        chosen = list(control.current_values)
        return chosen if chosen or f.required else None


def _caption(f: el.Field, width: int) -> str:
    bounds = f.bounds()
    mark = " *" if f.required else ""
    extra = " · ".join(part for part in (safe_line(f.description), bounds) if part)
    text = f"{safe_line(f.label)}{mark}"
    return _clip(f"{text}  ({extra})" if extra else text, width)


async def _form(env: Environment, form: el.Form) -> dict[str, Any] | None:
    import asyncio

    from prompt_toolkit.application import Application
    from prompt_toolkit.application.current import get_app
    from prompt_toolkit.filters import Condition
    from prompt_toolkit.formatted_text import StyleAndTextTuples
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.key_binding.bindings.focus import focus_next, focus_previous
    from prompt_toolkit.keys import Keys
    from prompt_toolkit.layout import (
        ConditionalContainer,
        HSplit,
        Layout,
        ScrollablePane,
        VSplit,
        Window,
    )
    from prompt_toolkit.layout.controls import FormattedTextControl
    from prompt_toolkit.layout.dimension import Dimension
    from prompt_toolkit.styles import Style
    from prompt_toolkit.widgets import Button, Label

    from acpcli.repl.picker import GRACE

    width = max(40, env.err.width)
    widgets = [_Widget(f) for f in form.fields]
    errors: dict[str, str] = {}
    outcome: dict[str, Any] = {}
    if form.sensitive:
        env.err.print(
            "  [yellow]note:[/] this form asks for what looks secret "
            f"({escape(', '.join(safe_line(f.name[:40]) for f in form.sensitive))}): typed masked, never shown; "
            "ACP says secrets belong on the agent's own page (a link), not in a form",
            highlight=False,
        )

    def still_wrong(widget: _Widget) -> bool:
        """A field shown wrong since Submit: checked again as it is now, so the problem goes
        away as soon as it is fixed (and Submit is not needed to see that)."""
        name = widget.field.name
        if name not in errors:
            return False
        value = widget.value()
        problem: str | None
        if value is None:
            problem = "required" if widget.field.required else None
        else:
            try:
                problem = el.problem(widget.field, el.coerce(widget.field, value))
            except ValueError as err:
                problem = str(err)
        if problem is None:
            del errors[name]
            return False
        errors[name] = problem
        return True

    def error_of(name: str) -> Any:
        def text() -> StyleAndTextTuples:
            problem = errors.get(name)
            return [("class:error", f"  ! {_clip(problem, width - 6)}")] if problem else []

        return text

    rows: list[Any] = []
    if form.title:
        rows.append(Label(_clip(form.title, width), style="bold"))
    for widget in widgets:
        name = widget.field.name
        rows.append(Label(_caption(widget.field, width - 2), style="class:caption"))
        rows.append(widget.control)
        rows.append(
            ConditionalContainer(
                Window(FormattedTextControl(error_of(name)), height=1),
                filter=Condition(lambda widget=widget: still_wrong(widget)),  # type: ignore[misc]
            )
        )
    if not widgets:
        rows.append(
            Label("(the form has no fields: Submit answers it as it is)", style="class:hint")
        )

    def submit() -> None:
        given = {w.field.name: w.value() for w in widgets if w.value() is not None}
        values, problems = el.check_content(form, given)
        errors.clear()
        errors.update(problems)
        if problems:
            first = next(w for w in widgets if w.field.name in problems)
            get_app().layout.focus(first.control)
            return
        outcome["result"] = el.answer(el.ACCEPT, values)
        get_app().exit(result=outcome["result"])

    def decline() -> None:
        get_app().exit(result=el.answer(el.DECLINE))

    def dismiss() -> None:
        get_app().exit(result=None)

    buttons = VSplit(
        [
            Button("Submit", handler=submit),
            Button("Decline", handler=decline),
            Button("Cancel", handler=dismiss),
        ],
        padding=1,
    )
    for widget in widgets:  # Enter in a line of text moves on, as Tab does
        if widget.field.kind in (el.TEXT, el.NUMBER, el.INTEGER):

            def accept(buffer: Any) -> bool:
                get_app().layout.focus_next()  # (focus_next itself takes a key press event)
                return True  # keep the text

            widget.control.buffer.accept_handler = accept

    # It pops up by itself: keys before it is drawn, and for a moment after, are not its own
    # (they go back to the input line they were typed for); its hint shows once it takes keys.
    taking = False
    strays: list[Any] = []

    def hint() -> StyleAndTextTuples:
        if not taking:
            return [("", " ")]
        problem = [f"{len(errors)} field{'s' if len(errors) != 1 else ''} to fix"] if errors else []
        parts = [*problem, "Tab: next field", "Shift-Tab: back", "Space: choose", "Esc: dismiss"]
        width = get_app().output.get_size().columns - 1
        lines = [f" {parts[0]}"]
        for part in parts[1:]:  # broken between the keys, never inside a word
            joined = f"{lines[-1]} · {part}"
            if len(joined) > width:
                lines.append(f" {part}")
            else:
                lines[-1] = joined
        return [("class:hint", "\n".join(lines))]

    fields = HSplit(rows)

    def pane_height() -> Dimension:
        """The rows the fields need, as many as fit (the buttons, the hint and a row to
        spare below them): asked for, not left to chance -- on a screen that has scrolled
        there is no room below the cursor, and a pane that only says how high it may grow
        gets none (the form would show its title and buttons alone)."""
        size = get_app().output.get_size()
        room = max(3, size.rows - 4)
        needed = fields.preferred_height(max(1, size.columns - 1), 10_000).preferred  # (-1: the scrollbar)
        shown = max(1, min(needed, room))
        return Dimension(min=shown, preferred=shown, max=room)

    body = HSplit(
        [
            ScrollablePane(fields, height=pane_height, show_scrollbar=True),
            buttons,
            Window(FormattedTextControl(hint), wrap_lines=True, dont_extend_height=True),
        ]
    )
    keys = KeyBindings()
    ready = Condition(lambda: taking)

    @keys.add(Keys.Any, filter=~ready, eager=True)  # (eager: before any field's own keys)
    def _not_yet(event: Any) -> None:
        strays.extend(event.key_sequence)

    @keys.add(Keys.CPRResponse, eager=True, save_before=lambda event: False)
    def _position(event: Any) -> None:  # the terminal's answer, not a key: as prompt-toolkit's own binding
        row, _col = map(int, event.data[2:-1].split(";"))
        event.app.renderer.report_absolute_cursor_row(row)

    keys.add("tab", filter=ready)(focus_next)
    keys.add("s-tab", filter=ready)(focus_previous)

    @keys.add("escape", eager=True, filter=ready)
    @keys.add("c-c", eager=True)
    @keys.add("<sigint>")
    def _dismiss(event: Any) -> None:
        event.app.exit(result=None)

    timer: list[asyncio.TimerHandle] = []

    def take_keys(app: Application[dict[str, Any] | None]) -> None:
        nonlocal taking
        taking = True
        app.invalidate()

    def drawn(app: Application[dict[str, Any] | None]) -> None:
        if not timer:  # first drawn: the grace starts
            timer.append(asyncio.get_running_loop().call_later(GRACE, take_keys, app))

    app: Application[dict[str, Any] | None] = Application(
        layout=Layout(body, focused_element=widgets[0].control if widgets else buttons),
        key_bindings=keys,
        full_screen=False,
        erase_when_done=True,
        mouse_support=False,
        after_render=drawn,
        style=Style.from_dict(
            {
                "caption": "bold",
                "error": "ansired bold",
                "hint": "#888888",
                "field": "",
                "button.focused": "reverse",
                "radio-selected": "reverse",
                "checkbox-selected": "reverse",
            }
        ),
    )
    try:
        # Not prompt-toolkit's SIGINT handler: it would remove the running turn's on the way
        # out (Ctrl-C would no longer cancel the turn). Ctrl-C is a key here (raw mode).
        result = await app.run_async(handle_sigint=False)
    except (KeyboardInterrupt, EOFError):
        result = None
    finally:
        from acpcli.repl.typeahead import hand_back

        for handle in timer:
            handle.cancel()
        hand_back(strays)
    shown = el.summary(form, result) if result is not None else "cancelled (dismissed)"
    env.err.print(f"  [dim]answered:[/] {escape(shown)}", highlight=False)
    return result
