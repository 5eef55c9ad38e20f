"""Finished transcripts, and the plain-text formatting every view shares.

Pure functions from a :class:`~acpcli.model.Store` (or its ``entries``) to a string:
:func:`to_text` (the plain layout, the same as :class:`~acpcli.render.plain.PlainView`
streams) and :func:`to_markdown` (a readable document). Used by ``show``/``export``, by
``load`` when stdout is piped, and by the streaming views for the per-entry pieces.

The plain layout, one block per entry, blocks separated by one blank line::

    > the user's prompt            user messages, every line prefixed "> "
    The agent's answer, as sent.   agent messages, verbatim
    [image image/png]              a non-text block: a note on a line of its own
    [thought] reasoning ...        thoughts, every line prefixed "[thought] "
    [tool] Edit config (edit): completed
      at /abs/path.json:3          locations, then content, indented two spaces
      --- /abs/path.json           diffs as unified diffs (difflib, from oldText/newText)
      +++ /abs/path.json
      [terminal term_1]            terminal refs as a note
    [plan] [x] done step           plans: [ ] pending, [~] in progress, [x] completed, [?] other
    [turn ended: ...]              a stop reason other than end_turn
    [turn cancelled]               a cancelled turn ([turn failed: ...]: one that failed)
    [usage] 12k/200k tokens (6%)   the session's usage, at the end of a finished transcript

Control characters in agent text (escape sequences, carriage returns) are never written
as they are: :func:`to_text` and :func:`to_markdown` pass their result through
:func:`~acpcli.text.safe.safe_text`, and the plain view every piece it writes.

Invariant: a message's text is laid out by :class:`LineWriter`, whose output does not
depend on how the text was chunked, so a streamed transcript and one formatted at the end
read the same.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from acpcli.model import AGENT, THOUGHT, USER, Message, Plan, Store, ToolCall, TurnEnd
from acpcli.text.safe import safe_line, safe_text

#: Line prefix per message kind in the plain layout.
PREFIXES = {USER: "> ", AGENT: "", THOUGHT: "[thought] "}

#: Plan entry status -> plain check mark.
PLAN_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}

_STOP_TEXT = {
    "cancelled": "cancelled",
    "refusal": "the agent refused to continue",
    "max_tokens": "the agent reached its token limit",
    "max_turn_requests": "the agent reached its limit of model requests for this turn",
}


def stop_reason_text(stop_reason: str | None) -> str | None:
    """A plain phrase for a stop reason, or None for ``end_turn`` (nothing to say)."""
    if stop_reason is None or stop_reason == "end_turn":
        return None
    return safe_line(_STOP_TEXT.get(stop_reason) or stop_reason.strip("_").replace("_", " ") or stop_reason)


def turn_end_text(entry: TurnEnd) -> str | None:
    """``[turn cancelled]``, ``[turn failed: …]`` or ``[turn ended: …]`` for a turn that did
    not simply end (None for ``end_turn``)."""
    if entry.error is not None:
        return f"[turn failed: {safe_line(entry.error)}]"
    if entry.stop_reason == "cancelled":
        return "[turn cancelled]"
    text = stop_reason_text(entry.stop_reason)
    return None if text is None else f"[turn ended: {text}]"


def _str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


class LineWriter:
    """Writes one message's text with a per-line prefix, independent of chunking.

    Leading newlines of the message are dropped and trailing ones are held back until more
    text follows, so the output never depends on where chunks were cut and :meth:`end`
    closes the message on exactly one newline. Empty lines get the prefix without its
    trailing space (``"> "`` -> ``">"``). Each :meth:`feed` costs O(len(text)).
    """

    __slots__ = ("_blank", "_pending", "_prefix", "_started", "_write")

    def __init__(self, write: Callable[[str], Any], prefix: str = "") -> None:
        self._write = write
        self._prefix = prefix
        self._blank = prefix.rstrip()
        self._pending = 0  # newlines seen but not written yet
        self._started = False  # some text was written

    @property
    def started(self) -> bool:
        """True once some text was written (and :meth:`end` has not been called)."""
        return self._started

    def feed(self, text: str) -> None:
        """Lay out ``text``, the next piece of the message."""
        if "\n" not in text:
            if text:
                self._piece(text)
            return
        for i, piece in enumerate(text.split("\n")):
            if i and self._started:
                self._pending += 1
            if piece:
                self._piece(piece)

    def _piece(self, piece: str) -> None:
        if not self._started:
            self._write(self._prefix + piece)
            self._started = True
        elif self._pending:
            blanks = (self._blank + "\n") * (self._pending - 1)
            self._write("\n" + blanks + self._prefix + piece)
            self._pending = 0
        else:
            self._write(piece)

    def own_line(self, line: str) -> None:
        """Write ``line`` (no newlines) on a line of its own: a note for a non-text block."""
        if self._started and not self._pending:
            self._pending = 1
        self._piece(line)
        self._pending = 1

    def end(self) -> bool:
        """Finish the message (one newline if anything was written); True if it wrote."""
        wrote = self._started
        if wrote:
            self._write("\n")
        self._started = False
        self._pending = 0
        return wrote


def block_label(block: dict[str, Any]) -> str:
    """A one-line note for a non-text content block (image, audio, resource, link, ...)."""
    btype = _str(block.get("type"), "?")
    if btype in ("image", "audio"):
        mime = _str(block.get("mimeType"))
        uri = _str(block.get("uri"))
        return f"[{btype}{' ' + mime if mime else ''}{' ' + uri if uri else ''}]"
    if btype == "resource_link":
        name = _str(block.get("title")) or _str(block.get("name"))
        return f"[link {name} <{_str(block.get('uri'))}>]" if name else f"[link <{_str(block.get('uri'))}>]"
    if btype == "resource":
        resource = block.get("resource")
        uri = _str(resource.get("uri")) if isinstance(resource, dict) else ""
        return f"[resource {uri}]" if uri else "[resource]"
    if btype == "text":
        return _str(block.get("text"))
    return f"[{btype}]"


def feed_block(writer: LineWriter, block: dict[str, Any]) -> None:
    """Lay out one content block: text as it is, anything else as a note on its own line."""
    if block.get("type") == "text":
        writer.feed(_str(block.get("text")))
    else:
        writer.own_line(" ".join(block_label(block).split("\n")))


def message_text(message: Message) -> str:
    """The plain layout of one message ("" when it has nothing to show)."""
    out: list[str] = []
    writer = LineWriter(out.append, PREFIXES.get(message.kind, ""))
    for block in message.content:
        feed_block(writer, block)
    writer.end()
    return "".join(out)


# -- tool calls ------------------------------------------------------------------------


#: Above this many pairs of lines (old × new, in the part that differs once the common start
#: and end are set aside), a diff shows that part as one replacement instead of matching the
#: lines inside it: difflib's matching takes time in that product, seconds for an agent's
#: edit of a few thousand scattered lines of one file (agents send whole files).
DIFF_MATCH_LIMIT = 1_000_000


def diff_lines(item: dict[str, Any]) -> list[str]:
    """A ``diff`` tool content item as unified diff lines (``oldText`` null = new file)."""
    path = _str(item.get("path"), "?")
    old = item.get("oldText")
    new = _str(item.get("newText"))
    old_lines = old.splitlines() if isinstance(old, str) else []
    fromfile = path if isinstance(old, str) else "/dev/null"
    lines = unified_diff(old_lines, new.splitlines(), fromfile, path)
    return lines or [f"(no changes to {path})"]


def unified_diff(a: list[str], b: list[str], fromfile: str, tofile: str) -> list[str]:
    """``difflib.unified_diff``'s lines, but in time linear in the input when the part that
    differs is too large to match line by line (:data:`DIFF_MATCH_LIMIT`): then one hunk
    replaces that part whole, with three lines of context. Either way, a valid diff."""
    start = 0
    for old_line, new_line in zip(a, b, strict=False):
        if old_line != new_line:
            break
        start += 1
    same_end = 0
    while same_end < min(len(a), len(b)) - start and a[-1 - same_end] == b[-1 - same_end]:
        same_end += 1
    a_end, b_end = len(a) - same_end, len(b) - same_end
    if (a_end - start) * (b_end - start) <= DIFF_MATCH_LIMIT:
        return list(difflib.unified_diff(a, b, fromfile, tofile, lineterm=""))
    first = max(0, start - 3)
    after = min(3, same_end)
    return [
        f"--- {fromfile}",
        f"+++ {tofile}",
        f"@@ -{_hunk_range(first, a_end + after)} +{_hunk_range(first, b_end + after)} @@",
        *(" " + line for line in a[first:start]),
        *("-" + line for line in a[start:a_end]),
        *("+" + line for line in b[start:b_end]),
        *(" " + line for line in a[a_end : a_end + after]),
    ]


def _hunk_range(start: int, stop: int) -> str:
    """A hunk header's range of lines ``[start, stop)`` (0-based), as unified diffs write it."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def tool_header(call: ToolCall) -> str:
    """``[tool] title (kind): status``."""
    title = call.title or call.tool_call_id
    return f"[tool] {title} ({call.kind}): {call.status}"


