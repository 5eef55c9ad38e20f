"""Generate acpcli's protocol models from the ACP JSON schemas.

Usage::

    python tools/gen_models.py            # rewrite acpcli/protocol/{v1,v2,methods}.py
    python tools/gen_models.py --out DIR  # write the three files into DIR instead
    python tools/gen_models.py --check    # exit 1 if the committed files are stale

The schemas are read from the folder ``ACPCLI_SPEC_DIR`` names (the upstream ACP spec, outside
the repository); they are never copied into the repository. Each output file starts with a header
naming the schema and its sha256, so a test notices a schema change without this tool.

datamodel-code-generator (a dev-only dependency, run as a subprocess) writes the classes. It is
fed a *prepared* copy of each schema, because a client must survive what a strict reading of
the schema would reject. The preparation, and the code added around the generated classes:

Open enums -- ``Literal[...] | str``
    Every enum-like ``anyOf``/``oneOf`` of constants (with or without v2's ``"other"``
    branch) becomes a plain ``enum`` that datamodel-code-generator writes, with
    ``--open-enums all``, as ``Literal['a', 'b'] | str`` (``| int`` for error codes). An unknown
    value, ``_``-prefixed extensions included, validates as the string it is and dumps back
    unchanged; the ``Literal`` still documents the known values to readers and type checkers.
    Enum classes were rejected: an unknown member needs ``_missing_`` tricks and dumps less
    predictably.

Open tagged unions -- a callable discriminator with an "Other" member
    Every tagged union (``SessionUpdate``, ``ContentBlock``, ``McpServer``, ...) becomes an
    ``Annotated[Union[...], Discriminator(...)]`` alias. The discriminator reads the tag
    (``sessionUpdate``, ``type``, ...) and picks exactly one member, so errors name that
    member and no time is spent trying the others. A tag the schema does not know selects the
    ``<Union>Other`` member (v2 declares one; v1 gets one added), an ``UnknownVariant`` model
    that keeps every field: unknown update kinds never fail validation, they round-trip.
    v1's untagged defaults (an ``McpServer`` without ``type`` is stdio) are honoured.

    Member naming: when the member's schema is used by this union only, the tag property is
    added to that class itself (``TextContent`` carries ``type: Literal['text']``); when it is
    shared (v1's ``ContentChunk`` serves three update kinds), a subclass named
    ``<Union><Tag>`` carries it (``SessionUpdateAgentMessageChunk``). A union nested in a
    member (v2 ``state_update`` is itself tagged by ``state``) gets the outer tag on each of
    its members. Tag fields are required: build them explicitly (``type="text"``), so a dump
    with ``exclude_unset=True`` never loses a tag.

Leniency the schema asks for -- ``x-deserialize-default-on-error``, ``x-deserialize-skip-invalid-items``
    The schema marks fields whose bad value must fall back to the default, and arrays whose
    bad items must be dropped. The generator writes those marks into each module's
    ``LENIENT_FIELDS`` table; the shared base class (``AcpModel``) repairs such input and
    validates again, only after a first attempt failed, so valid input pays one Python call
    per model and nothing more.

Open models, lazy build -- one hand-written base
    Every class derives from ``AcpModel``, written by hand once in ``acpcli/protocol/base.py``
    (with ``UnknownVariant`` and the discriminator ``tag_reader``) and imported by both
    generated modules: ``extra="allow"`` (unknown fields and ``_meta``
    round-trip), ``defer_build=True`` (importing the module builds no validator; the first
    use of a class builds it), snake_case attributes with the wire names as aliases, used for
    validation and serialization alike (``model_dump()`` speaks the wire names).

The seed wins
    Where the seed page (the primary requirement) shows a message the schema would reject, the
    schema gives way, in the short explicit list ``SEED_RELAXATIONS``.

Envelopes and methods
    The JSON-RPC envelope definitions (``ClientRequest``, ``AgentResponse``, ...) are not
    generated: the connection layer owns the envelope. Their method metadata (``x-method``,
    ``x-side``) becomes the ``PARAMS`` and ``RESULTS`` tables of each module and the pure-data
    ``acpcli/protocol/methods.py``.

Output is deterministic: the same schemas and tool versions give byte-identical files (no
timestamps; schema order is kept).
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT_PACKAGE = REPO / "acpcli" / "protocol"

#: (version, schema file name, output module name)
TARGETS = (
    (1, "acp-v1.schema.json", "v1.py"),
    (2, "acp-v2-draft.schema.json", "v2.py"),
)
METHODS_MODULE = "methods.py"

#: JSON-RPC envelope definitions: read for their method lists, never generated.
#: (definition name, who handles the methods in it, what kind of message it carries)
ENVELOPES = (
    ("ClientRequest", "agent", "request"),
    ("ClientNotification", "agent", "notification"),
    ("AgentRequest", "client", "request"),
    ("AgentNotification", "client", "notification"),
    ("ProtocolLevelNotification", "protocol", "notification"),
    ("AgentResponse", "agent", "response"),
    ("ClientResponse", "client", "response"),
)
#: The tag given to the member that catches unknown tags, and to v1's untagged default member.
#: Neither can be a wire value (they are internal to the discriminator).
OTHER_TAG = "*other"
UNTAGGED_TAG = "*untagged"

#: Where the seed (the primary requirement) shows messages the schema would reject, the schema
#: gives way: (version, definition) -> required properties made optional. The seed's
#: ``initialize`` results carry ``capabilities`` but no ``info``; a client must not refuse an
#: agent for not naming itself.
SEED_RELAXATIONS: dict[tuple[int, str], tuple[str, ...]] = {
    (2, "InitializeResponse"): ("info",),
}

HEADER = "# Generated by tools/gen_models.py from {name} (sha256 {sha}) — do not edit\n"

DCG_OPTIONS = (
    "--input-file-type", "jsonschema",
    "--output-model-type", "pydantic_v2.BaseModel",
    "--target-python-version", "3.10",
    "--target-pydantic-version", "2.11",
    "--formatters", "builtin",
    "--disable-timestamp",
    "--disable-warnings",
    "--use-double-quotes",
    "--use-annotated",
    "--use-union-operator",
    "--use-standard-collections",
    "--snake-case-field",
    "--aliases", json.dumps({"_meta": "meta"}),
    "--use-schema-description",
    "--use-field-description",
    "--use-type-alias",
    "--open-enums", "all",
    "--enum-field-as-literal", "all",
    "--read-format-as-annotation",  # a uri stays the string it was: round-trips byte for byte
    "--keep-model-order",
    "--no-use-one-model-per-ref-site",
)


def spec_dir() -> Path | None:
    """Where the schemas live: ``$ACPCLI_SPEC_DIR`` (None when it is not set)."""
    env = os.environ.get("ACPCLI_SPEC_DIR")
    return Path(env) if env else None


def sha256_of(path: Path) -> str:
    """The hex sha256 of a file's bytes (what the provenance header records)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------------------------
