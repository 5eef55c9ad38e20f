"""The questions the REPL asks, where they need no terminal: which option a permission question
highlights first, and a question with nothing to choose from."""

from __future__ import annotations

import anyio

from acpcli.repl.asking import choose, narrowest_allow


def test_the_narrowest_allow_is_highlighted_never_an_always_when_a_once_is_offered() -> None:
    def kinds(*names: str) -> list[dict[str, str]]:
        return [{"optionId": name, "kind": name} for name in names]

    assert narrowest_allow(kinds("allow_always", "allow_once", "reject_once")) == 1
    assert narrowest_allow(kinds("reject_once", "allow_always")) == 1
    assert narrowest_allow(kinds("reject_once", "reject_always")) == 0  # no allow: the first
    assert narrowest_allow([]) == 0


def test_nothing_to_choose_from_is_no_choice() -> None:
    assert anyio.run(choose, "choose 1-0:", []) is None  # and no picker is drawn


def test_the_lasting_options_are_the_always_ones() -> None:
    from acpcli.repl.asking import lasting

    options = [{"kind": k} for k in ("allow_once", "allow_always", "reject_once", "reject_always", "other")]
    assert lasting(options) == [1, 3]
