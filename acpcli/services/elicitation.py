"""Elicitation (ACP v1 ``elicitation/create``): what the agent asks, read; what is answered, checked.

The agent asks the user for structured input, in one of two modes:

* **form**: a flat object schema (``requestedSchema``) whose properties are strings (with
  ``minLength``/``maxLength``/``pattern``/``format``), numbers and integers (``minimum``/
  ``maximum``), booleans, single-choice enums (``enum``, or ``oneOf`` with titles) and
  multi-choice arrays (``items.enum`` / ``items.anyOf``), each with a ``title``,
  ``description`` and ``default``; ``required`` names the fields that must be filled.
* **url**: a page the user opens out of band (``url``, ``elicitationId``). ``accept`` means the
  user consented to open it, nothing more; acpcli shows the full URL and never opens or
  fetches it itself.

The answer is ``{"action": "accept", "content": {...}}``, ``{"action": "decline"}`` or
``{"action": "cancel"}`` (the user dismissed it).

Everything here is pure (no I/O but a field ``pattern`` that only ``re`` reads, checked in a
child process with a deadline: :mod:`acpcli.services.pattern`; no pydantic): :func:`read_request` turns the params into a
:class:`Form` or a :class:`UrlPage`, or raises :class:`Invalid` (answered ``-32602``: a request
acpcli cannot read at all) or :class:`Unusable` (answered ``decline`` with one warning: a
readable request acpcli will not present -- a field type it does not know, a schema past the
bounds below, a URL that is not ``http(s)`` or holds invisible characters). The agent's text is untrusted: sizes are bounded
(:data:`MAX_FIELDS`, :data:`MAX_OPTIONS`, :data:`MAX_TEXT`...) and nothing of it reaches a
terminal but through the safe-text helpers of whoever draws it.

Sensitive fields: the spec forbids secrets in form mode (passwords, API keys, tokens go through
URL mode) and so defines no marker for them. An agent may still ask; a field is treated as
sensitive when its ``format`` is ``password``, it is ``writeOnly`` (JSON Schema's word for it),
its ``_meta`` says ``sensitive``/``secret``, or its name looks secret
(:func:`acpcli.wire.redact.secret_name`: password, token, api key...). A sensitive field is typed
masked, never echoed, and its value is ``***`` in the wire log, ``--raw``, jsonl and every
line acpcli prints (:func:`masked_answer`).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from acpcli.wire.redact import REDACTED, secret_name

ACCEPT, DECLINE, CANCEL = "accept", "decline", "cancel"
ACTIONS = (ACCEPT, DECLINE, CANCEL)
DECLINED: dict[str, Any] = {"action": DECLINE}
CANCELLED: dict[str, Any] = {"action": CANCEL}

#: Bounds on what an agent may ask (a request past them is declined, never drawn).
MAX_FIELDS = 64
MAX_OPTIONS = 500
MAX_NAME = 200
MAX_TEXT = 8_000  # a message, a title, a description, an option title
MAX_PATTERN = 1_000
MAX_URL = 4_096
#: The longest value a person or a script may give for a field (characters).
MAX_VALUE = 64 * 1024

#: Field kinds acpcli draws.
TEXT, NUMBER, INTEGER, BOOLEAN, CHOICE, MULTI = (
    "string",
    "number",
    "integer",
    "boolean",
    "choice",
    "multi",
)
_FORMATS = ("email", "uri", "date", "date-time")
#: Unicode categories no link may hold: controls, formatting characters (bidirectional
#: overrides, zero-width spaces...), lone surrogates, line and paragraph separators.
_HIDDEN = ("Cc", "Cf", "Cs", "Zl", "Zp")


class Invalid(ValueError):
    """A request acpcli cannot read (answered ``-32602`` naming what is wrong)."""


class Unusable(ValueError):
    """A readable request acpcli will not present (answered ``decline``, with one warning)."""


@dataclass
class Field:
    """One form field, as the schema describes it."""

    name: str
    kind: str
    title: str
    description: str = ""
    required: bool = False
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    format: str | None = None
    #: ``(value, title)`` for a choice or a multi-choice.
    options: list[tuple[str, str]] = field(default_factory=list)
    sensitive: bool = False

    @property
    def label(self) -> str:
        """The title, else the name."""
        return self.title or self.name

    def bounds(self) -> str:
        """The field's constraints in a few words (``0-150``, ``at most 20 characters``)."""
        if self.kind in (NUMBER, INTEGER):
            lo = _num_text(self.minimum)
            hi = _num_text(self.maximum)
            if lo is not None and hi is not None:
                return f"{lo} to {hi}"
            if lo is not None:
                return f"at least {lo}"
            if hi is not None:
                return f"at most {hi}"
            return "an integer" if self.kind == INTEGER else "a number"
        if self.kind == TEXT:
            parts = []
            if self.format:
                parts.append(self.format if self.format != "password" else "")
            if self.min_length and self.max_length is not None:
                parts.append(f"{self.min_length}-{self.max_length} characters")
            elif self.min_length:
                parts.append(f"at least {self.min_length} characters")
            elif self.max_length is not None:
                parts.append(f"at most {self.max_length} characters")
            return ", ".join(p for p in parts if p)
        if self.kind == MULTI:
            if self.min_length is not None or self.max_length is not None:
                least, most = self.min_length or 0, self.max_length
                return f"pick {least} to {most}" if most is not None else f"pick at least {least}"
            return "pick any"
        return ""


