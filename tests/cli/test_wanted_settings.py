"""``prompt``'s --mode/--model/--set, read into the settings it asks for (in order, checked)."""

from __future__ import annotations

import pytest

from acpcli.cli.prompt import wanted_settings
from acpcli.errors import UsageError


def test_wanted_settings_in_order_and_checked() -> None:
    assert wanted_settings("code", "large", [" effort = high ", "brave=on"]) == [
        ("mode", "code"), ("model", "large"), ("effort", "high"), ("brave", "on"),
    ]
    assert wanted_settings(None, None, None) == []
    for bad in ("effort", "=high", "effort= "):
        with pytest.raises(UsageError, match="--set wants NAME=VALUE"):
            wanted_settings(None, None, [bad])
