"""What an agent's JSON-RPC ``error.data`` adds to the error a person sees."""

from __future__ import annotations

import pytest

from acpcli.errors import DETAIL_LINES, RpcError, data_detail


@pytest.mark.parametrize(
    ("data", "shown"),
    [
        ("the model provider answered 503", "the model provider answered 503"),
        ({"details": "Invalid session identifier 'x'. Searched for sessions in /h"}, "Invalid session identifier 'x'. Searched for sessions in /h"),
        ({"message": "rate limited", "details": "retry in 20 s"}, "rate limited\nretry in 20 s"),
        ({"error": {"message": "quota exceeded"}}, "quota exceeded"),
        ({"uri": "file:///x", "n": 2}, '{"uri":"file:///x","n":2}'),
        ([1, "two"], '[1,"two"]'),
        (None, ""),
        ("", ""),
        ({}, ""),
        ("Internal error", ""),  # says nothing beyond the message
    ],
)
def test_the_useful_part_of_data(data: object, shown: str) -> None:
    assert data_detail(data, "Internal error") == shown


def test_control_characters_are_shown_not_obeyed_and_lines_bounded() -> None:
    text = "\x1b]0;pwned\x07red \x1b[31mtext\r\n" + "\n".join(f"line {i}" for i in range(10)) + "\n" + "x" * 1000
    detail = data_detail(text)
    assert "\x1b" not in detail and "\x07" not in detail and "\r" not in detail
    lines = detail.split("\n")
    assert len(lines) == DETAIL_LINES and lines[-1].endswith("…")
    assert lines[0] == "^[]0;pwned^Gred ^[[31mtext"  # visible, as every agent string


def test_the_error_text_carries_the_detail_indented() -> None:
    err = RpcError.from_wire(
        {"code": -32603, "message": "Internal error", "data": {"message": "upstream said no\nbecause"}},
        method="session/prompt",
    )
    assert str(err) == "session/prompt: Internal error (-32603)\n  upstream said no\n  because"
    assert err.data_detail() == "upstream said no\nbecause"
    assert err.rpc_message == "Internal error" and err.to_wire()["data"] == {"message": "upstream said no\nbecause"}
    plain = RpcError.from_wire({"code": -32601, "message": "Method not found"}, method="session/resume")
    assert str(plain) == "session/resume: Method not found (-32601)"