@dataclass
class Form:
    """A form-mode request."""

    message: str
    fields: list[Field]
    title: str = ""
    session_id: str | None = None
    tool_call_id: str | None = None
    #: The request as it came (for jsonl: ``requestedSchema`` with sensitive defaults masked).
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    mode: str = "form"
    #: Who asks: the agent's name, as the connection knows it ("" when unknown).
    agent: str = ""

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)

    @property
    def sensitive(self) -> list[Field]:
        return [f for f in self.fields if f.sensitive]


@dataclass
class UrlPage:
    """A URL-mode request."""

    message: str
    url: str
    elicitation_id: str
    host: str
    #: What about the URL deserves a warning (not https, punycode, a user name in it...).
    warnings: list[str] = field(default_factory=list)
    session_id: str | None = None
    tool_call_id: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    mode: str = "url"
    agent: str = ""


Request = Form | UrlPage


# -- reading a request --------------------------------------------------------------------------


def read_request(params: Any, *, modes: Sequence[str] = ("form", "url")) -> Request:
    """The params of ``elicitation/create`` read (see the module docstring); ``modes``: those
    the client advertised (another mode is :class:`Invalid`, the spec's ``-32602``)."""
    if not isinstance(params, dict):
        raise Invalid("the params are not an object")
    message = params.get("message")
    if not isinstance(message, str):
        raise Invalid("message: missing or not a string")
    mode = params.get("mode")
    if not isinstance(mode, str):
        raise Invalid("mode: missing or not a string")
    if mode not in modes:
        raise Invalid(
            f"mode: {mode[:40]!r} is not a mode this client advertised ({', '.join(modes)})"
        )
    session_id = params.get("sessionId")
    request_id = params.get("requestId")
    if session_id is not None and not isinstance(session_id, str):
        raise Invalid("sessionId: not a string")
    if session_id is None and request_id is None:
        raise Invalid("neither sessionId nor requestId: the request has no scope")
    tool_call_id = params.get("toolCallId")
    tool_call_id = tool_call_id if isinstance(tool_call_id, str) else None
    message = _cut(message)
    if mode == "url":
        return _read_url(params, message, session_id, tool_call_id)
    schema = params.get("requestedSchema")
    if not isinstance(schema, dict):
        raise Invalid("requestedSchema: missing or not an object")
    fields = _read_schema(schema)
    title = schema.get("title")
    return Form(
        message=message,
        fields=fields,
        title=_cut(title) if isinstance(title, str) else "",
        session_id=session_id,
        tool_call_id=tool_call_id,
        raw=params,
    )


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _text(spec: Mapping[str, Any], key: str) -> str:
    value = spec.get(key)
    return _cut(value) if isinstance(value, str) else ""


