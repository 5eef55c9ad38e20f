"""The policy a live session's host serves files and terminals under changes with each turn
(:class:`acpcli.services.requests.TurnPolicy`): the grant of the turn's sender, nothing between
turns; and a prompt message's grant is read strictly (:class:`acpcli.services.permissions.Grant`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acpcli.errors import RpcError
from acpcli.services.permissions import (
    CHANGE_POLICY,
    CHANGE_POLICY_UNATTENDED,
    POLICY_REFUSED,
    Grant,
    PermissionPolicy,
    Refusals,
)
from acpcli.services.requests import ClientServices, TurnPolicy


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "in.txt").write_text("kept\n")
    return tmp_path


async def _write(services: ClientServices, path: Path) -> Any:
    return await services.write_text_file({"sessionId": "s", "path": str(path), "content": "new"})


async def _read(services: ClientServices, path: Path) -> Any:
    return await services.read_text_file({"sessionId": "s", "path": str(path)})


async def _create(services: ClientServices, root: Path) -> Any:
    return await services.terminal_create({"sessionId": "s", "command": "touch", "args": [str(root / "ran")]})


@pytest.mark.anyio
async def test_each_turn_gets_its_senders_grant_and_nothing_is_served_between_turns(root: Path) -> None:
    between: list[str] = []
    turns = TurnPolicy(between=between.append)
    async with ClientServices({"s": (str(root), [])}.get, policy="allow", turns=turns) as services:
        # before any turn (and "allow" given as the policy: not used under turns)
        for call in (_read(services, root / "in.txt"), _write(services, root / "a.txt"), _create(services, root)):
            with pytest.raises(RpcError) as refused:
                await call
            assert refused.value.code == POLICY_REFUSED and "no prompt turn is running" in refused.value.message
        assert [w.split(" ")[0] for w in between] == ["reading", "writing", "running"]
        assert not (root / "a.txt").exists() and not (root / "ran").exists()

        lines: list[str] = []
        turns.start(Grant("deny", fs=True, terminal=True, unattended=False), Refusals(lines.append, change=CHANGE_POLICY))
        assert (await _read(services, root / "in.txt"))["content"] == "kept\n"  # deny reads
        with pytest.raises(RpcError) as refused:
            await _write(services, root / "b.txt")
        assert refused.value.data == {"policy": "deny"}
        assert lines == [f"acpcli: refused writing {root / 'b.txt'} (policy deny): {CHANGE_POLICY}"]
        turns.end()

        lines.clear()
        turns.start(Grant("allow", fs=True, terminal=False), Refusals(lines.append, change=CHANGE_POLICY_UNATTENDED))
        await _write(services, root / "c.txt")
        assert (root / "c.txt").read_text() == "new"
        with pytest.raises(RpcError) as refused:
            await _create(services, root)
        assert refused.value.code == POLICY_REFUSED and "--no-terminal" in refused.value.message
        assert lines == [f"acpcli: refused running `touch {root / 'ran'}`: the prompt was sent with --no-terminal"]
        turns.end()

        between.clear()
        with pytest.raises(RpcError):
            await _write(services, root / "d.txt")
        assert len(between) == 1 and not (root / "d.txt").exists()


@pytest.mark.anyio
async def test_no_fs_on_a_turn_refuses_reads_too(root: Path) -> None:
    turns = TurnPolicy()
    lines: list[str] = []
    turns.start(Grant("allow", fs=False, terminal=True), Refusals(lines.append))
    async with ClientServices({"s": (str(root), [])}.get, turns=turns) as services:
        with pytest.raises(RpcError) as refused:
            await _read(services, root / "in.txt")
    assert "--no-fs" in refused.value.message
    assert lines == [f"acpcli: refused reading {root / 'in.txt'}: the prompt was sent with --no-fs"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, Grant("deny", False, False, True)),
        ("allow", Grant("deny", False, False, True)),
        ({}, Grant("deny", False, False, True)),
        ({"policy": "allow", "fs": True, "terminal": True, "unattended": True}, Grant("allow", True, True, True)),
        ({"policy": "allow", "fs": 1, "terminal": "yes"}, Grant("allow", False, False, True)),
        ({"policy": "yolo", "fs": True, "terminal": True}, Grant("deny", True, True, True)),
        ({"policy": "ask", "fs": True, "terminal": True}, Grant("deny", True, True, True)),  # nobody to ask
        ({"policy": "ask", "fs": True, "terminal": True, "unattended": False}, Grant("ask", True, True, False)),
        ({"policy": ["allow"], "unattended": 0}, Grant("deny", False, False, True)),
    ],
)
def test_a_grant_is_read_strictly(raw: Any, expected: Grant) -> None:
    assert Grant.read(raw) == expected


def test_a_grant_round_trips_and_says_how_to_change_it() -> None:
    async def person(live: Any, params: Any) -> None:
        return None

    asked = Grant.of(PermissionPolicy("ask", person), fs=True, terminal=False)
    assert asked == Grant("ask", True, False, False) and asked.change == CHANGE_POLICY
    script = Grant.of(PermissionPolicy("ask"), fs=True, terminal=True)  # nobody to ask: deny
    assert script == Grant("deny", True, True, True) and script.change == CHANGE_POLICY_UNATTENDED
    assert Grant.read(asked.message()) == asked and Grant.read(script.message()) == script