def location_line(location: dict[str, Any]) -> str:
    """``path:line`` (or ``path``) of a tool call location."""
    path = _str(location.get("path"), "?")
    line = location.get("line")
    return f"{path}:{line}" if isinstance(line, int) and not isinstance(line, bool) else path


#: Claude's notes to its model inside tool output: shown folded, one line each (kept whole in
#: the store and in jsonl).
_REMINDER = re.compile(r"[ \t]*<system-reminder>(.*?)</system-reminder>[ \t]*(?:\n|$)", re.S)
_FENCE_LINE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})")


def reminder_note(inner: str) -> str:
    """What a folded ``<system-reminder>`` says: ``system reminder, N lines``."""
    n = len(inner.strip("\n").split("\n")) if inner.strip() else 0
    return f"system reminder, {n} line{'' if n == 1 else 's'}"


def tool_text_parts(text: str) -> list[tuple[bool, str]]:
    """Tool output cut around its ``<system-reminder>`` blocks: ``(False, text)`` pieces and
    ``(True, note)`` for each reminder (:func:`reminder_note`), in order."""
    if "<system-reminder>" not in text or "</system-reminder>" not in text:
        return [(False, text)]
    parts: list[tuple[bool, str]] = []
    start = 0
    for m in _REMINDER.finditer(text):
        if m.start() > start:
            parts.append((False, text[start : m.start()]))
        parts.append((True, reminder_note(m.group(1))))
        start = m.end()
    if start < len(text):
        parts.append((False, text[start:]))
    return parts


