"""The project stands alone: no tracked file cites a file outside the repository.

Development happened beside folders that are not part of it (the upstream spec, notes on how
real agents behave, a harness that runs them). What the project learnt there is said in its
own words ("observed with gemini-cli 0.61.0"), and what needs those folders takes their place
from an environment variable (``ACPCLI_SPEC_DIR``, ``ACPCLI_REAL_AGENTS``), never a path.
CHANGELOG.md keeps its history as it was written.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Spelled in pieces so that this file does not name them itself.
OUTSIDE = (
    "../" + "shared",
    "shared" + "/spec",
    "/work/" + "shared",
    "REAL-" + "AGENTS",
    "HOUSE-" + "STYLE",
    "real-" + "agents/",
)
#: Files that are not the project's own words, or not text.
SKIPPED_DIRS = {".git", ".venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", "build", "dist"}


def _tracked() -> list[Path]:
    """The files git tracks (in a copy without git: every file but caches and builds)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return [
            path
            for path in ROOT.rglob("*")
            if path.is_file()
            and not any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in path.relative_to(ROOT).parts)
        ]
    return [ROOT / name for name in out.decode().split("\0") if name]


def test_no_tracked_file_cites_a_file_outside_the_repository() -> None:
    files = [path for path in _tracked() if path.name != "CHANGELOG.md" and path.is_file()]
    assert any(path.name == "README.md" for path in files) and len(files) > 100
    found = []
    for path in files:
        data = path.read_bytes()
        if b"\0" in data:  # not text
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            found += [f"{path.relative_to(ROOT)}:{number}: {word}" for word in OUTSIDE if word in line]
    assert not found, "references to files outside the repository:\n" + "\n".join(found)