# Methods


@dataclass
class Method:
    """One ACP method as the schema describes it."""

    name: str
    side: str  # who handles it: "agent", "client" or "protocol"
    kind: str  # "request" or "notification"
    params: str  # the definition of its params
    result: str | None = None  # the definition of its result (requests only)


def _refs_in(node: Any) -> list[str]:
    """Every ``#/$defs/X`` named anywhere under ``node``, in document order, unique."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.rsplit("/", 1)[1]
                if name not in found:
                    found.append(name)
            for child in value.values():
                walk(child)
        elif isinstance(value, list):
            for child in value:
                walk(child)

    walk(node)
    return found


def collect_methods(schema: dict[str, Any]) -> list[Method]:
    """Read the methods from the envelopes' ``params``/``result`` members and ``x-method``."""
    defs = schema["$defs"]
    methods: dict[str, Method] = {}
    results: dict[str, str] = {}
    for envelope, side, kind in ENVELOPES:
        if envelope not in defs:
            continue
        member = "result" if kind == "response" else "params"
        for name in _refs_in(_member_schema(defs[envelope], member)):
            target = defs[name]
            method = target.get("x-method")
            if method is None:  # Ext* definitions: extension methods have no fixed name
                continue
            if target.get("x-side") != side:
                raise SystemExit(f"{name}: x-side {target.get('x-side')!r} but found in {envelope}")
            if kind == "response":
                results[method] = name
            else:
                methods.setdefault(method, Method(method, target["x-side"], kind, name))
    # v1 declares the protocol-level notification only inline in the root schema
    for name, target in defs.items():
        if target.get("x-side") == "protocol" and target["x-method"] not in methods:
            methods[target["x-method"]] = Method(target["x-method"], "protocol", "notification", name)
    for name, result in results.items():
        methods[name].result = result
    for m in methods.values():
        if (m.kind == "request") != (m.result is not None):
            raise SystemExit(f"method {m.name}: request without result or notification with one")
    return list(methods.values())


def _member_schema(envelope: dict[str, Any], member: str) -> Any:
    """The schema of an envelope's ``params`` or ``result`` (responses nest it in anyOf)."""
    if member in envelope.get("properties", {}):
        return envelope["properties"][member]
    return [branch.get("properties", {}).get(member) for branch in envelope.get("anyOf", [])]


