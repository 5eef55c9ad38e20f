"""The input line of a running turn and the prompt queue, without a terminal: keys in, what
is queued, sent now, cancelled, and the lines the view draws."""

from __future__ import annotations

from prompt_toolkit.input.vt100_parser import Vt100Parser
from prompt_toolkit.key_binding import KeyPress

from acpcli.repl.queue import QUEUEING, STEERING, PromptQueue, queue_lines, send_now_way
from acpcli.repl.typeahead import TurnInput


def keys(data: str) -> list[KeyPress]:
    out: list[KeyPress] = []
    parser = Vt100Parser(out.append)
    parser.feed(data)
    parser.flush()
    return out


class Harness:
    def __init__(self, text: str = "") -> None:
        self.queue = PromptQueue()
        self.now: list[str] = []
        self.cancels = 0
        self.redraws = 0
        self.line = TurnInput(
            self.queue, send_now=self._now, cancel=self._cancel, changed=self._changed, width=lambda: 80, text=text
        )

    def _now(self, text: str) -> str:
        self.now.append(text)
        return "sent now"

    def _cancel(self) -> None:
        self.cancels += 1

    def _changed(self) -> None:
        self.redraws += 1

    def type(self, data: str) -> TurnInput:
        # one read per call, as a terminal delivers a key or a paste
        self.line.feed(keys(data))
        return self.line


def test_enter_queues_in_order_and_up_takes_the_last_back() -> None:
    h = Harness()
    h.type("first\r")
    h.type("second\r")
    h.type("   \r")  # an empty line queues nothing
    assert h.queue.items == ["first", "second"]
    assert h.type("\x1b[A").text == "second" and h.queue.items == ["first"]
    h.type("\x1b[A")  # the line is not empty: Up leaves the queue alone
    assert h.queue.items == ["first"]
    h.type(" edited\r")
    assert h.queue.items == ["first", "second edited"]
    assert h.redraws == 6  # one per read


def test_editing_keys() -> None:
    h = Harness()
    line = h.type("hello world")
    h.type("\x17")  # Ctrl-W: the last word
    assert line.text == "hello "
    h.type("\x1b[D\x1b[Dxy")  # Left twice, then insert
    assert (line.text, line.cursor) == ("hellxyo ", 6)
    h.type("\x7f\x01!\x05?")  # Backspace, Ctrl-A, Ctrl-E
    assert line.text == "!hellxo ?"
    h.type("\x15")  # Ctrl-U: to the start
    assert line.text == ""
    h.type("\x1b[200~a\r\nb\x1b[201~")  # a paste keeps its newlines
    h.type("\n")  # Ctrl-J: a newline
    assert line.text == "a\nb\n" and h.queue.items == []


def test_alt_enter_sends_now_and_commands_typed_during_a_turn() -> None:
    h = Harness()
    h.type("steer left\x1b\r")  # Alt-Enter arrives as ESC CR in one read
    assert h.now == ["steer left"] and h.line.text == "" and h.line.note == "sent now"
    h.type("queued\r")
    h.type("\x1b\r")  # on an empty line: the next queued prompt
    assert h.now == ["steer left", "queued"] and not h.queue
    h.type("/now go right\r")
    assert h.now[-1] == "go right"
    h.type("/cancel\r")
    assert h.cancels == 1 and not h.queue
    h.type("a\r")
    h.type("b\r")
    h.type("/queue drop 1\r")
    assert h.queue.items == ["b"] and h.line.note.startswith("dropped: a")
    h.type("/queue clear\r")
    assert not h.queue and h.line.note == "dropped 1 queued prompt"
    h.type("/mode plan\r")  # any other command waits for its turn, in the queue
    assert h.queue.items == ["/mode plan"]


def test_a_lone_escape_then_enter_queues() -> None:
    h = Harness()
    h.type("x")
    h.type("\x1b")  # Escape alone (flushed): nothing
    h.type("\r")
    assert h.queue.items == ["x"] and h.now == []


def test_footer_lines() -> None:
    h = Harness()
    lines = [t.plain for t in h.line.footer()]
    assert lines == ["» ▌type ahead: Enter queues for when the turn ends"]
    h.type("one\r")
    h.type("two\x1b[D")
    assert [t.plain for t in h.line.footer()] == ["  queued 1: one", "» two"]
    h.type("\n\x1b[\x1b")  # control characters typed are shown, never obeyed
    assert all("\x1b" not in t.plain for t in h.line.footer())


def test_queue_hold_and_lines() -> None:
    queue = PromptQueue(["a\nb", "c"])
    assert queue.next() == "a\nb"
    queue.hold()
    assert queue.next() is None
    assert "held" in queue_lines(queue, 80) and "queued 1: c" in queue_lines(queue, 80)
    queue.release()
    assert queue.next() == "c" and queue_lines(queue, 80) == ""
    queue.hold()
    assert not queue.held  # nothing to hold


def test_send_now_is_read_from_initialize_never_guessed() -> None:
    assert send_now_way({"agentCapabilities": {"_meta": {"claudeCode": {"promptQueueing": True}}}}) == QUEUEING
    assert send_now_way({"_meta": {"steering": {"supported": True}}, "agentCapabilities": {}}) == STEERING
    assert send_now_way({"agentCapabilities": {"_meta": {"steering": {"supported": True}}}}) == STEERING
    for raw in (None, {}, {"agentCapabilities": {"_meta": {"claudeCode": {"promptQueueing": "yes"}}}}, {"_meta": []}):
        assert send_now_way(raw) is None  # type: ignore[arg-type]


def test_a_bare_now_sends_the_next_queued_prompt_and_leaves_the_line_empty() -> None:
    h = Harness()
    h.type("/now\r")  # nothing queued: it says how, and the line is empty again
    assert h.now == [] and h.line.text == "" and h.line.note.startswith("/now TEXT")
    h.type("first\r")
    h.type("second\r")
    h.type("/now\r")
    assert h.now == ["first"] and h.queue.items == ["second"] and h.line.text == ""


def test_a_queued_prompt_that_cannot_be_sent_now_keeps_its_place() -> None:
    queue = PromptQueue()

    def refuse(text: str) -> str:
        queue.add(text)  # as SendNow does with an agent that takes no prompt during a turn
        return "queued: it does not take a prompt during a turn"

    line = TurnInput(queue, send_now=refuse, cancel=lambda: None, changed=lambda: None, width=lambda: 80)
    queue.add("first")
    queue.add("second")
    line.feed(keys("\x1b\r"))  # Alt-Enter on an empty line
    assert queue.items == ["first", "second"] and line.note.startswith("queued:")
    line.feed(keys("/now\r"))
    assert queue.items == ["first", "second"] and line.text == ""
