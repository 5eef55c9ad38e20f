"""Agents from the ACP registry, end to end: a registry served from loopback, fake ``npx`` and
``uvx`` executables on PATH that run the demo agent, the real CLI in subprocesses."""

from __future__ import annotations

import io
import json
import os
import resource
import shlex
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from acpcli.agents import registry
from acpcli.errors import ExitCode
from tests.helpers.registry_server import RegistryServer, trickle

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
    assert rows["fake-npx"]["argv"] == ["npx", "-y", "--", "@fake/npx-agent@1.2.3", "--acp"]
    assert rows["fake-uvx"]["found"] is None and rows["fake-uvx"]["runs"] == "uvx"
    assert rows["fake-binary"]["found"] is None
    only = [json.loads(line)["name"] for line in cli.ok("agents", "--registry", "--json", env=env).stdout.splitlines()]
    assert only == ["fake-binary", "fake-npx", "fake-uvx"]
    table = cli.ok("agents", env=env).stdout
    [line] = [x for x in table.splitlines() if x.split()[:1] == ["fake-npx"]]
    assert "1.2.3" in line and "registry" in line and "npx -y -- @fake/npx-agent@1.2.3 --acp" in line
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
        assert launched == "npx -y -- @fake/npx-agent@1.2.3 --acp\n"  # the entry's env reached it
    else:
        assert launched == " -- fake-uvx-agent==0.4.0 serve\n"
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
    # a typo of a known agent: one line, naming it, and nothing of the registry (issue 32)
    typo = cli.run("prompt", "--agent", "cladue", "hello", env=env)
    assert typo.returncode == ExitCode.USAGE and typo.stdout == ""
    (line,) = typo.stderr.splitlines()
    assert line.startswith("acpcli: error: unknown agent 'cladue' (did you mean 'claude'?); known agents: "), line


def test_agents_offline_warns_in_one_short_line(cli: Cli, server: RegistryServer) -> None:
    """Offline, every ``agents`` warns that the registry's agents are missing: in one line that
    fits an 80-column terminal (issue 32: three lines, the whole address and the errno)."""
    env = {"ACPCLI_REGISTRY_URL": server.url + "/a/long/path/to/the/registry/v1/latest/registry.json"}
    server.stop()
    for _ in range(2):
        proc = cli.ok("agents", env=env)
        assert "demo" in proc.stdout
        (line,) = proc.stderr.splitlines()
        assert line.startswith("acpcli: warning: registry agents not listed (cannot connect"), line
        assert len(line) <= 80 and "Errno" not in line and "127.0.0.1" not in line, line


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
    assert log.read_text().splitlines() == ["npx -y -- @fake/npx-agent@1.2.3 --acp"] * 2


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


# --- a hostile registry ---------------------------------------------------------------


def _npx_like(bin_dir: Path, log: Path) -> None:
    """A fake ``npx`` that reads its options as an older npm did, anywhere up to ``--``, and
    obeys ``--call=COMMAND`` (runs it with sh), then becomes the demo agent."""
    script = bin_dir / "npx"
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$*" >> {shlex.quote(str(log))}\n'
        'for a in "$@"; do\n'
        '  case "$a" in\n'
        "    --) break ;;\n"
        '    --call=*) sh -c "${a#--call=}" ;;\n'
        "  esac\n"
        "done\n"
        f"exec {shlex.quote(sys.executable)} -m acpcli.demo_agent --delay 0\n"
    )
    script.chmod(0o755)


def _hostile(server: RegistryServer, **npx: object) -> None:
    data = json.loads(FIXTURE.read_text())
    data["agents"][0]["id"] = "hostile"
    data["agents"][0]["distribution"]["npx"].update(npx)
    server.body = json.dumps(data).encode()


def test_a_package_that_is_an_option_never_runs(cli: Cli, server: RegistryServer, tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    _hostile(server, package=f"--call=touch {pwned}")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "npx.log"
    _npx_like(bin_dir, log)
    env = {"PATH": str(bin_dir), "ACPCLI_REGISTRY_URL": server.url}
    proc = cli.run("prompt", "--agent", "hostile", "--permissions", "allow", "hello", env=env)
    warning, *rest = proc.stderr.splitlines()
    assert warning.startswith("acpcli: warning: agent registry: entry 1 skipped: agent 'hostile': npx package '--call=touch")
    assert "is not an npm package name" in warning
    only = subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout, "\n".join(rest))
    assert "unknown agent 'hostile'" in error_line(only, ExitCode.USAGE)
    assert not pwned.exists() and not log.exists()  # nothing ran, npx least of all
    rows = [json.loads(x)["name"] for x in cli.ok("agents", "--registry", "--json", env=env).stdout.splitlines()]
    assert rows == ["fake-binary", "fake-uvx"]