# --------------------------------------------------------------------------------------------
# Schema preparation


@dataclass
class TaggedUnion:
    """A tagged union, rewritten: which class (or nested union) each tag selects."""

    name: str
    prop: str  # the tag's wire name
    description: str
    members: list[tuple[str, str]] = field(default_factory=list)  # (tag, class or union name)


@dataclass
class Prepared:
    """A schema ready for datamodel-code-generator, plus what the post-processing needs."""

    schema: dict[str, Any]
    unions: list[TaggedUnion]
    unknown_variants: list[str]
    lenient: dict[str, tuple[list[str], list[str]]]  # class -> (default-on-error, skip-invalid)
    methods: list[Method]


def _camel(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^0-9A-Za-z]+", text) if part)


def _branches(node: dict[str, Any]) -> list[Any] | None:
    for key in ("anyOf", "oneOf"):
        value = node.get(key)
        if isinstance(value, list) and all(isinstance(b, dict) for b in value):
            return value
    return None


def _is_enum_like(branches: list[dict[str, Any]]) -> str | None:
    """The JSON type of an anyOf/oneOf of constants (plus at most one open branch), or None."""
    types = {b.get("type") for b in branches}
    if len(types) != 1 or None in types or "const" not in branches[0]:
        return None
    open_branches = [b for b in branches if "const" not in b]
    if len(open_branches) > 1 or any(set(b) - {"type", "title", "description"} for b in open_branches):
        return None
    if any(set(b) - {"type", "const", "title", "description"} for b in branches):
        return None
    return types.pop()


def _open_enums(node: Any) -> Any:
    """Rewrite enum-like unions as plain ``enum`` (written open: ``Literal[...] | str``)."""
    if isinstance(node, list):
        return [_open_enums(v) for v in node]
    if not isinstance(node, dict):
        return node
    node = {k: _open_enums(v) for k, v in node.items()}
    branches = _branches(node)
    if branches is not None:
        json_type = _is_enum_like(branches)
        if json_type is not None:
            values = [b["const"] for b in branches if "const" in b]
            rest = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
            return {**rest, "type": json_type, "enum": values}
    return node


def _tag_prop(node: dict[str, Any], branches: list[dict[str, Any]]) -> str | None:
    disc = node.get("discriminator", {}).get("propertyName")
    if disc:
        return disc
    props = {
        name
        for b in branches
        for name, sub in b.get("properties", {}).items()
        if isinstance(sub, dict) and isinstance(sub.get("const"), str)
    }
    return props.pop() if len(props) == 1 else None


