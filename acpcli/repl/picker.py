"""The picker: one of N options, chosen with the keys, exact at any N.

:class:`Choices` is the whole state, with no terminal: which options are visible (all, or
those matching what was typed), which one is highlighted, and which window of them is drawn.
:func:`pick` draws it with prompt-toolkit and returns the index Enter was pressed on.

What the person can do:

* arrow keys (and Ctrl-P/Ctrl-N), PageUp/PageDown, Home/End move the highlight;
* digits pick an option by its number, exactly (``1`` then ``2`` is option 12 when there are
  at least 12; a digit that would make a number past the last option starts a new one);
* any other character filters the list (case-insensitive, anywhere in the label); once a
  filter is typed, digits filter too; Backspace takes back the last character typed;
* Enter picks the highlighted option, and only that one (nothing highlighted: nothing
  happens); Ctrl-C, Ctrl-D and Escape dismiss the question.

Keys answer only what the person saw. A question that pops up by itself (the agent's: a
permission, a link) is given a ``grace``: the keys that come before it is drawn, or within
that moment after, are not its own -- they go back to the input line they were typed for
(:func:`acpcli.repl.typeahead.hand_back`: the text stays there, queued as a prompt when
Enter was among them). The hint line under the options shows once the picker takes keys.
Only Ctrl-C is taken at once (it dismisses the question, which cancels the turn: what
Ctrl-C meant anyway). And options that last (``careful``: a permission's "always" ones) are
never picked by a filter alone: when typing put the highlight on one, Enter says so and
picks nothing; an arrow key onto it (or its number, without a filter) then Enter does.

A short list is drawn whole, as prompt-toolkit's own ``ChoiceInput`` draws it; a long one
shows a window of rows around the highlight, with how many options are above and below, so
a key costs the same with 10 options or 10,000.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prompt_toolkit.formatted_text import StyleAndTextTuples

#: The most option rows drawn at once (fewer on a short terminal).
MAX_ROWS = 12
#: Seconds after a question that pops up by itself is drawn before it takes keys (see the
#: module docstring): less than anyone needs to read it, more than keys already typed take.
GRACE = 0.3
#: The hint line, once the picker takes keys (the pty tests wait for its start).
HINT = " ↑↓ or a number, then Enter · type to filter · Esc dismisses"


class Choices:
    """What the picker shows and what Enter picks (see the module docstring)."""

    def __init__(self, labels: Sequence[str], default: int = 0, careful: Collection[int] = ()) -> None:
        self.labels = list(labels)
        #: Options a filter alone never picks (see :attr:`filtered_onto_careful`).
        self.careful = frozenset(careful)
        self._by_filter = False  # the highlight is where the filter put it, not where a key moved it
        self._folded: list[str] | None = None  # the labels lower-cased, made on the first filter
        self.filter = ""
        self.number = ""  # the digits typed so far (picking by number)
        self._matches: list[int] | None = None  # None: every option is visible
        self._pos = default if 0 <= default < len(self.labels) else 0  # in the visible list
        self.top = 0  # the first visible option drawn

    # -- what is visible ---------------------------------------------------------------------

    @property
    def count(self) -> int:
        """How many options are visible (match the filter)."""
        return len(self.labels) if self._matches is None else len(self._matches)

    def visible(self, position: int) -> int:
        """The option (its index in ``labels``) at ``position`` of the visible list."""
        return position if self._matches is None else self._matches[position]

    @property
    def highlighted(self) -> int | None:
        """The option Enter picks: the one drawn highlighted (None when nothing matches)."""
        return self.visible(self._pos) if self.count else None

    @property
    def filtered_onto_careful(self) -> bool:
        """The highlight is on a careful option because of what was typed to filter, not
        because a key moved it there: Enter must not pick it (see the module docstring)."""
        return self._by_filter and self.highlighted in self.careful

    # -- keys --------------------------------------------------------------------------------

    def move(self, delta: int) -> None:
        """Move the highlight ``delta`` rows (clamped to the visible list)."""
        self.number = ""
        self._by_filter = False
        if self.count:
            self._pos = min(max(self._pos + delta, 0), self.count - 1)

    def home(self) -> None:
        self.move(-self.count)

    def end(self) -> None:
        self.move(self.count)

    def digit(self, d: str) -> None:
        """A digit typed: pick by number (see the module docstring)."""
        for candidate in (self.number + d, d):
            n = int(candidate)
            if 1 <= n <= len(self.labels):
                self.number = candidate
                self._set_filter("")
                self._pos = n - 1
                self._by_filter = False
                return

    def type(self, text: str) -> None:
        """Characters typed: with no filter yet, a digit picks by number; anything else filters."""
        for ch in text:
            if not self.filter and ch.isdigit():
                self.digit(ch)
            elif ch.isprintable():
                self.number = ""
                self._set_filter(self.filter + ch)

    def backspace(self) -> None:
        if self.filter:
            self._set_filter(self.filter[:-1])
        elif self.number:
            self.number = self.number[:-1]
            if self.number and int(self.number) >= 1:
                self._pos = int(self.number) - 1

    def _set_filter(self, text: str) -> None:
        if text == self.filter:
            return
        keep = self.highlighted
        narrower = text.startswith(self.filter) and self._matches is not None
        self.filter = text
        if not text:
            self._matches = None
        else:
            if self._folded is None:
                self._folded = [label.casefold() for label in self.labels]
            wanted = text.casefold()
            folded = self._folded
            pool = self._matches if narrower and self._matches is not None else range(len(folded))
            self._matches = [i for i in pool if wanted in folded[i]]
        # The highlighted option stays highlighted while it still matches; else the first match.
        if keep is not None and self._matches is None:
            self._pos = keep
        elif keep is not None and self._matches is not None:
            at = bisect_left(self._matches, keep)
            self._pos = at if at < len(self._matches) and self._matches[at] == keep else 0
        else:
            self._pos = 0
        # (and stays put by it after the filter is taken back, until a key moves it)
        self._by_filter = self._by_filter or self.highlighted != keep
        self.top = 0

    # -- drawing -----------------------------------------------------------------------------

    def window(self, rows: int) -> tuple[int, list[int], int]:
        """``(above, options, below)``: the options (indices in ``labels``) to draw in at most
        ``rows`` rows, the highlight among them, and how many visible options are left out
        above and below. Scrolls as little as it can to keep the highlight drawn."""
        rows = max(1, rows)
        total = self.count
        if total <= rows:
            self.top = 0
            return 0, [self.visible(p) for p in range(total)], 0
        if self._pos < self.top:
            self.top = self._pos
        elif self._pos >= self.top + rows:
            self.top = self._pos - rows + 1
        self.top = min(max(self.top, 0), total - rows)
        shown = [self.visible(p) for p in range(self.top, self.top + rows)]
        return self.top, shown, total - self.top - rows


def _rows_for(total_rows: int, toolbar: bool) -> int:
    """Option rows that fit under the question, the filter line and the toolbar."""
    return max(3, min(MAX_ROWS, total_rows - 4 - (1 if toolbar else 0)))


async def pick(
    question: str,
    labels: Sequence[str],
    *,
    default: int = 0,
    symbol: str = "›",
    toolbar: Callable[[], str] | None = None,
    erase: bool = False,
    grace: float = 0.0,
    careful: Collection[int] = (),
) -> int:
    """Show the picker (``labels`` already safe, one line each); the index Enter was pressed
    on. Raises :class:`KeyboardInterrupt` when dismissed (Ctrl-C, Ctrl-D, Escape).

    ``grace``: seconds after it is first drawn during which keys are not its own (a question
    that pops up by itself: :data:`GRACE`); ``careful``: options a filter alone never picks
    (see the module docstring)."""
    import asyncio

    from prompt_toolkit.application import Application
    from prompt_toolkit.filters import Condition, is_done, renderer_height_is_known
    from prompt_toolkit.key_binding import KeyBindings, KeyPress
    from prompt_toolkit.keys import Keys
    from prompt_toolkit.layout import ConditionalContainer, HSplit, Layout, Window
    from prompt_toolkit.layout.controls import FormattedTextControl
    from prompt_toolkit.layout.dimension import Dimension
    from prompt_toolkit.styles import Style
    from prompt_toolkit.widgets import Box, Label

    state = Choices(labels, default, careful)
    width = max(2, len(str(len(labels))))
    taking = grace <= 0  # the picker takes keys (after its grace)
    strays: list[KeyPress] = []  # keys read before then: handed back when it is done
    said = ""  # why Enter picked nothing (a careful option the filter put the highlight on)

    def rows() -> int:
        from prompt_toolkit.application.current import get_app

        return _rows_for(get_app().output.get_size().rows, toolbar is not None)

    def room() -> int:
        """The cells a label has on its row: the terminal's width less the padding (3 + 1),
        the mark and the number."""
        from prompt_toolkit.application.current import get_app

        return max(10, get_app().output.get_size().columns - 4 - 2 - (width + 2))

    def options_text() -> StyleAndTextTuples:
        from acpcli.render.fit import shorten

        above, shown, below = state.window(rows() - (2 if state.count > rows() else 0))
        label_room = room()
        out: StyleAndTextTuples = []
        scrolling = above or below
        if scrolling:
            out.append(("class:more", f"  {'↑ ' + format(above, ',') + ' more' if above else ''}\n"))
        chosen = state.highlighted
        for index in shown:
            style = "class:selected-option" if index == chosen else ""
            mark = symbol if index == chosen else " "
            out.append((style, f"{mark} "))
            out.append((f"{style} class:number", f"{index + 1:{width}d}. "))
            out.append((style, shorten(labels[index], label_room)))  # one row, cut at a word
            out.append(("", "\n"))
        if not shown:
            out.append(("class:more", "  (no option matches: Backspace to edit the filter)\n"))
        if scrolling:
            out.append(("class:more", f"  {'↓ ' + format(below, ',') + ' more' if below else ''}\n"))
        if out and out[-1][1].endswith("\n"):
            out[-1] = (out[-1][0], out[-1][1][:-1])
        return out

    def filter_text() -> StyleAndTextTuples:
        if not taking:
            return [("", "")]  # (the row is kept, so nothing moves when the hint comes)
        if said:
            return [("class:said", f" {said}")]
        if state.filter:
            return [("class:more", f" filter: {state.filter}  ({state.count:,} of {len(labels):,})")]
        return [("class:more", HINT)]

    ready = Condition(lambda: taking)
    show_toolbar = Condition(lambda: toolbar is not None) & ~is_done & renderer_height_is_known
    body = HSplit(
        [
            Box(Label(text=question, dont_extend_height=True), padding_top=0, padding_left=1, padding_right=1, padding_bottom=0),
            ConditionalContainer(Window(FormattedTextControl(filter_text), height=1, dont_extend_height=True), filter=~is_done),
            Box(
                Window(FormattedTextControl(options_text, focusable=True, show_cursor=False), dont_extend_height=True),
                padding_top=0, padding_left=3, padding_right=1, padding_bottom=0,
            ),
            ConditionalContainer(Window(), filter=show_toolbar),  # pushes the toolbar down
            ConditionalContainer(
                Window(
                    FormattedTextControl(lambda: toolbar() if toolbar is not None else "", style="class:bottom-toolbar.text"),
                    style="class:bottom-toolbar", dont_extend_height=True, height=Dimension(min=1),
                ),
                filter=show_toolbar,
            ),
        ]
    )

    keys = KeyBindings()

    @keys.add(Keys.Any, filter=~ready)
    def _not_yet(event: Any) -> None:  # typed before the question was there to be read
        strays.extend(event.key_sequence)

    @keys.add("enter", eager=True, filter=ready)
    def _enter(event: Any) -> None:
        nonlocal said
        if state.filtered_onto_careful:
            said = "Enter alone does not pick it: ↑↓ onto it, then Enter"  # fits 60 columns
            return
        if state.highlighted is not None:
            event.app.exit(result=state.highlighted, style="class:accepted")

    @keys.add("c-c", eager=True)
    @keys.add("<sigint>")
    @keys.add("c-d", eager=True, filter=ready)
    @keys.add("escape", eager=True, filter=ready)
    def _dismiss(event: Any) -> None:
        event.app.exit(exception=KeyboardInterrupt(), style="class:aborting")

    def key(*names: str | Keys) -> Callable[[Callable[[], None]], None]:
        """Bind ``names`` to a change of the state, once the picker takes keys."""

        def bind(change: Callable[[], None]) -> None:
            def handler(event: Any) -> None:
                nonlocal said
                said = ""
                change()

            for name in names:
                keys.add(name, filter=ready)(handler)

        return bind

    key("up", "c-p")(lambda: state.move(-1))
    key("down", "c-n")(lambda: state.move(1))
    key("pageup")(lambda: state.move(-(rows() - 2)))
    key("pagedown")(lambda: state.move(rows() - 2))
    key("home")(state.home)
    key("end")(state.end)
    key("backspace")(state.backspace)

    @keys.add(Keys.BracketedPaste, filter=ready)
    def _paste(event: Any) -> None:
        nonlocal said
        said = ""
        state.type(event.data.splitlines()[0] if event.data else "")

    @keys.add(Keys.Any, filter=ready)
    def _typed(event: Any) -> None:
        nonlocal said
        if len(event.data) == 1 and event.data.isprintable():
            said = ""
            state.type(event.data)

    def take_keys(app: Application[int]) -> None:
        nonlocal taking
        taking = True
        app.invalidate()  # the hint line says so

    timer: list[asyncio.TimerHandle] = []

    def drawn(app: Application[int]) -> None:
        if not taking and not timer:  # first drawn: the grace starts
            timer.append(asyncio.get_running_loop().call_later(grace, take_keys, app))

    app: Application[int] = Application(
        layout=Layout(body),
        full_screen=False,
        key_bindings=keys,
        style=Style.from_dict({"selected-option": "bold", "more": "#888888", "said": "ansiyellow"}),
        erase_when_done=erase,
        after_render=drawn,
    )
    try:
        # Not prompt-toolkit's SIGINT handler: it would remove the running turn's on the way
        # out (Ctrl-C would no longer cancel the turn). Ctrl-C is a key here (raw mode).
        return await app.run_async(handle_sigint=False)
    finally:
        from acpcli.repl.typeahead import hand_back

        for handle in timer:
            handle.cancel()
        hand_back(strays)
