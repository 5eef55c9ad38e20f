"""The content blocks of a prompt: checked against what was advertised, and described.

Every agent must accept ``text`` and ``resource_link``. ``resource`` (embedded context) is
advertised unless ``--without embedded-context``; ``image`` and ``audio`` only with
``--with image`` / ``--with audio``. A block of a kind not advertised is refused before the turn
starts (-32602, logged as ``UNADVERTISED FIELD SENT: <kind> content in session/prompt``), as
is a malformed block. The turn's answer then lists each non-text block, one line each::

    received resource_link file:///x/y.txt
    received resource file:///x/y.txt (123 chars)
    received image image/png (45 bytes)
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from acpcli.demo_agent.caps import refuse_field
from acpcli.demo_agent.flags import Options
from acpcli.errors import RpcError

METHOD = "session/prompt"


def check_prompt(prompt: list[Any], options: Options) -> list[str]:
    """Validate every block of ``prompt``; return one ``received ...`` line per non-text block."""
    lines = []
    for i, block in enumerate(prompt):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise _bad(f"prompt[{i}] is not a content block")
        line = _describe(i, block, options)
        if line is not None:
            lines.append(line)
    return lines


def _describe(i: int, block: dict[str, Any], options: Options) -> str | None:
    kind = block["type"]
    if kind == "text":
        if not isinstance(block.get("text"), str):
            raise _bad(f"prompt[{i}].text must be a string")
        return None
    if kind == "resource_link":
        uri = _string(block, "uri", i)
        _string(block, "name", i)
        return f"received resource_link {uri}"
    if kind == "resource":
        if not options.has("embedded-context"):
            raise refuse_field("resource content", METHOD)
        resource = block.get("resource")
        if not isinstance(resource, dict):
            raise _bad(f"prompt[{i}].resource must be an object")
        uri = _string(resource, "uri", i)
        if isinstance(resource.get("text"), str):
            return f"received resource {uri} ({len(resource['text'])} chars)"
        if isinstance(resource.get("blob"), str):
            return f"received resource {uri} ({_decoded_size(resource['blob'], i)} bytes)"
        raise _bad(f"prompt[{i}].resource needs text or blob")
    if kind in ("image", "audio"):
        if not options.offers(kind):
            raise refuse_field(f"{kind} content", METHOD)
        mime = _string(block, "mimeType", i)
        return f"received {kind} {mime} ({_decoded_size(_string(block, 'data', i), i)} bytes)"
    if kind.startswith("_"):  # custom block types are the extension point: note and ignore
        return f"received {kind} (custom, ignored)"
    raise _bad(f"prompt[{i}] has unknown content type {kind!r}")


def _string(obj: dict[str, Any], key: str, i: int) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise _bad(f"prompt[{i}]: {key} must be a string")
    return value


def _decoded_size(data: str, i: int) -> int:
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        raise _bad(f"prompt[{i}]: data is not valid base64") from None


def _bad(message: str) -> RpcError:
    return RpcError(RpcError.INVALID_PARAMS, message)
