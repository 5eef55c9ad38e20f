"""A stored transcript written whole in one of the export formats (markdown, jsonl, text)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from acpcli.errors import UsageError

if TYPE_CHECKING:
    from acpcli.store import Store


def write_transcript(store: Store, output_format: str, stream: TextIO, *, session_id: str, title: str | None) -> None:
    """Write ``store`` to ``stream`` as ``output_format`` (one of :data:`acpcli.render.FORMATS`)."""
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

        stream.write(to_markdown(store, title=title) if output_format == "markdown" else to_text(store))
    stream.flush()
