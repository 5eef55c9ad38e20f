"""The input line while a turn runs: visible, editable, and feeding the prompt queue.

Between turns prompt-toolkit owns the input line. During a turn the terminal belongs to the
view's live region, so :class:`TurnInput` keeps a small line editor of its own and the view
draws it (:meth:`TurnInput.footer`) at the bottom of the live region, under the turn's
status line: the queued prompts, then the line being typed, then a one-line note when a key
had something to say. :func:`reading` puts the terminal in a mode without echo or line
buffering (Ctrl-C still raises SIGINT, so cancelling the turn is unchanged) and feeds the
keys to it, starting with those typed before the turn began (read already by the idle input
line: prompt-toolkit keeps them as its "typeahead"). A permission question drawn during the
turn takes the keys while it is up (prompt-toolkit stacks the readers) and gives them back
after -- with the keys it read that were not its own (:func:`hand_back`: those typed before
it was drawn; see :mod:`acpcli.repl.picker`), which go on this line as if it had read them.

Keys: printable text and pastes insert; Enter queues the line (:mod:`acpcli.repl.queue`);
Alt-Enter sends it now where the agent takes a prompt during a turn
(else it says why, and queues it); Ctrl-J inserts a newline; Up on an empty line takes the
last queued prompt back for editing; Left/Right, Home/End (Ctrl-A/Ctrl-E), Backspace,
Delete, Ctrl-U, Ctrl-K and Ctrl-W edit. Typed during a turn, ``/cancel`` cancels it,
``/now TEXT`` sends TEXT now (a bare ``/now``: the next queued prompt, as Alt-Enter on an
empty line), ``/queue clear`` and ``/queue drop N`` edit the queue; any other line (a slash
command included) is queued and runs in its turn.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from acpcli.repl.queue import PromptQueue, one_line
from acpcli.text.safe import safe_line

if TYPE_CHECKING:
    from rich.text import Text

#: The mark of the input line during a turn (the idle prompt's is ``›``).
MARK = "» "
#: Queued prompts shown above the line; more are counted.
SHOWN_QUEUED = 5


class TurnInput:
    """The line editor of a running turn (see the module docstring).

    ``send_now(text)`` is called for Alt-Enter and ``/now`` with the text, and returns a note
    to show or ``None``; ``cancel()`` for ``/cancel``; ``changed()`` after every key (the
    view redraws); ``width()`` is the terminal's width."""

    def __init__(
        self,
        queue: PromptQueue,
        *,
        send_now: Callable[[str], str | None],
        cancel: Callable[[], str | None],
        changed: Callable[[], None],
        width: Callable[[], int],
        text: str = "",
        can_send_now: bool = False,
    ) -> None:
        self.queue = queue
        #: What the empty line says (dim), after its cursor.
        self.hint = "type ahead: Enter queues" + (" · Alt-Enter sends now" if can_send_now else " for when the turn ends")

        self.text = text
        self.cursor = len(text)
        self.note = ""
        self._send_now = send_now
        self._cancel = cancel
        self._changed = changed
        self._width = width
        self._escape = False

    # -- keys --------------------------------------------------------------------------------

    def feed(self, presses: list[Any], *, redraw: bool = True) -> None:
        """Handle prompt-toolkit ``KeyPress`` objects, then ask for a redraw (the keys of one
        read together: an Escape then Enter in one read is Alt-Enter). ``redraw`` False:
        the view draws the line when it next draws (a question is still on the screen)."""
        if not presses:
            return
        for press in presses:
            self._key(press.key, press.data)
        self._escape = False  # Alt-Enter arrives in one read: an Escape alone means nothing here
        if redraw:
            self._changed()

    def _key(self, key: Any, data: str) -> None:
        from prompt_toolkit.keys import Keys

        escape, self._escape = self._escape, False
        if key in (Keys.CPRResponse, Keys.Vt100MouseEvent, Keys.Ignore, Keys.ScrollUp, Keys.ScrollDown):
            self._escape = escape
            return
        if key != Keys.Escape:
            self.note = ""
        if key == Keys.Escape:
            self._escape = True
        elif key == Keys.ControlM:
            if escape:
                self._now(self.text)
            else:
                self._enter()
        elif key == Keys.ControlJ:
            self._insert("\n")
        elif key == Keys.BracketedPaste:
            self._insert(data.replace("\r\n", "\n").replace("\r", "\n"))
        elif key == Keys.ControlH:
            if self.cursor:
                self.text = self.text[: self.cursor - 1] + self.text[self.cursor :]
                self.cursor -= 1
        elif key == Keys.Delete:
            self.text = self.text[: self.cursor] + self.text[self.cursor + 1 :]
        elif key == Keys.Left:
            self.cursor = max(0, self.cursor - 1)
        elif key == Keys.Right:
            self.cursor = min(len(self.text), self.cursor + 1)
        elif key in (Keys.Home, Keys.ControlA):
            self.cursor = self.text.rfind("\n", 0, self.cursor) + 1
        elif key in (Keys.End, Keys.ControlE):
            end = self.text.find("\n", self.cursor)
            self.cursor = len(self.text) if end == -1 else end
        elif key == Keys.ControlU:
            self.text, self.cursor = self.text[self.cursor :], 0
        elif key == Keys.ControlK:
            self.text = self.text[: self.cursor]
        elif key == Keys.ControlW:
            start = len(self.text[: self.cursor].rstrip())
            start = self.text.rfind(" ", 0, start) + 1 if start else 0
            self.text, self.cursor = self.text[:start] + self.text[self.cursor :], start
        elif key == Keys.Up:
            if not self.text.strip():
                last = self.queue.take_last()
                if last is not None:
                    self.text, self.cursor = last, len(last)
        elif isinstance(key, str) and len(data) == 1 and data.isprintable():
            self._insert(data)

    def _insert(self, text: str) -> None:
        self.text = self.text[: self.cursor] + text + self.text[self.cursor :]
        self.cursor += len(text)

    def _take(self) -> str:
        text, self.text, self.cursor = self.text.strip(), "", 0
        return text

    def _enter(self) -> None:
        text = self.text.strip()
        if not text:
            return
        word, _, rest = text.partition(" ")
        if word == "/cancel":
            self._take()
            self.note = self._cancel() or ""
        elif word == "/now":
            self._take()  # (never left on the line: it was said)
            if rest.strip():
                self._now(rest.strip(), typed=False)
            elif self.queue:
                self._now("")  # bare: the next queued prompt, as Alt-Enter on an empty line
            else:
                self.note = "/now TEXT sends TEXT to the running turn (bare: the next queued prompt)"
        elif word == "/queue" and rest.strip():
            self._take()
            self.note = queue_command(self.queue, rest)
        elif word == "/queue":
            self._take()
            self.note = f"{len(self.queue)} queued, shown above this line" if self.queue else "the queue is empty"
        else:
            self.queue.add(self._take())

    def _now(self, text: str, typed: bool = True) -> None:
        text = text.strip()
        if not text:
            first = self.queue.take_first()  # Alt-Enter on an empty line: the next queued one
            if first is None:
                return
            left = len(self.queue)
            self.note = self._send_now(first) or ""
            if len(self.queue) == left + 1:  # not sent (queued again, at the end): still first in line
                self.queue.items.insert(0, self.queue.items.pop())
            return
        if typed:
            self._take()
        self.note = self._send_now(text) or ""

    # -- drawing -----------------------------------------------------------------------------

    def footer(self) -> list[Text]:
        """The lines the view draws under the status line: queued prompts, the input line
        (with its cursor), and the note of the last key (if any)."""
        from rich.text import Text

        width = max(20, self._width())
        lines: list[Text] = []
        items = self.queue.items
        for number, item in enumerate(items[:SHOWN_QUEUED], 1):
            lines.append(Text(f"  queued {number}: {safe_line(one_line(item, width - 14))}", style="dim"))
        if len(items) > SHOWN_QUEUED:
            lines.append(Text(f"  … {len(items) - SHOWN_QUEUED} more queued (/queue lists them)", style="dim"))
        lines.extend(self._input_lines())
        if self.note:
            lines.append(Text(f"  {safe_line(one_line(self.note, width - 3))}", style="yellow"))
        return lines

    def _input_lines(self) -> list[Text]:
        from rich.text import Text

        if not self.text:
            hint = self.hint + (" · Up edits the last queued" if self.queue else "")
            line = Text(MARK, style="bold")
            line.append("▌")
            line.append(one_line(hint, max(10, self._width() - 4)), style="dim")
            return [line]
        lines = []
        offset = 0
        for number, row in enumerate(self.text.split("\n")):
            line = Text(MARK if number == 0 else "  ", style="bold")
            start, end = offset, offset + len(row)
            if start <= self.cursor <= end:
                at = self.cursor - start
                line.append(safe_line(row[:at]))
                if at < len(row):
                    line.append(safe_line(row[at : at + 1]), style="reverse")
                else:
                    line.append("▌")  # a reversed space at the end would be trimmed away
                line.append(safe_line(row[at + 1 :]))
            else:
                line.append(safe_line(row))
            lines.append(line)
            offset = end + 1
        return lines