def _read_schema(schema: dict[str, Any]) -> list[Field]:
    kind = schema.get("type", "object")
    if kind not in ("object", None):
        raise Unusable(f"the form's schema is of type {str(kind)[:40]!r}, not an object")
    properties = schema.get("properties") or {}
    if not isinstance(properties, dict):
        raise Invalid("requestedSchema.properties: not an object")
    if len(properties) > MAX_FIELDS:
        raise Unusable(f"the form has {len(properties)} fields (acpcli shows at most {MAX_FIELDS})")
    required = schema.get("required") or []
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        raise Invalid("requestedSchema.required: not a list of names")
    fields: list[Field] = []
    for name, spec in properties.items():
        if not name or len(name) > MAX_NAME:
            raise Unusable(f"a field name of {len(name)} characters")
        if not isinstance(spec, dict):
            raise Invalid(f"requestedSchema.properties.{name[:40]}: not an object")
        fields.append(_read_field(name, spec, name in required))
    missing = [name for name in required if name not in properties]
    if missing:
        raise Invalid(
            f"requestedSchema.required names {missing[0][:40]!r}, which is not a property"
        )
    return fields


def _read_field(name: str, spec: dict[str, Any], required: bool) -> Field:
    kind = spec.get("type")
    where = f"field {name[:40]!r}"
    out = Field(
        name=name,
        kind=str(kind),
        title=_text(spec, "title"),
        description=_text(spec, "description"),
        required=required,
    )
    meta = spec.get("_meta")
    out.sensitive = (
        spec.get("format") == "password"
        or spec.get("writeOnly") is True
        or (
            isinstance(meta, dict) and (meta.get("sensitive") is True or meta.get("secret") is True)
        )
        or secret_name(name)
    )
    if kind == "string":
        choices = _choices(spec.get("enum"), spec.get("oneOf"), where)
        if choices is not None:
            out.kind, out.options = CHOICE, choices
        else:
            out.kind = TEXT
            out.min_length = _count(spec, "minLength", where)
            out.max_length = _count(spec, "maxLength", where)
            fmt = spec.get("format")
            if isinstance(fmt, str) and fmt in (*_FORMATS, "password"):
                out.format = fmt
            pattern = spec.get("pattern")
            if isinstance(pattern, str) and pattern:
                if len(pattern) > MAX_PATTERN:
                    raise Unusable(f"{where}: a pattern of {len(pattern)} characters")
                try:
                    re.compile(pattern)
                except (re.error, RecursionError, OverflowError):
                    raise Unusable(
                        f"{where}: a pattern acpcli cannot read ({pattern[:60]!r})"
                    ) from None
                out.pattern = pattern
        default = spec.get("default")
        if isinstance(default, str) and len(default) <= MAX_VALUE:
            out.default = default
    elif kind in ("number", "integer"):
        out.kind = NUMBER if kind == "number" else INTEGER
        out.minimum = _number(spec, "minimum", where)
        out.maximum = _number(spec, "maximum", where)
        number = spec.get("default")
        if (
            isinstance(number, (int, float))
            and _is_number(number)
            and (kind == "number" or float(number).is_integer())
        ):
            out.default = int(number) if kind == "integer" else number
    elif kind == "boolean":
        out.kind = BOOLEAN
        default = spec.get("default")
        out.default = default if isinstance(default, bool) else None
    elif kind == "array":
        out.kind = MULTI
        items = spec.get("items")
        if not isinstance(items, dict):
            raise Invalid(f"{where}: an array without items")
        choices = _choices(items.get("enum"), items.get("anyOf"), where)
        if choices is None:
            raise Unusable(f"{where}: an array whose items are not a list of choices")
        out.options = choices
        out.min_length = _count(spec, "minItems", where)
        out.max_length = _count(spec, "maxItems", where)
        default = spec.get("default")
        if isinstance(default, list):
            values = {value for value, _ in choices}
            out.default = [v for v in default if isinstance(v, str) and v in values]
    else:
        shown = str(kind)[:40] if isinstance(kind, str) else type(kind).__name__
        raise Unusable(f"{where} is of type {shown!r}, which acpcli cannot show as a form field")
    return out


