"""Shell-completion callbacks. They run on every TAB: fast, side-effect free, no agent.

Each returns ``(value, help)`` pairs; shells that show descriptions (zsh, fish) display them.
Nothing here may create the state directory or the database.
"""

from __future__ import annotations

from collections.abc import Iterator

_PROTOCOLS = (("auto", "offer v2, accept v1"), ("1", "ACP v1 only"), ("2", "ACP v2 only"))
_POLICIES = (
    ("ask", "ask on the terminal"),
    ("allow", "allow every request once"),
    ("deny", "reject every request"),
    ("read-only", "allow reads, reject edits and commands"),
)


def protocols(incomplete: str) -> Iterator[tuple[str, str]]:
    return ((v, h) for v, h in _PROTOCOLS if v.startswith(incomplete))


def permission_policies(incomplete: str) -> Iterator[tuple[str, str]]:
    return ((v, h) for v, h in _POLICIES if v.startswith(incomplete))


def formats(incomplete: str) -> Iterator[tuple[str, str]]:
    choices = (("text", "plain text, rich on a terminal"), ("markdown", "a Markdown transcript"), ("jsonl", "one JSON event per line"))
    return ((v, h) for v, h in choices if v.startswith(incomplete))


def agent_names(incomplete: str) -> Iterator[tuple[str, str]]:
    """Built-in and configured agent names."""
    try:
        from acpcli.config import load_config

        agents = load_config().agents
    except Exception:  # a broken config must not break TAB
        return iter(())
    return (
        (name, spec.description or " ".join(spec.argv))
        for name, spec in sorted(agents.items())
        if name.startswith(incomplete)
    )


def session_ids(incomplete: str) -> Iterator[tuple[str, str]]:
    """Locally recorded session ids, newest first, with title and agent as the description."""
    try:
        from acpcli.persistence import Index, db_path

        if not db_path().exists():
            return iter(())
        with Index.open(read_only=True) as index:
            rows = index.list_sessions(limit=200)
    except Exception:
        return iter(())
    return (
        (rec.id, f"{rec.title or '(untitled)'} [{rec.agent}]")
        for rec in rows
        if rec.id.startswith(incomplete)
    )
