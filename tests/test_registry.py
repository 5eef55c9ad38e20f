"""acpcli.registry: parsing, fetching from loopback, the cache, offline use."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from acpcli import registry
from acpcli.errors import ExitCode, RegistryError
from tests.helpers.registry_server import RegistryServer

FIXTURE = Path(__file__).parent / "registry" / "registry.json"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[RegistryServer]:
    srv = RegistryServer(FIXTURE.read_bytes())
    monkeypatch.setenv(registry.URL_ENV, srv.url)
    yield srv
    srv.stop()


def test_parse_keeps_every_field() -> None:
    reg = registry.parse(FIXTURE.read_text(), "u")
    assert sorted(reg.agents) == ["fake-binary", "fake-npx", "fake-uvx"]
    npx = reg.agents["fake-npx"]
    assert (npx.name, npx.version, npx.license, npx.authors) == (
        "Fake npx agent",
        "1.2.3",
        "MIT",
        ["Test"],
    )
    assert npx.npx == registry.Package(
        "@fake/npx-agent@1.2.3", ["--acp"], {"FAKE_AGENT_VIA": "npx"}
    )
    assert reg.agents["fake-binary"].binary["linux-x86_64"].cmd == "./fake-agent"
    assert reg.warnings == []


def test_a_bad_entry_is_skipped_with_a_warning() -> None:
    data = json.loads(FIXTURE.read_text())
    data["agents"].insert(
        0, {"id": "broken", "name": "B", "version": "1", "distribution": {"npx": {"args": []}}}
    )
    data["agents"].append("not an object")
    data["agents"].append({**data["agents"][1], "id": "../Escape"})
    data["agents"].append({**data["agents"][1], "id": "fake-npx"})
    reg = registry.parse(json.dumps(data), "u")
    assert sorted(reg.agents) == ["fake-binary", "fake-npx", "fake-uvx"]
    assert len(reg.warnings) == 4
    assert "'../Escape' is not lowercase" in reg.warnings[2] and "listed twice" in reg.warnings[3]
    assert "'broken'" in reg.warnings[0] and "'package'" in reg.warnings[0]


@pytest.mark.parametrize("text", ["{not json", "[]", '{"agents": {}}', '"x"'])
def test_a_broken_registry_is_one_error(text: str) -> None:
    with pytest.raises(RegistryError) as info:
        registry.parse(text, "http://x/r.json")
    assert info.value.exit_code == ExitCode.CONFIG
    assert "\n" not in str(info.value) and "http://x/r.json" in str(info.value)


def test_url_env_then_config_then_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(registry.URL_ENV, "http://env/")
    assert registry.registry_url("http://cfg/") == "http://env/"
    monkeypatch.delenv(registry.URL_ENV)
    assert registry.registry_url("http://cfg/") == "http://cfg/"
    assert registry.registry_url(None) == registry.DEFAULT_URL


def test_config_key(acpcli_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from acpcli.config import load_config

    (acpcli_home / "config.toml").write_text('registry_url = "http://127.0.0.1:1/r.json"\n')
    monkeypatch.delenv(registry.URL_ENV)
    assert load_config().registry_url == "http://127.0.0.1:1/r.json"
    assert registry.registry_url(registry._configured_url()) == "http://127.0.0.1:1/r.json"


def test_fetch_caches_then_uses_the_cache_within_the_ttl(server: RegistryServer) -> None:
    assert registry.cached() is None
    assert "fake-npx" in registry.load().agents
    assert len(server.requests) == 1
    assert registry.cached() is not None
    registry.load()
    assert len(server.requests) == 1  # young enough: no request


def test_a_stale_cache_is_revalidated(
    server: RegistryServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry.load()
    monkeypatch.setattr(registry, "TTL", 0)
    reg = registry.load()
    assert len(server.requests) == 2 and server.requests[1]["if-none-match"]
    assert "fake-uvx" in reg.agents and reg.fetched_at and time.time() - reg.fetched_at < 60


def test_refresh_fetches_new_content(server: RegistryServer) -> None:
    registry.load()
    data = json.loads(FIXTURE.read_text())
    data["agents"] = data["agents"][:1]
    server.body = json.dumps(data).encode()
    assert sorted(registry.load().agents) == ["fake-binary", "fake-npx", "fake-uvx"]
    assert sorted(registry.load(refresh=True).agents) == ["fake-npx"]


def test_offline_uses_the_cache_with_a_note(server: RegistryServer) -> None:
    registry.load()
    server.stop()
    notes: list[str] = []
    reg = registry.load(refresh=True, note=notes.append)
    assert "fake-npx" in reg.agents
    assert len(notes) == 1 and "using the copy cached" in notes[0]


def test_offline_without_a_cache_is_an_error(server: RegistryServer) -> None:
    server.stop()
    with pytest.raises(RegistryError, match=r"cannot fetch the agent registry .*cannot connect"):
        registry.load()


def test_an_http_error_is_one_line(server: RegistryServer) -> None:
    server.status = 500
    with pytest.raises(RegistryError, match="HTTP 500"):
        registry.load()


def test_find_uses_the_cache_first(server: RegistryServer) -> None:
    registry.load()
    server.stop()
    assert registry.find("fake-uvx") is not None


def test_launch_prefers_npx_then_uvx() -> None:
    reg = registry.parse(FIXTURE.read_text(), "u")
    both = reg.agents["fake-npx"]
    both.uvx = registry.Package("p")
    on_path = {"npx": "/bin/npx", "uvx": "/bin/uvx"}
    how = registry.launch(both, on_path.get)
    assert (how.how, how.argv, how.env) == (
        "npx",
        ["npx", "-y", "@fake/npx-agent@1.2.3", "--acp"],
        {"FAKE_AGENT_VIA": "npx"},
    )
    how = registry.launch(both, {"uvx": "/bin/uvx"}.get)
    assert (how.how, how.argv) == ("uvx", ["uvx", "p"])
    how = registry.launch(both, {}.get)
    assert how.found is None and "not on PATH" in registry.not_runnable(both, how)
    binary = reg.agents["fake-binary"]
    how = registry.launch(binary, on_path.get)
    assert how.how == "binary" and how.found is None
    why = registry.not_runnable(binary, how)
    assert "`acpcli agents install fake-binary` downloads http://127.0.0.1:9/" in why or "no distribution" in why


def test_redirects_are_followed(server: RegistryServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.redirect_to = server.url.replace("/registry.json", "/moved/registry.json")
    monkeypatch.setenv(registry.URL_ENV, server.url.replace("/registry.json", "/old.json"))
    assert "fake-npx" in registry.load().agents
    assert [r["path"] for r in server.requests] == ["/old.json", "/moved/registry.json"]


def test_tls_failure_is_one_line(server: RegistryServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(registry.URL_ENV, server.url.replace("http://", "https://"))  # TLS to a plain server
    with pytest.raises(RegistryError, match="TLS error") as info:
        registry.load()
    assert "\n" not in str(info.value)


def test_a_slow_server_times_out(server: RegistryServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "FETCH_TIMEOUT", 0.2)
    server.delay = 1.0
    with pytest.raises(RegistryError, match=r"timed out after 0\.2s"):
        registry.load()


def test_a_bad_url_is_one_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(registry.URL_ENV, "ftp://127.0.0.1/registry.json")
    with pytest.raises(RegistryError, match="cannot fetch the agent registry"):
        registry.load()
