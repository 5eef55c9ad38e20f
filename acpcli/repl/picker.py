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

A short list is drawn whole, as prompt-toolkit's own ``ChoiceInput`` draws it; a long one
shows a window of rows around the highlight, with how many options are above and below, so
a key costs the same with 10 options or 10,000.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prompt_toolkit.formatted_text import StyleAndTextTuples

#: The most option rows drawn at once (fewer on a short terminal).
MAX_ROWS = 12


class Choices:
    """What the picker shows and what Enter picks (see the module docstring)."""

    def __init__(self, labels: Sequence[str], default: int = 0) -> None:
        self.labels = list(labels)
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

    # -- keys --------------------------------------------------------------------------------

    def move(self, delta: int) -> None:
        """Move the highlight ``delta`` rows (clamped to the visible list)."""
        self.number = ""
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
) -> int:
    """Show the picker (``labels`` already safe, one line each); the index Enter was pressed
    on. Raises :class:`KeyboardInterrupt` when dismissed (Ctrl-C, Ctrl-D, Escape)."""
    from prompt_toolkit.application import Application
    from prompt_toolkit.filters import Condition, is_done, renderer_height_is_known
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.keys import Keys
    from prompt_toolkit.layout import ConditionalContainer, HSplit, Layout, Window
    from prompt_toolkit.layout.controls import FormattedTextControl
    from prompt_toolkit.layout.dimension import Dimension
    from prompt_toolkit.styles import Style
    from prompt_toolkit.widgets import Box, Label

    state = Choices(labels, default)
    width = max(2, len(str(len(labels))))
    long_list = len(labels) > MAX_ROWS

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
        if state.filter:
            return [("class:more", f" filter: {state.filter}  ({state.count:,} of {len(labels):,})")]
        return [("class:more", " type to filter · a number picks that option · Esc dismisses")]

    show_filter = Condition(lambda: long_list or bool(state.filter))
    show_toolbar = Condition(lambda: toolbar is not None) & ~is_done & renderer_height_is_known
    body = HSplit(
        [
            Box(Label(text=question, dont_extend_height=True), padding_top=0, padding_left=1, padding_right=1, padding_bottom=0),
            ConditionalContainer(
                Window(FormattedTextControl(filter_text), height=1, dont_extend_height=True), filter=show_filter
            ),
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

    @keys.add("enter", eager=True)
    def _enter(event: Any) -> None:
        if state.highlighted is not None:
            event.app.exit(result=state.highlighted, style="class:accepted")

    @keys.add("c-c", eager=True)
    @keys.add("<sigint>")
    @keys.add("c-d", eager=True)
    @keys.add("escape", eager=True)
    def _dismiss(event: Any) -> None:
        event.app.exit(exception=KeyboardInterrupt(), style="class:aborting")

    @keys.add("up")
    @keys.add("c-p")
    def _up(event: Any) -> None:
        state.move(-1)

    @keys.add("down")
    @keys.add("c-n")
    def _down(event: Any) -> None:
        state.move(1)

    @keys.add("pageup")
    def _page_up(event: Any) -> None:
        state.move(-(rows() - 2))

    @keys.add("pagedown")
    def _page_down(event: Any) -> None:
        state.move(rows() - 2)

    @keys.add("home")
    def _home(event: Any) -> None:
        state.home()

    @keys.add("end")
    def _end(event: Any) -> None:
        state.end()

    @keys.add("backspace")
    def _backspace(event: Any) -> None:
        state.backspace()

    @keys.add(Keys.BracketedPaste)
    def _paste(event: Any) -> None:
        state.type(event.data.splitlines()[0] if event.data else "")

    @keys.add(Keys.Any)
    def _typed(event: Any) -> None:
        if len(event.data) == 1 and event.data.isprintable():
            state.type(event.data)

    app: Application[int] = Application(
        layout=Layout(body),
        full_screen=False,
        key_bindings=keys,
        style=Style.from_dict({"selected-option": "bold", "more": "#888888"}),
        erase_when_done=erase,
    )
    return await app.run_async()