def queue_command(queue: PromptQueue, arg: str) -> str:
    """``/queue clear`` or ``/queue drop N``: edit the queue; the line saying what was done."""
    word, _, rest = arg.strip().partition(" ")
    if word == "clear":
        count = queue.clear()
        return f"dropped {count} queued prompt{'s' if count != 1 else ''}" if count else "the queue is empty"
    if word == "drop":
        if not rest.strip().isdigit():
            return "usage: /queue drop N (N as /queue numbers them)"
        dropped = queue.drop(int(rest.strip()))
        if dropped is None:
            return f"there is no queued prompt {rest.strip()} ({len(queue)} queued)"
        return f"dropped: {one_line(dropped, 60)}"
    return "usage: /queue [clear | drop N]"


#: The input line :func:`reading` feeds now (a turn runs), for :func:`hand_back`.
_reading: TurnInput | None = None


def hand_back(presses: list[Any]) -> None:
    """Keys a question read that were not its own (typed before it was drawn): onto the
    running turn's input line, as if it had read them; with no turn running, back to
    prompt-toolkit's typeahead, where the next input line finds them first."""
    if not presses:
        return
    if _reading is not None:
        _reading.feed(presses, redraw=False)  # (the question's answer is said first)
        return
    from prompt_toolkit.application.current import get_app_session
    from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead

    keys_in = get_app_session().input
    later = get_typeahead(keys_in)  # (read after these: they go after them)
    store_typeahead(keys_in, [*presses, *later])


