"""Session settings: v1 modes and v1/v2 config options, over one stored ``config`` dict.

A session's settings are one flat dict kept in its record (so they persist with the session and
survive a load in another process): ``mode``, ``model``, ``effort`` (select values) and
``brave`` (a boolean). Everything the wire shows is derived from it, so the v1 ``modes`` state,
the ``mode`` config option and ``current_mode_update`` can never disagree.

Invariants:

- v1 options are named by ``id``, v2 options by ``configId``; only v1 has ``boolean`` options,
  and only for a client that advertised ``clientCapabilities.session.configOptions.boolean``
  (``boolean=True`` below). The boolean option is never shown, nor settable, otherwise.
- A rejected change leaves the dict untouched (validate first, then assign).

Pure functions, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acpcli.errors import RpcError


@dataclass(frozen=True)
class Select:
    """A ``select`` option: (value, name, description) triples, in display order."""

    key: str
    name: str
    description: str
    category: str
    values: tuple[tuple[str, str, str], ...]
    default: str


MODE = Select(
    key="mode", name="Session Mode", description="How much the agent may do on its own", category="mode",
    values=(
        ("ask", "Ask", "Request permission before making any changes"),
        ("code", "Code", "Write and modify code with full tool access"),
        ("plan", "Plan", "Design and plan without changing anything"),
    ),
    default="ask",
)
MODEL = Select(
    key="model", name="Model", description="Which (pretend) model answers", category="model",
    values=(
        ("demo-fast", "Demo Fast", "The quick one"),
        ("demo-smart", "Demo Smart", "The thorough one"),
    ),
    default="demo-fast",
)
EFFORT = Select(
    key="effort", name="Reasoning effort", description="How long the agent thinks", category="thought_level",
    values=(("low", "Low", "Think briefly"), ("medium", "Medium", "Think a while"), ("high", "High", "Think hard")),
    default="medium",
)
SELECTS = (MODE, MODEL, EFFORT)

#: The boolean option (v1, and only for clients that advertised boolean support).
BRAVE_KEY = "brave"
BRAVE_NAME = "Brave mode"
BRAVE_DESCRIPTION = "Skip permission prompts and act autonomously"

_SELECT_BY_KEY = {s.key: s for s in SELECTS}


def current(config: dict[str, Any]) -> dict[str, Any]:
    """The effective settings: stored values where valid, defaults elsewhere."""
    out: dict[str, Any] = {}
    for select in SELECTS:
        value = config.get(select.key)
        out[select.key] = value if value in _values(select) else select.default
    out[BRAVE_KEY] = config.get(BRAVE_KEY) is True
    return out


def modes_state(config: dict[str, Any]) -> dict[str, Any]:
    """The v1 ``modes`` field (``SessionModeState``) of a session setup response."""
    return {
        "currentModeId": current(config)["mode"],
        "availableModes": [{"id": v, "name": n, "description": d} for v, n, d in MODE.values],
    }


def config_options(config: dict[str, Any], *, version: int, boolean: bool) -> list[dict[str, Any]]:
    """The complete ``configOptions`` list in ``version``'s shape (see the module docstring)."""
    now = current(config)
    key_field = "configId" if version >= 2 else "id"
    out: list[dict[str, Any]] = [
        {
            key_field: s.key,
            "name": s.name,
            "description": s.description,
            "category": s.category,
            "type": "select",
            "currentValue": now[s.key],
            "options": [{"value": v, "name": n, "description": d} for v, n, d in s.values],
        }
        for s in SELECTS
    ]
    if boolean:  # callers pass False for v2: its clients cannot advertise boolean options
        out.append({key_field: BRAVE_KEY, "name": BRAVE_NAME, "description": BRAVE_DESCRIPTION,
                    "type": "boolean", "currentValue": now[BRAVE_KEY]})
    return out


def updates(config: dict[str, Any], *, modes: bool, options: bool, boolean: bool) -> list[dict[str, Any]]:
    """Canonical session updates announcing the current settings: ``current_mode_update`` when
    modes are advertised, ``config_option_update`` (v2-shaped: ``configId``; the v1 translator
    renames it) when config options are."""
    out: list[dict[str, Any]] = []
    if modes:
        out.append({"sessionUpdate": "current_mode_update", "currentModeId": current(config)["mode"]})
    if options:
        out.append({"sessionUpdate": "config_option_update",
                    "configOptions": config_options(config, version=2, boolean=boolean)})
    return out


def set_mode(config: dict[str, Any], mode_id: Any) -> None:
    """Apply v1 ``session/set_mode``; -32602 unless ``mode_id`` is an available mode."""
    if mode_id not in _values(MODE):
        raise RpcError(RpcError.INVALID_PARAMS, f"unknown mode {mode_id!r}: one of {', '.join(_values(MODE))}")
    config[MODE.key] = mode_id


def set_option(config: dict[str, Any], params: dict[str, Any], *, version: int, boolean: bool) -> str:
    """Apply ``session/set_config_option``; returns the changed option's id.

    v1 params: ``configId`` and either ``value`` (a value id) or ``type: "boolean"`` with a
    boolean ``value``; v2: ``configId`` and a string ``value``. -32602 for an unknown option,
    a value not offered, or a value of the wrong type.
    """
    config_id = params.get("configId")
    value = params.get("value")
    if not isinstance(config_id, str):
        raise RpcError(RpcError.INVALID_PARAMS, "configId must be a string")
    if config_id == BRAVE_KEY and boolean and version < 2:
        if params.get("type") != "boolean" or not isinstance(value, bool):
            raise RpcError(RpcError.INVALID_PARAMS, f"{config_id} is a boolean option: send type \"boolean\" "
                                                    "and a boolean value")
        config[BRAVE_KEY] = value
        return config_id
    select = _SELECT_BY_KEY.get(config_id)
    if select is None:
        raise RpcError(RpcError.INVALID_PARAMS, f"unknown config option {config_id!r}")
    # v1: an unknown ``type`` with a string value reads as a value id (schema); "boolean" does not.
    if version < 2 and params.get("type") == "boolean":
        raise RpcError(RpcError.INVALID_PARAMS, f"{config_id} is a select option, not a boolean")
    if not isinstance(value, str) or value not in _values(select):
        raise RpcError(RpcError.INVALID_PARAMS,
                       f"{value!r} is not a value of {config_id}: one of {', '.join(_values(select))}")
    config[config_id] = value
    return config_id


def status_line(config: dict[str, Any], *, boolean: bool) -> str:
    """``mode=<id> model=<id> effort=<id>`` (plus ``brave=<bool>`` when that option is shown)."""
    now = current(config)
    line = f"mode={now['mode']} model={now['model']} effort={now['effort']}"
    if boolean:
        line += f" brave={'true' if now[BRAVE_KEY] else 'false'}"
    return line


def _values(select: Select) -> tuple[str, ...]:
    return tuple(v for v, _, _ in select.values)
