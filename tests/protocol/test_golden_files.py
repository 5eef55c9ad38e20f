"""Golden wire files under tests/golden/: each parses with the model it names and dumps back
to exactly the same JSON; every file is used, and every update kind has one.

A golden file is ``{"model": <class or union in the module>, "method": ..., "part": "params" |
"result", "source": <where the example comes from>, "json": <the params/result/fragment>}``;
``method``/``part`` are absent for standalone fragments (a content block, an MCP server).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from acpcli import protocol
from acpcli.protocol import methods
from tests.helpers import model_reading as reading

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
FILES = sorted(GOLDEN.glob("v[12]/*.json"))
#: The seed page's examples, whole JSON-RPC messages, loaded by test_seed_examples.py.
SEED_FILES = sorted(GOLDEN.glob("seed/*.json"))


def _version(path: Path) -> int:
    return int(path.parent.name.removeprefix("v"))


def _load(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert set(doc) <= {"model", "method", "part", "source", "json"}, path
    assert "model" in doc and "json" in doc, path
    return doc


def _models_in(value: Any) -> list[BaseModel]:
    """Every model instance in a parsed tree (the value itself included)."""
    found: list[BaseModel] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, BaseModel):
            found.append(item)
            stack.extend(getattr(item, name) for name in type(item).model_fields)
            stack.extend((item.model_extra or {}).values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found


def _parse(version: int, doc: dict[str, Any]) -> Any:
    module = protocol.models(version)
    model = getattr(module, doc["model"])
    method, part = doc.get("method"), doc.get("part")
    if method is None:
        return TypeAdapter(model).validate_python(doc["json"])
    if part == "params":
        assert module.PARAMS[method] is model, f"{method} params are {module.PARAMS[method]}"
        return protocol.parse_params(version, method, doc["json"])
    assert part == "result", part
    assert module.RESULTS[method] is model, f"{method} result is {module.RESULTS[method]}"
    return reading.parse_result(version, method, doc["json"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_file_round_trips(path: Path) -> None:
    version = _version(path)
    doc = _load(path)
    parsed = _parse(version, doc)
    assert protocol.dump(parsed) == doc["json"]
    # a broken discriminator would turn known members into ...Other models that still round-trip
    unknown = [type(m).__name__ for m in _models_in(parsed) if reading.is_unknown(m)]
    assert unknown == [], f"known content parsed as unknown: {unknown}"


@pytest.mark.parametrize("path", [p for p in FILES if p.stem.startswith("update.")], ids=lambda p: p.stem)
def test_golden_updates_parse_as_their_kind(path: Path) -> None:
    update = _load(path)["json"]["update"]
    parsed = reading.parse_update(_version(path), update)
    assert parsed is not None
    assert parsed.session_update == update["sessionUpdate"]
    assert protocol.dump(parsed) == update


def test_every_golden_file_is_used() -> None:
    on_disk = {p for p in GOLDEN.rglob("*") if p.is_file()}
    assert on_disk - set(FILES) - set(SEED_FILES) == set(), "files under tests/golden that no test loads"
    assert len(FILES) >= 40


@pytest.mark.parametrize("version", [1, 2])
def test_every_update_kind_has_a_golden_file(version: int) -> None:
    docs = [_load(p) for p in FILES if _version(p) == version and p.stem.startswith("update.")]
    covered = {d["json"]["update"]["sessionUpdate"] for d in docs}
    _prop, members = protocol.models(version).TAGGED_UNIONS["SessionUpdate"]
    assert covered == {tag for tag in members if not tag.startswith("*")}
    if version == 2:
        states = {d["json"]["update"].get("state") for d in docs} - {None}
        _prop, state_members = protocol.models(2).TAGGED_UNIONS["StateUpdate"]
        assert states == {tag for tag in state_members if not tag.startswith("*")}


def test_v1_golden_files_cover_the_session_setup_surface() -> None:
    docs = [_load(p) for p in FILES if _version(p) == 1]
    covered = {(d.get("method"), d.get("part")) for d in docs}
    for method in (
        methods.INITIALIZE,
        methods.SESSION_NEW,
        methods.SESSION_LOAD,
        methods.SESSION_PROMPT,
        methods.SESSION_REQUEST_PERMISSION,
    ):
        assert (method, "params") in covered and (method, "result") in covered, method


# a null result (v1 session/load answers null) has no object to check
V1_FILES = [p for p in FILES if _version(p) == 1 and _load(p)["json"] is not None]


@pytest.mark.parametrize("path", V1_FILES, ids=lambda p: p.stem)
def test_v1_golden_files_satisfy_the_official_sdk(path: Path) -> None:
    """An independent peer: the official SDK's v1 models (which drop fields they do not know)
    parse each handwritten v1 file and dump it back unchanged, so a misspelt field or a wrong
    shape in a golden file is caught here even though our own models keep unknown fields."""
    sdk = pytest.importorskip("acp.schema")
    doc = _load(path)
    parsed = getattr(sdk, doc["model"]).model_validate(doc["json"])
    assert parsed.model_dump(mode="json", by_alias=True, exclude_unset=True) == doc["json"]
