"""The host's tests drive the real CLI to start hosts and talk to them through the raw
socket: the fixtures of the CLI tests (``tests/cli/conftest.py``), and ``hosts`` (every host
stopped at the end, none of its processes left) of the live-session tests."""

from tests.cli.conftest import cli, trace, workdir  # noqa: F401 - fixtures, found by pytest here
from tests.cli.test_live_sessions import hosts  # noqa: F401 - likewise
