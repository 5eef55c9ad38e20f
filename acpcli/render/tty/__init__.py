"""The terminal view: rich rendering with one live region at the bottom.

Layout: user prompts as ``› text`` in bold; agent text as Markdown while it streams (drawn
by :mod:`acpcli.render.markdown_lines`, which looks as rich's ``Markdown`` does at a
fraction of its cost; code in a block still streaming is highlighted once the block closes);
thoughts dim and italic, collapsed to a one-line summary once finished (unless
``show_thoughts``); tool calls with a status icon and colour, title, kind, locations and
content (diffs as coloured unified diffs, terminals as a note); plans as a checklist.
Printed pieces are separated by one blank line.

One module per concern, each importing only those listed before it:

* :mod:`~acpcli.render.tty.split` -- streamed Markdown cut into finished blocks and a live tail;
* :mod:`~acpcli.render.tty.pieces` -- a renderable trimmed to its lines, the spacing between pieces;
* :mod:`~acpcli.render.tty.content` and :mod:`~acpcli.render.tty.cache` -- a tool call's
  content items drawn, and the cache that draws each once;
* :mod:`~acpcli.render.tty.blocks` -- the base of the blocks, one per entry:
  :mod:`~acpcli.render.tty.messages` (agent text, thoughts, prompts),
  :mod:`~acpcli.render.tty.tools` (tool calls), :mod:`~acpcli.render.tty.plans`;
* :mod:`~acpcli.render.tty.region` -- what the live region shows, read from the view at render time;
* :mod:`~acpcli.render.tty.view` -- :class:`TtyView`, which holds the invariants that keep
  streaming linear, the live region and the turn's status line.
"""

from __future__ import annotations

from acpcli.render.tty.view import TtyView

__all__ = ["TtyView"]
