"""A tool call's content items drawn for the terminal: diffs coloured, long output cut, tool
output that is Markdown drawn as Markdown (its ``<system-reminder>`` blocks folded)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from acpcli.render.markdown_lines import MarkdownLines
from acpcli.render.transcript import (
    content_item_lines,
    diff_lines,
    is_markdown_output,
    tool_text_parts,
)
from acpcli.text.safe import safe_line, safe_text

#: tool content longer than this is cut in the terminal (export shows all of it)
MAX_TEXT_LINES = 20
MAX_DIFF_LINES = 80


def _clip(lines: list[str], limit: int) -> tuple[list[str], int]:
    if len(lines) <= limit:
        return lines, 0
    return lines[:limit], len(lines) - limit


def diff_text(item: dict[str, Any], max_lines: int = MAX_DIFF_LINES) -> Text:
    """A ``diff`` content item as a coloured unified diff."""
    lines, more = _clip(diff_lines(item), max_lines)
    text = Text()
    for i, line in enumerate(lines):
        if i:
            text.append("\n")
        if line.startswith(("--- ", "+++ ")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        text.append(safe_line(line), style=style)
    if more:
        text.append(f"\n… {more} more lines", style="dim")
    return text


def _content_item(item: dict[str, Any]) -> Text | list[Text | MarkdownLines]:
    itype = item.get("type")
    if itype == "diff":
        return diff_text(item)
    if itype == "terminal":
        return Text(f"▸ terminal {safe_line(str(item.get('terminalId', '?')))} (its output is shown by the agent)", style="dim")
    block = item.get("content") if itype == "content" else None
    raw = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
    if isinstance(raw, str) and ("<system-reminder>" in raw or is_markdown_output(raw)):
        return _text_pieces(raw)
    lines, more = _clip(content_item_lines(item), MAX_TEXT_LINES)
    text = Text(safe_text("\n".join(lines)))
    if more:
        text.append(f"\n… {more} more lines", style="dim")
    return text


def _text_pieces(raw: str) -> list[Text | MarkdownLines]:
    """Tool output drawn as Markdown where it is (claude's fenced ```` ```console ```` blocks),
    its ``<system-reminder>`` blocks folded to one dim line each (after the Markdown, when
    they sit inside its code: claude puts them inside the fence); at most
    :data:`MAX_TEXT_LINES` lines of it, as for plain output."""
    parts = tool_text_parts(raw)
    text_only = "".join(part for folded, part in parts if not folded)
    if is_markdown_output(text_only):  # one Markdown piece, the folded notes under it
        parts = [(False, text_only), *((True, part) for folded, part in parts if folded)]
    pieces: list[Text | MarkdownLines] = []
    room = MAX_TEXT_LINES
    more = 0
    for folded, part in parts:
        if folded:
            if room > 0:
                pieces.append(Text(safe_line(part), style="dim"))
                room -= 1
            else:
                more += 1
            continue
        if not part.strip():
            continue
        lines = part.strip("\n").split("\n")
        shown, cut = lines[: max(0, room)], max(0, len(lines) - max(0, room))
        more += cut
        room -= len(shown)
        if shown:
            text = safe_text("\n".join(shown))
            pieces.append(MarkdownLines(text) if is_markdown_output(part) else Text(text))
    if more:
        pieces.append(Text(f"… {more} more lines", style="dim"))
    return pieces


def _drawn_lines(drawn: Text | list[Text | MarkdownLines]) -> int:
    """About how many lines an item takes (a Markdown piece: its source lines)."""
    if isinstance(drawn, Text):
        return drawn.plain.count("\n") + 1
    return sum((p.plain if isinstance(p, Text) else p.text).count("\n") + 1 for p in drawn)
