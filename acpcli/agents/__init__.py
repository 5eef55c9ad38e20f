"""Agents: the ACP Registry and the installs of the agents it lists.

Floor: below the session layer, which turns an agent's name into a command line.
"""

from __future__ import annotations

from pathlib import Path


def registry_cache() -> tuple[Path, Path]:
    """Where the registry's cached copy is kept (``ACPCLI_HOME/registry``): the document and
    its meta file. Here rather than in :mod:`acpcli.agents.registry` so that a TAB can see
    there is none without importing the registry's code."""
    from acpcli.paths import home_dir

    directory = home_dir() / "registry"
    return directory / "registry.json", directory / "meta.json"
