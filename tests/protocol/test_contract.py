"""The run-time contract of :mod:`acpcli.protocol`: checks, failures, tolerance, no pydantic on a turn.

The contract is in the package's docstring: what each message from an
agent is held to, how a failure reads, what is tolerated, and that the checks on the path of an
ordinary turn need no pydantic. The pure-data tables those checks read are held to the models."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from acpcli import protocol
from acpcli.errors import ExitCode, ProtocolError, RpcError
from acpcli.protocol import InvalidMessage, check_error, check_params, check_result, methods
from acpcli.wire.negotiate import parse_request, read_answer, read_request

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


def _required(model: Any) -> set[str] | None:
    """The wire names of a model class's required fields (None for a union alias)."""
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return None
    model.model_rebuild()  # a field annotated with a later class gets its alias at build time
    return {field.alias or name for name, field in model.model_fields.items() if field.is_required()}


# -- the tables the checks read agree with the models -------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_result_tables_name_the_models_required_members(version: int) -> None:
    module = protocol.models(version)
    checked = 0
    for method in methods.AGENT_METHODS[version] - methods.NOTIFICATIONS[version]:
        required = _required(module.RESULTS[method])
        assert required is not None, method
        assert set(methods.RESULT_REQUIRED[version].get(method, {})) == required, method
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("version", [1, 2])
def test_params_tables_name_the_models_required_members(version: int) -> None:
    module = protocol.models(version)
    for method in methods.CLIENT_METHODS[version]:
        required = _required(module.PARAMS[method])
        if required is None:  # a tagged union (elicitation/create): its members differ
            assert method not in methods.PARAMS_REQUIRED[version]
            continue
        assert set(methods.PARAMS_REQUIRED[version].get(method, {})) == required, method


def test_the_error_table_is_the_error_model() -> None:
    for version in (1, 2):
        assert set(methods.ERROR_REQUIRED) == _required(protocol.models(version).Error)
    assert methods.ERROR_REQUIRED == {"code": ("integer",), "message": ("string",)}


# -- nothing valid is refused ---------------------------------------------------------------------


