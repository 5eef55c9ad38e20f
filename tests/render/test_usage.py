"""What a turn's usage looks like in one line (the REPL's toolbar and summaries, race boards)."""

from __future__ import annotations

from acpcli.render.usage import cost_text, usage_text


def test_tokens_and_cost_in_one_line() -> None:
    usage = {"used": 12_345, "size": 200_000, "cost": {"amount": 0.0412, "currency": "USD"}}
    assert usage_text(usage) == "12.3k/200k tokens (6%) · $0.04"
    assert usage_text({}) is None and usage_text(None) is None


def test_a_cost_in_another_currency_is_cut_and_made_safe() -> None:
    assert cost_text({"cost": {"amount": 2, "currency": "EUR"}}) == "2.00 EUR"
    hostile = cost_text({"cost": {"amount": 1, "currency": "\x1b[2Jwipe-the-screen"}})
    assert hostile is not None and "\x1b" not in hostile and len(hostile) <= len("1.00 ") + 8
    assert cost_text({"cost": {"amount": "free"}}) is None and cost_text({}) is None