def _count_refs(defs: dict[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[1]
                counts[name] = counts.get(name, 0) + 1
            for child in value.values():
                walk(child)
        elif isinstance(value, list):
            for child in value:
                walk(child)

    walk(defs)
    return counts


def _allof_ref(branch: dict[str, Any]) -> str | None:
    refs = [a["$ref"].rsplit("/", 1)[1] for a in branch.get("allOf", []) if "$ref" in a]
    if len(refs) > 1:
        raise SystemExit(f"union branch with several allOf refs: {refs}")
    return refs[0] if refs else None


class _UnionRewriter:
    """Turns every tagged-union definition into classes plus a :class:`TaggedUnion` record."""

    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs
        self.refs = _count_refs(defs)
        self.unions: dict[str, TaggedUnion] = {}
        self.order: list[str] = []  # unions in dependency order (inner first)
        self.unknown: list[str] = []
        self.tagged = {
            name
            for name, node in defs.items()
            if (b := _branches(node)) is not None and _tag_prop(node, b) is not None
        }

    def run(self) -> None:
        for name in list(self.defs):
            if name in self.tagged:
                self.rewrite(name)

    def _new_def(self, name: str, schema: dict[str, Any]) -> str:
        if name in self.defs:
            raise SystemExit(f"generated member name {name} collides with a definition")
        self.defs[name] = schema
        return name

    def _add_props(self, cls: str, props: dict[str, Any], required: list[str], *, first: bool) -> None:
        """Add properties to a class definition (a nested union: to each of its members)."""
        if cls in self.unions:
            for _tag, member in self.unions[cls].members:
                self._add_props(member, props, required, first=first)
            return
        target = self.defs[cls]
        own = target.get("properties", {})
        target["properties"] = {**props, **own} if first else {**own, **props}
        target["required"] = list(dict.fromkeys(required + target.get("required", [])))

    def rewrite(self, name: str) -> TaggedUnion:
        if name in self.unions:
            return self.unions[name]
        node = self.defs[name]
        branches = _branches(node)
        assert branches is not None
        prop = _tag_prop(node, branches)
        assert prop is not None
        common = dict(node.get("properties", {}))
        common_required = list(node.get("required", []))
        union = TaggedUnion(name, prop, node.get("description", ""))
        other: dict[str, Any] | None = None
        for branch in branches:
            props = dict(branch.get("properties", {}))
            tag_schema = props.pop(prop, None)
            required = [r for r in branch.get("required", []) if r != prop]
            base = _allof_ref(branch)
            if tag_schema is not None and "const" not in tag_schema:
                other = branch
                continue
            if tag_schema is None:  # an untagged default member (v1)
                tag = UNTAGGED_TAG
                if base is not None and not props and not common:
                    union.members.append((tag, base))
                    continue
                cls_name = name + _camel(branch.get("title", "default"))
                own_tag: dict[str, Any] = {}
            else:
                tag = tag_schema["const"]
                cls_name = name + _camel(tag)
                own_tag = {prop: {"type": "string", "const": tag}}
            all_props = {**own_tag, **common, **props}
            all_required = list(own_tag) + common_required + required
            if base is not None and self.refs.get(base, 0) == 1:
                if base in self.tagged:  # a union nested in a member: tag each of its members
                    self.rewrite(base)
                self._add_props(base, all_props, all_required, first=True)
                union.members.append((tag, base))
                continue
            schema: dict[str, Any] = {"type": "object"}
            if branch.get("description"):
                schema["description"] = branch["description"]
            if base is not None:
                schema["allOf"] = [{"$ref": f"#/$defs/{base}"}]
            schema["properties"] = all_props
            if all_required:
                schema["required"] = all_required
            union.members.append((tag, self._new_def(cls_name, schema)))
        tags = [t for t, _m in union.members]
        if len(tags) != len(set(tags)):
            raise SystemExit(f"{name}: a tag (or the untagged default) appears twice: {tags}")
        union.members.append((OTHER_TAG, self._other(name, prop, common, common_required, other)))
        self.defs[name] = {
            k: v for k, v in node.items() if k in ("description", "title")
        } | {"anyOf": [{"$ref": f"#/$defs/{m}"} for _t, m in union.members]}
        self.unions[name] = union
        self.order.append(name)
        return union

    def _other(
        self,
        union: str,
        prop: str,
        common: dict[str, Any],
        common_required: list[str],
        branch: dict[str, Any] | None,
    ) -> str:
        if branch is not None:
            description = branch.get("description", "")
            props = {k: v for k, v in branch.get("properties", {}).items() if k != prop}
            tag_doc = branch["properties"][prop].get("description")
            required = [r for r in branch.get("required", []) if r != prop]
        else:
            description = (
                f"A `{prop}` value this version of the schema does not know. Every field is kept, "
                "so the payload can be stored and forwarded unchanged."
            )
            props, tag_doc, required = {}, None, []
        tag_schema: dict[str, Any] = {"type": "string"}
        if tag_doc:
            tag_schema["description"] = tag_doc
        schema = {
            "type": "object",
            "description": description,
            "properties": {prop: tag_schema, **common, **props},
            "required": list(dict.fromkeys([prop, *common_required, *required])),
            "additionalProperties": True,
        }
        name = self._new_def(union + "Other", schema)
        self.unknown.append(name)
        return name


def _lenient_table(defs: dict[str, Any]) -> dict[str, tuple[list[str], list[str]]]:
    table: dict[str, tuple[list[str], list[str]]] = {}
    for name, node in defs.items():
        props = node.get("properties")
        if not isinstance(props, dict):
            continue
        default = [p for p, s in props.items() if isinstance(s, dict) and s.get("x-deserialize-default-on-error")]
        skip = [p for p, s in props.items() if isinstance(s, dict) and s.get("x-deserialize-skip-invalid-items")]
        if default or skip:
            table[name] = (default, skip)
    return table


def prepare(schema: dict[str, Any], version: int) -> Prepared:
    """Rewrite a schema as the module docstring explains. Pure: ``schema`` is not modified."""
    schema = copy.deepcopy(schema)
    methods = collect_methods(schema)
    for (relax_version, name), props in SEED_RELAXATIONS.items():
        if relax_version != version:
            continue
        required = schema["$defs"][name].get("required", [])
        if not set(props) <= set(required):
            raise SystemExit(f"relaxation {name}.{props}: no longer required; drop the relaxation")
        schema["$defs"][name]["required"] = [r for r in required if r not in props]
    envelopes = {name for name, _side, _kind in ENVELOPES}
    defs = {k: v for k, v in schema["$defs"].items() if k not in envelopes}
    defs = _open_enums(defs)
    rewriter = _UnionRewriter(defs)
    rewriter.run()
    prepared_schema = {
        "$schema": schema.get("$schema"),
        "title": schema.get("title", "Agent Client Protocol"),
        "$defs": defs,
    }
    return Prepared(
        schema=prepared_schema,
        unions=[rewriter.unions[n] for n in rewriter.order],
        unknown_variants=rewriter.unknown,
        lenient=_lenient_table(defs),
        methods=methods,
    )


# --------------------------------------------------------------------------------------------
# Code generation


def run_codegen(schema: dict[str, Any], file_name: str) -> str:
    """Run datamodel-code-generator on a prepared schema; return the module text."""
    with tempfile.TemporaryDirectory(prefix="acpcli-gen-") as tmp:
        src = Path(tmp) / file_name
        dst = Path(tmp) / "out.py"
        src.write_text(json.dumps(schema, indent=1, ensure_ascii=False), encoding="utf-8")
        cmd = [sys.executable, "-m", "datamodel_code_generator", "--input", str(src), "--output", str(dst)]
        proc = subprocess.run([*cmd, *DCG_OPTIONS], capture_output=True, text=True, cwd=tmp)
        if proc.returncode != 0:
            raise SystemExit(f"datamodel-code-generator failed:\n{proc.stderr}")
        return dst.read_text(encoding="utf-8")


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _union_code(union: TaggedUnion) -> str:
    known = sorted(t for t, _m in union.members if t not in (OTHER_TAG, UNTAGGED_TAG))
    untagged = any(t == UNTAGGED_TAG for t, _m in union.members)
    lines = [f"#: {line}".rstrip() for line in union.description.strip().splitlines()]
    lines.append(f"{union.name}: TypeAlias = Annotated[")
    lines.append("    Union[")
    lines.extend(f"        Annotated[{member}, Tag({_q(tag)})]," for tag, member in union.members)
    lines.append("    ],")
    lines.append("    Discriminator(")
    lines.append("        tag_reader(")
    lines.append(f"            {_q(union.prop)},")
    lines.append("            frozenset({" + ", ".join(_q(k) for k in known) + "}),")
    lines.append(f"            untagged={untagged!r},")
    lines.append("        )")
    lines.append("    ),")
    lines.append("]")
    return "\n".join(lines) + "\n"


def _frozenset(items: list[str]) -> str:
    return "frozenset({" + ", ".join(_q(x) for x in items) + "})" if items else "frozenset()"


def _tables_code(prepared: Prepared) -> str:
    out = [
        "",
        "",
        "#: By class: the fields whose invalid value falls back to the default, and the arrays whose",
        "#: invalid items are dropped (wire names), from the schema's x-deserialize-* marks.",
        "LENIENT_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {",
    ]
    for name, (default, skip) in prepared.lenient.items():
        out.append(f"    {_q(name)}: (")
        out.append(f"        {_frozenset(default)},")
        out.append(f"        {_frozenset(skip)},")
        out.append("    ),")
    out.append("}")
    out.append("")
    out.append("#: The params model of every method: requests and notifications, both directions.")
    out.append("PARAMS: dict[str, Any] = {")
    out.extend(f"    {_q(m.name)}: {m.params}," for m in prepared.methods)
    out.append("}")
    out.append("")
    out.append("#: The result model of every request.")
    out.append("RESULTS: dict[str, Any] = {")
    out.extend(f"    {_q(m.name)}: {m.result}," for m in prepared.methods if m.result)
    out.append("}")
    out.append("")
    out.append("#: The open tagged unions: name -> (the tag's wire name, {tag: member class or union}).")
    out.append(f"#: {_q(OTHER_TAG)} selects the member for unknown tags, {_q(UNTAGGED_TAG)} the one for a missing tag.")
    out.append("TAGGED_UNIONS: dict[str, tuple[str, dict[str, Any]]] = {")
    for u in prepared.unions:
        out.append(f"    {_q(u.name)}: (")
        out.append(f"        {_q(u.prop)},")
        out.append("        {")
        out.extend(f"            {_q(t)}: {m}," for t, m in u.members)
        out.append("        },")
        out.append("    ),")
    out.append("}")
    return "\n".join(out) + "\n"


def _statement_ranges(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """Line ranges (1-based, inclusive) of each top-level class or alias, with its docstring."""
    ranges: dict[str, tuple[int, int]] = {}
    body = tree.body
    for i, node in enumerate(body):
        if isinstance(node, ast.ClassDef):
            name = node.name
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
        else:
            continue
        end = node.end_lineno or node.lineno
        after = body[i + 1] if i + 1 < len(body) else None
        if (
            not isinstance(node, ast.ClassDef)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            end = after.end_lineno or after.lineno
        ranges[name] = (node.lineno, end)
    return ranges


def _merge_imports(section: str, extra: dict[str, set[str]], body: str) -> str:
    """The tool's ``from X import ...`` lines plus ours, merged and sorted (stdlib, third
    party, acpcli), without the names ``body`` no longer uses (the classes now derive from
    the hand-written :mod:`acpcli.protocol.base`)."""
    wanted: dict[str, set[str]] = {}
    for node in ast.parse(section).body:
        if not isinstance(node, ast.ImportFrom) or node.module is None or any(a.asname for a in node.names):
            raise SystemExit(f"unexpected import in the generated code: {ast.unparse(node)}")
        wanted.setdefault(node.module, set()).update(a.name for a in node.names)
    for module, names in extra.items():
        wanted.setdefault(module, set()).update(names)
    future = wanted.pop("__future__", set())
    for module, names in list(wanted.items()):
        names.intersection_update(n for n in names if re.search(rf"\b{n}\b", body))
        if not names:
            del wanted[module]
    groups = [
        [m for m in sorted(wanted) if m in sys.stdlib_module_names],
        [m for m in sorted(wanted) if m not in sys.stdlib_module_names and m.split(".")[0] != "acpcli"],
        [m for m in sorted(wanted) if m.split(".")[0] == "acpcli"],
    ]
    out = [f"from __future__ import {', '.join(sorted(future))}\n"] if future else []
    for group in groups:
        if group:
            out.append("\n")
            out.extend(f"from {m} import {', '.join(sorted(wanted[m]))}\n" for m in group)
    return "".join(out)


def postprocess(code: str, prepared: Prepared, header: str, version: int) -> str:
    """Turn datamodel-code-generator's module into the final one (see the module docstring)."""
    ranges = _statement_ranges(ast.parse(code))
    unions = {u.name: u for u in prepared.unions}
    missing = [n for n in prepared.schema["$defs"] if n not in ranges]
    if missing:
        raise SystemExit(f"definitions not generated under their own name: {missing}")
    lines = code.splitlines(keepends=True)
    replace: dict[int, tuple[int, str]] = {}  # first line -> (last line, new text)
    for name, (first, last) in ranges.items():
        if name in unions:
            # in place: the tool already ordered the module so every member precedes the union
            replace[first] = (last, _union_code(unions[name]))
        elif name == _camel(prepared.schema["title"]) and name not in prepared.schema["$defs"]:
            replace[first] = (last, "")  # the root schema (only $defs are kept) as an alias of Any
    out: list[str] = []
    i = 1
    while i <= len(lines):
        if i in replace:
            last, text = replace[i]
            out.append(text)
            i = last + 1
        else:
            out.append(lines[i - 1])
            i += 1
    code = "".join(out)
    unknown = set(prepared.unknown_variants)

    def base_for(match: re.Match[str]) -> str:
        cls = match.group(1)
        return f"class {cls}({'UnknownVariant' if cls in unknown else 'AcpModel'}):"

    code = re.sub(r"^class (\w+)\(BaseModel\):", base_for, code, flags=re.M)
    # per-class copies of the base configuration are redundant
    code = re.sub(r"\n    model_config = ConfigDict\(\n        extra=\"allow\",\n    \)\n", "\n", code)
    if "RootModel" in code:
        raise SystemExit("unexpected RootModel in the generated code")
    # the tool's header comment goes; ours, the imports, then our prelude, then the classes
    first = re.search(r"^(?!#|from |import )\S", code, re.M)
    assert first is not None
    body = code[first.start() :]
    tables = _tables_code(prepared)
    imports = _merge_imports(
        code[: first.start()],
        {
            "typing": {"Annotated", "Any", "TypeAlias", "Union"},
            "pydantic": {"Discriminator", "Tag"},
            "acpcli.protocol.base": {"AcpModel", "UnknownVariant", "tag_reader"},
        },
        body + tables,
    )
    docstring = (
        f'"""ACP v{version} models (pydantic v2), generated from the JSON schema.\n\n'
        "How the schema was prepared (open enums, open tagged unions, leniency) is explained in\n"
        "tools/gen_models.py; the base class every model derives from is acpcli/protocol/base.py.\n"
        '"""\n\n'
    )
    text = header + docstring + imports + "\n\n" + body.rstrip() + "\n" + tables
    return re.sub(r"\n{4,}", "\n\n\n", text)


# --------------------------------------------------------------------------------------------
# methods.py


def _const_name(method: str) -> str:
    return re.sub(r"[^0-9A-Za-z]+", "_", method.removeprefix("$/")).strip("_").upper()


#: JSON types, in the order the required-member tables list them.
_JSON_TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")


def _json_types(node: Any, defs: dict[str, Any], seen: frozenset[str] = frozenset()) -> set[str] | None:
    """The JSON types a (prepared) schema node admits, or None when it admits anything."""
    if not isinstance(node, dict):
        return None
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        return None if name in seen else _json_types(defs[name], defs, seen | {name})
    if "type" in node:
        kinds = node["type"] if isinstance(node["type"], list) else [node["type"]]
        return {"number", "integer"} if kinds == ["number"] else set(kinds)
    if "const" in node or "enum" in node:
        values = [node["const"]] if "const" in node else node["enum"]
        return {_type_of(v) for v in values}
    branches = node.get("anyOf") or node.get("oneOf")
    if isinstance(branches, list):
        found: set[str] = set()
        for branch in branches:
            kinds = _json_types(branch, defs, seen)
            if kinds is None:
                return None
            found |= kinds
        return found
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        return _json_types(all_of[0], defs, seen)
    return None


def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {str: "string", float: "number", list: "array", dict: "object", type(None): "null"}[type(value)]


def required_members(defs: dict[str, Any], name: str) -> dict[str, tuple[str, ...]]:
    """A definition's required members and the JSON types each admits (``()``: any)."""
    node = defs[name]
    props = node.get("properties", {})
    out: dict[str, tuple[str, ...]] = {}
    for member in node.get("required", []):
        kinds = _json_types(props.get(member), defs)
        out[member] = tuple(k for k in _JSON_TYPES if kinds is not None and k in kinds)
    return out


@dataclass
class Shapes:
    """The pure-data contract of what an agent answers, per version (see :func:`render_methods`)."""

    results: dict[int, dict[str, dict[str, tuple[str, ...]]]] = field(default_factory=dict)
    params: dict[int, dict[str, dict[str, tuple[str, ...]]]] = field(default_factory=dict)
    error: dict[str, tuple[str, ...]] = field(default_factory=dict)


def collect_shapes(shapes: Shapes, version: int, prepared: Prepared) -> None:
    """Add the required members of each agent-handled method's result, of each client-handled
    method's params, and of the JSON-RPC error object (which must be the same in every version)."""
    defs = prepared.schema["$defs"]
    shapes.results[version] = {
        m.name: required_members(defs, m.result)
        for m in prepared.methods
        if m.side == "agent" and m.result is not None and defs[m.result].get("required")
    }
    shapes.params[version] = {
        m.name: required_members(defs, m.params)
        for m in prepared.methods
        if m.side == "client" and defs[m.params].get("required")
    }
    error = required_members(defs, "Error")
    if shapes.error and shapes.error != error:
        raise SystemExit(f"the Error object differs between versions: {shapes.error} vs {error}")
    shapes.error = error


def _members_code(members: dict[str, tuple[str, ...]]) -> str:
    def tuple_code(types: tuple[str, ...]) -> str:
        return f"({_q(types[0])},)" if len(types) == 1 else "(" + ", ".join(_q(k) for k in types) + ")"

    return "{" + ", ".join(f"{_q(name)}: {tuple_code(types)}" for name, types in members.items()) + "}"


def render_methods(per_version: dict[int, list[Method]], headers: list[str], shapes: Shapes) -> str:
    """The pure-data ``methods.py``: method name constants, per-version sets, and the
    required members of what the agent answers."""
    names: dict[str, str] = {}
    for methods in per_version.values():
        for m in methods:
            names.setdefault(m.name, _const_name(m.name))
    out = list(headers)
    out.append('"""ACP method names for v1 and v2, and the members what the agent sends must carry, from the schemas.\n\n')
    out.append("Pure data, taken from the schemas' ``x-method``/``x-side`` marks and ``required`` lists:\n")
    out.append("importing this module imports nothing else.\n\n")
    out.append("- ``AGENT_METHODS[v]``: what the agent handles (the client sends these);\n")
    out.append("- ``CLIENT_METHODS[v]``: what the client handles (the agent sends these);\n")
    out.append("- ``PROTOCOL_METHODS[v]``: protocol-level, either side may send them;\n")
    out.append("- ``NOTIFICATIONS[v]``: the methods above that are notifications (no response);\n")
    out.append("- ``RESULT_REQUIRED[v]``: the members each answer to a request the agent handles must carry,\n")
    out.append("  with their JSON types; ``PARAMS_REQUIRED[v]``: those of the params of what the client\n")
    out.append("  handles; ``ERROR_REQUIRED``: those of a JSON-RPC error object (read by\n")
    out.append("  :func:`acpcli.protocol.check_result`, ``check_params`` and ``check_error``).\n")
    out.append('"""\n\nfrom __future__ import annotations\n\n')
    for method, const in sorted(names.items(), key=lambda kv: kv[1]):
        versions = [v for v, ms in sorted(per_version.items()) if any(m.name == method for m in ms)]
        only = "" if len(versions) == len(per_version) else f"  # v{versions[0]} only"
        out.append(f"{const} = {_q(method)}{only}\n")

    def table(title: str, doc: str, pick: Any) -> None:
        out.append(f"\n#: {doc}\n{title}: dict[int, frozenset[str]] = {{\n")
        for version, methods in sorted(per_version.items()):
            chosen = sorted(names[m.name] for m in methods if pick(m))
            out.append(f"    {version}: frozenset({{" if chosen else f"    {version}: frozenset(),\n")
            if chosen:
                out.append("\n" + "".join(f"        {c},\n" for c in chosen) + "    }),\n")
        out.append("}\n")

    table("AGENT_METHODS", "Methods the agent handles, by protocol version.", lambda m: m.side == "agent")
    table("CLIENT_METHODS", "Methods the client handles, by protocol version.", lambda m: m.side == "client")
    table("PROTOCOL_METHODS", "Protocol-level methods either side may send.", lambda m: m.side == "protocol")
    table("NOTIFICATIONS", "The methods that are notifications.", lambda m: m.kind == "notification")
    def required(title: str, doc: str, tables: dict[int, dict[str, dict[str, tuple[str, ...]]]]) -> None:
        out.append(f"\n{doc}{title}: dict[int, dict[str, dict[str, tuple[str, ...]]]] = {{\n")
        for version, table in sorted(tables.items()):
            out.append(f"    {version}: {{\n")
            out.extend(f"        {_q(name)}: {_members_code(members)},\n" for name, members in sorted(table.items()))
            out.append("    },\n")
        out.append("}\n")

    required(
        "RESULT_REQUIRED",
        "#: The members an answer must carry and the JSON types each admits (``()``: any), by version\n"
        "#: and method; a method not listed requires none (its answer may be ``{}``).\n",
        shapes.results,
    )
    required(
        "PARAMS_REQUIRED",
        "#: The members the params of a method the client handles must carry, and their JSON types.\n",
        shapes.params,
    )
    out.append("\n#: The members a JSON-RPC error object must carry (the same in every version).\n")
    out.append(f"ERROR_REQUIRED: dict[str, tuple[str, ...]] = {_members_code(shapes.error)}\n")
    return "".join(out)


# --------------------------------------------------------------------------------------------


def generate(spec: Path) -> dict[str, str]:
    """Every output file's text, by file name."""
    outputs: dict[str, str] = {}
    per_version: dict[int, list[Method]] = {}
    shapes = Shapes()
    headers = []
    for version, file_name, module in TARGETS:
        path = spec / file_name
        header = HEADER.format(name=file_name, sha=sha256_of(path))
        headers.append(header)
        prepared = prepare(json.loads(path.read_text(encoding="utf-8")), version)
        code = run_codegen(prepared.schema, file_name)
        outputs[module] = postprocess(code, prepared, header, version)
        per_version[version] = prepared.methods
        collect_shapes(shapes, version, prepared)
    outputs[METHODS_MODULE] = render_methods(per_version, headers, shapes)
    return outputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT_PACKAGE, help="output directory")
    parser.add_argument("--check", action="store_true", help="fail if the output files are stale")
    args = parser.parse_args(argv)
    spec = spec_dir()
    if spec is None:
        print("set ACPCLI_SPEC_DIR to the folder of the upstream ACP schemas", file=sys.stderr)
        return 2
    missing = [name for _v, name, _m in TARGETS if not (spec / name).is_file()]
    if missing:
        print(f"schemas not found in {spec}: {', '.join(missing)} (set ACPCLI_SPEC_DIR)", file=sys.stderr)
        return 2
    outputs = generate(spec)
    stale = []
    for name, text in outputs.items():
        target = args.out / name
        if args.check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(name)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    if stale:
        print(f"stale: {', '.join(stale)} (run `make models`)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
