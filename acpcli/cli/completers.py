"""The candidate values a TAB offers for options and arguments (agent names, session ids, choices).

These are the ``autocompletion=`` callbacks of the declarations; :mod:`acpcli.cli.completion`
calls them. They run on every TAB: fast, side-effect free, no agent.

Each returns ``(value, help)`` pairs; shells that show descriptions (zsh, fish) display them.
Nothing here may create the state directory or the database, start an agent, or import
anything heavy (pydantic, rich, prompt_toolkit, the protocol models); sqlite3 is imported
only when there is an index to read. A broken config or index yields no candidates rather
than an error: the TAB is not the place to report it.
"""

from __future__ import annotations

from collections.abc import Iterator

import typer  # loaded already wherever a completer runs (the command line is parsed by it)

_PROTOCOLS = (
    ("auto", "offer v2, accept v1"),
    ("1", "ACP v1 only"),
    ("2", "ACP v2 only"),
    ("2-latest", "ACP v2, the later draft"),
)
_POLICIES = (
    ("ask", "ask on the terminal"),
    ("allow", "allow every request once"),
    ("deny", "reject every request"),
    ("read-only", "allow reads, reject edits and commands"),
)
_FORMATS = (
    ("text", "plain text, rich on a terminal"),
    ("markdown", "a Markdown transcript"),
    ("jsonl", "one JSON event per line"),
)
_SHELLS = (("bash", "GNU Bash"), ("zsh", "Z shell"), ("fish", "the friendly interactive shell"))
_SESSION_LIMIT = 200  # newest first; more is noise in a completion menu


def _matching(choices: tuple[tuple[str, str], ...], incomplete: str) -> Iterator[tuple[str, str]]:
    return ((v, h) for v, h in choices if v.startswith(incomplete))


def protocols(incomplete: str) -> Iterator[tuple[str, str]]:
    """The ``--protocol`` choices."""
    return _matching(_PROTOCOLS, incomplete)


def permission_policies(incomplete: str) -> Iterator[tuple[str, str]]:
    """The ``--permissions`` policies."""
    return _matching(_POLICIES, incomplete)


def formats(incomplete: str) -> Iterator[tuple[str, str]]:
    """The transcript formats of ``--format``."""
    return _matching(_FORMATS, incomplete)


def shells(incomplete: str) -> Iterator[tuple[str, str]]:
    """The shells ``acpcli completion`` has a script for."""
    return _matching(_SHELLS, incomplete)


def agent_names(incomplete: str) -> Iterator[tuple[str, str]]:
    """Built-in and configured agent names (config.toml is read, never written), then the
    ids of the ACP registry's agents from its cached copy (never fetched: no network on TAB)."""
    configured_url = None
    try:
        from acpcli.config import load_config

        cfg = load_config()
        agents, configured_url = cfg.agents, cfg.registry_url
    except Exception:  # noqa: BLE001 - a broken config must not break TAB
        agents = {}
    found = {name: spec.description or " ".join(spec.argv) for name, spec in agents.items()}
    copy = None
    try:
        from acpcli.agents import registry_cache

        if registry_cache()[1].exists():  # (no cached copy: the registry's code is not loaded)
            from acpcli.agents.registry import cached, registry_url

            copy = cached(registry_url(configured_url))
    except Exception:  # noqa: BLE001 - nor an unreadable cache
        copy = None
    if copy is not None:
        for agent_id, entry in copy.agents.items():
            found.setdefault(agent_id, f"{entry.name} {entry.version} (ACP registry)")
    return ((name, help) for name, help in sorted(found.items()) if name.startswith(incomplete))


def agents_actions(incomplete: str) -> Iterator[tuple[str, str]]:
    """What ``acpcli agents`` does besides listing."""
    return _matching(
        (
            ("show", "everything known about one agent"),
            ("install", "install a registry agent's binary"),
            ("update", "install newer versions of installed agents"),
            ("remove", "remove an installed agent"),
        ),
        incomplete,
    )


def session_action(ctx: typer.Context, incomplete: str) -> Iterator[tuple[str, str]]:
    """``acpcli sessions [rm ID… | prune]``: the action first, then (``rm``) session ids not
    given yet."""
    positional = list(ctx.params.get("action") or ())
    if not positional:
        actions = (("rm", "delete sessions' local records"), ("prune", "delete sessions last used long ago"))
        return iter([(name, help) for name, help in actions if name.startswith(incomplete)])
    if positional[0] != "rm":
        return iter(())
    given = set(positional[1:])
    return ((sid, help) for sid, help in session_ids(incomplete) if sid not in given)


def session_ids(incomplete: str) -> Iterator[tuple[str, str]]:
    """Locally recorded session ids, most recently used first; the description is the
    title and the agent (and "closed" for a closed session)."""
    try:
        from acpcli.history.index import Index

        with Index.existing() as index:  # no index yet: nothing creates one
            rows = [] if index is None else index.list_sessions(limit=_SESSION_LIMIT)
    except Exception:  # noqa: BLE001 - nor a broken or foreign index
        return iter(())
    return (
        (rec.id, f"{rec.shown_title or '(untitled)'} [{rec.agent}{', closed' if rec.state == 'closed' else ''}]")
        for rec in rows
        if rec.id.startswith(incomplete)
    )