def _choices(enum: Any, titled: Any, where: str) -> list[tuple[str, str]] | None:
    if enum is None and titled is None:
        return None
    options: list[tuple[str, str]] = []
    if isinstance(enum, list):
        options = [(value, value) for value in enum if isinstance(value, str)]
        if len(options) != len(enum):
            raise Invalid(f"{where}: enum values must be strings")
    elif isinstance(titled, list):
        for item in titled:
            if not isinstance(item, dict) or not isinstance(item.get("const"), str):
                raise Invalid(f"{where}: each choice needs a string const")
            title = item.get("title")
            options.append(
                (item["const"], _cut(title) if isinstance(title, str) and title else item["const"])
            )
    else:
        raise Invalid(f"{where}: the choices are not a list")
    if not options:
        raise Unusable(f"{where}: a choice with nothing to choose")
    if len(options) > MAX_OPTIONS:
        raise Unusable(f"{where}: {len(options)} choices (acpcli shows at most {MAX_OPTIONS})")
    if any(len(value) > MAX_VALUE for value, _ in options):
        raise Unusable(f"{where}: a choice value longer than {MAX_VALUE} characters")
    return options


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _number(spec: Mapping[str, Any], key: str, where: str) -> float | None:
    value = spec.get(key)
    if value is None:
        return None
    if not _is_number(value):
        raise Invalid(f"{where}: {key} is not a number")
    return float(value) if isinstance(value, float) else int(value)


def _count(spec: Mapping[str, Any], key: str, where: str) -> int | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Invalid(f"{where}: {key} is not a count")
    return value


def _num_text(value: float | None) -> str | None:
    if value is None:
        return None
    return str(int(value)) if float(value).is_integer() else repr(value)


def _read_url(
    params: dict[str, Any], message: str, session_id: str | None, tool_call_id: str | None
) -> UrlPage:
    from urllib.parse import urlsplit

    url = params.get("url")
    elicitation_id = params.get("elicitationId")
    if not isinstance(url, str) or not url:
        raise Invalid("url: missing or not a string")
    if not isinstance(elicitation_id, str):
        raise Invalid("elicitationId: missing or not a string")
    if len(url) > MAX_URL:
        raise Unusable(f"a URL of {len(url)} characters")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        raise Unusable("a URL acpcli cannot read") from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise Unusable(
            f"a {parts.scheme[:20] or 'relative'!s} URL (acpcli shows only http and https links)"
        )
    if any(ch.isspace() or unicodedata.category(ch) in _HIDDEN for ch in url):
        # (RFC 3987 forbids the bidirectional ones in links: U+202E makes a URL read backwards)
        raise Unusable("a URL with spaces, control or invisible formatting characters in it")
    warnings = []
    if parts.scheme.lower() != "https" and host not in ("localhost", "127.0.0.1", "::1"):
        warnings.append("not https: what you type there can be read on the way")
    if any(label.startswith("xn--") for label in host.split(".")):
        warnings.append("a punycode host: it may imitate another name")
    if not host.isascii():
        warnings.append("a host with non-ASCII letters: it may imitate another name")
    if "@" in parts.netloc:
        warnings.append("a user name before the host: the real host is the part after '@'")
    return UrlPage(
        message=message,
        url=url,
        elicitation_id=elicitation_id,
        host=host,
        warnings=warnings,
        session_id=session_id,
        tool_call_id=tool_call_id,
        raw=params,
    )


