"""Neutralize control characters in text that came from an agent, visibly.

An agent (a model's output, a tool's output, an error message) may carry terminal control
sequences: ``ESC ] 2 ; … BEL`` renames the terminal, ``ESC [ 2 J`` clears it, a carriage
return overwrites what was shown. Every string shown as text (terminal or file) passes
through :func:`safe_text` (multi-line) or :func:`safe_line` (one line), which replace
each such character by a visible stand-in instead of dropping it silently:

* C0 controls except newline and tab (and both of those in :func:`safe_line`): caret
  notation, ``ESC`` -> ``^[``, ``CR`` -> ``^M``, ``BEL`` -> ``^G``, ``NUL`` -> ``^@``;
* DEL and the C1 controls (U+007F..U+009F): ``\\x7f`` .. ``\\x9f``;
* lone surrogates (from ``"\\ud800"`` escapes in JSON; not encodable): ``\\ud800``;
* the bidirectional controls (Unicode's Bidi_Control: U+061C, U+200E, U+200F, the embeddings
  and overrides U+202A..U+202E, the isolates U+2066..U+2069), which reorder what a terminal
  shows after them (a URL whose end reads backwards, "Trojan Source"): ``\\u202e``.

The output of either function contains no control character (nor bidirectional one) but ``\\n`` and ``\\t``
(:func:`safe_line`: none at all), and applying it again changes nothing.

JSON output (``--format jsonl``, ``--raw``) stays exact: :func:`json_escape` only writes the
characters JSON allows raw but a terminal would obey (DEL, C1, the bidirectional controls) and
lone surrogates (which UTF-8 cannot carry) as ``\\uXXXX`` escapes, which decode to the same string.

Cost: one precompiled regex search when there is nothing to replace (the usual case).
This module is pure and imports nothing heavy: it is on every output path.
"""

from __future__ import annotations

import re
from functools import cache

__all__ = [
    "clip", "clip_lines", "escape_surrogates", "has_controls", "json_escape", "safe_line", "safe_text", "shown_id",
]

#: The most of a session id echoed on the terminal (ids are tens of characters; an agent or a
#: user may give one of a megabyte). The id itself is never changed: only what is shown.
ID_SHOWN = 80
#: The most of one line of an error message or hint (:class:`acpcli.errors.AcpcliError`).
LINE_SHOWN = 1000


@cache  # built on first use: a control character is rare, and building both costs ~3 ms
def _table(keep: str) -> dict[int, str]:
    table: dict[int, str] = {}
    for code in range(0x20):
        if chr(code) not in keep:
            table[code] = "^" + chr(code + 0x40)
    for code in range(0x7F, 0xA0):
        table[code] = f"\\x{code:02x}"
    for code in (*range(0xD800, 0xE000), *map(ord, _BIDI)):
        table[code] = f"\\u{code:04x}"
    return table


#: Unicode's Bidi_Control characters (see the module docstring).
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


@cache  # compiled on first use (~0.4 ms each): every start-up imports this module, few use it
def _text_bad() -> re.Pattern[str]:
    return re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff" + _BIDI + "]")


@cache
def _line_bad() -> re.Pattern[str]:
    return re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff" + _BIDI + "]")


def has_controls(text: str) -> bool:
    """True when :func:`safe_text` would change ``text``."""
    return _text_bad().search(text) is not None


def safe_text(text: str) -> str:
    """``text`` with every control character but newline and tab made visible (see module)."""
    if _text_bad().search(text) is None:
        return text
    return text.translate(_table("\n\t"))


def safe_line(text: str) -> str:
    """``text`` for a single line: every control character, newline and tab too, made visible."""
    if _line_bad().search(text) is None:
        return text
    return text.translate(_table(""))


def clip(text: str, limit: int) -> str:
    """``text`` when it has at most ``limit`` characters; else its first ``limit``, an ellipsis
    and how long it was (``abc… (1,048,576 characters)``): for echoing what a user or an agent
    gave, never for storing it."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def clip_lines(text: str, limit: int = LINE_SHOWN) -> str:
    """Each line of ``text`` :func:`clip`-ped to ``limit`` characters."""
    if len(text) <= limit:
        return text
    return "\n".join(clip(line, limit) for line in text.split("\n"))


def shown_id(session_id: str) -> str:
    """A session id as echoed on one line of the terminal: :func:`safe_line`, cut at
    :data:`ID_SHOWN` characters (a unique prefix still finds it: commands take one)."""
    return safe_line(clip(session_id, ID_SHOWN))


_JSON_RAW = re.compile("[\x7f-\x9f\ud800-\udfff" + _BIDI + "]")


def _json_code(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_escape(json_text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)`` or a received frame) with DEL, the
    C1 controls, the bidirectional controls and lone surrogates written as ``\\uXXXX``
    escapes: the same JSON value.

    Valid only for JSON text, where such characters can only stand inside strings (C0
    controls cannot stand raw in JSON at all, so ``json.dumps`` already escapes them).
    """
    if _JSON_RAW.search(json_text) is None:
        return json_text
    return _JSON_RAW.sub(_json_code, json_text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (from a ``"\\ud800"`` escape in JSON: UTF-8 cannot
    carry it, so SQLite cannot store it) written as the six characters ``\\ud800``, as
    :func:`safe_text` shows it. For text that is stored (titles, search documents)."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_json_code, text)
