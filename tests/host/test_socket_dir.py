"""The private directory for sockets under the temporary directory (used when ACPCLI_HOME's
path is too long for a socket): every directory acpcli makes there is checked, not only the
last one."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import Cli

from .conftest import LIVE, flood_cmd


def _deep(cli: Cli, tmp_path: Path, tmp: Path) -> tuple[Cli, dict[str, str]]:
    home = tmp_path / ("a-home-deep-enough-that-its-sockets-go-elsewhere-" * 2)
    return cli.elsewhere(home), {**LIVE, "TMPDIR": str(tmp)}


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A temporary directory with a short path (a socket's path must fit under it)."""
    path = Path(tempfile.mkdtemp(prefix="acpcli-test-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_first_directory_left_open_to_others_is_closed(hosts: Cli, tmp_path: Path, short_tmp: Path) -> None:
    deep, env = _deep(hosts, tmp_path, short_tmp)
    tmp = short_tmp
    first = tmp / f"acpcli-{os.getuid()}"
    first.mkdir()
    os.chmod(first, 0o777)  # made by someone else's hand, open to all
    sid = deep.ok("new", "--no-repl", "--cmd", flood_cmd(deep), env=env).stdout.strip()
    assert oct(first.stat().st_mode & 0o777) == "0o700"
    (second,) = list(first.iterdir())
    assert oct(second.stat().st_mode & 0o777) == "0o700"
    assert list(second.glob("*.sock"))
    assert "echo: hi" in deep.ok("prompt", "--session", sid, "hi", env=env).stdout
    deep.ok("stop", "--all", env=env)


def test_a_first_directory_that_is_a_link_is_refused(hosts: Cli, tmp_path: Path, short_tmp: Path) -> None:
    deep, env = _deep(hosts, tmp_path, short_tmp)
    tmp = short_tmp
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp / f"acpcli-{os.getuid()}").symlink_to(elsewhere)
    proc = deep.run("new", "--no-repl", "--cmd", flood_cmd(deep), env=env)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "not a private directory" in proc.stderr or "a symbolic link, not a directory" in proc.stderr
    assert list(elsewhere.iterdir()) == []  # nothing was made through the link