def folded_tool_text(text: str) -> str:
    """Tool output with each ``<system-reminder>`` block folded to ``[system reminder, N
    lines]`` on a line of its own."""
    if "<system-reminder>" not in text:
        return text
    out: list[str] = []
    for folded, piece in tool_text_parts(text):
        if folded:
            if out and not out[-1].endswith("\n"):
                out.append("\n")
            out.append(f"[{piece}]\n")
        else:
            out.append(piece)
    return "".join(out)


def is_markdown_output(text: str) -> bool:
    """Tool output that is Markdown: it holds a fenced code block (claude's ```` ```console ````)."""
    if "```" not in text and "~~~" not in text:
        return False
    opened: str | None = None
    for line in text.split("\n"):  # one pass: hostile output full of fences costs O(n)
        m = _FENCE_LINE.match(line)
        if m is None:
            continue
        fence, rest = m.group(1), line[m.end() :]
        if opened is None:
            opened = fence
        elif fence[0] == opened[0] and len(fence) >= len(opened) and not rest.strip():
            return True
    return False


def content_item_lines(item: dict[str, Any]) -> list[str]:
    """The lines of one tool call content item (unindented; ``<system-reminder>`` blocks folded)."""
    itype = item.get("type")
    if itype == "diff":
        return diff_lines(item)
    if itype == "terminal":
        return [f"[terminal {_str(item.get('terminalId'), '?')}]"]
    if itype == "content":
        block = item.get("content")
        if not isinstance(block, dict):
            return ["[content]"]
        if block.get("type") == "text":
            return folded_tool_text(_str(block.get("text"))).rstrip("\n").split("\n")
        return [block_label(block)]
    return [f"[{_str(itype, '?')}]"]