# -- values ---------------------------------------------------------------------------------


def coerce(f: Field, value: Any) -> Any:
    """``value`` (text typed or given on the command line, or a JSON value from a file) as
    the field's type; :class:`ValueError` saying what is wrong. Does not check the bounds
    (:func:`problem` does)."""
    if isinstance(value, str) and len(value) > MAX_VALUE:
        raise ValueError(f"longer than {MAX_VALUE:,} characters")
    if f.kind in (TEXT, CHOICE):
        if isinstance(value, str):
            return value
        raise ValueError("not text")
    if f.kind == BOOLEAN:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "yes", "y", "on", "1"):
            return True
        if isinstance(value, str) and value.strip().lower() in ("false", "no", "n", "off", "0"):
            return False
        raise ValueError("not true or false")
    if f.kind in (NUMBER, INTEGER):
        number: Any = value
        if isinstance(value, str):
            text = value.strip()
            try:
                number = int(text) if f.kind == INTEGER else float(text)
            except ValueError:
                raise ValueError(
                    "not an integer" if f.kind == INTEGER else "not a number"
                ) from None
        if not _is_number(number):
            raise ValueError("not an integer" if f.kind == INTEGER else "not a number")
        if f.kind == INTEGER:
            if not float(number).is_integer():
                raise ValueError("not an integer")
            return int(number)
        return int(number) if isinstance(number, int) else float(number)
    if f.kind == MULTI:
        if isinstance(value, str):
            items = [item.strip() for item in value.split(",") if item.strip()]
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            items = list(value)
        else:
            raise ValueError("not a list of choices")
        return list(dict.fromkeys(items))
    raise ValueError("a field acpcli cannot fill")


def problem(f: Field, value: Any) -> str | None:
    """What is wrong with ``value`` (already of the field's type) for field ``f``, or None."""
    if f.kind == TEXT:
        if f.min_length is not None and len(value) < f.min_length:
            return f"at least {f.min_length} characters"
        if f.max_length is not None and len(value) > f.max_length:
            return f"at most {f.max_length} characters"
        if f.pattern is not None and value:
            from acpcli.services.pattern import search
            from acpcli.text.safe import safe_line

            found = search(f.pattern, value)  # bounded in time: the agent chose the pattern
            if found is None:
                return UNCHECKED
            if not found:
                return (
                    "does not have the form asked for"
                    if f.sensitive
                    else f"does not match {safe_line(f.pattern[:60])}"
                )
        if f.format == "email" and value and not _email(value):
            return "not an email address"
        if f.format == "uri" and value and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", value):
            return "not a URI (scheme:...)"
        if f.format in ("date", "date-time") and value:
            from datetime import date, datetime

            try:
                if f.format == "date":
                    date.fromisoformat(value)
                else:
                    datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                return (
                    "not a date (YYYY-MM-DD)"
                    if f.format == "date"
                    else "not a date and time (YYYY-MM-DDTHH:MM:SS)"
                )
    elif f.kind in (NUMBER, INTEGER):
        if f.minimum is not None and value < f.minimum:
            return f"at least {_num_text(f.minimum)}"
        if f.maximum is not None and value > f.maximum:
            return f"at most {_num_text(f.maximum)}"
    elif f.kind == CHOICE:
        if value not in {v for v, _ in f.options}:
            return (
                "not one of the choices: "
                + ", ".join(v for v, _ in f.options[:8])
                + (" …" if len(f.options) > 8 else "")
            )
    elif f.kind == MULTI:
        allowed = {v for v, _ in f.options}
        wrong = [v for v in value if v not in allowed]
        if wrong:
            return f"{wrong[0][:40]!r} is not one of the choices"
        if f.min_length is not None and len(value) < f.min_length:
            return f"pick at least {f.min_length}"
        if f.max_length is not None and len(value) > f.max_length:
            return f"pick at most {f.max_length}"
    return None


