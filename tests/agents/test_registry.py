"""acpcli.agents.registry: parsing, fetching from loopback, the cache, offline use."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from acpcli.agents import registry
from acpcli.errors import ConfigError, ExitCode, RegistryError
from tests.helpers.registry_server import RegistryServer, endless, trickle

FIXTURE = Path(__file__).parent.parent / "registry" / "registry.json"


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
        ["npx", "-y", "--", "@fake/npx-agent@1.2.3", "--acp"],
        {"FAKE_AGENT_VIA": "npx"},
    )
    how = registry.launch(both, {"uvx": "/bin/uvx"}.get)
    assert (how.how, how.argv) == ("uvx", ["uvx", "--", "p"])
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


# --- bounded inputs --------------------------------------------------------------------


def test_a_registry_body_that_never_ends_is_cut_while_it_arrives(
    server: RegistryServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "MAX_SIZE", 1 << 20)
    server.responders["/registry.json"] = endless()
    with pytest.raises(RegistryError, match=r"larger than the 1048576 bytes accepted") as info:
        registry.load()
    assert "\n" not in str(info.value)
    # stopped at the cap, not after reading all the server had (256 MiB): what the server
    # could write is the cap plus what the sockets buffer
    assert server.sent["/registry.json"] < 64 << 20
    assert registry.cached() is None


def test_a_declared_length_over_the_cap_is_refused_before_reading(
    server: RegistryServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "MAX_SIZE", 1000)
    server.body = FIXTURE.read_bytes()
    with pytest.raises(RegistryError, match=rf"it is {len(server.body)} bytes, more than the 1000 accepted"):
        registry.load()


@pytest.mark.parametrize("headers_too", [False, True], ids=["body", "headers"])
def test_a_trickling_server_meets_the_overall_deadline(
    server: RegistryServer, monkeypatch: pytest.MonkeyPatch, headers_too: bool
) -> None:
    # a byte every 0.2 s never trips the idle timeout (15 s): only an overall deadline ends it
    monkeypatch.setenv(registry.DEADLINE_ENV, "1")
    server.responders["/registry.json"] = trickle(0.2, headers_too=headers_too)
    started = time.monotonic()
    with pytest.raises(RegistryError, match=r"took longer than 1s in all .*ACPCLI_DOWNLOAD_DEADLINE"):
        registry.load()
    assert time.monotonic() - started < 10  # about 1 s; generous for a loaded machine
    assert server.sent.get("/registry.json", 0) < 100


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "inf"])
def test_a_bad_deadline_is_one_config_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(registry.DEADLINE_ENV, value)
    with pytest.raises(ConfigError, match="ACPCLI_DOWNLOAD_DEADLINE must be a number of seconds"):
        registry.load()


def test_a_deeply_nested_registry_is_one_error() -> None:
    text = '{"agents": [' + "[" * 100_000 + "]" * 100_000 + "]}"
    with pytest.raises(RegistryError, match="not valid JSON: nested too deeply") as info:
        registry.parse(text, "http://x/r.json")
    assert info.value.exit_code == ExitCode.CONFIG


def test_many_bad_entries_are_counted_not_listed() -> None:
    data = {"agents": [{"id": f"a-{n}"} for n in range(1000)]}
    reg = registry.parse(json.dumps(data), "u")
    assert reg.skipped == 1000 and len(reg.warnings) == registry.MAX_WARNINGS


# --- an entry is data, never a command line ---------------------------------------------


def _entry(kind: str, package: str, args: list[str] | None = None, env: dict[str, str] | None = None) -> dict[str, object]:
    dist: dict[str, object] = {"package": package, "args": args or [], "env": env or {}}
    return {"id": "x", "name": "X", "version": "1.0.0", "distribution": {kind: dist}}


@pytest.mark.parametrize(
    ("kind", "package"),
    [
        ("npx", "@google/gemini-cli@0.27.3"),
        ("npx", "left-pad"),
        ("npx", "pkg@latest"),
        ("npx", "pkg@^1.2.0"),
        ("npx", "@scope/pkg"),
        ("uvx", "fake-uvx-agent==0.4.0"),
        ("uvx", "ruff@0.3.0"),
        ("uvx", "pkg[extra,other]>=1,<2"),
        ("uvx", "Some.Package"),
    ],
)
def test_package_specs_that_are_names(kind: str, package: str) -> None:
    agent = registry.parse_entry(_entry(kind, package))
    how = registry.launch(agent, {kind: f"/bin/{kind}"}.get)
    assert how.argv[how.argv.index("--") + 1] == package


@pytest.mark.parametrize(
    ("kind", "package"),
    [
        ("npx", "--call=touch pwned"),
        ("npx", "-y"),
        ("npx", "-c"),
        ("npx", "https://evil.example/x.tgz"),
        ("npx", "git+ssh://git@evil.example/x.git"),
        ("npx", "./local-folder"),
        ("npx", "../x"),
        ("npx", "@scope/../x"),
        ("npx", "pkg name"),
        ("npx", "pkg@-1"),
        ("npx", ".hidden"),
        ("uvx", "--from=git+https://evil.example/x"),
        ("uvx", "--with"),
        ("uvx", "-p"),
        ("uvx", "pkg; rm -rf ~"),
        ("uvx", "git+https://evil.example/x"),
        ("uvx", "pkg @ https://evil.example/x.whl"),
    ],
)
def test_package_specs_that_are_not_names_skip_the_entry(kind: str, package: str) -> None:
    with pytest.raises(ValueError, match=rf"{kind} package .* is not an? (npm|PyPI) package name"):
        registry.parse_entry(_entry(kind, package))
    reg = registry.parse(json.dumps({"agents": [_entry(kind, package)]}), "u")
    assert reg.agents == {} and len(reg.warnings) == 1


@pytest.mark.parametrize(
    ("kind", "key"),
    [("npx", "npm_config_call"), ("npx", "NPM_CONFIG_REGISTRY"), ("npx", "NODE_OPTIONS"), ("uvx", "UV_INDEX_URL"),
     ("npx", "PATH"), ("uvx", "LD_PRELOAD"), ("npx", "A=B"), ("uvx", "")],
)
def test_env_that_would_configure_the_launcher_skips_the_entry(kind: str, key: str) -> None:
    with pytest.raises(ValueError, match=r"\.env"):
        registry.parse_entry(_entry(kind, "pkg", env={key: "x"}))


def test_args_go_after_the_separator() -> None:
    agent = registry.parse_entry(_entry("npx", "pkg@1", args=["--call=touch pwned", "-y"]))
    how = registry.launch(agent, {"npx": "/bin/npx"}.get)
    assert how.argv == ["npx", "-y", "--", "pkg@1", "--call=touch pwned", "-y"]
    agent = registry.parse_entry(_entry("uvx", "pkg==1", args=["--from", "x"]))
    assert registry.launch(agent, {"uvx": "/bin/uvx"}.get).argv == ["uvx", "--", "pkg==1", "--from", "x"]


@pytest.mark.parametrize("url", ["http://\x01/registry.json", "notaurl", "http://127.0.0.1:99999/r.json"])
def test_urls_httpx_cannot_use_are_one_error(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv(registry.URL_ENV, url)
    with pytest.raises(RegistryError, match="cannot fetch the agent registry"):
        registry.load()
