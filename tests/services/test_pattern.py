"""acpcli.services.pattern: a form field's pattern checked in bounded time, as re.search would."""

from __future__ import annotations

import random
import re

import pytest

from acpcli.services import pattern
from acpcli.services.pattern import search


def _random_pattern(rng: random.Random, depth: int = 0) -> str:
    atoms = ["a", "b", "x", ".", r"\d", r"\w", r"\s", r"\.", "[ab]", "[^a]", "[a-c]", r"\n", "^", "$",
             r"\A", r"\Z", "{", "}", "]", r"\x61", "[]a]", "(?:)"]  # fmt: skip
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return rng.choice(atoms)
    if roll < 0.55:
        return "(" + _random_pattern(rng, depth + 1) + ")"
    if roll < 0.65:
        return f"(?:{_random_pattern(rng, depth + 1)}|{_random_pattern(rng, depth + 1)})"
    if roll < 0.8:
        return _random_pattern(rng, depth + 1) + _random_pattern(rng, depth + 1)
    quantifier = rng.choice(["*", "+", "?", "{2}", "{1,3}", "{,2}", "{2,}", "{,}", "*?", "+?", "??", "{0}", "{1,2}?"])
    return "(" + _random_pattern(rng, depth + 1) + ")" + quantifier


@pytest.mark.parametrize("seed", range(4))
def test_the_automaton_answers_as_re_search(seed: int) -> None:
    rng = random.Random(seed)
    checked = 0
    while checked < 3000:
        text = _random_pattern(rng)
        try:
            re.compile(text)
        except re.error:
            continue
        program = pattern._compiled(text)
        assert program is not None, text  # all of these are in the subset compiled here
        for _ in range(3):
            value = "".join(rng.choice("ab x.\n1_{}") for _ in range(rng.randint(0, 9)))
            assert program.search(value) == (re.search(text, value) is not None), (text, value)
            checked += 1


@pytest.mark.parametrize(
    ("text", "value", "found"),
    [
        ("^(a+)+$", "a" * 5000 + "!", False),  # re: hours
        ("^(a+)+$", "a" * 5000, True),
        ("^(a|aa)*b$", "a" * 3000, False),
        (r"^(\w+\s?)*$", "a word " * 2000 + "!", False),
        ("(x+x+)+y", "x" * 4000, False),
        (r"^[a-z]{1,20}(\.[a-z]{1,20}){0,20}$", "ab." * 20000, False),
        ("a$", "a\n", True),  # "$" also matches before a last newline, as in re
        (r"a\Z", "a\n", False),
        ("ab{", "xab{", True),  # a "{" that starts no repeat is a character
        ("(?P<year>[0-9]{4})-[0-9]{2}", "on 2024-05", True),
        ("[\u0600-\u06ff]+", "\u0627\u0644", True),
    ],
)
def test_patterns_that_backtrack_are_decided_at_once(text: str, value: str, found: bool) -> None:
    assert pattern._compiled(text) is not None
    assert search(text, value) is found


def test_what_only_re_reads_is_decided_by_a_child_with_a_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    for text in (r"(\w)\1", r"(?=.*\d)\w+", r"\bword\b", "(?i)abc", "a*+"):
        assert pattern._compiled(text) is None, text
    assert search(r"^(\w+)-\1$", "ab-ab") is True
    assert search(r"^(\w+)-\1$", "ab-ba") is False
    assert search("(?i)^abc$", "ABC") is True
    monkeypatch.setattr(pattern, "CHILD_SECONDS", 0.5)
    assert search(r"^(a|aa)+\1$", "a" * 40 + "!") is None  # re would run for hours: not in time


def test_a_run_past_its_budget_goes_to_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pattern, "MAX_STEPS", 50)
    asked = []
    monkeypatch.setattr(pattern, "_in_child", lambda text, value: asked.append((text, value)) or True)
    assert search("(ab|cd)*e", "abcd" * 100 + "x") is True  # (the child's answer)
    assert asked == [("(ab|cd)*e", "abcd" * 100 + "x")]
