"""The protocol page's table (docs/protocol.md) of what acpcli supports, method by method, is the protocol layer's
(:mod:`acpcli.protocol.support`), and that table covers every method of the generated method
table (:mod:`acpcli.protocol.methods`) in both versions, each in the direction and versions
the schemas give it."""

from __future__ import annotations

from pathlib import Path

from acpcli.protocol import methods, support

README = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
HEADER = "| method | direction | ACP v1 (stable): gated on | v2 draft: gated on | acpcli |"


def _readme_rows() -> list[list[str]]:
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index(HEADER) + 2  # past the header and its rule
    rows = []
    for line in lines[start:]:
        if not line.startswith("| "):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def test_the_readme_table_is_the_support_table() -> None:
    shown = [
        [name.replace("`", ""), direction, v1, v2, acpcli]
        for name, direction, v1, v2, acpcli in _readme_rows()
    ]
    expected = [[m.name, m.direction, m.v1, m.v2, m.acpcli] for m in support.METHODS]
    assert shown == expected


def test_every_method_of_the_schemas_is_in_the_support_table() -> None:
    table = support.by_name()
    sides = (
        (methods.AGENT_METHODS, support.CLIENT_TO_AGENT),
        (methods.CLIENT_METHODS, support.AGENT_TO_CLIENT),
        (methods.PROTOCOL_METHODS, support.EITHER),
    )
    for by_version, direction in sides:
        for version, names in by_version.items():
            for name in names:
                assert name in table, f"{name} (ACP v{version}) is not in acpcli/protocol/support.py"
                row = table[name]
                assert row.direction == direction, name
                gate = row.v1 if version == 1 else row.v2
                assert gate != support.NOT_IN, f"{name} is in ACP v{version}"
    for row in support.METHODS:  # a method the schemas give a version to is not marked absent there
        for version, gate in ((1, row.v1), (2, row.v2)):
            known = set().union(*(by_version[version] for by_version, _ in sides))
            if gate == support.NOT_IN:
                assert row.name not in known, f"{row.name} is in ACP v{version}"
