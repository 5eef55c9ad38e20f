"""The picker's state without a terminal: what is highlighted is what Enter picks, digits pick
by number exactly, typing filters, and a long list is drawn as a window around the highlight."""

from __future__ import annotations

from acpcli.repl.picker import Choices


def labels(n: int) -> list[str]:
    return [f"Option {i}" + (" zebra" if i == 7777 else "") for i in range(1, n + 1)]


def test_digits_pick_by_number_every_digit_counting() -> None:
    c = Choices(labels(10_000))
    c.type("1234")
    assert c.highlighted == 1233  # option 1234
    c.move(1)
    assert c.highlighted == 1234 and c.number == ""
    c.type("10000")
    assert c.highlighted == 9999
    small = Choices(labels(4))
    small.type("2")
    assert small.highlighted == 1
    small.type("3")  # 23 is past the last option: a new number starts
    assert small.highlighted == 2
    small.type("0")  # 30 and 0 pick nothing: unchanged
    assert small.highlighted == 2


def test_typing_filters_and_keeps_the_highlight_exact() -> None:
    c = Choices(labels(10_000), default=0)
    c.type("zebra")
    assert c.count == 1 and c.highlighted == 7776
    c.backspace()  # "zebr": still only one
    assert c.highlighted == 7776
    for _ in range(4):
        c.backspace()
    assert c.filter == "" and c.count == 10_000 and c.highlighted == 7776  # the highlight stayed
    c.type("x")
    assert c.count == 0 and c.highlighted is None  # Enter picks nothing
    c.backspace()
    c.type("Option 99")  # once a filter is typed, digits filter too
    assert c.filter == "Option 99"
    assert [c.visible(p) for p in range(c.count)][:3] == [98, 989, 990]  # options 99, 990, 991
    assert all("option 99" in labels(10_000)[c.visible(p)].lower() for p in range(c.count))


def test_a_long_list_is_a_window_around_the_highlight() -> None:
    c = Choices(labels(10_000))
    above, shown, below = c.window(10)
    assert (above, shown, below) == (0, list(range(10)), 9_990)
    c.end()
    above, shown, below = c.window(10)
    assert shown[-1] == 9_999 == c.highlighted and below == 0 and above == 9_990
    c.move(-3)
    assert c.window(10)[1][-1] == 9_999  # no scrolling while the highlight is in the window
    c.home()
    assert c.window(10) == (0, list(range(10)), 9_990)
    few = Choices(labels(4), default=2)
    assert few.window(10) == (0, [0, 1, 2, 3], 0) and few.highlighted == 2


def test_a_filter_alone_never_puts_enter_on_a_careful_option() -> None:
    names = ["Allow once", "Always allow", "Reject", "Always reject"]
    c = Choices(names, default=0, careful=[1, 3])
    c.type("al")  # "Allow once" still matches: the highlight stays, where the default put it
    assert c.highlighted == 0 and not c.filtered_onto_careful
    c.type("w")  # "alw": only the "always" ones; the filter moved the highlight onto one
    assert c.highlighted == 1 and c.filtered_onto_careful
    for _ in range(3):
        c.backspace()  # the filter taken back: the highlight stays where the filter put it
    assert c.filter == "" and c.highlighted == 1 and c.filtered_onto_careful
    c.move(1)
    c.move(-1)  # moved onto it with the keys: Enter may pick it
    assert c.highlighted == 1 and not c.filtered_onto_careful
    by_number = Choices(names, careful=[1, 3])
    by_number.type("2")  # its number: as deliberate as the arrow keys
    assert by_number.highlighted == 1 and not by_number.filtered_onto_careful
    plain = Choices(names)  # nothing careful: a filter picks as before
    plain.type("always")
    assert plain.highlighted == 1 and not plain.filtered_onto_careful
