"""acpcli.session.control: a turn's control without I/O -- Ctrl-C, the second press that
leaves, the limit, its grace and the kill -- fed events at given times, answering actions.

The scenarios first, then every short sequence of events on a grid of times checked against
the rules stated plainly (a reference written apart from the class)."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from acpcli.session.control import CANCEL_GRACE, DOUBLE_PRESS, Act, TurnControl

PACKAGE = Path(__file__).resolve().parents[2] / "acpcli"


def test_one_press_cancels_and_a_second_soon_after_leaves() -> None:
    control = TurnControl()
    control.start(100.0)
    assert control.press(101.0) is Act.CANCEL
    assert control.interrupted and not control.over
    assert control.press(101.0 + DOUBLE_PRESS - 0.01) is Act.LEAVE
    assert control.over
    assert control.press(102.0 + DOUBLE_PRESS) is None  # left: nothing more


def test_presses_far_apart_each_cancel() -> None:
    control = TurnControl(double_press=2.5)
    assert [control.press(t) for t in (0.0, 2.5, 5.0, 7.6)] == [Act.CANCEL] * 4
    # the window counts from the press before, not the first
    assert control.press(7.6 + 2.49) is Act.LEAVE


def test_no_limit_nothing_is_ever_due() -> None:
    control = TurnControl()
    control.start(0.0)
    assert control.wait(0.0) is None
    assert control.due(1e9) is None
    assert control.timed_out is None


@pytest.mark.parametrize("limit", [None, 0, 0.0])
def test_a_limit_of_nothing_is_no_limit(limit: float | None) -> None:
    control = TurnControl(limit)
    control.start(5.0)
    assert control.due(1e6) is None


def test_the_limit_cancels_then_the_grace_kills() -> None:
    control = TurnControl(10.0, grace=2.0)
    control.start(100.0)
    assert control.wait(100.0) == 10.0
    assert control.due(109.99) is None
    assert control.due(110.0) is Act.TIME_OUT
    assert control.timed_out == "cancelled" and not control.over
    assert control.due(110.5) is None  # once
    assert control.wait(110.5) == pytest.approx(1.5)
    assert control.due(112.0) is Act.KILL
    assert (control.timed_out, control.over) == ("killed", True)
    assert control.due(200.0) is None and control.wait(200.0) is None


def test_the_limit_counts_from_the_start_not_from_construction() -> None:
    control = TurnControl(1.0)
    assert control.due(50.0) is None  # not started (a prompt still queued in a host)
    control.start(50.0)
    assert control.due(50.5) is None
    assert control.due(51.0) is Act.TIME_OUT


def test_a_stop_within_the_grace_is_no_kill() -> None:
    control = TurnControl(1.0, grace=3.0)
    control.start(0.0)
    assert control.due(1.0) is Act.TIME_OUT
    control.stopped()
    assert control.due(10.0) is None
    assert control.timed_out == "cancelled"  # the agent answered the cancel itself


def test_a_stop_before_the_limit_is_nothing_more() -> None:
    control = TurnControl(1.0)
    control.start(0.0)
    control.stopped()
    assert control.due(5.0) is None and control.press(5.0) is None
    assert control.timed_out is None and not control.interrupted


def test_where_another_keeps_the_grace_nothing_is_killed_here() -> None:
    # the warm prompt: its --timeout sends a cancel with the grace; the host stops the agent
    control = TurnControl(1.0, kills=False)
    control.start(0.0)
    assert control.due(1.0) is Act.TIME_OUT
    assert control.wait(1.0) is None
    assert control.due(1.0 + CANCEL_GRACE * 10) is None
    assert control.timed_out == "cancelled"


def test_a_cancel_with_a_grace_from_elsewhere_kills_after_it_and_wakes_the_driver() -> None:
    woken: list[bool] = []
    control = TurnControl(wake=lambda: woken.append(True))
    control.start(0.0)
    control.cancelled(4.0, 2.5)
    assert woken == [True]
    assert control.wait(4.0) == 2.5
    assert control.due(6.4) is None
    assert control.due(6.5) is Act.KILL
    assert control.timed_out is None  # not our own limit: whoever gave the grace reports it
    control.cancelled(7.0, 1.0)  # over: nothing more
    assert control.due(100.0) is None and woken == [True]


def test_the_earlier_of_two_graces_wins() -> None:
    control = TurnControl(10.0, grace=5.0)
    control.start(0.0)
    control.cancelled(1.0, 2.0)
    assert control.due(3.0) is Act.KILL


def test_presses_during_the_grace_still_cancel_and_leave() -> None:
    control = TurnControl(1.0, grace=3.0)
    control.start(0.0)
    assert control.due(1.0) is Act.TIME_OUT
    assert control.press(1.5) is Act.CANCEL
    assert control.press(2.0) is Act.LEAVE
    assert control.due(10.0) is None  # left: no kill after


#: The modules that drive a turn (each once had its window or grace written in).
DRIVERS = ("session/turn.py", "session/hosted.py", "host/client.py", "host/server.py")


def test_the_rules_have_one_home() -> None:
    """No other module keeps a double-press window or a turn's grace of its own, and the
    turn's drivers write no ``3.0`` of their own: every path drives :class:`TurnControl`."""
    found: list[str] = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "control.py" or "demo_agent" in path.parts or "protocol" in path.parts:
            continue
        driver = path.relative_to(PACKAGE).as_posix() in DRIVERS
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                name = node.id.upper()
                if "DOUBLE" in name or name.endswith(("CANCEL_GRACE", "TIMEOUT_GRACE")):
                    found.append(f"{path}:{node.lineno}: {node.id}")
            elif driver and isinstance(node, ast.Constant) and isinstance(node.value, float) and node.value in (
                DOUBLE_PRESS, CANCEL_GRACE,
            ):
                found.append(f"{path}:{node.lineno}: {node.value!r}")
    assert found == []


