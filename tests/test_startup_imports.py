"""Start-up stays light: importing acpcli and running ``acpcli --help`` import no protocol
models, no pydantic, no rich.markdown and no prompt_toolkit (HOUSE-STYLE rule 5)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FORBIDDEN = ("acpcli.protocol.v1", "acpcli.protocol.v2", "pydantic", "rich.markdown", "prompt_toolkit")

PROBE = """
import json, runpy, sys
{setup}
{action}
print(json.dumps([m for m in {forbidden!r} if m in sys.modules]))
"""

IMPORTS = "import acpcli, acpcli.cli, acpcli.errors"
MAIN_HELP = (
    "from acpcli.cli import main\n"
    "try:\n"
    "    main(['--help'])\n"
    "except SystemExit:\n"
    "    pass\n"
)
MODULE_HELP = (
    "sys.argv = ['acpcli', '--help']\n"
    "try:\n"
    "    runpy.run_module('acpcli', run_name='__main__', alter_sys=True)\n"
    "except SystemExit:\n"
    "    pass\n"
)


def offending(action: str, setup: str = "") -> list[str]:
    """The forbidden modules loaded after ``setup`` then ``action`` in a fresh interpreter."""
    script = PROBE.format(setup=setup, action=action, forbidden=FORBIDDEN)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "action",
    [IMPORTS, IMPORTS + "\n" + MAIN_HELP, MODULE_HELP],
    ids=["import", "main --help", "python -m acpcli --help"],
)
def test_start_up_imports_nothing_heavy(action: str) -> None:
    assert offending(action) == []


def test_the_probe_sees_a_heavy_import() -> None:
    # the check above can fail: a module that pulls pydantic in is reported
    assert offending(IMPORTS, setup="import acpcli.protocol.v2") == ["acpcli.protocol.v2", "pydantic"]
