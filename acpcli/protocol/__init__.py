"""The ACP protocol at the bottom of acpcli: models, method names, shape builders, checks on what agents send.

The v1/v2 models (generated), the method names and required members (:mod:`.methods`), the
pure builders of what acpcli sends (:mod:`.wire`, :mod:`.settings`), and the checks every
message from an agent passes (below).

Nothing here imports acpcli outside this package (``tests/protocol/test_layering.py``): whether
a request may be sent to a given agent is :mod:`acpcli.wire.capabilities`' call, and acpcli's errors
are made from :class:`InvalidMessage` above (:mod:`acpcli.wire.negotiate`).

The run-time contract
---------------------
The JSON schema is the one description of the protocol; the generated models (:mod:`.v1`,
:mod:`.v2`) are its full reading. What an agent sends is held to it as far as its path affords,
and the rule that decides how far is: **no pydantic on the path of an ordinary turn**. Importing
pydantic and the models costs about 0.3 s, twice a whole ``acpcli prompt`` round trip, and
``tests/test_startup_imports.py`` keeps it off that path (a scripted ``prompt`` with an edit).

* **Answers to acpcli's requests** (``initialize``; ``session/new``, ``load``, ``resume``,
  ``list``, ``close``, ``set_mode``, ``set_config_option``, ``set_model``, and v1's ``prompt``;
  not the answers acpcli does not read: v2's ``prompt`` acknowledgement, logins) are checked
  at the one place each is read, by :func:`check_result`: the schema's contract for that result
  -- an object (``null`` reads as ``{}`` when nothing is required), its required members present
  with their JSON types (:data:`.methods.RESULT_REQUIRED`, generated from the same schema as the
  models).
* **Permission requests** (``session/request_permission``, asked in the middle of a turn) are
  checked the same way by :func:`check_params` (:data:`.methods.PARAMS_REQUIRED`).
* **File-system and terminal requests** (v1 ``fs/*``, ``terminal/*``) are validated whole by the
  models (:func:`parse_params`) before acpcli touches a file or runs a command; their answers
  are built with the models too.
* **JSON-RPC error objects** are checked by :func:`check_error` (``code`` an integer,
  ``message`` a string). A malformed one is still the failure it reports: it is read as far as
  it goes, and its message says what was malformed.
* **``session/update`` notifications**, the hot path (100,000 in a long replay), are not
  checked at run time: :mod:`acpcli.model` reads them as plain dicts and ignores what it cannot
  use. ``tests/protocol/test_store_shapes.py`` holds every shape the store accepts to the
  models, so the two readings cannot drift apart.

Members below the top level are read by their readers, which skip what they cannot use; that
the models accept what those readers read is tested (``tests/golden``, the store shapes, the
request builders in ``tests/protocol/test_wire.py``).

What a failure does (:class:`InvalidMessage`, which the caller turns into one line naming the
method and the member, never a traceback -- :mod:`acpcli.wire.negotiate`): an answer acpcli cannot
read fails its request with :class:`~acpcli.errors.ProtocolError` (exit 7: "session/new: the
agent's answer is not valid ACP v1: sessionId: missing"), or :class:`~acpcli.errors.HandshakeError`
(exit 5) for ``initialize``; an invalid request from the agent is answered ``-32602`` with that
line, and the turn goes on.

Tolerated, as real agents deviate (codex, claude and gemini, observed) and the spec allows:
unknown fields and ``_meta`` anywhere (kept), unknown enum values and union tags (kept as
strings; an ``...Other`` member, an :class:`~acpcli.protocol.base.UnknownVariant`), ``"result":
null`` for an answer that requires nothing (the seed's ``session/load``), unstable v1 members
such as gemini's ``models`` (extra fields), answers to methods the schema lacks
(``session/set_model``: any object or null), and the required members in :data:`TOLERATED`
(their readers have a fallback).

Start-up: importing this package (or :mod:`.methods`, :mod:`.wire`, :mod:`.settings`) imports no
pydantic and builds no model. The generated modules are imported on first use by
:func:`models`, and their classes build their validators on first validation
(``defer_build``), so ``acpcli --help`` never pays for them. :func:`dump` is the one way models
go back to the wire: wire names, only the fields that were set.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from acpcli.protocol import methods

SUPPORTED_VERSIONS = (1, 2)

#: Required members of an answer that are not enforced, because their reader has a fallback:
#: (method, member) -> what acpcli does without it.
TOLERATED: dict[tuple[str, str], str] = {
    ("session/set_config_option", "configOptions"): "the value asked for becomes current, the other options stay",
}

_validators: dict[tuple[int, str, str], Any] = {}


class InvalidMessage(ValueError):
    """A message from the agent its schema rejects: ``method``, the member's wire path
    ``where`` (``""`` for the message as a whole) and what is wrong with it (``problem``)."""

    def __init__(self, method: str, where: str, problem: str) -> None:
        self.method = method
        self.where = where
        self.problem = problem
        super().__init__(f"{method}: {self.detail}")

    @property
    def detail(self) -> str:
        """``member: problem``, or the problem alone when it concerns the whole message."""
        return f"{self.where}: {self.problem}" if self.where else self.problem


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
    """The params of a request or notification from the agent, validated by their model.

    Raises ``KeyError`` for a method the schema does not define (extension methods are the
    caller's business) and :class:`InvalidMessage` for invalid params, naming the first
    member at fault. Params of ``session/update`` never fail on an unknown update kind: it
    parses as ``SessionUpdateOther``.
    """
    from pydantic import ValidationError

    target = params_model(version, method)
    if target is None:
        raise KeyError(f"no params model for {method!r} in ACP v{version}")
    try:
        return _validator(version, "params", method, target)(params)
    except ValidationError as err:
        raise _invalid(method, err) from None


def _invalid(method: str, err: Any) -> InvalidMessage:
    """One line from a pydantic ``ValidationError``: its first error, where, and how many more."""
    errors = err.errors(include_url=False)
    first = errors[0] if errors else {"loc": (), "msg": str(err)}
    where = ""
    for part in first["loc"]:
        if isinstance(part, int):
            where += f"[{part}]"
        elif part.startswith("*") or "[" in part:  # a union member's tag or a validator's name
            continue
        else:
            where += f".{part}" if where else part
    problem = str(first["msg"]).replace("\n", " ")
    if problem == "Field required":
        problem = "missing"
    if len(errors) > 1:
        problem += f" (and {len(errors) - 1} more)"
    return InvalidMessage(method, where, problem)


def check_result(version: int, method: str, result: Any) -> dict[str, Any]:
    """The answer to request ``method`` held to the schema's contract for its result, without
    pydantic (see the module docstring): returned as an object (``null`` as ``{}`` when
    nothing is required), or :class:`InvalidMessage` naming what is missing or mistyped."""
    required = {
        member: kinds
        for member, kinds in methods.RESULT_REQUIRED.get(version, {}).get(method, {}).items()
        if (method, member) not in TOLERATED
    }
    if result is None and not required:
        return {}
    if not isinstance(result, dict):
        raise InvalidMessage(method, "", f"the answer is {_described(result)}, not an object")
    _check_members(method, result, required)
    return result


def check_params(version: int, method: str, params: Any) -> dict[str, Any]:
    """The params of a request from the agent held to the schema's contract for them, without
    pydantic: an object whose required members are present with their JSON types
    (:data:`.methods.PARAMS_REQUIRED`), or :class:`InvalidMessage` naming what is wrong."""
    if not isinstance(params, dict):
        raise InvalidMessage(method, "", f"the params are {_described(params)}, not an object")
    _check_members(method, params, methods.PARAMS_REQUIRED.get(version, {}).get(method, {}))
    return params


def check_error(error: Any) -> None:
    """Raise :class:`InvalidMessage` unless ``error`` is a JSON-RPC error object (``code`` an
    integer, ``message`` a string; ``data`` anything)."""
    if not isinstance(error, dict):
        raise InvalidMessage("error", "", f"{_described(error)}, not an object")
    _check_members("error", error, methods.ERROR_REQUIRED)


def _check_members(method: str, message: dict[str, Any], required: dict[str, tuple[str, ...]]) -> None:
    for member, kinds in required.items():
        if member not in message:
            raise InvalidMessage(method, member, "missing")
        kind = _json_type(message[member])
        if kinds and kind not in kinds and not (kind == "integer" and "number" in kinds):
            raise InvalidMessage(method, member, f"{_described(message[member])}, not {' or '.join(kinds)}")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def _described(value: Any) -> str:
    kind = _json_type(value)
    return "null" if kind == "null" else f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def dump(value: Any) -> Any:
    """The wire JSON of a model (or a list of models): wire names, only the fields that were set."""
    if isinstance(value, list):
        return [dump(item) for item in value]
    if value is None:
        return None
    return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
