"""acpcli.protocol.methods: pure data, consistent with itself and with what the pages say."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from acpcli.protocol import methods

VERSIONS = (1, 2)


def test_methods_and_the_package_import_nothing_heavy() -> None:
    script = (
        "import sys, json, acpcli.protocol, acpcli.protocol.methods\n"
        "heavy = ('pydantic', 'acpcli.protocol.v1', 'acpcli.protocol.v2')\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(proc.stdout) == []


def _constants() -> dict[str, str]:
    return {k: v for k, v in vars(methods).items() if k.isupper() and isinstance(v, str)}


def test_every_method_has_a_constant_and_every_constant_a_method() -> None:
    every = set().union(
        *(getattr(methods, t)[v] for t in ("AGENT_METHODS", "CLIENT_METHODS", "PROTOCOL_METHODS") for v in VERSIONS)
    )
    assert set(_constants().values()) == every


@pytest.mark.parametrize("version", VERSIONS)
def test_sides_are_disjoint_and_notifications_are_methods(version: int) -> None:
    agent = methods.AGENT_METHODS[version]
    client = methods.CLIENT_METHODS[version]
    proto = methods.PROTOCOL_METHODS[version]
    assert not (agent & client) and not (agent & proto) and not (client & proto)
    assert methods.NOTIFICATIONS[version] <= agent | client | proto


@pytest.mark.parametrize("version", VERSIONS)
def test_what_the_pages_say(version: int) -> None:
    assert methods.SESSION_UPDATE == "session/update"
    assert methods.SESSION_UPDATE in methods.CLIENT_METHODS[version] & methods.NOTIFICATIONS[version]
    assert methods.SESSION_CANCEL in methods.AGENT_METHODS[version] & methods.NOTIFICATIONS[version]
    assert methods.SESSION_REQUEST_PERMISSION in methods.CLIENT_METHODS[version] - methods.NOTIFICATIONS[version]
    for method in (methods.INITIALIZE, methods.SESSION_NEW, methods.SESSION_LOAD, methods.SESSION_RESUME):
        assert method in methods.AGENT_METHODS[version] - methods.NOTIFICATIONS[version]
    assert methods.CANCEL_REQUEST == "$/cancel_request"


def test_version_differences() -> None:
    assert methods.CLIENT_METHODS[2] == {methods.SESSION_REQUEST_PERMISSION, methods.SESSION_UPDATE}
    assert {methods.FS_READ_TEXT_FILE, methods.TERMINAL_CREATE} <= methods.CLIENT_METHODS[1]
    assert methods.AUTHENTICATE in methods.AGENT_METHODS[1] and methods.AUTHENTICATE not in methods.AGENT_METHODS[2]
    assert methods.AUTH_LOGIN in methods.AGENT_METHODS[2]
    assert methods.SESSION_SET_MODE not in methods.AGENT_METHODS[2]
