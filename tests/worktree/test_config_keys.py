"""The config keys of checkpoints: ``checkpoints``, ``checkpoint_max_file_size``,
``checkpoint_max_files`` and ``checkpoint_time_limit``."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpcli.config import DEFAULT_CHECKPOINT_MAX_FILE_SIZE, load_config
from acpcli.errors import ConfigError


def test_defaults(acpcli_home: Path) -> None:
    config = load_config()
    assert config.checkpoints is True
    assert config.checkpoint_max_file_size == DEFAULT_CHECKPOINT_MAX_FILE_SIZE == 10 * 1024 * 1024
    assert (config.checkpoint_max_files, config.checkpoint_time_limit) == (100_000, 10.0)


def test_values_are_read(acpcli_home: Path) -> None:
    (acpcli_home / "config.toml").write_text(
        "checkpoints = false\ncheckpoint_max_file_size = 0\ncheckpoint_max_files = 7\ncheckpoint_time_limit = 2\n"
    )
    config = load_config()
    assert config.checkpoints is False and config.checkpoint_max_file_size == 0
    assert config.checkpoint_max_files == 7 and config.checkpoint_time_limit == 2.0


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('checkpoints = "no"', "checkpoints must be true or false"),
        ("checkpoint_max_file_size = -1", "checkpoint_max_file_size must be a number of bytes"),
        ("checkpoint_max_file_size = 1.5", "checkpoint_max_file_size must be a number of bytes"),
        ("checkpoint_max_file_size = true", "checkpoint_max_file_size must be a number of bytes"),
        ("checkpoint_max_files = 0", "checkpoint_max_files must be a number of files, 1 or more"),
        ('checkpoint_max_files = "many"', "checkpoint_max_files must be a number of files"),
        ("checkpoint_time_limit = 0", "checkpoint_time_limit must be a number of seconds, more than 0"),
        ("checkpoint_time_limit = inf", "checkpoint_time_limit must be a number of seconds"),
    ],
)
def test_bad_values_are_one_line_naming_the_file(acpcli_home: Path, line: str, said: str) -> None:
    (acpcli_home / "config.toml").write_text(line + "\n")
    with pytest.raises(ConfigError, match=said) as err:
        load_config()
    assert str(acpcli_home / "config.toml") in str(err.value) and "\n" not in str(err.value)
