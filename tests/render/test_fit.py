"""The one helper that shortens and wraps what acpcli lays out itself (acpcli.render.fit)."""

from __future__ import annotations

import pytest

from acpcli.render.fit import cells, shorten, shorten_left, wrap


def test_shorten_cuts_at_a_word_with_an_ellipsis() -> None:
    assert shorten("hello there, explain the storage layer", 26) == "hello there, explain the…"
    assert shorten("fits", 4) == "fits"
    assert shorten("abcdefghijklmnopqrstuvwxyz", 10) == "abcdefghi…"  # one long word: cut inside it
    assert shorten("anything", 1) == "…" and shorten("anything", 0) == ""


@pytest.mark.parametrize("width", range(20, 75))
def test_shorten_never_cuts_a_number(width: int) -> None:
    line = " claude · Fix the tests · idle · mode: plan · 23.7k/200k tokens (11%) · $0.04 "
    out = shorten(line, width)
    assert cells(out) <= width
    whole = set(line.split()) | {
        word.rstrip(":,") for word in line.split()
    }  # (a cut line's last ":" goes)
    assert set(out.removesuffix("…").split()) <= whole, out  # whole words: 23.7k/200k or none of it
    assert not out.rstrip("…").endswith(("·", " ")), out


def test_shorten_counts_terminal_cells() -> None:
    out = shorten("日本語のテキストです", 9)
    assert cells(out) <= 9 and out.endswith("…")


def test_shorten_left_keeps_the_end_from_a_separator() -> None:
    assert shorten_left("/home/user/src/project/acpcli", 16) == "…/project/acpcli"
    assert shorten_left("/tmp", 16) == "/tmp"
    assert cells(shorten_left("/a/very-long-directory-name-without-a-break", 12)) == 12


def test_wrap_breaks_at_words_under_a_hanging_indent() -> None:
    text = "  plan   Read-only planning: the agent proposes changes but does not make them until you approve"
    lines = wrap(text, 40, 9)
    assert lines[0].startswith("  plan   Read-only")  # its own spaces kept
    assert all(cells(line) <= 40 for line in lines)
    assert all(line.startswith(" " * 9) and line[9] != " " for line in lines[1:])
    assert " ".join(line.strip() for line in lines).split() == text.split()  # no word cut or lost


def test_wrap_cuts_only_a_word_wider_than_a_line_and_keeps_line_breaks() -> None:
    assert wrap("abcdefghijklmnopqrstuvwxyz end", 12, 2) == [
        "abcdefghijkl",
        "  mnopqrstuv",
        "  wxyz end",
    ]
    assert wrap("a\n\nb c", 3, 2) == ["a", "", "  b", "  c"]
    assert wrap("", 10) == [""]


# -- tables ------------------------------------------------------------------------------------


def _columns() -> list:
    from acpcli.render.fit import Column

    return [
        Column("ID", rank=100, floor=0, keep=True),
        Column("TITLE", rank=90, floor=20),
        Column("STATE", rank=30, floor=6),
        Column("PARENT", rank=10, floor=8),
    ]


def test_a_column_with_nothing_in_it_is_not_drawn() -> None:
    from acpcli.render.fit import fit_columns

    rows = [{"ID": "a1", "TITLE": "one", "STATE": "active", "PARENT": ""}, {"ID": "b2", "TITLE": "two", "STATE": "-"}]
    shown, widths = fit_columns(_columns(), rows, 80)
    assert [c.name for c in shown] == ["ID", "TITLE", "STATE"]
    assert widths == {"ID": 2, "TITLE": 5, "STATE": 6}


def test_the_lowest_ranked_columns_give_way_before_the_title() -> None:
    from acpcli.render.fit import cells, fit_columns, table_lines

    title = "Refactor the session host so that every turn runs under its sender's policy"
    rows = [{"ID": "demo-1234", "TITLE": title, "STATE": "active · live", "PARENT": "demo-9876"}]
    for room in (40, 60, 80, 100):
        shown, widths = fit_columns(_columns(), rows, room)
        header, lines = table_lines(_columns(), rows, room)
        assert all(cells(line) <= room for line in [header, *lines]), room
        # the title keeps at least its floor while anything of lower rank is still shown
        names = [c.name for c in shown]
        assert "TITLE" in names and "ID" in names
        if "STATE" in names or "PARENT" in names:
            assert widths["TITLE"] >= 20
    narrow, _ = fit_columns(_columns(), rows, 40)
    assert [c.name for c in narrow] == ["ID", "TITLE", "STATE"]  # the parent went first
    narrower, _ = fit_columns(_columns(), rows, 35)
    assert [c.name for c in narrower] == ["ID", "TITLE"]  # then the state
    wide, widths = fit_columns(_columns(), rows, 200)
    assert [c.name for c in wide] == ["ID", "TITLE", "STATE", "PARENT"] and widths["TITLE"] == len(title)


def test_a_kept_column_is_never_cut_nor_dropped() -> None:
    from acpcli.render.fit import fit_columns

    rows = [{"ID": "x" * 30, "TITLE": "t" * 40}]
    shown, widths = fit_columns(_columns(), rows, 25)
    assert [c.name for c in shown] == ["ID"] and widths["ID"] == 30  # the terminal crops what is left