def _indent(lines: Iterable[str]) -> list[str]:
    return ["  " + line if line else "" for line in lines]


def tool_detail_lines(locations: Iterable[dict[str, Any]], content: Iterable[dict[str, Any]]) -> list[str]:
    """Indented detail lines: locations first, then content items."""
    out = ["  at " + location_line(loc) for loc in locations]
    for item in content:
        out += _indent(content_item_lines(item))
    return out


def tool_text(call: ToolCall) -> str:
    """The plain layout of a tool call in its current state."""
    lines = [tool_header(call), *tool_detail_lines(call.locations, call.content)]
    return "\n".join(lines) + "\n"


# -- plans --------------------------------------------------------------------------------


def plan_lines(plan: Plan) -> list[str]:
    """``[plan] [x] step`` lines (one line for an empty or non-list plan)."""
    if plan.plan_type != "items":
        return [f"[plan] ({plan.plan_type} plan)"]
    if not plan.entries:
        return ["[plan] (empty)"]
    return [
        f"[plan] {PLAN_MARKS.get(_str(e.get('status')), '[?]')} {plan_entry_text(e)}".rstrip() for e in plan.entries
    ]


def plan_entry_text(entry: dict[str, Any]) -> str:
    """A plan entry's description on one line."""
    return " ".join(_str(entry.get("content")).split("\n"))


def plan_text(plan: Plan) -> str:
    """The plain layout of a plan."""
    return "\n".join(plan_lines(plan)) + "\n"


# -- whole transcripts ----------------------------------------------------------------------


def entry_text(entry: Any) -> str:
    """The plain layout of any entry ("" when it has nothing to show)."""
    if isinstance(entry, Message):
        return message_text(entry)
    if isinstance(entry, ToolCall):
        return tool_text(entry)
    if isinstance(entry, Plan):
        return plan_text(entry)
    if isinstance(entry, TurnEnd):
        marker = turn_end_text(entry)
        return "" if marker is None else marker + "\n"
    return ""


def _entries(store: Store | Iterable[Any]) -> Iterable[Any]:
    return store.entries if isinstance(store, Store) else store


def usage_line(store: Any) -> str | None:
    """``[usage] 95k/100k tokens (95%) · $0.12``: a store's usage as its agent last reported
    it (None when it reported none)."""
    from acpcli.render.usage import usage_text

    text = usage_text(getattr(store, "usage", None))
    return None if text is None else f"[usage] {text}"


def to_text(store: Store | Iterable[Any]) -> str:
    """The whole transcript in the plain layout (see the module docstring), and a store's
    last reported usage (:func:`usage_line`) at the end."""
    texts = [text for text in map(entry_text, _entries(store)) if text]
    usage = usage_line(store) if isinstance(store, Store) else None
    if usage is not None:
        texts.append(usage + "\n")
    return safe_text("\n".join(texts))


