"""The ACP protocol surfaces: v1 and v2 models, method names, and parsing helpers.

Invariants:

- Importing this package (or :mod:`acpcli.protocol.methods`) imports no pydantic and builds no
  model. The generated modules (:mod:`acpcli.protocol.v1`, :mod:`acpcli.protocol.v2`) are
  imported on first use by :func:`models`, and their classes build their validators on first
  validation (``defer_build``), so ``acpcli --help`` never pays for them.
- Nothing here rejects what an agent may legitimately send in the future: unknown fields and
  ``_meta`` are kept, unknown enum values are kept as strings, unknown tags of a tagged union
  select its ``...Other`` member (an ``UnknownVariant``), and :func:`parse_update` turns an
  unknown or malformed update into ``None`` plus a log record on the ``acpcli.protocol`` logger.
- :func:`dump` is the one way models go back to the wire: wire names, only the fields that were
  set (so a parsed message dumps back to exactly what was received, and a built one carries no
  null it was not given).
"""

from __future__ import annotations

import importlib
import logging
import sys
from types import ModuleType
from typing import Any

SUPPORTED_VERSIONS = (1, 2)

logger = logging.getLogger("acpcli.protocol")

_validators: dict[tuple[int, str, str], Any] = {}


def models(version: int) -> ModuleType:
    """The generated models module for protocol ``version`` (1 or 2), imported on first use."""
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(f"unsupported ACP protocol version {version!r}")
    return importlib.import_module(f"acpcli.protocol.v{version}")


def params_model(version: int, method: str) -> Any | None:
    """The params model of ``method`` in ``version`` (a class or a union alias), or None."""
    return models(version).PARAMS.get(method)


def result_model(version: int, method: str) -> Any | None:
    """The result model of request ``method`` in ``version``, or None (unknown, notification)."""
    return models(version).RESULTS.get(method)


def _validator(version: int, kind: str, key: str, target: Any) -> Any:
    """A cached ``validate(data)`` for a model class or a union alias (via a TypeAdapter)."""
    cache_key = (version, kind, key)
    validate = _validators.get(cache_key)
    if validate is None:
        from pydantic import BaseModel, TypeAdapter

        if isinstance(target, type) and issubclass(target, BaseModel):
            validate = target.model_validate
        else:
            validate = TypeAdapter(target).validate_python
        _validators[cache_key] = validate
    return validate


def parse_params(version: int, method: str, params: Any) -> Any:
    """Validate the params of a request or notification with its model.

    Raises ``KeyError`` for a method the schema does not define (extension methods are the
    caller's business) and ``ValueError`` (a pydantic ``ValidationError``) for invalid params.
    Params of ``session/update`` never fail on an unknown update kind: it parses as
    ``SessionUpdateOther``.
    """
    target = params_model(version, method)
    if target is None:
        raise KeyError(f"no params model for {method!r} in ACP v{version}")
    return _validator(version, "params", method, target)(params)


def parse_result(version: int, method: str, result: Any) -> Any | None:
    """Validate the result of request ``method`` with its model.

    A ``null`` result returns None when the result model has no required field (the seed's
    ``session/load`` answers ``"result": null``; it means "nothing to report", as ``{}`` would).
    Raises ``KeyError`` for an unknown method and ``ValueError`` for an invalid result.
    """
    target = result_model(version, method)
    if target is None:
        raise KeyError(f"no result model for {method!r} in ACP v{version}")
    validate = _validator(version, "result", method, target)
    if result is None:
        validate({})  # raises if the model needs fields: then null really is invalid
        return None
    return validate(result)


def parse_update(version: int, update: Any) -> Any | None:
    """Parse the ``update`` member of a ``session/update`` notification.

    Returns the model of its kind, or None when the kind is unknown to ``version`` (``_``-prefixed
    extensions included; logged at debug) or the update is malformed (logged at warning). Never
    raises on agent input. A known update may still hold unknown parts (an unknown content block
    parses as ``ContentBlockOther``); readers show those generically.
    """
    module = models(version)
    validate = _validator(version, "union", "SessionUpdate", module.SessionUpdate)
    kind = update.get("sessionUpdate") if isinstance(update, dict) else None
    try:
        value = validate(update)
    except ValueError as err:
        logger.warning("ignoring a malformed %r session update: %s", kind, err)
        return None
    if isinstance(value, module.UnknownVariant):
        logger.debug("ignoring a session update of unknown kind %r", kind)
        return None
    return value


def is_unknown(value: Any) -> bool:
    """True for a tagged-union member whose tag was unknown (the ``...Other`` models)."""
    for version in SUPPORTED_VERSIONS:
        module = sys.modules.get(f"{__name__}.v{version}")
        if module is not None and isinstance(value, module.UnknownVariant):
            return True
    return False


def dump(value: Any) -> Any:
    """The wire JSON of a model (or a list of models): wire names, only the fields that were set."""
    if isinstance(value, list):
        return [dump(item) for item in value]
    if value is None:
        return None
    return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
