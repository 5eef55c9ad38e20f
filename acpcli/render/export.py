"""A stored transcript written whole in one of the export formats (markdown, jsonl, text)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from acpcli.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable

    from acpcli.history.index import SessionRecord
    from acpcli.model import Store


def write_transcript(
    store: Store,
    output_format: str,
    stream: TextIO,
    *,
    session_id: str,
    title: str | None,
    record: SessionRecord | None = None,
) -> None:
    """Write ``store`` to ``stream`` as ``output_format`` (one of :data:`acpcli.render.FORMATS`);
    the Markdown document starts with what ``record`` says of the session."""
    from acpcli.render import FORMATS

    if output_format not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)} (got {output_format!r})")
    if output_format == "jsonl":
        from acpcli.render.jsonl import JsonlView

        view = JsonlView(stream, session_id=session_id, final_only=True)
        view.print_store(store)
        view.close()
    else:
        from acpcli.render.transcript import to_markdown, to_text

        if output_format == "markdown":
            about = about_session(record, store.usage) if record is not None else [("Session", session_id)]
            stream.write(to_markdown(store, title=title or (record.shown_title if record else None), about=about))
        else:
            stream.write(to_text(store))
    stream.flush()


def about_session(record: SessionRecord, usage: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """The header of a Markdown export: the session id, the agent (name and version, as its
    ``initialize`` answer gave them), the working directory, when it started and was last
    used, and its usage as the agent last reported it."""
    from datetime import datetime

    def when(ts: float) -> str:
        return datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d %H:%M %Z")

    info = record.agent_info or {}
    name = info.get("title") or info.get("name")
    agent = record.agent if not isinstance(name, str) or not name or name == record.agent else f"{record.agent} ({name})"
    version = info.get("version")
    if isinstance(version, str) and version:
        agent += f" {version}"
    about = [
        ("Session", record.id),
        ("Agent", agent),
        ("Directory", record.cwd),
        ("Started", when(record.created_at)),
        ("Last used", when(record.last_used_at)),
    ]
    from acpcli.render.usage import usage_text

    shown = usage_text(usage or record.usage)
    if shown is not None:
        about.append(("Usage", shown))
    return about


def exporter(session_id: str) -> Callable[[str, str], None]:
    """``/export``: the stored transcript of the REPL's session, like ``acpcli export``."""

    def export(path: str, output_format: str) -> None:
        from acpcli.history.records import stored

        record, store = stored(session_id)
        try:
            with open(path, "w", encoding="utf-8") as stream:
                write_transcript(store, output_format, stream, session_id=record.id, title=record.title, record=record)
        except OSError as err:
            raise UsageError(f"cannot write {path}: {err.strerror or err}") from None

    return export
