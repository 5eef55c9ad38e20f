"""The ACP Registry: the agents other clients offer, fetched on demand and cached.

The registry is one JSON document (``{"version", "agents": [...], "extensions": [...]}``,
documented in the ``agentclientprotocol/registry`` repository). Its URL is
``$ACPCLI_REGISTRY_URL``, else the config's ``registry_url``, else :data:`DEFAULT_URL`.

It is cached under ``ACPCLI_HOME/registry/`` with its ``ETag``/``Last-Modified``; a copy
younger than :data:`TTL` seconds is used without asking, an older one is revalidated with a
conditional request. When the fetch fails, the cached copy is used (with a note); with no
cache the failure is a :class:`~acpcli.errors.RegistryError`. A registry that is not JSON or
not the documented shape is a :class:`~acpcli.errors.RegistryError`; one bad entry is only
skipped, with a warning, and the good ones kept.

Nothing here touches the network but :func:`fetch` (and :func:`load`, which may call it);
httpx is imported there only, so ``--help`` and completion never load it.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acpcli.errors import RegistryError

DEFAULT_URL = "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json"
URL_ENV = "ACPCLI_REGISTRY_URL"
#: Seconds a cached registry is used without asking the server again.
TTL = 24 * 60 * 60
#: Seconds to wait for the registry server (connect, each read).
FETCH_TIMEOUT = 15.0
#: The largest registry document accepted (bytes).
MAX_SIZE = 16 * 1024 * 1024


@dataclass
class Package:
    """An ``npx`` or ``uvx`` distribution: the package, its arguments, env additions."""

    package: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Binary:
    """A binary distribution for one platform (``linux-x86_64`` ...)."""

    archive: str
    cmd: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class RegistryAgent:
    """One agent entry of the registry."""

    id: str
    name: str
    version: str
    description: str = ""
    repository: str | None = None
    authors: list[str] = field(default_factory=list)
    license: str | None = None
    icon: str | None = None
    binary: dict[str, Binary] = field(default_factory=dict)
    npx: Package | None = None
    uvx: Package | None = None
    raw: dict[str, Any] = field(default_factory=dict)  # the entry as the registry wrote it

    def kinds(self) -> list[str]:
        """The distributions it offers: ``npx``, ``uvx``, ``binary``."""
        return [k for k, v in (("npx", self.npx), ("uvx", self.uvx), ("binary", self.binary)) if v]


@dataclass
class Launch:
    """How a registry agent would be started here."""

    how: str  # "npx", "uvx" or "binary"
    argv: list[str]
    env: dict[str, str]
    found: str | None  # the launcher found on PATH (npx, uvx), None for a binary


@dataclass
class Registry:
    version: str
    agents: dict[str, RegistryAgent]
    url: str
    warnings: list[str] = field(default_factory=list)
    fetched_at: float | None = None


# --- parsing ---------------------------------------------------------------------------


#: What the registry's schema allows as an agent id (it names files and is typed after --agent).
_ID = re.compile(r"[a-z][a-z0-9-]{0,127}")


class _BadEntry(ValueError):
    pass


def _str(entry: Mapping[str, Any], key: str, *, required: bool = True) -> str | None:
    value = entry.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise _BadEntry(
            f"{key!r} must be a non-empty string" if required else f"{key!r} must be a string"
        )
    return value


def _str_list(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _BadEntry(f"{what} must be a list of strings")
    return list(value)


def _str_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _BadEntry(f"{what} must be an object of strings")
    return dict(value)


def _package(value: Any, kind: str) -> Package | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _BadEntry(f"distribution.{kind} must be an object")
    package = _str(value, "package")
    assert package is not None
    return Package(
        package,
        _str_list(value.get("args"), f"{kind}.args"),
        _str_map(value.get("env"), f"{kind}.env"),
    )


def _binaries(value: Any) -> dict[str, Binary]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _BadEntry("distribution.binary must be an object of platforms")
    out: dict[str, Binary] = {}
    for plat, target in value.items():
        if not isinstance(target, dict):
            raise _BadEntry(f"binary.{plat} must be an object")
        archive, cmd = _str(target, "archive"), _str(target, "cmd")
        assert archive is not None and cmd is not None
        out[plat] = Binary(
            archive,
            cmd,
            _str_list(target.get("args"), f"binary.{plat}.args"),
            _str_map(target.get("env"), f"binary.{plat}.env"),
        )
    return out


def parse_entry(entry: Any) -> RegistryAgent:
    """One agent entry; :class:`ValueError` saying what is wrong with it."""
    if not isinstance(entry, dict):
        raise _BadEntry("an entry must be an object")
    agent_id = _str(entry, "id")
    assert agent_id is not None
    if not _ID.fullmatch(agent_id):
        raise _BadEntry(f"id {agent_id[:80]!r} is not lowercase letters, digits and hyphens")
    try:
        dist = entry.get("distribution")
        if not isinstance(dist, dict):
            raise _BadEntry("'distribution' must be an object")
        agent = RegistryAgent(
            id=agent_id,
            name=_str(entry, "name") or agent_id,
            version=_str(entry, "version") or "",
            description=_str(entry, "description", required=False) or "",
            repository=_str(entry, "repository", required=False),
            authors=_str_list(entry.get("authors"), "'authors'"),
            license=_str(entry, "license", required=False),
            icon=_str(entry, "icon", required=False),
            binary=_binaries(dist.get("binary")),
            npx=_package(dist.get("npx"), "npx"),
            uvx=_package(dist.get("uvx"), "uvx"),
            raw=entry,
        )
    except _BadEntry as exc:
        raise _BadEntry(f"agent {agent_id!r}: {exc}") from None
    if not agent.kinds():
        raise _BadEntry(f"agent {agent_id!r}: no distribution (binary, npx or uvx)")
    return agent


def parse(text: str | bytes, url: str) -> Registry:
    """The registry document ``text`` read from ``url``. Not JSON, or not an object with an
    ``agents`` list: :class:`RegistryError`. A bad entry is left out, with a warning."""
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RegistryError(f"the agent registry {url} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("agents"), list):
        raise RegistryError(
            f"the agent registry {url} is not a registry: expected an object with an 'agents' list"
        )
    version = data.get("version")
    registry = Registry(version=version if isinstance(version, str) else "", agents={}, url=url)
    for n, entry in enumerate(data["agents"]):
        try:
            agent = parse_entry(entry)
        except ValueError as exc:
            registry.warnings.append(f"agent registry: entry {n + 1} skipped: {exc}")
            continue
        if agent.id in registry.agents:
            registry.warnings.append(
                f"agent registry: entry {n + 1} skipped: agent {agent.id!r} listed twice"
            )
            continue
        registry.agents[agent.id] = agent
    return registry


# --- where it comes from ---------------------------------------------------------------


def registry_url(configured: str | None = None) -> str:
    """``$ACPCLI_REGISTRY_URL``, else ``configured`` (the config's ``registry_url``), else the default."""
    return os.environ.get(URL_ENV) or configured or DEFAULT_URL


def _configured_url() -> str | None:
    try:
        from acpcli.config import load_config

        return load_config().registry_url
    except Exception:  # noqa: BLE001 - a broken config is reported by the commands that need it
        return None


def cache_dir() -> Path:
    from acpcli.paths import home_dir

    return home_dir() / "registry"


def _cache_files() -> tuple[Path, Path]:
    d = cache_dir()
    return d / "registry.json", d / "meta.json"


def _read_meta() -> dict[str, Any]:
    try:
        meta = json.loads(_cache_files()[1].read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def cached(url: str | None = None) -> Registry | None:
    """The cached registry of ``url`` (default: the configured one), any age; never fetches.
    None when there is none, or it cannot be read."""
    meta = _read_meta()
    if not meta:
        return None
    url = url or registry_url(_configured_url())
    if meta.get("url") != url:
        return None
    try:
        text = _cache_files()[0].read_bytes()
        registry = parse(text, url)
    except (OSError, RegistryError):
        return None
    fetched = meta.get("fetched_at")
    registry.fetched_at = float(fetched) if isinstance(fetched, (int, float)) else None
    return registry


def _write_cache(body: bytes, meta: dict[str, Any]) -> None:
    from acpcli.paths import ensure_dir

    try:
        ensure_dir(cache_dir())
        doc, meta_file = _cache_files()
        for path, data in ((doc, body), (meta_file, json.dumps(meta).encode())):
            tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
    except OSError:
        pass  # a read-only home: the registry is still used, just not kept


def _describe(exc: Exception) -> str:
    import httpx

    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out after {FETCH_TIMEOUT:g}s"
    if isinstance(exc, httpx.ConnectError):
        lowered = text.lower()
        if "certificate" in lowered or "ssl" in lowered or "tls" in lowered:
            return f"TLS error: {text}"
        if (
            "name or service" in lowered
            or "nodename" in lowered
            or "getaddrinfo" in lowered
            or "name resolution" in lowered
        ):
            return f"cannot resolve the host name ({text})"
        return f"cannot connect: {text}"
    if isinstance(exc, httpx.TooManyRedirects):
        return "too many redirects"
    return text.splitlines()[0]


def fetch(url: str, *, conditional: bool = True) -> Registry:
    """Ask the server for the registry (a conditional request when a copy of ``url`` is
    cached); cache and return it. A 304 renews the cached copy. Any failure: RegistryError."""
    import httpx

    meta = _read_meta() if conditional else {}
    headers = {"Accept": "application/json", "User-Agent": "acpcli"}
    have_copy = meta.get("url") == url and _cache_files()[0].is_file()
    if have_copy:
        if isinstance(meta.get("etag"), str):
            headers["If-None-Match"] = meta["etag"]
        if isinstance(meta.get("last_modified"), str):
            headers["If-Modified-Since"] = meta["last_modified"]
    try:
        with httpx.Client(timeout=FETCH_TIMEOUT, follow_redirects=True, max_redirects=5) as client:
            response = client.get(url, headers=headers)
            if response.status_code == 304 and have_copy:
                meta["fetched_at"] = time.time()
                _write_cache(_cache_files()[0].read_bytes(), meta)
                registry = cached(url)
                if registry is not None:
                    return registry
                return fetch(url, conditional=False)
            if response.status_code != 200:
                reason = response.reason_phrase or ""
                raise RegistryError(
                    f"cannot fetch the agent registry {url}: HTTP {response.status_code} {reason}".rstrip()
                )
            body = response.content
    except httpx.HTTPError as exc:
        raise RegistryError(f"cannot fetch the agent registry {url}: {_describe(exc)}") from None
    except ValueError as exc:  # an URL httpx cannot use
        raise RegistryError(f"cannot fetch the agent registry {url!r}: {exc}") from None
    if len(body) > MAX_SIZE:
        raise RegistryError(f"the agent registry {url} is larger than {MAX_SIZE} bytes")
    registry = parse(body, url)
    now = time.time()
    registry.fetched_at = now
    _write_cache(
        body,
        {
            "url": url,
            "etag": response.headers.get("etag"),
            "last_modified": response.headers.get("last-modified"),
            "fetched_at": now,
        },
    )
    return registry


def _note(text: str) -> None:
    from acpcli import notices

    notices.warn("registry-offline", text)


def load(*, refresh: bool = False, note: Callable[[str], None] | None = None) -> Registry:
    """The registry: the cached copy while younger than :data:`TTL` (unless ``refresh``),
    else fetched. When fetching fails, the cached copy of any age, with a one-line ``note``
    (default: a warning on stderr); none: the fetch's :class:`RegistryError`."""
    url = registry_url(_configured_url())
    copy = cached(url)
    if (
        copy is not None
        and not refresh
        and copy.fetched_at is not None
        and time.time() - copy.fetched_at < TTL
    ):
        return _announced(copy)
    try:
        return _announced(fetch(url))
    except RegistryError as exc:
        if copy is None:
            raise
        (note or _note)(f"{exc}; using the copy cached {_age(copy.fetched_at)}")
        return _announced(copy)


def _announced(registry: Registry) -> Registry:
    """``registry``, its skipped entries said as warnings on stderr."""
    from acpcli import notices

    for text in registry.warnings:
        notices.warn("registry-entry", text)
    return registry


def _age(when: float | None) -> str:
    if when is None:
        return "earlier"
    seconds = max(0, int(time.time() - when))
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


def find(agent_id: str) -> RegistryAgent | None:
    """The registry agent ``agent_id``: from the cache when it has it (any age), else from a
    fetch. None when the registry does not list it; RegistryError when it cannot be had."""
    url = registry_url(_configured_url())
    copy = cached(url)
    if copy is not None and agent_id in copy.agents:
        return _announced(copy).agents[agent_id]
    return load(refresh=copy is not None).agents.get(agent_id)


# --- how it would run ------------------------------------------------------------------


def platform_key() -> str:
    """This machine as the registry names platforms: ``linux-x86_64``, ``darwin-aarch64``..."""
    import platform

    system = {"Darwin": "darwin", "Linux": "linux", "Windows": "windows"}.get(
        platform.system(), platform.system().lower()
    )
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return f"{system}-{machine}"


def launch(agent: RegistryAgent, which: Callable[[str], str | None] | None = None) -> Launch:
    """How ``agent`` would run here: npx when it has an npx package and ``npx`` is on PATH,
    else uvx likewise, else its binary for this platform (``found`` None: see
    :mod:`acpcli.agent_install`)."""
    if which is None:
        import shutil

        which = shutil.which
    if agent.npx is not None and (found := which("npx")):
        return Launch(
            "npx", ["npx", "-y", agent.npx.package, *agent.npx.args], dict(agent.npx.env), found
        )
    if agent.uvx is not None and (found := which("uvx")):
        return Launch(
            "uvx", ["uvx", agent.uvx.package, *agent.uvx.args], dict(agent.uvx.env), found
        )
    target = agent.binary.get(platform_key())
    if target is not None:
        return Launch("binary", [target.cmd, *target.args], dict(target.env), None)
    if agent.npx is not None:
        return Launch(
            "npx", ["npx", "-y", agent.npx.package, *agent.npx.args], dict(agent.npx.env), None
        )
    if agent.uvx is not None:
        return Launch("uvx", ["uvx", agent.uvx.package, *agent.uvx.args], dict(agent.uvx.env), None)
    return Launch("binary", [], {}, None)


def not_runnable(agent: RegistryAgent, how: Launch) -> str:
    """Why ``agent`` cannot be started here (``how`` found no launcher), one line."""
    if how.how == "binary":
        target = agent.binary.get(platform_key())
        if target is not None:
            return (
                f"registry agent {agent.id!r} runs its binary, not installed yet: "
                f"`acpcli agents install {agent.id}` downloads {target.archive}"
            )
        plats = ", ".join(sorted(agent.binary)) or "none"
        return f"registry agent {agent.id!r} has no distribution for {platform_key()} (binaries for: {plats})"
    return f"registry agent {agent.id!r} runs with {how.how}, which is not on PATH"
