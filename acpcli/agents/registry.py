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

Every download (the registry document here, an agent's archive in
:mod:`acpcli.agents.install`) goes through :func:`download`: a size cap counted while the body
arrives (never after), an idle timeout for each read, and an overall deadline that also
bounds a server trickling one byte at a time (``ACPCLI_DOWNLOAD_DEADLINE`` changes it).

A registry entry is data, never a command line: its npx/uvx ``package`` must be a package
name with an optional version (npm's or PyPI's naming rules), it is passed after ``--`` so
that the launcher cannot read it (or the ``args`` after it) as its own options, and an
``env`` that would configure the launcher itself (``npm_config_*``, ``NODE_OPTIONS``,
``UV_*``, ``PATH``, ``LD_*``) is refused: such an entry is skipped with a warning.

Nothing here touches the network but :func:`fetch` (and :func:`load`, which may call it);
httpx is imported there only, so ``--help`` and completion never load it.
"""

from __future__ import annotations

import functools
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
#: The largest registry document accepted (bytes), counted as it arrives.
MAX_SIZE = 16 * 1024 * 1024
#: Seconds the whole registry fetch may take, however steadily the server trickles.
REGISTRY_DEADLINE = 120.0
#: Seconds an agent's archive download may take in all.
ARCHIVE_DEADLINE = 600.0
#: Sets both deadlines (seconds): for a slow link, or a test.
DEADLINE_ENV = "ACPCLI_DOWNLOAD_DEADLINE"
#: How many skipped entries are described one by one (the rest are counted).
MAX_WARNINGS = 20


@dataclass(slots=True)
class Package:
    """An ``npx`` or ``uvx`` distribution: the package, its arguments, env additions."""

    package: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Binary:
    """A binary distribution for one platform (``linux-x86_64`` ...)."""

    archive: str
    cmd: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
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
    skipped: int = 0  # bad entries left out (the first MAX_WARNINGS are in ``warnings``)

    def skip(self, text: str) -> None:
        self.skipped += 1
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(text)


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


#: An npm package: ``name`` or ``@scope/name``, then optionally ``@version``, ``@tag`` or
#: ``@range`` (npm's naming rules; never a leading ``-`` or ``.``, never a URL or a path).
_NPM_SPEC = re.compile(
    r"(?:@[A-Za-z0-9~][A-Za-z0-9._~-]*/)?[A-Za-z0-9~][A-Za-z0-9._~-]*"
    r"(?:@[A-Za-z0-9~^<>=*][A-Za-z0-9._+~^<>=*-]*)?"
)
#: A PyPI requirement as uvx takes it: a name (PEP 508), optional ``[extras]``, then
#: ``@version`` or version specifiers (``==1.2``, ``>=1,<2``).
_PYPI_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_PYPI_VERSION = r"[A-Za-z0-9*][A-Za-z0-9.*!+_-]*"
_PYPI_SPECIFIER = rf"(?:===|==|!=|~=|>=|<=|<|>){_PYPI_VERSION}"
_PYPI_SPEC = re.compile(
    rf"{_PYPI_NAME}(?:\[{_PYPI_NAME}(?:,{_PYPI_NAME})*\])?"
    rf"(?:@{_PYPI_VERSION}|{_PYPI_SPECIFIER}(?:,{_PYPI_SPECIFIER})*)?"
)
_SPECS = {"npx": (_NPM_SPEC, "an npm package name (name@version)"), "uvx": (_PYPI_SPEC, "a PyPI package name (name==version)")}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _launcher_setting(kind: str, key: str) -> bool:
    """Whether the environment variable ``key`` would configure how ``kind`` (npx, uvx,
    binary) finds or loads what it runs, rather than being for the agent."""
    upper = key.upper()
    if upper == "PATH" or upper.startswith(("LD_", "DYLD_")):
        return True
    if kind == "npx":
        return upper.startswith("NPM_CONFIG_") or upper == "NODE_OPTIONS"
    if kind == "uvx":
        return upper.startswith("UV_")
    return False


def _env(value: Any, kind: str, what: str) -> dict[str, str]:
    env = _str_map(value, what)
    for key, text in env.items():
        if not _ENV_NAME.fullmatch(key) or "\0" in text:
            raise _BadEntry(f"{what}: {key[:80]!r} is not an environment variable name, or its value holds a NUL")
        if _launcher_setting(kind, key):
            raise _BadEntry(f"{what} sets {key[:80]}, which would configure {kind} itself rather than the agent")
    return env


def _args(value: Any, what: str) -> list[str]:
    args = _str_list(value, what)
    if any("\0" in a for a in args):
        raise _BadEntry(f"{what} holds a NUL character")
    return args


def _package(value: Any, kind: str) -> Package | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _BadEntry(f"distribution.{kind} must be an object")
    package = _str(value, "package")
    assert package is not None
    pattern, what = _SPECS[kind]
    if len(package) > 256 or not pattern.fullmatch(package):
        raise _BadEntry(f"{kind} package {package[:80]!r} is not {what}")
    return Package(
        package,
        _args(value.get("args"), f"{kind}.args"),
        _env(value.get("env"), kind, f"{kind}.env"),
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
        if "\0" in archive or "\0" in cmd:
            raise _BadEntry(f"binary.{plat}: a NUL character in 'archive' or 'cmd'")
        out[plat] = Binary(
            archive,
            cmd,
            _args(target.get("args"), f"binary.{plat}.args"),
            _env(target.get("env"), "binary", f"binary.{plat}.env"),
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
    except RecursionError:  # [[[[…]]]]: deeper than the parser goes
        raise RegistryError(f"the agent registry {url} is not valid JSON: nested too deeply") from None
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
            registry.skip(f"agent registry: entry {n + 1} skipped: {exc}")
            continue
        if agent.id in registry.agents:
            registry.skip(f"agent registry: entry {n + 1} skipped: agent {agent.id!r} listed twice")
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
    return _cache_files()[0].parent


def _cache_files() -> tuple[Path, Path]:
    from acpcli.agents import registry_cache

    return registry_cache()


def _read_meta() -> dict[str, Any]:
    try:
        meta = json.loads(_cache_files()[1].read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _fetched_at(meta: Mapping[str, Any]) -> float | None:
    fetched = meta.get("fetched_at")
    return float(fetched) if isinstance(fetched, (int, float)) else None


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
    registry.fetched_at = _fetched_at(meta)
    return registry


def _write_cache(body: bytes, meta: dict[str, Any]) -> None:
    from acpcli.paths import ensure_dir

    try:
        ensure_dir(cache_dir())
        doc, meta_file = _cache_files()
        for path, data in ((doc, body), (meta_file, json.dumps(meta).encode())):
            tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
            try:
                tmp.write_bytes(data)
                os.replace(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only home or a full disk: the registry is still used, just not kept


def deadline(default: float) -> float:
    """The overall deadline of one download in seconds: ``ACPCLI_DOWNLOAD_DEADLINE`` when
    set, else ``default``. Not a positive number: :class:`~acpcli.errors.ConfigError`."""
    from acpcli.errors import ConfigError

    raw = os.environ.get(DEADLINE_ENV)
    if raw is None or not raw.strip():
        return default
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < float("inf"):
        raise ConfigError(f"{DEADLINE_ENV} must be a number of seconds greater than 0; got {raw[:40]!r}")
    return seconds


class _Watchdog:
    """The overall deadline of one download. httpcore reports every connection it opens
    through the ``trace`` request extension; when the deadline passes, each of their sockets
    is shut down, which ends whatever read is waiting (the status line and headers too, that
    a server may trickle a byte at a time within any idle timeout)."""

    def __init__(self, seconds: float) -> None:
        import threading

        self.fired = False
        self._sockets: list[Any] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def trace(self, event: str, info: Mapping[str, Any]) -> None:
        if not event.endswith("connect_tcp.complete"):  # "connection.", "socks." (a SOCKS proxy)
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            fired = self.fired
        if fired:
            self._shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            sockets = list(self._sockets)
        for sock in sockets:
            self._shut(sock)

    @staticmethod
    def _shut(sock: Any) -> None:
        import socket

        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


@dataclass
class Downloaded:
    """What :func:`download` got: the status and headers; the body went to ``write``."""

    status: int
    reason: str
    headers: dict[str, str]
    size: int = 0


def download(
    url: str,
    write: Callable[[bytes], Any],
    *,
    limit: int,
    seconds: float,
    fail: Callable[[str], Exception],
    headers: Mapping[str, str] | None = None,
    progress: Callable[[int, int | None], None] | None = None,
) -> Downloaded:
    """GET ``url`` and pass the body to ``write`` as it arrives (only for a 200: another
    status is returned with no body read). At most ``limit`` bytes (a larger Content-Length
    is refused before any is read), within ``seconds`` overall and :data:`FETCH_TIMEOUT`
    of silence; redirects are followed (at most 5). Any of that failing, or the network:
    ``fail(reason)`` is raised. What ``write`` raises (a full disk) is raised as it is."""
    import httpx

    def overdue() -> Exception:
        return fail(f"took longer than {seconds:g}s in all (the server is too slow; {DEADLINE_ENV} allows longer)")

    watchdog = _Watchdog(seconds)
    try:
        with watchdog, httpx.Client(timeout=min(FETCH_TIMEOUT, seconds), follow_redirects=True, max_redirects=5) as client:
            request = client.build_request(
                "GET", url, headers={"User-Agent": "acpcli", **(headers or {})}, extensions={"trace": watchdog.trace}
            )
            response = client.send(request, stream=True)
            try:
                got = Downloaded(response.status_code, response.reason_phrase or "", dict(response.headers))
                if response.status_code != 200:
                    return got
                try:
                    total: int | None = int(response.headers.get("content-length") or 0) or None
                except ValueError:
                    total = None
                if total is not None and total > limit:
                    raise fail(f"it is {total} bytes, more than the {limit} accepted")
                for chunk in response.iter_bytes():
                    got.size += len(chunk)
                    if got.size > limit:
                        raise fail(f"it is larger than the {limit} bytes accepted")
                    write(chunk)
                    if progress is not None:
                        progress(got.size, total)
                if watchdog.fired:  # a body without a length ends where the socket was shut
                    raise overdue()
                return got
            finally:
                response.close()
    except httpx.HTTPError as exc:
        # a silence as long as the whole deadline (a deadline under the idle timeout) is
        # the deadline too, whichever of the two noticed first
        if watchdog.fired or (isinstance(exc, httpx.TimeoutException) and seconds <= FETCH_TIMEOUT):
            raise overdue() from None
        raise fail(_describe(exc)) from None
    except (ValueError, httpx.InvalidURL) as exc:  # an URL httpx cannot use
        raise fail(str(exc)) from None


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
    cached); cache and return it. A 304 renews the cached copy. Any failure: RegistryError.
    The body is capped at :data:`MAX_SIZE` while it arrives, the whole fetch at
    :data:`REGISTRY_DEADLINE` seconds (see :func:`download`)."""
    meta = _read_meta() if conditional else {}
    headers = {"Accept": "application/json"}
    have_copy = meta.get("url") == url and _cache_files()[0].is_file()
    if have_copy:
        if isinstance(meta.get("etag"), str):
            headers["If-None-Match"] = meta["etag"]
        if isinstance(meta.get("last_modified"), str):
            headers["If-Modified-Since"] = meta["last_modified"]

    def fail(reason: str) -> RegistryError:
        error = RegistryError(f"cannot fetch the agent registry {url}: {reason}")
        error.reason = reason
        return error

    body = bytearray()
    response = download(
        url, body.extend, limit=MAX_SIZE, seconds=deadline(REGISTRY_DEADLINE), fail=fail, headers=headers
    )
    if response.status == 304 and have_copy:
        meta["fetched_at"] = time.time()
        try:
            _write_cache(_cache_files()[0].read_bytes(), meta)
        except OSError:
            pass
        registry = cached(url)
        if registry is not None:
            return registry
        return fetch(url, conditional=False)
    if response.status != 200:
        raise fail(f"HTTP {response.status} {response.reason}".rstrip())
    registry = parse(bytes(body), url)
    now = time.time()
    registry.fetched_at = now
    _write_cache(
        bytes(body),
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
    (default: a warning on stderr); none: the fetch's :class:`RegistryError`. The cached
    copy is read only when it is used: a registry is never held twice in memory."""
    url = registry_url(_configured_url())
    meta = _read_meta()
    when = _fetched_at(meta) if meta.get("url") == url else None
    if not refresh and when is not None and time.time() - when < TTL:
        copy = cached(url)
        if copy is not None:
            return _announced(copy)
    try:
        return _announced(fetch(url))
    except RegistryError as exc:
        copy = cached(url)
        if copy is None:
            raise
        (note or _note)(f"{exc}; using the copy cached {_age(copy.fetched_at)}")
        return _announced(copy)


def _announced(registry: Registry) -> Registry:
    """``registry``, its skipped entries said as warnings on stderr."""
    from acpcli import notices

    for text in registry.warnings:
        notices.warn("registry-entry", text)
    if registry.skipped > len(registry.warnings):
        notices.warn("registry-entries", f"agent registry: {registry.skipped - len(registry.warnings)} more entries skipped")
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


@functools.cache
def platform_key() -> str:
    """This machine as the registry names platforms: ``linux-x86_64``, ``darwin-aarch64``..."""
    import platform

    system = {"Darwin": "darwin", "Linux": "linux", "Windows": "windows"}.get(
        platform.system(), platform.system().lower()
    )
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return f"{system}-{machine}"


def package_argv(kind: str, package: Package) -> list[str]:
    """The command line of an npx or uvx distribution. The package comes after ``--``, so
    neither it nor the arguments after it can be read as the launcher's own options (the
    package is also checked when the registry is read: :func:`parse_entry`)."""
    if kind == "npx":
        return ["npx", "-y", "--", package.package, *package.args]
    return ["uvx", "--", package.package, *package.args]


def launch(agent: RegistryAgent, which: Callable[[str], str | None] | None = None) -> Launch:
    """How ``agent`` would run here: npx when it has an npx package and ``npx`` is on PATH,
    else uvx likewise, else its binary for this platform (``found`` None: see
    :mod:`acpcli.agents.install`)."""
    if which is None:
        import shutil

        which = shutil.which
    for kind, package in (("npx", agent.npx), ("uvx", agent.uvx)):
        if package is not None and (found := which(kind)):
            return Launch(kind, package_argv(kind, package), dict(package.env), found)
    target = agent.binary.get(platform_key())
    if target is not None:
        return Launch("binary", [target.cmd, *target.args], dict(target.env), None)
    for kind, package in (("npx", agent.npx), ("uvx", agent.uvx)):
        if package is not None:
            return Launch(kind, package_argv(kind, package), dict(package.env), None)
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
