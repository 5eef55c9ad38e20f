"""Secrets masked before anything is written or shown: the one redaction module.

Its callers are the wire log (``--log-file``, ``$ACPCLI_LOG_FILE``) and ``--raw``, both through
:func:`redact_frame` in :mod:`acpcli.wire.wiretap`. The session index needs no masking: it keeps MCP
server *names* only (see :mod:`acpcli.history.index`). What counts as a secret, and how it is
masked (``***``):

* **env and headers** -- every value of an ``env`` or ``headers`` entry, anywhere in a message
  (MCP servers, ``terminal/create``): ``[{name, value}]`` (the ACP shape) and ``{NAME: value}``
  (the shape MCP config files use). Names are kept.
* **MCP server arguments** (``args`` of a server under ``mcpServers``, and of a definition
  passed to :func:`redact_server`):

  - ``--token X``, ``--api-key=X``, ``-password X``: the value after a flag whose name looks
    secret (:func:`secret_name`), whether joined by ``=`` or the next argument;
  - ``NAME=VALUE`` and ``Name: value`` (an env assignment, an HTTP header) with a secret name;
  - a URL argument, masked as below;
  - one-letter flags (``-p``: a port or a password?) are ambiguous and left alone.

* **URLs** (``url`` of a server, URL arguments): the whole userinfo (``user:pw@`` and a bare
  ``token@`` alike become ``***@``), every query value and every ``name=value`` of the fragment
  (``#access_token=...``). Scheme, host, port and path are kept: they say which server it is.
* **Other fields** of a custom (``_``-prefixed) transport whose key looks secret.

A name "looks secret" when it contains token, secret, passw, pwd, auth, credential, cookie,
session, bearer, or has ``key``/``sig``/``signature``/``pat`` as a word or ends in ``key``
(``apikey``, ``X-Api-Key``, ``access_key``; not ``keyboard`` or ``monkeys``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "***"

#: Substrings that make a name secret wherever they appear.
_SECRET_PARTS = ("token", "secret", "passw", "pwd", "auth", "credential", "cookie", "session", "bearer", "private")
#: Words (split at anything not a letter or digit) that make a name secret.
_SECRET_WORDS = frozenset({"key", "keys", "sig", "signature", "pat", "pass", "apikey", "jwt", "otp", "sas"})
#: Bytes whose presence in a frame means it may carry a secret (a cheap test before parsing).
MARKERS = (b'"env"', b'"headers"', b'"mcpServers"')

_WORD = re.compile(r"[^a-z0-9]+")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_FLAG = re.compile(r"^(--?)([A-Za-z][A-Za-z0-9_.-]+)(=(.*))?$", re.DOTALL)
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)=(.+)$", re.DOTALL)
_HEADER = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*)\s*:\s*(.+)$", re.DOTALL)


def secret_name(name: str) -> bool:
    """True when ``name`` (a flag, variable, header or query key) looks like it holds a secret."""
    lower = name.lower()
    if any(part in lower for part in _SECRET_PARTS):
        return True
    words = [w for w in _WORD.split(lower) if w]
    return any(w in _SECRET_WORDS for w in words) or (bool(words) and words[-1].endswith("key"))


def redact_url(url: str) -> str:
    """``url`` with its userinfo, query values and fragment values masked."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = _mask_pairs(parts.query) if parts.query else ""
    fragment = _mask_pairs(parts.fragment) if "=" in parts.fragment else parts.fragment
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _mask_pairs(text: str) -> str:
    """``a=1&b&c=3`` → ``a=***&***&c=***``: names kept as written, a value-less item masked
    whole (it may be a bare token)."""
    return "&".join(
        f"{item.split('=', 1)[0]}={REDACTED}" if "=" in item else (REDACTED if item else item)
        for item in text.split("&")
    )


def redact_args(args: Iterable[Any]) -> list[Any]:
    """A copy of a command's arguments with secret values masked (see the module docstring)."""
    out: list[Any] = []
    mask_next = False
    for arg in args:
        if not isinstance(arg, str):
            out.append(arg)
            mask_next = False
            continue
        if mask_next and not arg.startswith("--"):
            out.append(REDACTED)
            mask_next = False
            continue
        mask_next = False
        out.append(_redact_arg(arg))
        flag = _FLAG.match(arg)
        if flag is not None and flag.group(3) is None and secret_name(flag.group(2)):
            mask_next = True  # --token VALUE
    return out


def _redact_arg(arg: str) -> str:
    flag = _FLAG.match(arg)
    if flag is not None:
        dashes, name, joined, value = flag.groups()
        if joined is not None and secret_name(name):
            return f"{dashes}{name}={REDACTED}"
        if joined is not None and _URL.match(value):
            return f"{dashes}{name}={redact_url(value)}"
        return arg
    if _URL.match(arg):
        return redact_url(arg)
    assign = _ASSIGN.match(arg)
    if assign is not None:
        name, value = assign.groups()
        if secret_name(name):
            return f"{name}={REDACTED}"
        return f"{name}={redact_url(value)}" if _URL.match(value) else arg
    header = _HEADER.match(arg)
    if header is not None and secret_name(header.group(1)):
        return f"{header.group(1)}: {REDACTED}"
    return arg


def _mask_entries(entries: Any) -> Any:
    """``env``/``headers`` with every value masked; names kept."""
    if isinstance(entries, list):
        return [
            {**item, "value": REDACTED} if isinstance(item, Mapping) and "value" in item else item
            for item in entries
        ]
    if isinstance(entries, Mapping):
        return {name: REDACTED if isinstance(value, str) else value for name, value in entries.items()}
    return entries


def redact_server(server: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of one MCP server definition (any shape) with every secret masked."""
    out: dict[str, Any] = {}
    for key, value in server.items():
        if key in ("env", "headers"):
            out[key] = _mask_entries(value)
        elif key == "args" and isinstance(value, list):
            out[key] = redact_args(value)
        elif key == "url" and isinstance(value, str):
            out[key] = redact_url(value)
        elif key not in ("name", "type", "command") and isinstance(value, str) and secret_name(key):
            out[key] = REDACTED
        else:
            out[key] = value
    return out


def redact_value(value: Any) -> Any:
    """A copy of a decoded JSON message with every secret masked: ``env``/``headers`` anywhere,
    every server under ``mcpServers`` (a list, or the config files' mapping)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, child in value.items():
            if key in ("env", "headers"):
                out[key] = redact_value(_mask_entries(child))
            elif key == "mcpServers" and isinstance(child, list):
                out[key] = [redact_value(redact_server(s)) if isinstance(s, Mapping) else s for s in child]
            elif key == "mcpServers" and isinstance(child, Mapping):
                out[key] = {
                    name: redact_value(redact_server(s)) if isinstance(s, Mapping) else s for name, s in child.items()
                }
            else:
                out[key] = redact_value(child)
        return out
    if isinstance(value, list):
        return [redact_value(child) for child in value]
    return value


def redact_frame(frame: bytes) -> bytes:
    """A JSON-RPC frame with its secrets masked, re-serialized when anything changed.

    A frame without any of :data:`MARKERS` cannot carry a secret and is returned unchanged
    (byte for byte), as is one that is not JSON.
    """
    if not any(marker in frame for marker in MARKERS):
        return frame
    try:
        message = json.loads(frame)
    except (ValueError, RecursionError):
        return frame
    try:
        redacted = redact_value(message)
    except RecursionError:  # nested deeper than anything acpcli sends: not built from a config
        return frame
    if redacted == message:
        return frame
    return json.dumps(redacted, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace")
