"""The host's tests drive the real CLI to start hosts and talk to them through the raw
socket: the fixtures of the CLI tests (``tests/cli/conftest.py``)."""

from tests.cli.conftest import cli, trace, workdir  # noqa: F401 - fixtures, found by pytest here
