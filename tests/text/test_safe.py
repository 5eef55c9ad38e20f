"""safe_text / safe_line: every control character an agent sends is shown, never obeyed."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from acpcli.text.safe import has_controls, safe_line, safe_text


def _controls(text: str, allowed: str = "") -> list[str]:
    """Control characters (C0, DEL, C1) and surrogates in ``text``, except ``allowed``."""
    return [
        ch
        for ch in text
        if ch not in allowed and (unicodedata.category(ch) == "Cc" or unicodedata.category(ch) == "Cs")
    ]


def test_clean_text_is_returned_as_is() -> None:
    text = "héllo wörld 🙂\n\tindented"
    assert safe_text(text) is text
    assert not has_controls(text)


def test_escape_sequences_become_caret_notation() -> None:
    assert safe_text("\x1b]2;pwned\x07title") == "^[]2;pwned^Gtitle"
    assert safe_text("\x1b[41mred\x1b[0m") == "^[[41mred^[[0m"
    assert safe_text("\x1b[2J") == "^[[2J"
    assert safe_text("a\rb") == "a^Mb"
    assert safe_text("nul\x00") == "nul^@"
    assert safe_text("\x1f") == "^_"


def test_newline_and_tab_stay_in_text_but_not_in_a_line() -> None:
    assert safe_text("a\nb\tc") == "a\nb\tc"
    assert safe_line("a\nb\tc") == "a^Jb^Ic"


def test_del_c1_and_lone_surrogates_are_shown_as_escapes() -> None:
    assert safe_text("\x7f") == "\\x7f"
    assert safe_text("\x9b31m") == "\\x9b31m"  # the one-byte CSI
    assert safe_text("\x80\x9f") == "\\x80\\x9f"
    assert safe_text("x\ud800y") == "x\\ud800y"
    assert safe_text("\udcff") == "\\udcff"


def test_bidirectional_controls_are_shown_as_escapes() -> None:
    # an override makes "https://example.com/\u202egpj.exe" read ".../exe.jpg" on a terminal
    assert safe_line("https://example.com/\u202egpj.exe") == "https://example.com/\\u202egpj.exe"
    for ch in "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069":
        assert safe_text(f"a{ch}b") == f"a\\u{ord(ch):04x}b" == safe_line(f"a{ch}b")
        assert has_controls(ch)
    assert safe_line(safe_line("\u2067x\u2069")) == "\\u2067x\\u2069"
    # JSON output keeps the value exactly, with the override written as an escape
    import json

    from acpcli.text.safe import json_escape

    value = {"url": "https://example.com/\u202egpj.exe", "title": "\u2066a\u2069\x9b"}
    text = json_escape(json.dumps(value, ensure_ascii=False))
    assert "\u202e" not in text and "\u2066" not in text and "\x9b" not in text
    assert "\\u202e" in text and json.loads(text) == value


def test_non_control_unicode_is_kept() -> None:
    text = "\xa0\u00e9\u2028\u200b\U0001f600"
    assert safe_text(text) == text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF)))
def test_output_has_no_controls_and_is_idempotent(text: str) -> None:
    out = safe_text(text)
    assert _controls(out, "\n\t") == []
    assert safe_text(out) == out
    line = safe_line(text)
    assert _controls(line) == []
    assert safe_line(line) == line
    # visible, not dropped: nothing shrinks
    assert len(out) >= len(text)
    assert has_controls(text) == (out != text)


def test_clip_cuts_long_text_and_says_how_long_it_was() -> None:
    from acpcli.text.safe import ID_SHOWN, clip, clip_lines, shown_id

    assert clip("short", 10) == "short"
    assert clip("x" * 11, 10) == "x" * 10 + "… (11 characters)"
    assert clip_lines("a" * 5 + "\n" + "b" * 2000, 1000) == "a" * 5 + "\n" + "b" * 1000 + "… (2,000 characters)"
    assert shown_id("demo-1234") == "demo-1234"
    assert shown_id("\x1b" + "y" * 1_000_000) == "^[" + "y" * (ID_SHOWN - 1) + "… (1,000,001 characters)"


def test_error_lines_are_cut_but_never_lose_their_other_lines() -> None:
    from acpcli.errors import AcpcliError, RpcError

    err = RpcError(-32002, "Resource not found: session " + "a" * 1_000_000, method="session/load")
    assert len(str(err)) < 1100 and str(err).endswith("(1,000,051 characters)")
    assert len(err.rpc_message) > 1_000_000  # what the agent said is kept whole, only not shown
    two = AcpcliError("first\n" + "z" * 5000, hint="h" * 5000)
    assert str(two).startswith("first\n") and len(str(two)) < 1100
    assert err.hint is None and two.hint is not None and len(two.hint) < 1100


def test_escape_surrogates_writes_them_as_safe_text_shows_them() -> None:
    from acpcli.text.safe import escape_surrogates

    text = "a\ud800b\udfff\x1b"
    stored = escape_surrogates(text)
    assert stored == "a\\ud800b\\udfff\x1b"  # only the surrogates: the rest is kept as it is
    stored.encode("utf-8")  # SQLite can store it
    assert safe_text(stored) == safe_text(text)
    assert escape_surrogates("plain é") == "plain é"
