"""Reading the agent's requests for input and checking the answers (:mod:`acpcli.services.elicitation`,
pure functions): what is refused as invalid, what is declined as undrawable, bounds, values
coerced by their schema type, sensitive fields masked."""

from __future__ import annotations

from typing import Any

import pytest

from acpcli.services import elicitation as el


def form(
    properties: dict[str, Any], required: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    return {"sessionId": "s", "mode": "form", "message": "m", "requestedSchema": schema, **extra}


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ([], "the params are not an object"),
        ({"sessionId": "s", "mode": "form"}, "message: missing"),
        ({"sessionId": "s", "message": "m"}, "mode: missing"),
        ({"sessionId": "s", "message": "m", "mode": "form"}, "requestedSchema: missing"),
        ({"message": "m", "mode": "form", "requestedSchema": {}}, "no scope"),
        ({"sessionId": "s", "message": "m", "mode": "_x"}, "not a mode this client advertised"),
        (form({"a": {"type": "string"}}, ["b"]), "names 'b', which is not a property"),
        (form({"a": {"type": "string", "enum": [1, 2]}}), "enum values must be strings"),
        (form({"a": {"type": "integer", "minimum": "0"}}), "minimum is not a number"),
        (
            {"sessionId": "s", "message": "m", "mode": "url", "url": "https://x"},
            "elicitationId: missing",
        ),
    ],
)
def test_unreadable_requests_are_invalid(params: Any, problem: str) -> None:
    with pytest.raises(el.Invalid, match=problem):
        el.read_request(params)


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        (form({f"f{i}": {"type": "string"} for i in range(el.MAX_FIELDS + 1)}), "fields"),
        (form({"a": {"type": "object"}}), "of type 'object'"),
        (form({"a": {"type": "string", "pattern": "("}}), "a pattern acpcli cannot read"),
        (form({"a": {"type": "string", "pattern": "a" * (el.MAX_PATTERN + 1)}}), "a pattern of"),
        (
            form({"a": {"type": "string", "enum": [str(i) for i in range(el.MAX_OPTIONS + 1)]}}),
            "choices",
        ),
        (form({"a": {"type": "array", "items": {"type": "string"}}}), "not a list of choices"),
        (
            {
                "sessionId": "s",
                "message": "m",
                "mode": "url",
                "elicitationId": "e",
                "url": "javascript:alert(1)",
            },
            "http",
        ),
        (
            {
                "sessionId": "s",
                "message": "m",
                "mode": "url",
                "elicitationId": "e",
                "url": "https://x/" + "a" * el.MAX_URL,
            },
            "URL of",
        ),
    ],
)
def test_requests_acpcli_will_not_draw_are_unusable(params: Any, problem: str) -> None:
    with pytest.raises(el.Unusable, match=problem):
        el.read_request(params)


def test_a_link_warns_about_what_deserves_care() -> None:
    page = el.read_request(
        {
            "requestId": 1,
            "message": "m",
            "mode": "url",
            "elicitationId": "e",
            "url": "http://u@xn--80ak6aa92e.com/x",
        }
    )
    assert isinstance(page, el.UrlPage) and page.host == "xn--80ak6aa92e.com"
    assert len(page.warnings) == 3  # not https, punycode, a user name before the host


def test_values_are_coerced_and_bounded_by_their_schema() -> None:
    request = el.read_request(
        form(
            {
                "n": {"type": "integer", "minimum": 1, "maximum": 5},
                "x": {"type": "number"},
                "b": {"type": "boolean"},
                "c": {"type": "string", "oneOf": [{"const": "a", "title": "A"}]},
                "m": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["p", "q"]},
                    "maxItems": 1,
                },
                "e": {"type": "string", "format": "email"},
                "t": {"type": "string", "maxLength": 3, "default": "abc"},
            },
            ["n"],
        )
    )
    assert isinstance(request, el.Form)
    values, problems = el.answer_from(
        request, {"n": "3", "x": "2.5", "b": "yes", "c": "a", "m": "q"}
    )
    assert (
        values == {"n": 3, "x": 2.5, "b": True, "c": "a", "m": ["q"], "t": "abc"} and not problems
    )
    _, problems = el.answer_from(
        request, {"n": "9", "m": "p,q", "e": "nope", "b": "maybe", "c": "z"}
    )
    assert problems == {
        "n": "at most 5",
        "m": "pick at most 1",
        "e": "not an email address",
        "b": "not true or false",
        "c": "not one of the choices: a",
    }
    _, problems = el.answer_from(request, {})
    assert problems == {"n": "required"}


def test_sensitive_fields_are_masked_wherever_they_are_shown() -> None:
    request = el.read_request(
        form(
            {
                "user": {"type": "string"},
                "pin": {"type": "string", "format": "password", "default": "0000"},
                "api_key": {"type": "string"},
                "code": {"type": "string", "writeOnly": True},
            }
        )
    )
    assert isinstance(request, el.Form)
    assert [f.name for f in request.sensitive] == ["pin", "api_key", "code"]
    result = el.answer(el.ACCEPT, {"user": "ada", "pin": "1234", "api_key": "k", "code": "c"})
    assert el.masked_answer(request, result)["content"] == {
        "user": "ada",
        "pin": "***",
        "api_key": "***",
        "code": "***",
    }
    assert result["content"]["pin"] == "1234"  # the agent's copy is untouched
    assert "1234" not in el.summary(request, result)
    assert el.masked_request(request)["requestedSchema"]["properties"]["pin"]["default"] == "***"


def test_an_answer_is_settled_to_the_three_actions() -> None:
    request = el.read_request(form({"a": {"type": "integer"}}, ["a"]))
    assert el.settled(request, None) == {"action": "cancel"}
    assert el.settled(request, {"action": "maybe"}) == {"action": "cancel"}
    assert el.settled(request, {"action": "decline", "content": {"a": 1}}) == {"action": "decline"}
    assert el.settled(request, {"action": "accept", "content": {"a": "x"}}) == {"action": "decline"}
    assert el.settled(request, {"action": "accept", "content": {"a": 2, "zzz": 1}}) == {
        "action": "accept",
        "content": {"a": 2},
    }
