"""Whole-model readings of what agents send, for tests (results and session updates).

Results and session updates validated by the generated models, the way acpcli does at run time only for requests from the agent (see the
run-time contract in acpcli/protocol/__init__.py). Tests use these to hold golden files, seed
examples, tolerance cases and the store's accepted shapes to the models."""

from __future__ import annotations

import logging
from typing import Any

from acpcli import protocol
from acpcli.protocol.base import UnknownVariant

#: Records about what the models ignore go where the protocol package's own would.
logger = logging.getLogger("acpcli.protocol")


def parse_result(version: int, method: str, result: Any) -> Any | None:
    """Validate the result of request ``method`` with its model.

    A ``null`` result returns None when the result model has no required field (the seed's
    ``session/load`` answers ``"result": null``; it means "nothing to report", as ``{}`` would).
    Raises ``KeyError`` for an unknown method and ``ValueError`` for an invalid result.
    """
    target = protocol.result_model(version, method)
    if target is None:
        raise KeyError(f"no result model for {method!r} in ACP v{version}")
    validate = protocol._validator(version, "result", method, target)
    if result is None:
        validate({})  # raises if the model needs fields: then null really is invalid
        return None
    return validate(result)


def parse_update(version: int, update: Any) -> Any | None:
    """Parse the ``update`` member of a ``session/update`` notification.

    Returns the model of its kind, or None when the kind is unknown to ``version`` (``_``-prefixed
    extensions included; logged at debug) or the update is malformed (logged at warning). Never
    raises on agent input. A known update may still hold unknown parts (an unknown content block
    parses as ``ContentBlockOther``).
    """
    module = protocol.models(version)
    validate = protocol._validator(version, "union", "SessionUpdate", module.SessionUpdate)
    kind = update.get("sessionUpdate") if isinstance(update, dict) else None
    try:
        value = validate(update)
    except ValueError as err:
        logger.warning("ignoring a malformed %r session update: %s", kind, err)
        return None
    if isinstance(value, UnknownVariant):
        logger.debug("ignoring a session update of unknown kind %r", kind)
        return None
    return value


def is_unknown(value: Any) -> bool:
    """True for a tagged-union member whose tag was unknown (the ``...Other`` models)."""
    return isinstance(value, UnknownVariant)