def test_arguments_that_are_options_reach_the_agent_not_npx(cli: Cli, server: RegistryServer, tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    _hostile(server, args=[f"--call=touch {pwned}"])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "npx.log"
    _npx_like(bin_dir, log)
    env = {"PATH": str(bin_dir), "ACPCLI_REGISTRY_URL": server.url}
    cli.ok("prompt", "--agent", "hostile", "--permissions", "allow", "hello", env=env)
    assert log.read_text() == f"-y -- @fake/npx-agent@1.2.3 --call=touch {pwned}\n"
    assert not pwned.exists()


def test_an_env_that_configures_npx_skips_the_entry(cli: Cli, server: RegistryServer, tmp_path: Path) -> None:
    _hostile(server, env={"npm_config_call": "touch pwned"})
    env, log = _path(tmp_path, "npx")
    env["ACPCLI_REGISTRY_URL"] = server.url
    proc = cli.run("prompt", "--agent", "hostile", "hello", env=env)
    assert proc.returncode == ExitCode.USAGE
    assert "sets npm_config_call, which would configure npx itself" in proc.stderr
    assert not log.exists()


def test_a_deeply_nested_registry_is_one_line(cli: Cli, server: RegistryServer) -> None:
    server.body = b'{"agents": [' + b"[" * 200_000 + b"]" * 200_000 + b"]}"
    line = error_line(cli.run("agents", "--registry", env={"ACPCLI_REGISTRY_URL": server.url}), ExitCode.CONFIG)
    assert line.endswith("is not valid JSON: nested too deeply")


def test_a_trickling_registry_is_given_up_on(cli: Cli, server: RegistryServer) -> None:
    server.responders["/registry.json"] = trickle(0.2, headers_too=True)
    env = {"ACPCLI_REGISTRY_URL": server.url, "ACPCLI_DOWNLOAD_DEADLINE": "1"}
    line = error_line(cli.run("agents", "--registry", env=env), ExitCode.CONFIG)
    assert line == f"cannot fetch the agent registry {server.url}: took longer than 1s in all (the server is too slow; ACPCLI_DOWNLOAD_DEADLINE allows longer)"


def test_a_huge_registry_is_listed_in_bounded_memory(cli: Cli, server: RegistryServer, tmp_path: Path) -> None:
    # 100,000 agents (11 MB, under the 16 MB cap): rich's table took 0.7 GB and most of a minute
    agents = [{"id": f"agent-{n}", "name": f"A{n}", "version": "1.0.0", "distribution": {"npx": {"package": f"p{n}@1"}}} for n in range(100_000)]
    server.body = json.dumps({"version": "1", "agents": agents}).encode()
    env, _ = _path(tmp_path, "npx")
    env["ACPCLI_REGISTRY_URL"] = server.url
    out = tmp_path / "out.txt"
    with out.open("w") as stdout:
        proc = subprocess.Popen(cli.argv("agents", "--registry"), env=cli.env(env), cwd=cli.cwd, stdout=stdout, stderr=subprocess.PIPE)
        guard = threading.Timer(300, proc.kill)  # a guard against a hang only
        guard.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            guard.cancel()
            proc.returncode = os.waitstatus_to_exitcode(status)
            assert proc.stderr is not None
            err = proc.stderr.read()
            proc.stderr.close()
    assert proc.returncode == 0, err
    lines = out.read_text().splitlines()
    assert len(lines) == 100_001 and lines[0].split() == ["NAME", "VERSION", "RUNS", "COMMAND", "FOUND", "SOURCE", "DESCRIPTION"]
    assert lines[1].split()[:4] == ["agent-0", "1.0.0", "npx", "npx"]
    assert usage.ru_maxrss < 400 * 1024  # KiB: about 175 MB here


def _held_archive(release: threading.Event, data: bytes) -> Any:
    """A responder that sends the headers and half of ``data``, then the rest once
    ``release`` is set (at most 30 s later: a guard against a hang only)."""

    def respond(server: RegistryServer, handler: Any) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data[: len(data) // 2])
        release.wait(30)
        handler.wfile.write(data[len(data) // 2 :])

    return respond


def test_concurrent_installs_of_one_agent_take_turns(cli: Cli, server: RegistryServer) -> None:
    _binary_registry(server, "2.0.0")
    archive = "/fake-binary-2.0.0.tar.gz"
    release = threading.Event()
    server.responders[archive] = _held_archive(release, server.files.pop(archive))
    env = {"ACPCLI_REGISTRY_URL": server.url}
    cli.ok("agents", "--registry", env=env)  # the registry cached: both start at once

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(cli.argv("agents", "install", "fake-binary"), env=cli.env(env), cwd=cli.cwd,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    first = start()
    second: subprocess.Popen[str] | None = None
    guard = threading.Timer(60, release.set)  # a guard against a hang only
    guard.start()
    try:
        while not any(p.name.startswith(".partial-") for p in (cli.home / "agents" / "fake-binary").glob("*")):
            assert first.poll() is None and not release.is_set()
            time.sleep(0.05)
        second = start()  # while the first is half way through its download
        assert second.stderr is not None
        seen = [second.stderr.readline(), second.stderr.readline()]
        release.set()  # the second is waiting: let the first finish
        out, err = first.communicate(timeout=60)
        out2, err2 = second.communicate(timeout=60)
    finally:
        guard.cancel()
        release.set()
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    err2 = "".join(seen) + err2
    assert first.returncode == 0, err
    assert second.returncode == 0, err2
    assert out.startswith("installed fake-binary 2.0.0 in ") and out2.startswith("installed fake-binary 2.0.0 in ")
    assert seen[1] == f"acpcli: warning: waiting for another acpcli (pid {first.pid}) installing 'fake-binary'\n"
    assert "Traceback" not in err + err2
    assert len([r for r in server.requests if r["path"] == archive]) == 1  # the second used the first's
    assert sorted(p.name for p in (cli.home / "agents").iterdir()) == ["fake-binary"]
    assert sorted(p.name for p in (cli.home / "agents" / "fake-binary").iterdir()) == ["2.0.0", "current.json"]
    cli.ok("prompt", "--agent", "fake-binary", "--permissions", "allow", "hello", env=env)


@pytest.mark.parametrize("update", [False, True])
def test_ctrl_c_during_an_install_says_what_was_left(cli: Cli, server: RegistryServer, update: bool) -> None:
    """SIGINT mid-download: one line saying it was interrupted and that nothing was installed
    (an update: the version installed before stays), exit 130, no partial folder left."""
    _binary_registry(server, "2.0.0")
    env = {"ACPCLI_REGISTRY_URL": server.url}
    if update:
        cli.ok("agents", "install", "fake-binary", env=env)
        _binary_registry(server, "2.1.0")
        cli.ok("agents", "--registry", "--refresh", env=env)
    archive = f"/fake-binary-{'2.1.0' if update else '2.0.0'}.tar.gz"
    release = threading.Event()
    server.responders[archive] = _held_archive(release, server.files.pop(archive))
    cli.ok("agents", "--registry", env=env)  # the registry cached
    args = ("agents", "update", "fake-binary") if update else ("agents", "install", "fake-binary")
    proc = subprocess.Popen(cli.argv(*args), env=cli.env(env), cwd=cli.cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not any(p.name.startswith(".partial-") for p in (cli.home / "agents" / "fake-binary").glob("*")):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.2)  # well into the download
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == ExitCode.INTERRUPTED, err
    assert out == ""
    lines = [line for line in err.splitlines() if not line.startswith("acpcli: downloading ")]
    if update:
        assert lines == ["acpcli: interrupted: 'fake-binary' 2.1.0 was not installed; 2.0.0 is still the one installed"]
        assert sorted(p.name for p in (cli.home / "agents" / "fake-binary").iterdir()) == ["2.0.0", "current.json"]
    else:
        assert lines == ["acpcli: interrupted: 'fake-binary' 2.0.0 was not installed; nothing was left behind"]
        assert not (cli.home / "agents" / "fake-binary").exists()


def _file_size_limit(limit: int) -> Callable[[], None]:
    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return preexec


def test_a_full_disk_during_an_install_says_so(cli: Cli, server: RegistryServer, tmp_path: Path) -> None:
    _binary_registry(server, "2.0.0")
    noise = os.urandom(4 << 20)  # incompressible: the download itself outgrows the limit
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("bin/fake-agent")
        info.size = len(noise)
        tar.addfile(info, io.BytesIO(noise))
    server.files["/fake-binary-2.0.0.tar.gz"] = buf.getvalue()
    env = {"ACPCLI_REGISTRY_URL": server.url}
    cli.ok("agents", "--registry", env=env)
    # a file may not grow past 1 MiB: what a full disk does to the next write (Python
    # ignores SIGXFSZ, so the write fails with EFBIG, as it would with ENOSPC)
    proc = subprocess.run(cli.argv("agents", "install", "fake-binary"), env=cli.env(env), cwd=cli.cwd,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                          preexec_fn=_file_size_limit(1 << 20), check=False)
    said, _, rest = proc.stderr.partition("\n")
    assert said == f"acpcli: downloading {server.base()}/fake-binary-2.0.0.tar.gz"
    line = error_line(subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout, rest), ExitCode.AGENT_START)
    assert line == (
        f"cannot install registry agent 'fake-binary': File too large (writing in {cli.home / 'agents' / 'fake-binary'}); "
        "nothing was installed"
    )
    assert not (cli.home / "agents").exists()


def test_a_decompression_bomb_is_refused_with_nothing_left(cli: Cli, server: RegistryServer) -> None:
    _binary_registry(server, "2.0.0")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo("bin/fake-agent")
        info.size = 200 << 20  # 200 MiB of zeros in about 1 MB: past the 64 MiB floor and 100 times its size
        tar.addfile(info, _Zeros(info.size))
    server.files["/fake-binary-2.0.0.tar.gz"] = buf.getvalue()
    proc = cli.run("agents", "install", "fake-binary", env={"ACPCLI_REGISTRY_URL": server.url})
    _, _, rest = proc.stderr.partition("\n")
    line = error_line(subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout, rest), ExitCode.AGENT_START)
    assert "refusing it: it unpacks to more than 100 times its own size" in line and "decompression bomb" in line
    assert not (cli.home / "agents").exists()


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def test_a_version_named_like_the_pointer_file_is_refused(cli: Cli, server: RegistryServer) -> None:
    _binary_registry(server, "current.json")
    line = error_line(cli.run("agents", "install", "fake-binary", env={"ACPCLI_REGISTRY_URL": server.url}), ExitCode.AGENT_START)
    assert line == "registry agent 'fake-binary': refusing the version 'current.json' as a folder name"
    assert not (cli.home / "agents").exists()


def test_the_table_fits_a_terminal_dropping_empty_columns_and_keeping_the_name() -> None:
    from acpcli.cli.agents import _COLUMNS, _columns
    from acpcli.render.fit import cells, fit_columns, table_lines

    rows = [
        dict(zip(_COLUMNS, ("claude", "", "command", "claude-agent-acp", "not on PATH", "built-in",
                            "Claude Agent (claude-agent-acp)"), strict=True)),
        dict(zip(_COLUMNS, ("demo", "", "command", "python -m acpcli.demo_agent", "/usr/bin/python3",
                            "built-in", "built-in demo agent (offline)"), strict=True)),
    ]
    for room in (60, 80, 120):
        shown, _ = fit_columns(_columns(), rows, room)
        names = [c.name for c in shown]
        assert "VERSION" not in names  # nothing in it
        assert names[0] == "NAME" and "DESCRIPTION" in names
        header, lines = table_lines(_columns(), rows, room)
        assert all(cells(line) <= room for line in [header, *lines])
    wide, _ = fit_columns(_columns(), rows, 200)
    assert [c.name for c in wide] == ["NAME", "RUNS", "COMMAND", "FOUND", "SOURCE", "DESCRIPTION"]
    narrow, _ = fit_columns(_columns(), rows, 60)
    assert "RUNS" not in [c.name for c in narrow]  # how it runs gives way before what it is