# -- every short sequence, against the rules stated plainly --------------------------------

EVENTS = ("press", "clock", "stop", "cancel")
TIMES = (0.5, 1.0, 2.9, 3.0, 4.5, 6.0)


def _expected(events: list[tuple[str, float]], limit: float, grace: float, double: float, kills: bool) -> list[Act | None]:
    """What the rules say of ``events`` (time-ordered), written without the class."""
    out: list[Act | None] = []
    over = False
    last_press: float | None = None
    deadline: float | None = limit
    kill_at: float | None = None
    for kind, t in events:
        if over:
            out.append(None)
            continue
        if kind == "press":
            if last_press is not None and t - last_press < double:
                over = True
                out.append(Act.LEAVE)
            else:
                out.append(Act.CANCEL)
            last_press = t
        elif kind == "stop":
            over = True
            out.append(None)
        elif kind == "cancel":
            if kills:
                kill_at = t + 1.0 if kill_at is None else min(kill_at, t + 1.0)
            out.append(None)
        elif deadline is not None and t >= deadline:
            deadline = None
            if kills:
                kill_at = t + grace if kill_at is None else min(kill_at, t + grace)
            out.append(Act.TIME_OUT)
        elif kill_at is not None and t >= kill_at:
            over = True
            out.append(Act.KILL)
        else:
            out.append(None)
    return out


@pytest.mark.parametrize("kills", [True, False])
def test_every_short_sequence_follows_the_rules(kills: bool) -> None:
    limit, grace, double = 2.0, 1.5, 3.0
    checked = 0
    for length in range(1, 5):
        for kinds in itertools.product(EVENTS, repeat=length):
            for times in itertools.combinations_with_replacement(TIMES, length):
                events = list(zip(kinds, times, strict=True))
                control = TurnControl(limit, grace=grace, double_press=double, kills=kills)
                control.start(0.0)
                got: list[Act | None] = []
                for kind, t in events:
                    if kind == "press":
                        got.append(control.press(t))
                    elif kind == "clock":
                        got.append(control.due(t))
                    elif kind == "stop":
                        control.stopped()
                        got.append(None)
                    else:
                        control.cancelled(t, 1.0)
                        got.append(None)
                assert got == _expected(events, limit, grace, double, kills), events
                if Act.KILL in got:
                    assert kills
                    assert control.timed_out == ("killed" if Act.TIME_OUT in got else None), events
                elif Act.TIME_OUT in got:
                    assert control.timed_out == "cancelled", events
                assert control.interrupted == (Act.CANCEL in got), events
                checked += 1
    assert checked > 10_000