def _golden(part: str) -> list[tuple[int, str, Any]]:
    found = []
    for path in sorted(GOLDEN.glob("v[12]/*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("part") == part:
            found.append((int(path.parent.name[1:]), doc["method"], doc["json"]))
    for path in sorted(GOLDEN.glob("seed/*.json")):
        _number, method, kind = path.stem.split("-", 2)
        message = json.loads(path.read_text(encoding="utf-8"))
        if kind == ("result" if part == "result" else "request") and part in message:
            found.append((2, method.replace("_", "/", 1), message[part]))
    return found


ANSWERS = [(v, m, r) for v, m, r in _golden("result") if m in methods.AGENT_METHODS[v]]
REQUESTS = [(v, m, p) for v, m, p in _golden("params") if m in methods.CLIENT_METHODS[v]]


@pytest.mark.parametrize(("version", "method", "result"), ANSWERS, ids=[f"v{v}-{m}" for v, m, _ in ANSWERS])
def test_every_golden_answer_passes(version: int, method: str, result: Any) -> None:
    assert check_result(version, method, result) == ({} if result is None else result)


@pytest.mark.parametrize(("version", "method", "params"), REQUESTS, ids=[f"v{v}-{m}" for v, m, _ in REQUESTS])
def test_every_golden_request_passes(version: int, method: str, params: Any) -> None:
    assert check_params(version, method, params) is params


def test_the_golden_files_hold_answers_and_requests_to_check() -> None:
    assert {m for _v, m, _r in ANSWERS} >= {"initialize", "session/new", "session/load", "session/prompt"}
    assert {m for _v, m, _p in REQUESTS} >= {"session/request_permission", "session/update"}


# -- what is tolerated --------------------------------------------------------------------------


def test_null_stands_for_an_empty_answer_where_nothing_is_required() -> None:
    for version, method in ((1, "session/load"), (2, "session/load"), (1, "session/resume"), (1, "session/set_mode")):
        assert check_result(version, method, None) == {}


def test_unknown_members_meta_and_unstable_fields_are_kept() -> None:
    answer = {"sessionId": "s", "_meta": {"x": 1}, "models": {"availableModels": [], "currentModelId": "m"}, "z": [1]}
    assert check_result(1, "session/new", answer) is answer


def test_methods_the_schema_lacks_require_nothing() -> None:
    assert check_result(1, "session/set_model", None) == {}  # unstable in v1, not in the schema
    assert check_result(1, "session/set_model", {"anything": True}) == {"anything": True}


def test_tolerated_members_have_a_reader_fallback() -> None:
    assert set(protocol.TOLERATED) == {("session/set_config_option", "configOptions")}
    assert check_result(1, "session/set_config_option", {}) == {}


def test_deeper_members_are_left_to_their_readers() -> None:
    # an item the schema would reject does not fail the answer: the reader skips it
    assert check_result(1, "session/list", {"sessions": ["not a session"]})


# -- how a failure reads -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "method", "result", "line"),
    [
        (1, "session/new", {}, "session/new: sessionId: missing"),
        (2, "session/new", None, "session/new: the answer is null, not an object"),
        (1, "session/new", {"sessionId": 7}, "session/new: sessionId: an integer, not string"),
        (1, "session/prompt", "done", "session/prompt: the answer is a string, not an object"),
        (1, "session/list", {"sessions": {}}, "session/list: sessions: an object, not array"),
        (1, "session/load", [], "session/load: the answer is an array, not an object"),
        (1, "initialize", {"protocolVersion": True}, "initialize: protocolVersion: a boolean, not integer"),
    ],
)
def test_an_answer_acpcli_cannot_read_is_one_line_naming_method_and_member(
    version: int, method: str, result: Any, line: str
) -> None:
    with pytest.raises(InvalidMessage) as bad:
        check_result(version, method, result)
    assert str(bad.value) == line


def test_the_session_layer_reports_it_as_a_protocol_error() -> None:
    with pytest.raises(ProtocolError) as err:
        read_answer(1, "session/new", {"id": "s"})
    assert str(err.value) == "session/new: the agent's answer is not valid ACP v1: sessionId: missing"
    assert err.value.exit_code == ExitCode.AGENT_ERROR and isinstance(err.value, RpcError)
    assert err.value.method == "session/new" and "\n" not in str(err.value)


def test_an_invalid_request_is_answered_invalid_params_in_one_line() -> None:
    with pytest.raises(ProtocolError) as err:
        read_request(1, "session/request_permission", {"sessionId": "s", "toolCall": {"toolCallId": "t"}})
    assert err.value.to_wire() == {
        "code": RpcError.INVALID_PARAMS,
        "message": "session/request_permission: invalid params: options: missing",
    }
    with pytest.raises(ProtocolError) as err:
        parse_request(1, "fs/write_text_file", {"sessionId": "s", "path": "/a", "content": 5})
    assert err.value.code == RpcError.INVALID_PARAMS
    assert err.value.rpc_message == "fs/write_text_file: invalid params: content: Input should be a valid string"


def test_the_models_name_the_first_member_at_fault_and_count_the_rest() -> None:
    with pytest.raises(InvalidMessage) as bad:
        protocol.parse_params(1, "terminal/create", {"sessionId": 1, "command": ["ls"], "args": "x"})
    assert bad.value.where == "sessionId" and bad.value.problem.endswith("(and 2 more)")
    nested = {"sessionId": "s", "toolCall": {"toolCallId": "t"}, "options": [{"optionId": 1}]}
    with pytest.raises(InvalidMessage) as bad:
        protocol.parse_params(1, "session/request_permission", nested)
    assert str(bad.value) == (
        "session/request_permission: options[0].optionId: Input should be a valid string (and 2 more)"
    )


def test_a_malformed_error_object_is_still_the_failure_it_reports() -> None:
    check_error({"code": -32603, "message": "Internal error", "data": {"any": "thing"}})
    with pytest.raises(InvalidMessage, match="code: a string, not integer"):
        check_error({"code": "E42", "message": "went wrong"})
    err = RpcError.from_wire({"code": "E42", "message": "went wrong"}, method="session/prompt")
    assert err.code == RpcError.INTERNAL_ERROR
    assert err.rpc_message == "went wrong [malformed error object: code: a string, not integer]"
    assert RpcError.from_wire({"code": True, "message": "m"}).code == RpcError.INTERNAL_ERROR
    plain = RpcError.from_wire({"code": -32002, "message": "Resource not found"})
    assert plain.rpc_message == "Resource not found"


# -- the checks of an ordinary turn need no pydantic ----------------------------------------------


def test_the_checks_import_no_pydantic() -> None:
    script = (
        "import sys\n"
        "from acpcli.wire.negotiate import read_answer, read_request\n"
        "from acpcli.errors import RpcError\n"
        "read_answer(1, 'session/new', {'sessionId': 's'})\n"
        "read_answer(2, 'session/load', None)\n"
        "read_request(1, 'session/request_permission', {'sessionId': 's', 'toolCall': {}, 'options': []})\n"
        "RpcError.from_wire({'code': 'x', 'message': 'm'})\n"
        "print([m for m in ('pydantic', 'acpcli.protocol.v1', 'acpcli.protocol.v2') if m in sys.modules])\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]"
