"""Session settings (v1 modes and models, v1/v2 config options) read alike, and the requests that change them.

Pure data, no I/O.

What the agent offers arrives in the session setup response (``modes`` in v1 only,
``configOptions`` in both), in ``set_config_option`` answers (always the complete list) and in
``current_mode_update`` / ``config_option_update`` notifications. The two versions differ in
small ways this module hides:

* a v1 option is named by ``id``, a v2 option by ``configId``;
* v1 knows ``select`` and (when the client advertised it) ``boolean`` options, v2 ``select``
  only; values of a ``select`` may be grouped (``[{groupId, name, options: [...]}]``);
* v1 also has the older ``modes`` (``session/set_mode``); the spec says a client that supports
  config options uses a ``category: "mode"`` option when there is one and falls back to
  ``modes`` only when there is not. v2 has no modes.
* v1 agents may also offer models the same older way (the unstable ``models`` state:
  ``availableModels``, ``currentModelId``; changed with ``session/set_model``), as gemini does.
  Read like modes: a ``category: "model"`` option wins when there is one.

Options of a type acpcli does not know are kept (so nothing is lost when state is shown or
stored) but cannot be set. Which value the person meant, and whether this connection may send
the change, is :mod:`acpcli.wire.capabilities`' call (``resolve``, ``change_request``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

#: ``/mode`` and ``/model`` look for the config option of this category first.
MODE, MODEL = "mode", "model"
#: Model-related parameters (context size, speed): shown with the model (the spec's advice).
MODEL_CONFIG = "model_config"


def option_id(option: dict[str, Any]) -> str | None:
    """An option's identifier: v1 ``id``, v2 ``configId``."""
    value = option.get("configId", option.get("id"))
    return value if isinstance(value, str) and value else None


def option_values(option: dict[str, Any]) -> list[dict[str, Any]]:
    """The selectable values of a ``select`` option, groups flattened, in the agent's order."""
    out: list[dict[str, Any]] = []
    for item in option.get("options") or ():
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("options"), list) and "value" not in item:  # a group
            out.extend(v for v in item["options"] if isinstance(v, dict) and isinstance(v.get("value"), str))
        elif isinstance(item.get("value"), str):
            out.append(item)
    return out


def value_name(option: dict[str, Any], value: Any = None) -> str:
    """How to show a value (the current one by default): its name when the agent gave one."""
    value = option.get("currentValue") if value is None else value
    if isinstance(value, bool):
        return "on" if value else "off"
    for item in option_values(option):
        if item.get("value") == value:
            return str(item.get("name") or value)
    return str(value) if value is not None else "?"


@dataclass(frozen=True)
class Choice:
    """One setting as the REPL lists it: what it is, its current value, what it may become."""

    key: str  # what the person types: the option id (or "mode" for v1 modes)
    name: str
    current: str  # shown value
    values: tuple[tuple[str, str, str], ...]  # (value, name, description); empty for booleans
    category: str | None = None
    kind: str = "select"  # "select", "boolean", "modes" (v1 session/set_mode), "models" (set_model) or unknown


def choices(
    config_options: Sequence[dict[str, Any]],
    modes: dict[str, Any] | None,
    current_mode: str | None,
    models: Sequence[dict[str, Any]] = (),
    current_model: str | None = None,
) -> list[Choice]:
    """Every setting the session offers, config options first (the agent's order), then the
    v1 modes and the v1 models (``availableModels``) when no config option of category
    ``mode`` / ``model`` stands in for them."""
    out: list[Choice] = []
    for option in config_options:
        key = option_id(option)
        if key is None:
            continue
        kind = option.get("type")
        kind = kind if isinstance(kind, str) else "select"
        values = tuple(_value(v["value"], v) for v in option_values(option))
        category = option.get("category") if isinstance(option.get("category"), str) else None
        out.append(Choice(key, str(option.get("name") or key), value_name(option), values, category, kind))
    if modes_available(modes) and not any(c.category == MODE for c in out):
        assert modes is not None
        current = current_mode or modes.get("currentModeId")
        values = tuple(
            _value(m["id"], m) for m in modes["availableModes"] if isinstance(m, dict) and isinstance(m.get("id"), str)
        )
        shown = next((name for value, name, _ in values if value == current), str(current))
        out.append(Choice(MODE, "Mode", shown, values, MODE, "modes"))
    model_values = tuple(
        _value(m["modelId"], m) for m in models if isinstance(m, dict) and isinstance(m.get("modelId"), str)
    )
    if model_values and not any(c.category == MODEL for c in out):
        shown = next((name for value, name, _ in model_values if value == current_model), str(current_model or "?"))
        out.append(Choice(MODEL, "Model", shown, model_values, MODEL, "models"))
    return out


def _value(value: str, item: dict[str, Any]) -> tuple[str, str, str]:
    description = item.get("description")
    return value, str(item.get("name") or value), description if isinstance(description, str) else ""


def modes_available(modes: Any) -> bool:
    """Whether a v1 ``modes`` state lists any mode."""
    return isinstance(modes, dict) and isinstance(modes.get("availableModes"), list) and bool(modes["availableModes"])


def find(found: Sequence[Choice], key: str) -> Choice | None:
    """The setting ``key`` names: an option id, else the first of that category (the spec
    says earlier options win ties), else a name, compared without case."""
    folded = key.casefold()
    tests: tuple[Callable[[Choice], bool], ...] = (
        lambda c: c.key == key,
        lambda c: c.key.casefold() == folded,
        lambda c: (c.category or "").casefold() == folded,
        lambda c: c.name.casefold() == folded,
    )
    for test in tests:
        for choice in found:
            if test(choice):
                return choice
    return None


def change_request(session_id: str, choice: Choice, value: str | bool) -> tuple[str, dict[str, Any]]:
    """The method and params that set ``choice`` to ``value``.

    v1 modes go through ``session/set_mode``, v1 models (``availableModels``) through
    ``session/set_model``; everything else through ``session/set_config_option``, a boolean
    with ``type: boolean``. (The first two and booleans exist in protocol v1 only.)
    """
    if choice.kind == "modes":
        return "session/set_mode", {"sessionId": session_id, "modeId": value}
    if choice.kind == "models":
        return "session/set_model", {"sessionId": session_id, "modelId": value}
    params: dict[str, Any] = {"sessionId": session_id, "configId": choice.key, "value": value}
    if choice.kind == "boolean":
        params["type"] = "boolean"
    return "session/set_config_option", params