def _fence(text: str, info: str = "") -> str:
    """``text`` in a backtick fence longer than any backtick run inside it."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text.rstrip(chr(10))}\n{ticks}"


def _message_markdown(message: Message) -> str:
    """Text as sent; a non-text block as an italic note in a paragraph of its own."""
    parts: list[str] = []
    for block in message.content:
        if block.get("type") == "text":
            parts.append(_str(block.get("text")))
        else:
            if parts:
                parts[-1] = parts[-1].rstrip("\n")
                parts.append("\n\n")
            parts.append(f"*{block_label(block)}*\n\n")
    return "".join(parts).strip()


def _tool_markdown(call: ToolCall) -> str:
    title = call.title or call.tool_call_id
    out = [f"**Tool:** {title} (`{call.kind}`) — {call.status}"]
    if call.locations:
        out.append("\n".join(f"- `{location_line(loc)}`" for loc in call.locations))
    for item in call.content:
        itype = item.get("type")
        if itype == "diff":
            out.append(_fence("\n".join(diff_lines(item)), "diff"))
        elif itype == "content" and isinstance(item.get("content"), dict) and item["content"].get("type") == "text":
            text = folded_tool_text(_str(item["content"].get("text")))
            # Markdown output (claude's fenced ```console blocks) is Markdown here, not fenced again
            out.append(text.strip("\n") if is_markdown_output(text) else _fence(text, "text"))
        else:
            out.append("*" + " ".join(content_item_lines(item)) + "*")
    return "\n\n".join(out)


def _plan_markdown(plan: Plan) -> str:
    if plan.plan_type != "items":
        return f"**Plan** ({plan.plan_type})"
    lines = ["**Plan**", ""]
    for e in plan.entries:
        status = _str(e.get("status"))
        box = "[x]" if status == "completed" else "[ ]"
        note = "" if status in ("pending", "completed") else f" *({status.replace('_', ' ') or 'unknown'})*"
        lines.append(f"- {box} {plan_entry_text(e)}{note}")
    if not plan.entries:
        lines.append("*(empty)*")
    return "\n".join(lines)


def entry_markdown(entry: Any) -> str | None:
    """One entry as Markdown (None when it has nothing to show)."""
    if isinstance(entry, Message):
        text = _message_markdown(entry)
        if not text:
            return None
        if entry.kind == THOUGHT:
            return f"<details>\n<summary>Thought</summary>\n\n{text}\n\n</details>"
        return text
    if isinstance(entry, ToolCall):
        return _tool_markdown(entry)
    if isinstance(entry, Plan):
        return _plan_markdown(entry)
    if isinstance(entry, TurnEnd):
        marker = turn_end_text(entry)
        return None if marker is None else f"*{_md_escape(marker)}*"
    return None


def _md_escape(text: str) -> str:
    """``text`` shown as it is inside Markdown emphasis (its ``*``, ``_``, `````, ``<``... escaped)."""
    return "".join("\\" + ch if ch in "\\`*_<>" else ch for ch in text)


def _about_value(label: str, value: str) -> str:
    """An ``about`` value on its line: ids and paths as code (as they are), the rest as text."""
    value = safe_line(value)
    if label in ("Session", "Directory"):
        longest = 0
        run = 0
        for ch in value:
            run = run + 1 if ch == "`" else 0
            longest = max(longest, run)
        ticks = "`" * (longest + 1)
        pad = " " if value.startswith("`") or value.endswith("`") else ""
        return f"{ticks}{pad}{value}{pad}{ticks}"
    return _md_escape(value)


def to_markdown(
    store: Store | Iterable[Any], *, title: str | None = None, about: Sequence[tuple[str, str]] = ()
) -> str:
    """The whole transcript as a Markdown document.

    The title, then ``about`` (label, value pairs: the session id, agent, cwd, dates) as a
    list; a ``## User`` heading for each prompt and a ``## Agent`` heading when the agent
    speaks after it; agent text as sent; thoughts folded in ``<details>``; tool calls with
    their status, locations and diffs in ```` ```diff ```` fences; plans as checklists; a turn
    that was cancelled or failed says so in italics.
    """
    heading = title or (store.title if isinstance(store, Store) else None) or "Transcript"
    out = [f"# {safe_line(heading)}"]
    if about:
        out.append("\n".join(f"- **{label}:** {_about_value(label, value)}" for label, value in about))
    speaker = None
    for entry in _entries(store):
        md = entry_markdown(entry)
        if md is None:
            continue
        who = "User" if isinstance(entry, Message) and entry.kind == USER else "Agent"
        if who == "User" or (who != speaker and not isinstance(entry, TurnEnd)):
            out.append(f"## {who}")  # every prompt under its own heading
            speaker = who
        out.append(md)
    return safe_text("\n\n".join(out) + "\n")
