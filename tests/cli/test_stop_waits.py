"""``acpcli stop`` returns once the host is gone: its lock let go *and* its process ended (a
host lets its lock go before it exits, so a stop that watched only the lock could return while
the process was still there)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from acpcli.cli.hosts import _wait_gone
from acpcli.processes.children import running
from acpcli.session.hostwire.address import HostInfo


def test_stop_waits_for_the_host_process_not_only_its_lock(tmp_path: Path) -> None:
    # A "host" whose lock is already released (no lock file) but whose process lingers.
    lingering = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.6)"])
    try:
        started = time.monotonic()
        assert _wait_gone(HostInfo("s", lingering.pid, tmp_path / "gone.lock"), seconds=10.0)
        assert not running(lingering.pid)  # returned once it had ended
        assert time.monotonic() - started < 5  # ended by itself, before the SIGTERM at half the wait
    finally:
        lingering.kill()
        lingering.wait()


def test_a_host_that_does_not_end_is_terminated_past_half_the_wait(tmp_path: Path) -> None:
    stuck = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert _wait_gone(HostInfo("s", stuck.pid, tmp_path / "gone.lock"), seconds=1.0)
        assert not running(stuck.pid)
    finally:
        stuck.kill()
        stuck.wait()
