"""Every JSON example of the seed page (Session Setup, v2 draft, Chinese) parses with the right
v2 model and round-trips to exactly the same JSON.

The examples live in ``tests/golden/seed/``, one file each, in page order, so the suite needs
nothing outside the repository. They were extracted from the page's text (a JSON value starts at
a line holding only ``{``); with ``ACPCLI_SPEC_DIR`` set, the extraction is run again on the page
and must give exactly these files, so an example added to or dropped from the seed fails here
rather than being skipped silently.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import SPEC_DIR, needs_spec
from pydantic import TypeAdapter

from acpcli import protocol
from tests.helpers import model_reading as reading

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "seed"
#: How many JSON examples the seed page holds.
SEED_EXAMPLES = 17

#: What each example is, in page order: the method it belongs to and the part it shows.
EXPECTED = [
    ("session/new", "request"),
    ("session/new", "result"),
    ("initialize", "result"),  # session.load
    ("session/load", "request"),
    ("session/update", "notification"),  # user_message
    ("session/update", "notification"),  # agent_message
    ("session/load", "result"),  # null
    ("initialize", "result"),  # session.resume
    ("session/resume", "request"),
    ("session/resume", "result"),
    ("initialize", "result"),  # session.close
    ("session/close", "request"),
    ("session/close", "result"),
    ("session/load", "request"),  # additionalDirectories
    ("McpServer", "fragment"),  # stdio
    ("McpServer", "fragment"),  # http
    ("initialize", "result"),  # session.mcp.stdio / http
]


def extract_json_examples(text: str) -> list[Any]:
    """Every JSON value in the text that starts on a line holding only ``{``."""
    decoder = json.JSONDecoder()
    examples = []
    for match in re.finditer(r"^\{[ \t]*$", text, re.M):
        value, _end = decoder.raw_decode(text, match.start())  # a broken example raises here
        examples.append(value)
    return examples


def classify(examples: list[Any]) -> list[tuple[str, str]]:
    """(method, part) for each example; a result is paired with the latest request of its id.

    The page shows ``initialize`` results without their request; id 0 is the initialize.
    """
    by_id: dict[Any, str] = {}
    kinds = []
    for ex in examples:
        if "jsonrpc" not in ex:
            kinds.append(("McpServer", "fragment"))
        elif "method" in ex and "id" in ex:
            by_id[ex["id"]] = ex["method"]
            kinds.append((ex["method"], "request"))
        elif "method" in ex:
            kinds.append((ex["method"], "notification"))
        else:
            assert "result" in ex, ex
            method = by_id.get(ex["id"], "initialize" if ex["id"] == 0 else None)
            assert method is not None, f"no request for response id {ex['id']}"
            kinds.append((method, "result"))
    return kinds


def golden_examples() -> list[Any]:
    """The seed's examples as kept in ``tests/golden/seed/`` (file names sort in page order)."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(GOLDEN.glob("*.json"))]


EXAMPLES = golden_examples()
KINDS = classify(EXAMPLES)


def test_the_seed_has_the_examples_we_expect() -> None:
    assert len(EXAMPLES) == SEED_EXAMPLES
    assert KINDS == EXPECTED


def test_golden_file_names_say_what_they_hold() -> None:
    names = [p.name for p in sorted(GOLDEN.glob("*.json"))]
    assert names == [
        f"{i:02d}-{method.replace('/', '_')}-{part}.json" for i, (method, part) in enumerate(EXPECTED, 1)
    ]


@needs_spec
def test_the_golden_files_are_the_seed_pages_examples() -> None:
    assert SPEC_DIR is not None
    seed = (SPEC_DIR / "seed-session-setup.zh.txt").read_text(encoding="utf-8")
    assert extract_json_examples(seed) == EXAMPLES, "tests/golden/seed/ differs from the seed page"


def test_extraction_fails_loudly_on_a_broken_example() -> None:
    with pytest.raises(json.JSONDecodeError):
        extract_json_examples('text\n{\n  "a": 1,\n}\nmore')


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=lambda i: f"{i + 1}-{KINDS[i][0]}-{KINDS[i][1]}")
def test_seed_example_round_trips(index: int) -> None:
    example, (method, part) = EXAMPLES[index], KINDS[index]
    v2 = protocol.models(2)
    if part == "fragment":
        server = TypeAdapter(v2.McpServer).validate_python(example)
        assert type(server).__name__ == f"McpServer{example['type'].capitalize()}"
        assert protocol.dump(server) == example
        return
    assert example["jsonrpc"] == "2.0"
    if part == "result":
        result = reading.parse_result(2, method, example["result"])
        assert result is None or isinstance(result, v2.RESULTS[method])
        assert protocol.dump(result) == example["result"]
        return
    params = protocol.parse_params(2, method, example["params"])
    assert isinstance(params, v2.PARAMS[method])
    assert protocol.dump(params) == example["params"]
    if method == "session/update":
        update = reading.parse_update(2, example["params"]["update"])
        assert update is not None and not reading.is_unknown(update)
        assert update.session_update == example["params"]["update"]["sessionUpdate"]


@pytest.mark.parametrize("index", [i for i, k in enumerate(KINDS) if k == ("initialize", "result")])
def test_seed_capability_markers_are_read(index: int) -> None:
    """Presence of a marker object means support: the model must see exactly those present."""
    advertised = EXAMPLES[index]["result"]["capabilities"]["session"]
    session = reading.parse_result(2, "initialize", EXAMPLES[index]["result"]).capabilities.session
    for marker in ("load", "resume", "close", "list", "delete", "additionalDirectories"):
        attr = "additional_directories" if marker == "additionalDirectories" else marker
        assert (getattr(session, attr) is not None) == (marker in advertised), marker
    if "mcp" in advertised:
        assert session.mcp.stdio is not None and session.mcp.http is not None


def test_the_load_result_is_null_and_stays_null() -> None:
    (load_result,) = [EXAMPLES[i] for i, k in enumerate(KINDS) if k == ("session/load", "result")]
    assert load_result["result"] is None
    assert reading.parse_result(2, "session/load", None) is None


def test_a_null_result_is_refused_where_fields_are_required() -> None:
    with pytest.raises(ValueError):
        reading.parse_result(2, "session/new", None)  # sessionId is required
