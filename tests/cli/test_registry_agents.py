"""Agents from the ACP registry, end to end: a registry served from loopback, fake ``npx`` and
``uvx`` executables on PATH that run the demo agent, the real CLI in subprocesses."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from acpcli import registry
from acpcli.errors import ExitCode
from tests.helpers.registry_server import RegistryServer

from .conftest import Cli, error_line

FIXTURE = Path(__file__).resolve().parent.parent / "registry" / "registry.json"


@pytest.fixture
def server() -> Iterator[RegistryServer]:
    srv = RegistryServer(FIXTURE.read_bytes())
    yield srv
    srv.stop()


def _fake(bin_dir: Path, name: str, log: Path) -> None:
    """A fake ``name`` launcher: it writes its arguments and FAKE_AGENT_VIA to ``log``, then
    becomes the demo agent."""
    script = bin_dir / name
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s %s\\n" "$FAKE_AGENT_VIA" "$*" >> {shlex.quote(str(log))}\n'
        f"exec {shlex.quote(sys.executable)} -m acpcli.demo_agent --delay 0\n"
    )
    script.chmod(0o755)


def _path(tmp_path: Path, *launchers: str) -> tuple[dict[str, str], Path]:
    """A PATH holding only the fake ``launchers`` (never a real npx or uvx, which would
    reach the network), and their log file."""
    bin_dir = tmp_path / ("bin-" + "-".join(launchers or ("none",)))
    bin_dir.mkdir()
    log = tmp_path / "launches.log"
    for name in launchers:
        _fake(bin_dir, name, log)
    return {"PATH": str(bin_dir)}, log


def test_agents_lists_the_registry(cli: Cli, server: RegistryServer, tmp_path: Path) -> None:
    env, _ = _path(tmp_path, "npx")
    env["ACPCLI_REGISTRY_URL"] = server.url
    rows = {r["name"]: r for r in map(json.loads, cli.ok("agents", "--json", env=env).stdout.splitlines())}
    assert {"demo", "fake-npx", "fake-uvx", "fake-binary"} <= set(rows)
    assert rows["fake-npx"]["source"] == "registry" and rows["fake-npx"]["version"] == "1.2.3"
    assert rows["fake-npx"]["runs"] == "npx" and rows["fake-npx"]["found"].endswith("/npx")
    assert rows["fake-npx"]["argv"] == ["npx", "-y", "@fake/npx-agent@1.2.3", "--acp"]
    assert rows["fake-uvx"]["found"] is None and rows["fake-uvx"]["runs"] == "uvx"
    assert rows["fake-binary"]["found"] is None
    only = [json.loads(line)["name"] for line in cli.ok("agents", "--registry", "--json", env=env).stdout.splitlines()]
    assert only == ["fake-binary", "fake-npx", "fake-uvx"]
    table = cli.ok("agents", env=env).stdout
    [line] = [x for x in table.splitlines() if x.split()[:1] == ["fake-npx"]]
    assert "1.2.3" in line and "registry" in line and "npx -y @fake/npx-agent@1.2.3 --acp" in line
    assert len(server.requests) == 1  # the cached copy served the next two


def test_agents_show(cli: Cli, server: RegistryServer) -> None:
    env = {"ACPCLI_REGISTRY_URL": server.url}
    text = cli.ok("agents", "show", "fake-binary", env=env).stdout
    assert "id: fake-binary" in text and "version: 2.0.0" in text
    assert "binary linux-x86_64: http://127.0.0.1:9/fake-binary-linux-x86_64.tar.gz" in text
    shown = json.loads(cli.ok("agents", "show", "fake-npx", "--json", env=env).stdout)
    assert shown["registry"] == json.loads(FIXTURE.read_text())["agents"][0]
    proc = cli.run("agents", "show", "nobody", env=env)
    assert "unknown agent 'nobody'" in error_line(proc, ExitCode.USAGE)


@pytest.mark.parametrize("launcher", ["npx", "uvx"])
def test_prompt_runs_a_registry_agent(cli: Cli, server: RegistryServer, tmp_path: Path, launcher: str) -> None:
    env, log = _path(tmp_path, launcher)
    env["ACPCLI_REGISTRY_URL"] = server.url
    proc = cli.ok("prompt", "--agent", f"fake-{launcher}", "--permissions", "allow", "hello", env=env)
    assert proc.stdout.strip()
    launched = log.read_text()
    if launcher == "npx":
        assert launched == "npx -y @fake/npx-agent@1.2.3 --acp\n"  # the entry's env reached it
    else:
        assert launched == " fake-uvx-agent==0.4.0 serve\n"
    assert f"fake-{launcher}" in cli.ok("sessions", env=env).stdout


def test_a_binary_agent_that_cannot_be_downloaded_is_one_line(cli: Cli, server: RegistryServer, tmp_path: Path) -> None:
    env, _ = _path(tmp_path, "npx", "uvx")
    env["ACPCLI_REGISTRY_URL"] = server.url
    proc = cli.run("prompt", "--agent", "fake-binary", "hello", env=env)
    if registry.platform_key() in json.loads(FIXTURE.read_text())["agents"][2]["distribution"]["binary"]:
        assert error_line_with_note(proc).startswith("cannot download http://127.0.0.1:9/fake-binary-")
    else:
        assert "no distribution for" in error_line(proc, ExitCode.AGENT_START)
    assert not (cli.home / "agents" / "fake-binary" / "2.0.0").exists()


def error_line_with_note(proc: subprocess.CompletedProcess[str]) -> str:
    """The error of a failed first-use install: the note saying what is downloaded, then one error line."""
    note, *rest = proc.stderr.splitlines()
    assert note.startswith("acpcli: warning: installing registry agent 'fake-binary' 2.0.0: downloading http://127.0.0.1:9/")
    return error_line(subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout, "\n".join(rest)), ExitCode.AGENT_START)


def _binary_registry(server: RegistryServer, version: str) -> None:
    """The fixture registry with fake-binary at ``version`` for this platform, its archive served."""
    data = json.loads(FIXTURE.read_text())
    archive = f"/fake-binary-{version}.tar.gz"
    data["agents"][2]["version"] = version
    data["agents"][2]["distribution"]["binary"] = {
        registry.platform_key(): {"archive": server.base() + archive, "cmd": "./bin/fake-agent", "args": ["acp"], "env": {"FAKE_AGENT_VIA": "binary"}}
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        script = f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m acpcli.demo_agent --delay 0\n".encode()
        info = tarfile.TarInfo("bin/fake-agent")
        info.size = len(script)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(script))
    server.files[archive] = buf.getvalue()
    server.body = json.dumps(data).encode()


def test_a_binary_agent_is_installed_on_first_use(cli: Cli, server: RegistryServer, tmp_path: Path) -> None:
    _binary_registry(server, "2.0.0")
    env, _ = _path(tmp_path)
    env["ACPCLI_REGISTRY_URL"] = server.url
    proc = cli.ok("prompt", "--agent", "fake-binary", "--permissions", "allow", "hello", env=env)
    assert proc.stdout.strip()
    assert f"downloading {server.base()}/fake-binary-2.0.0.tar.gz" in proc.stderr
    assert (cli.home / "agents" / "fake-binary" / "2.0.0" / "bin" / "fake-agent").is_file()
    server.stop()  # installed: no registry needed any more
    cli.ok("prompt", "--agent", "fake-binary", "--permissions", "allow", "again", env=env)


def test_install_update_remove(cli: Cli, server: RegistryServer, tmp_path: Path) -> None:
    _binary_registry(server, "2.0.0")
    env, _ = _path(tmp_path)
    env["ACPCLI_REGISTRY_URL"] = server.url
    out = cli.ok("agents", "install", "fake-binary", env=env).stdout
    assert out.startswith("installed fake-binary 2.0.0 in ") and "sha256 " in out
    rows = {r["name"]: r for r in map(json.loads, cli.ok("agents", "--registry", "--json", env=env).stdout.splitlines())}
    assert rows["fake-binary"]["installed"] == "2.0.0" and rows["fake-binary"]["found"].endswith("fake-agent")
    assert "up to date" in cli.ok("agents", "update", env=env).stdout
    _binary_registry(server, "2.1.0")
    rows = {r["name"]: r for r in map(json.loads, cli.ok("agents", "--registry", "--refresh", "--json", env=env).stdout.splitlines())}
    assert rows["fake-binary"]["update"] is True
    assert cli.ok("agents", "update", "fake-binary", env=env).stdout.startswith("installed fake-binary 2.1.0")
    assert sorted(p.name for p in (cli.home / "agents" / "fake-binary").iterdir()) == ["2.1.0", "current.json"]
    cli.ok("prompt", "--agent", "fake-binary", "--permissions", "allow", "hello", env=env)
    assert cli.ok("agents", "remove", "fake-binary", env=env).stdout == "removed fake-binary\n"
    assert not (cli.home / "agents" / "fake-binary").exists()
    assert "not installed" in error_line(cli.run("agents", "remove", "fake-binary", env=env), ExitCode.USAGE)


def test_an_unsafe_archive_is_refused_with_nothing_installed(cli: Cli, server: RegistryServer, tmp_path: Path) -> None:
    _binary_registry(server, "2.0.0")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("../../../escaped")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    server.files["/fake-binary-2.0.0.tar.gz"] = buf.getvalue()
    proc = cli.run("agents", "install", "fake-binary", env={"ACPCLI_REGISTRY_URL": server.url})
    said, _, rest = proc.stderr.partition("\n")
    assert said == f"acpcli: downloading {server.base()}/fake-binary-2.0.0.tar.gz"
    line = error_line(subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout, rest), ExitCode.AGENT_START)
    assert "refusing the path '../../../escaped'" in line
    assert not (cli.home / "agents" / "fake-binary" / "2.0.0").exists()
    assert not any(p.name == "escaped" for p in tmp_path.rglob("escaped"))


def test_no_launcher_on_path(cli: Cli, server: RegistryServer, tmp_path: Path) -> None:
    env, _ = _path(tmp_path)
    env["ACPCLI_REGISTRY_URL"] = server.url
    line = error_line(cli.run("prompt", "--agent", "fake-npx", "hello", env=env), ExitCode.AGENT_START)
    assert "npx, which is not on PATH" in line


def test_a_registry_that_is_down_uses_the_cache(cli: Cli, server: RegistryServer, tmp_path: Path) -> None:
    env, _ = _path(tmp_path, "uvx")
    env["ACPCLI_REGISTRY_URL"] = server.url
    cli.ok("agents", "--registry", "--refresh", env=env)
    server.stop()
    proc = cli.ok("agents", "--registry", "--refresh", "--json", env=env)
    assert [json.loads(x)["name"] for x in proc.stdout.splitlines()] == ["fake-binary", "fake-npx", "fake-uvx"]
    [note] = proc.stderr.splitlines()
    assert note.startswith("acpcli: warning: cannot fetch the agent registry") and "using the copy cached" in note
    # the cached copy also resolves --agent, without any fetch
    assert cli.ok("prompt", "--agent", "fake-uvx", "--permissions", "allow", "hello", env=env).stdout.strip()


def test_a_registry_that_is_down_without_a_cache(cli: Cli, server: RegistryServer) -> None:
    env = {"ACPCLI_REGISTRY_URL": server.url}
    server.stop()
    line = error_line(cli.run("agents", "--registry", env=env), ExitCode.CONFIG)
    assert line.startswith("cannot fetch the agent registry http://127.0.0.1:")
    # an unknown name stays a usage error, the registry's trouble in its hint
    proc = cli.run("prompt", "--agent", "nobody", "hello", env=env)
    assert "unknown agent 'nobody'" in error_line(proc, ExitCode.USAGE)
    assert "nor could the agent registry be read" in proc.stderr


@pytest.mark.parametrize("body", [b"<html>not json</html>", b'{"version": "1", "agents": 3}'])
def test_a_broken_registry_is_one_line(cli: Cli, server: RegistryServer, body: bytes) -> None:
    server.body = body
    line = error_line(cli.run("agents", "--registry", env={"ACPCLI_REGISTRY_URL": server.url}), ExitCode.CONFIG)
    assert "agent registry" in line and ("not valid JSON" in line or "not a registry" in line)


def test_a_bad_entry_is_skipped_with_a_warning(cli: Cli, server: RegistryServer) -> None:
    data = json.loads(FIXTURE.read_text())
    data["agents"].insert(1, {"id": "half", "name": "Half", "version": "1", "distribution": {"uvx": {}}})
    server.body = json.dumps(data).encode()
    proc = cli.ok("agents", "--registry", "--json", env={"ACPCLI_REGISTRY_URL": server.url})
    assert [json.loads(x)["name"] for x in proc.stdout.splitlines()] == ["fake-binary", "fake-npx", "fake-uvx"]
    [warning] = proc.stderr.splitlines()
    assert warning.startswith("acpcli: warning: agent registry: entry 2 skipped: agent 'half'")


def test_registry_url_from_the_config(cli: Cli, server: RegistryServer, acpcli_home: Path) -> None:
    (acpcli_home / "config.toml").write_text(f"registry_url = {json.dumps(server.url)}\n")
    env = cli.env()
    env.pop("ACPCLI_REGISTRY_URL")
    proc = cli.run("agents", "--registry", "--json")  # the env's dead URL wins over the config
    assert proc.returncode == ExitCode.CONFIG
    ok = subprocess.run(cli.argv("agents", "--registry", "--json"), env=env, cwd=cli.cwd, capture_output=True, text=True, check=False, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert "fake-npx" in ok.stdout


def test_a_registry_session_continues_with_the_entrys_env(cli: Cli, server: RegistryServer, tmp_path: Path) -> None:
    env, log = _path(tmp_path, "npx")
    env["ACPCLI_REGISTRY_URL"] = server.url
    cli.ok("prompt", "--agent", "fake-npx", "--permissions", "allow", "hello", env=env)
    [session] = [s for s in cli.index() if s["agent"] == "fake-npx"]
    server.stop()  # continuing needs no registry fetch
    cli.ok("prompt", "--session", session["id"], "--permissions", "allow", "again", env=env)
    assert log.read_text().splitlines() == ["npx -y @fake/npx-agent@1.2.3 --acp"] * 2


def test_completion_offers_cached_registry_ids_without_fetching(cli: Cli, server: RegistryServer) -> None:
    env = {"ACPCLI_REGISTRY_URL": server.url}
    probe = (
        "import sys\n"
        "from acpcli.cli import completers\n"
        "print(' '.join(name for name, _ in completers.agent_names('fake')))\n"
        "assert 'httpx' not in sys.modules\n"
    )
    def complete() -> str:
        proc = subprocess.run(
            [sys.executable, "-c", probe], env=cli.env(env), capture_output=True, text=True, check=True, timeout=60
        )
        return proc.stdout.strip()

    assert complete() == ""  # no cache yet: no registry ids, and no fetch either
    assert server.requests == []
    cli.ok("agents", "--registry", env=env)
    assert complete() == "fake-binary fake-npx fake-uvx"
    assert len(server.requests) == 1
