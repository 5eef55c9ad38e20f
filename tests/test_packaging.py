"""Installed as users install CLIs (``pipx install .``, ``uv tool install .``): the wheel alone,
in a fresh virtual environment outside the checkout, gives a working ``acpcli`` with the demo
agent and the completion scripts.

The wheel is built without build isolation (setuptools comes from the test extra) and installed
without touching any index; its dependencies are lent by this test run's environment through a
``.pth`` line, so only ``acpcli`` itself comes from the wheel — which the first check proves.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 180


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a fresh venv holding only the freshly built acpcli wheel."""
    root = tmp_path_factory.mktemp("packaging")
    # Build from a copy of what a source distribution holds: setuptools writes build/ and
    # *.egg-info beside the sources, which must not land in the checkout.
    source = root / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "acpcli", source / "acpcli", ignore=shutil.ignore_patterns("__pycache__"))
    dist = root / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(dist), str(source)],
        check=True, capture_output=True, timeout=TIMEOUT, cwd=root,
    )
    (wheel,) = dist.glob("acpcli-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "acpcli/demo_agent/__main__.py" in names
    assert "acpcli/py.typed" in names  # PEP 561: the Python API is typed
    assert not any(n.startswith(("tests/", "bench/", "tools/")) for n in names), names

    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=TIMEOUT)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--no-index", str(wheel)],
        check=True, capture_output=True, timeout=TIMEOUT, cwd=root,
    )
    # The dependencies (typer, rich, …) from this environment; a plain path line, so the
    # editable install of the checkout that lives there is not activated.
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=TIMEOUT,
    ).stdout.strip()
    Path(purelib, "lent-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin"


def run(bin_dir: Path, *args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["ACPCLI_HOME"] = str(tmp_path / "home")
    return subprocess.run(
        [str(bin_dir / "acpcli"), *args], capture_output=True, text=True, timeout=TIMEOUT,
        cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
    )


def test_acpcli_comes_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(installed / "python"), "-c", "import acpcli, acpcli.demo_agent; print(acpcli.__file__)"],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path, check=True,
    )
    where = Path(proc.stdout.strip())
    assert installed.parent in where.parents and REPO not in where.parents


def test_help_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    proc = run(installed, "--help", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "prompt" in proc.stdout and "completion" in proc.stdout


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_from_the_wheel(installed: Path, tmp_path: Path, shell: str) -> None:
    proc = run(installed, "completion", shell, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (REPO / "completions" / f"acpcli.{shell}").read_text(encoding="utf-8")


def test_a_demo_prompt_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    proc = run(installed, "prompt", "--agent", "demo", "hello", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "hello" in proc.stdout.lower() and proc.stdout.strip()