#: What a value is told when the agent's pattern could not be checked in time: refused, never
#: accepted unchecked.
UNCHECKED = "the agent's pattern for it could not be checked in time"


def _email(value: str) -> bool:
    """``value`` looks like an email address: ``local@domain.tld``, one ``@``, no spaces (string
    operations, not a regex: a regex with two ``+`` around a dot is quadratic on ``a@....``)."""
    local, at, domain = value.partition("@")
    return (
        bool(at and local)
        and "@" not in domain
        and "." in domain[1:-1]
        and not any(ch.isspace() for ch in value)
    )


def check_content(form: Form, content: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """``content`` (an accepted answer's) held to the form: the values kept (coerced; names
    the form does not have dropped) and the problems by field name (a required field left
    out is one: "required")."""
    values: dict[str, Any] = {}
    problems: dict[str, str] = {}
    given = content if isinstance(content, dict) else {}
    for f in form.fields:
        if f.name not in given or given[f.name] is None:
            if f.required:
                problems[f.name] = "required"
            continue
        try:
            value = coerce(f, given[f.name])
        except ValueError as err:
            problems[f.name] = str(err)
            continue
        wrong = problem(f, value)
        if wrong is not None:
            problems[f.name] = wrong
        else:
            values[f.name] = value
    return values, problems


def answer_from(form: Form, given: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A script's answer to ``form``: ``given`` (``--answer``/``--answers``) for the fields it
    names, each field's default for the others; the content and the problems by field."""
    content: dict[str, Any] = {}
    for f in form.fields:
        if f.name in given:
            content[f.name] = given[f.name]
        elif f.default is not None:
            content[f.name] = f.default
    return check_content(form, content)


def settled(request: Request, result: Any) -> dict[str, Any]:
    """What is sent for ``result`` (an elicitor's answer, None: dismissed): the three actions
    only (anything else is ``cancel``), an accepted form's content held to the form once more
    (values coerced, unknown names dropped; content that fails its form is ``decline``), an
    accepted link without content."""
    action = action_of(result)
    if action == ACCEPT and isinstance(request, Form):
        values, problems = check_content(request, result.get("content"))
        return answer(DECLINE) if problems else answer(ACCEPT, values)
    return answer(action)


def answer(action: str, content: dict[str, Any] | None = None) -> dict[str, Any]:
    """The wire answer."""
    if action == ACCEPT and content is not None:
        return {"action": ACCEPT, "content": content}
    return {"action": action}


def action_of(result: Any) -> str:
    """The action of an answer (``cancel`` for anything that is not one of the three)."""
    action = result.get("action") if isinstance(result, dict) else None
    return action if action in ACTIONS else CANCEL


def masked_answer(request: Request, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with the value of every sensitive field of ``request`` masked (``***``)."""
    content = result.get("content")
    if not isinstance(request, Form) or not isinstance(content, dict):
        return result
    hidden = {f.name for f in request.sensitive}
    if not hidden & set(content):
        return result
    return {**result, "content": {k: REDACTED if k in hidden else v for k, v in content.items()}}


def masked_request(request: Request) -> dict[str, Any]:
    """The request's params with the default of every sensitive field masked (for jsonl)."""
    raw = request.raw
    if not isinstance(request, Form) or not request.sensitive:
        return raw
    schema = dict(raw.get("requestedSchema") or {})
    properties = dict(schema.get("properties") or {})
    for f in request.sensitive:
        spec = properties.get(f.name)
        if isinstance(spec, dict) and "default" in spec:
            properties[f.name] = {**spec, "default": REDACTED}
    schema["properties"] = properties
    return {**raw, "requestedSchema": schema}


def summary(request: Request, result: dict[str, Any]) -> str:
    """What was answered, in a few words, sensitive values masked: ``accepted: name='Ada',
    pin=***``, ``declined``, ``cancelled``."""
    action = action_of(result)
    if action != ACCEPT:
        return {DECLINE: "declined", CANCEL: "cancelled"}[action]
    if isinstance(request, UrlPage):
        return "accepted (you open the link yourself)"
    content = masked_answer(request, result).get("content")
    if not isinstance(content, dict) or not content:
        return "accepted (nothing filled in)"
    shown = ", ".join(
        f"{name}={value if value == REDACTED else _short(value)}" for name, value in content.items()
    )
    return f"accepted: {shown}"


def _short(value: Any) -> str:
    text = (
        repr(value)
        if isinstance(value, str)
        else str(value).lower()
        if isinstance(value, bool)
        else str(value)
    )
    return text if len(text) <= 60 else text[:59] + "…"


def parse_answers(
    pairs: Sequence[str] = (), file_values: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``--answers FILE`` values, then each ``--answer FIELD=VALUE`` over them; ValueError
    naming a pair without ``=`` or an empty name."""
    out: dict[str, Any] = dict(file_values or {})
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--answer takes FIELD=VALUE (got {pair[:60]!r})")
        out[name.strip()] = value
    return out


# -- answering in scripts -------------------------------------------------------------------


def described(request: Request) -> str:
    """The request in a few words for one line: ``form 'Pick a colour' (fields: colour*,
    note)`` (``*``: required), ``link https://… (host example.com)``; agent text made safe."""
    from acpcli.text.safe import safe_line

    message = safe_line(request.message)
    message = message if len(message) <= 100 else message[:99] + "…"
    if isinstance(request, UrlPage):
        return f"link {safe_line(request.url)} (host {safe_line(request.host)}; {message!r})"
    names = ", ".join(
        safe_line(f.name[:40]) + ("*" if f.required else "") for f in request.fields[:12]
    )
    more = f", and {len(request.fields) - 12} more" if len(request.fields) > 12 else ""
    return f"form {message!r} (fields: {names or 'none'}{more})"


def scripted(given: Mapping[str, Any] | None, say: Any) -> Any:
    """The elicitor of a script (nobody to ask): a form is answered from ``given`` (``--answer``
    / ``--answers``: each field's value, defaults for the rest) when given, else declined; a
    link is declined (nobody can open it). Every answer is one line for ``say`` (stderr),
    sensitive values masked; a required field left out or a value the form refuses declines
    the form, the line naming the field. Answers that name no field of the form at all were
    meant for another one: the form is declined, never accepted with the agent's defaults."""
    from acpcli.text.safe import safe_line

    async def elicit(live: Any, request: Request) -> dict[str, Any]:
        if isinstance(request, UrlPage):
            say(f"acpcli: declined the agent's {described(request)}: nobody can open it here")
            return answer(DECLINE)
        if given is None:
            say(
                f"acpcli: declined the agent's {described(request)}: nobody can answer here; "
                "give --answer FIELD=VALUE or --answers FILE.json"
            )
            return answer(DECLINE)
        unused = [safe_line(name[:40]) for name in given if request.field(name) is None]
        if given and len(unused) == len(given):
            # Answers meant for another form: the agent's defaults are not the person's answer.
            shown = ", ".join(unused[:8]) + (", …" if len(unused) > 8 else "")
            say(
                f"acpcli: declined the agent's {described(request)}: "
                f"no field of this form is called {shown}"
            )
            return answer(DECLINE)
        content, problems = answer_from(request, given)
        if problems:
            name, why = next(iter(problems.items()))
            f = request.field(name)
            why = (
                why
                if f is None or not f.sensitive or why in ("required", UNCHECKED)
                else "its value is not accepted"
            )
            say(
                f"acpcli: declined the agent's {described(request)}: "
                f"field {safe_line(name[:60])!r}: {safe_line(why)}"
            )
            return answer(DECLINE)
        result = answer(ACCEPT, content)
        also = f" (no field of this form is called {', '.join(unused[:8])})" if unused else ""
        say(
            f"acpcli: answered the agent's {described(request)} from --answer: "
            f"{safe_line(summary(request, result))}{also}"
        )
        return result

    return elicit