@contextlib.contextmanager
def reading(typing: TurnInput) -> Iterator[None]:
    """Feed the terminal's keys to ``typing`` while the block runs (see the module
    docstring); the terminal is as before afterwards. Nothing happens without a terminal."""
    import asyncio
    import termios

    from prompt_toolkit.application.current import get_app_session
    from prompt_toolkit.input.typeahead import get_typeahead

    global _reading
    session = get_app_session()
    keys_in, out = session.input, session.output
    try:
        fd = keys_in.fileno()
        before = termios.tcgetattr(fd)
    except (OSError, termios.error, ValueError, NotImplementedError):
        yield
        return
    mode = termios.tcgetattr(fd)
    mode[3] &= ~(termios.ECHO | termios.ICANON | termios.IEXTEN)  # ISIG stays: Ctrl-C cancels
    mode[0] &= ~(termios.IXON | termios.ICRNL | termios.INLCR | termios.IGNCR)
    mode[6][termios.VMIN], mode[6][termios.VTIME] = 1, 0
    loop = asyncio.get_running_loop()
    timer: asyncio.TimerHandle | None = None

    def flush() -> None:  # a lone Escape is only known when nothing follows it
        typing.feed(keys_in.flush_keys())

    def ready() -> None:
        nonlocal timer
        typing.feed(keys_in.read_keys())
        if timer is not None:
            timer.cancel()
        timer = loop.call_later(0.05, flush)

    termios.tcsetattr(fd, termios.TCSANOW, mode)
    out.enable_bracketed_paste()
    out.flush()
    outer, _reading = _reading, typing
    try:
        # Typed before the turn began, after the line that started it: this line's first
        # keys (a question drawn later must not find them waiting for it).
        typing.feed(get_typeahead(keys_in))
        with keys_in.attach(ready):
            yield
    finally:
        _reading = outer
        if timer is not None:
            timer.cancel()
        out.disable_bracketed_paste()
        out.flush()
        termios.tcsetattr(fd, termios.TCSANOW, before)
