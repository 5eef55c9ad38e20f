"""``connect(home=...)`` is that connection's home, and no one else's (issue 33): the process's
environment is left alone, and a connection opened without ``home`` meanwhile records under
the home it would have had without the first one."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

import acpcli


def _ids(home: Path) -> set[str]:
    import sqlite3

    with sqlite3.connect(home / "acpcli.db") as db:
        return {row[0] for row in db.execute("select id from sessions")}


def test_a_home_is_its_connections_own(tmp_path: Path) -> None:
    default = Path(os.environ["ACPCLI_HOME"])  # the suite's per-test home (tests/conftest.py)
    mine = tmp_path / "mine"

    async def main() -> tuple[str, str, str, str | None]:
        async with acpcli.connect("demo", cwd=tmp_path, home=mine) as first:
            seen = os.environ.get("ACPCLI_HOME")
            async with acpcli.connect("demo", cwd=tmp_path) as second:  # no home: the default
                other = await second.new_session()
                await other.ask("hello")
                made = await first.new_session()  # the first keeps its own, in the same task
                await made.ask("hello")
            later = await first.new_session()
            return made.id, other.id, later.id, seen

    made, other, later, seen = anyio.run(main)
    assert seen == str(default)  # the environment was never changed
    assert {made, later} <= _ids(mine) and other not in _ids(mine)
    assert other in _ids(default) and not ({made, later} & _ids(default))
    # the demo agent's own state went to each connection's home too
    assert (mine / "demo-agent" / "sessions" / f"{made}.json").exists()
    assert (default / "demo-agent" / "sessions" / f"{other}.json").exists()
