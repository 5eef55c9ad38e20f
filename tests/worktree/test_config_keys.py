"""The config keys of checkpoints: ``checkpoints`` and ``checkpoint_max_file_size``."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpcli.config import DEFAULT_CHECKPOINT_MAX_FILE_SIZE, load_config
from acpcli.errors import ConfigError


def test_defaults(acpcli_home: Path) -> None:
    config = load_config()
    assert config.checkpoints is True
    assert config.checkpoint_max_file_size == DEFAULT_CHECKPOINT_MAX_FILE_SIZE == 10 * 1024 * 1024


def test_values_are_read(acpcli_home: Path) -> None:
    (acpcli_home / "config.toml").write_text("checkpoints = false\ncheckpoint_max_file_size = 0\n")
    config = load_config()
    assert config.checkpoints is False and config.checkpoint_max_file_size == 0


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('checkpoints = "no"', "checkpoints must be true or false"),
        ("checkpoint_max_file_size = -1", "checkpoint_max_file_size must be a number of bytes"),
        ("checkpoint_max_file_size = 1.5", "checkpoint_max_file_size must be a number of bytes"),
        ("checkpoint_max_file_size = true", "checkpoint_max_file_size must be a number of bytes"),
    ],
)
def test_bad_values_are_one_line_naming_the_file(acpcli_home: Path, line: str, said: str) -> None:
    (acpcli_home / "config.toml").write_text(line + "\n")
    with pytest.raises(ConfigError, match=said) as err:
        load_config()
    assert str(acpcli_home / "config.toml") in str(err.value) and "\n" not in str(err.value)
