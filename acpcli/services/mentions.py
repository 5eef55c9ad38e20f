"""``@path`` mentions in a prompt: finding them, completing them, and turning them into content.

Syntax (:func:`find_mentions`):

* A mention is an ``@`` at the start of the text or right after whitespace, followed by a path
  that runs to the next whitespace: ``look at @src/main.py``. ``a@b.com`` is not a mention (the
  ``@`` follows a letter), and neither is ``\\@x``: a backslash -- or anything but whitespace --
  before the ``@`` makes it a literal. The text itself is always sent as typed.
* ``@"path with spaces"`` is the quoted form. It ends at the next ``"`` (a path containing a
  ``"`` cannot be quoted) or, left unclosed, at the end of the line.
* Sentence punctuation right after an unquoted path (any run of ``.,;:!?)``) is not part of
  it -- ``see @notes.md.`` mentions ``notes.md`` -- unless, when a ``cwd`` is given, the path
  with some of that punctuation exists: the longest existing candidate wins. A last component
  made only of dots (``@..``) is never shortened.
* A path is relative to the session's ``cwd`` unless absolute; ``~`` is the home directory.

What is sent (:func:`build_prompt`), given the agent's prompt capabilities: every agent must
accept ``text`` and ``resource_link``; ``resource`` (embedded content) needs
``embeddedContext`` and ``image`` needs ``image``. So the prompt is the text block, then one
block per distinct file (mentions resolving to the same file count once), in order:

* ``image``: a PNG, JPEG, GIF or WebP -- recognised by its magic bytes, whatever its name --
  of at most :data:`MAX_IMAGE_BYTES`, when the agent advertises ``image``;
* ``resource`` with ``text``: a regular file of at most :data:`MAX_EMBED_BYTES` that is UTF-8
  without NUL bytes, when the agent advertises ``embeddedContext``;
* ``resource_link`` otherwise: directories, binaries, big files, special files (which are never
  opened, so a FIFO cannot hang the prompt), files that cannot be read, and everything when the
  capabilities above are absent. ``name`` is the basename; ``mimeType`` and ``size`` when known.

Text piped on standard input beside a prompt (``git diff | acpcli prompt "review this"``) is
one more block, last (:func:`piped_block`): a ``resource`` whose URI is :data:`STDIN_URI` when
the agent advertises ``embeddedContext``, else a ``text`` block between a header and an end line
(:data:`STDIN_HEADER`, :data:`STDIN_FOOTER`). ``@`` in it mentions nothing.

URIs are ``file://`` URIs of the resolved path (symlinks followed). Confinement is
:func:`acpcli.services.files.confine`'s, the same check the agent's own file requests get: a
mention resolving outside the root set (through ``..``, a symlink or an absolute path) is a
:class:`~acpcli.errors.UsageError`, as is a missing file -- except with ``strict=False``
(``acpcli prompt`` and the REPL, whose input may be pasted code full of ``@decorators``), where
an ``@word`` naming nothing stays plain text (:func:`unresolved` lists them, for a hint). Nothing here prints.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acpcli.errors import RpcError, UsageError
from acpcli.protocol.wire import text_block
from acpcli.services.files import confine

if TYPE_CHECKING:
    from acpcli.wire.negotiate import AgentFeatures

#: Text files up to this size are embedded (when allowed); bigger ones are sent as links.
MAX_EMBED_BYTES = 256 * 1024
#: Images up to this size are sent inline (when allowed); bigger ones are sent as links.
MAX_IMAGE_BYTES = 5 * 1024 * 1024
#: The URI of the ``resource`` block holding text piped on standard input (see :func:`piped_block`).
STDIN_URI = "stdin"
#: The lines around text piped on standard input when the agent takes no embedded context.
STDIN_HEADER = "--- standard input (piped with this prompt) ---"
STDIN_FOOTER = "--- end of standard input ---"
#: Characters that end a sentence rather than a path (see the module docstring).
TRAILING_PUNCTUATION = ".,;:!?)"
#: Directory entries completion never offers.
SKIPPED_NAMES = frozenset({".git"})

_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    # (signature, offset, mime type)
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
)

#: Non-``text/`` MIME types whose content is text all the same.
_TEXTUAL_SUFFIXES = ("json", "xml", "javascript", "yaml", "toml", "x-sh", "x-python", "sql")


@dataclass(frozen=True)
class Mention:
    """One ``@path`` in a prompt: ``text[start:end] == raw``; ``path`` is what it names."""

    start: int
    end: int
    raw: str
    path: str
    quoted: bool = False


# -- finding ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Token:
    start: int  # index of the "@"
    end: int  # end of the raw token (before any punctuation is trimmed)
    quoted: bool
    closed: bool  # a quoted token found its closing quote


def _tokens(text: str) -> list[_Token]:
    """Every ``@`` that starts a mention, with the extent of its raw token."""
    tokens: list[_Token] = []
    i = text.find("@")
    while i != -1:
        if i > 0 and not text[i - 1].isspace():
            i = text.find("@", i + 1)
            continue
        if text.startswith('@"', i):
            close = text.find('"', i + 2)
            newline = text.find("\n", i + 2)
            if close != -1 and (newline == -1 or close < newline):
                tokens.append(_Token(i, close + 1, True, True))
            else:
                tokens.append(_Token(i, len(text) if newline == -1 else newline, True, False))
        else:
            j = i + 1
            while j < len(text) and not text[j].isspace():
                j += 1
            tokens.append(_Token(i, j, False, False))
        i = text.find("@", tokens[-1].end)
    return tokens


def _candidates(path: str) -> list[str]:
    """``path`` and its shortenings by trailing punctuation, longest first."""
    out = [path]
    while path and path[-1] in TRAILING_PUNCTUATION:
        last = path.rsplit("/", 1)[-1]
        if last and set(last) == {"."}:  # "..", "dir/." - a directory, not a full stop
            break
        path = path[:-1]
        if path:
            out.append(path)
    return out


def _full_path(path: str, cwd: str) -> str:
    return os.path.join(os.path.abspath(cwd), os.path.expanduser(path))


def find_mentions(text: str, cwd: str | None = None) -> list[Mention]:
    """The ``@path`` mentions in ``text``, in order (syntax: see the module docstring).

    With ``cwd``, trailing punctuation stays part of an unquoted path when the path with it
    exists there (checked with ``os.path.lexists``); without, it is always trimmed.
    """
    mentions: list[Mention] = []
    for tok in _tokens(text):
        if tok.quoted:
            path = text[tok.start + 2 : tok.end - 1 if tok.closed else tok.end]
            if path:
                mentions.append(Mention(tok.start, tok.end, text[tok.start : tok.end], path, True))
            continue
        candidates = _candidates(text[tok.start + 1 : tok.end])
        path = candidates[-1]
        if cwd is not None and len(candidates) > 1:
            path = next((c for c in candidates[:-1] if os.path.lexists(_full_path(c, cwd))), path)
        if path:
            end = tok.start + 1 + len(path)
            mentions.append(Mention(tok.start, end, text[tok.start : end], path))
    return mentions


# -- completing ------------------------------------------------------------------------------


def mention_prefix(text_before_cursor: str) -> str | None:
    """The mention being typed at the end of ``text_before_cursor`` (``@src/ma``,
    ``@"my dir/fi``), or None. The REPL completer passes it to :func:`complete_mention` and
    replaces exactly that many characters with a completion."""
    tokens = _tokens(text_before_cursor)
    if not tokens:
        return None
    last = tokens[-1]
    if last.end != len(text_before_cursor) or last.closed:
        return None
    return text_before_cursor[last.start :]


def _human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    value, units = size / 1024, ["KiB", "MiB", "GiB"]
    while value >= 1024 and len(units) > 1:
        value /= 1024
        units.pop(0)
    return f"{value:.1f} {units[0]}"


def _replacement(path: str, is_dir: bool) -> str:
    if not any(c.isspace() for c in path):
        return "@" + path
    # Quoted: a directory stays open so the person can type on into it (as shells do).
    return f'@"{path}' if is_dir else f'@"{path}"'


def complete_mention(
    word: str, cwd: str, roots: Sequence[str], *, limit: int = 200
) -> list[tuple[str, str]]:
    """Completions for the mention being typed: ``(replacement for word, meta)`` pairs.

    ``word`` starts with ``@`` (as :func:`mention_prefix` returns it). The candidates are the
    entries of the directory the word points into whose names start with what was typed after
    the last ``/``: directories first (ending in ``/``; meta ``"dir"``), then files (meta: their
    size), each group by name; dotfiles only when that name starts with ``.``; ``.git`` never;
    at most ``limit``. The directory must lie inside ``roots`` (else nothing), and so must an
    entry that is a symlink. A path with whitespace is offered in the quoted form. Relative
    stays relative to ``cwd``, as typed. Never raises for an unreadable or missing directory.
    """
    if not word.startswith("@") or limit <= 0:
        return []
    typed = word[1:]
    if typed.startswith('"'):
        typed = typed[1:]
        if '"' in typed:  # a closed quote: the mention is complete
            return []
    head, slash, name = typed.rpartition("/")
    dir_typed = head + slash  # as typed, up to and including the last "/"
    try:
        directory = confine(_full_path(dir_typed or ".", cwd), roots)
        entries = list(os.scandir(directory))
    except (RpcError, OSError, ValueError):
        return []
    found: list[tuple[bool, str, str]] = []  # (is_dir, name, meta)
    for entry in entries:
        if entry.name in SKIPPED_NAMES or not entry.name.startswith(name):
            continue
        if entry.name.startswith(".") and not name.startswith("."):
            continue
        try:
            if entry.is_symlink():
                confine(entry.path, roots)
            st = entry.stat()  # follows symlinks; a dangling one raises and is skipped
        except (RpcError, OSError, ValueError):
            continue
        if stat.S_ISDIR(st.st_mode):
            found.append((True, entry.name, "dir"))
        elif stat.S_ISREG(st.st_mode):
            found.append((False, entry.name, _human_size(st.st_size)))
        else:
            found.append((False, entry.name, "special"))
    found.sort(key=lambda item: (not item[0], item[1].casefold(), item[1]))
    return [
        (_replacement(dir_typed + entry_name + ("/" if is_dir else ""), is_dir), meta)
        for is_dir, entry_name, meta in found[:limit]
    ]


# -- sending ---------------------------------------------------------------------------------


def _image_mime(head: bytes) -> str | None:
    for signature, offset, mime in _MAGIC:
        if head[offset : offset + len(signature)] == signature:
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _resolve(mention: Mention, cwd: str, roots: Sequence[str], strict: bool = True) -> tuple[str, os.stat_result] | None:
    """The confined, resolved path of a mention and its ``stat``; UsageError otherwise
    (``None`` for a missing path when not ``strict``)."""
    full = _full_path(mention.path, cwd)
    if not strict and not os.path.lexists(full):
        return None  # names nothing: plain text (`curl -d @/tmp/x.json` in a pasted script)
    try:
        resolved = confine(full, roots)
    except RpcError as exc:
        where = exc.data.get("resolved") if isinstance(exc.data, dict) else None
        shown = mention.raw if not where else f"{mention.raw} (resolves to {where})"
        raise UsageError(
            f"{shown} is outside the session's directories: {', '.join(roots)}",
            hint="only files inside the session's directories can be mentioned",
        ) from exc
    try:
        return resolved, os.stat(resolved)
    except OSError as exc:
        if not strict and isinstance(exc, FileNotFoundError):
            return None
        reason = "no such file or directory" if isinstance(exc, FileNotFoundError) else exc.strerror
        raise UsageError(
            f"{mention.raw}: {reason or exc} ({resolved})",
            hint=r"write \@ for a literal @",
        ) from exc


def _text_mime(guessed: str | None) -> str:
    """``guessed`` if it names a textual type, else ``text/plain`` (a UTF-8 file named
    ``x.png`` is still text, and must not be labelled an image)."""
    if guessed and (guessed.startswith("text/") or guessed.endswith(_TEXTUAL_SUFFIXES)):
        return guessed
    return "text/plain"


def _read_head(path: str, size: int) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError:
        return None


def _link(path: str, st: os.stat_result, mime: str | None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "resource_link", "uri": Path(path).as_uri(), "name": os.path.basename(path) or path}
    if mime:
        block["mimeType"] = mime
    if stat.S_ISREG(st.st_mode):
        block["size"] = st.st_size
    return block


def _file_block(path: str, st: os.stat_result, image: bool, embed: bool) -> dict[str, Any]:
    """The richest block the capabilities allow for the regular file at ``path``."""
    guessed, encoding = mimetypes.guess_type(path, strict=False)
    if encoding is not None:  # "x.tar.gz" is gzip data, not a tar archive
        guessed = None
    head = _read_head(path, 16)
    if head is None:  # unreadable by us; the agent may still be able to follow a link
        return _link(path, st, guessed)
    image_mime = _image_mime(head)
    if image_mime is not None:
        if image and st.st_size <= MAX_IMAGE_BYTES:
            data = _read_head(path, MAX_IMAGE_BYTES + 1)
            if data is not None and len(data) <= MAX_IMAGE_BYTES:
                return {
                    "type": "image",
                    "mimeType": image_mime,
                    "data": base64.b64encode(data).decode("ascii"),
                    "uri": Path(path).as_uri(),
                }
        return _link(path, st, image_mime)
    if embed and st.st_size <= MAX_EMBED_BYTES:
        data = _read_head(path, MAX_EMBED_BYTES + 1)  # the file may have grown since stat
        if data is not None and len(data) <= MAX_EMBED_BYTES and b"\0" not in data:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                pass
            else:
                resource = {"uri": Path(path).as_uri(), "mimeType": _text_mime(guessed), "text": text}
                return {"type": "resource", "resource": resource}
    return _link(path, st, guessed)


def build_prompt(
    text: str,
    cwd: str,
    roots: Sequence[str],
    features: AgentFeatures,
    *,
    strict: bool = True,
    mentions: bool = True,
    attach: Sequence[str] = (),
    piped: str | None = None,
) -> list[dict[str, Any]]:
    """The content blocks of one prompt: ``text`` as typed, then a block per distinct mention
    (with ``mentions``), then one per path of ``attach`` (files given by name, not found in
    the text: the Python API's way, where a string that merely mentions ``@x`` sends nothing),
    then :func:`piped_block` of ``piped`` (text piped on standard input) unless it is blank.

    Which block a file becomes depends on ``features.prompt_image`` and
    ``features.prompt_embedded_context`` (see the module docstring). Raises
    :class:`~acpcli.errors.UsageError` for a mention of a missing path or of one outside
    ``roots``; no block is built for any mention then. With ``strict=False`` (scripts, whose
    input may be pasted code full of ``@decorators``) a mention of a path that does not exist
    stays plain text instead; one outside ``roots`` is still an error. A path of ``attach``
    must exist and be inside ``roots``.
    """
    blocks: list[dict[str, Any]] = [text_block(text)]
    image = bool(getattr(features, "prompt_image", False))
    embed = bool(getattr(features, "prompt_embedded_context", False))
    # Resolve every mention before reading any file, so a bad one costs nothing.
    targets: dict[str, os.stat_result] = {}
    for mention in find_mentions(text, cwd) if mentions else ():
        found = _resolve(mention, cwd, roots, strict)
        if found is not None:
            targets.setdefault(*found)
    for path in attach:
        given = os.fspath(path)
        found = _resolve(Mention(0, len(given), given, given), cwd, roots, True)
        if found is not None:
            targets.setdefault(*found)
    for path, st in targets.items():
        if stat.S_ISREG(st.st_mode):
            blocks.append(_file_block(path, st, image, embed))
        else:  # a directory, FIFO, socket or device: never opened
            blocks.append(_link(path, st, None))
    if piped and piped.strip():
        blocks.append(piped_block(piped, embed))
    return blocks


def piped_block(piped: str, embed: bool) -> dict[str, Any]:
    """The block carrying text piped on standard input: a ``resource`` named
    :data:`STDIN_URI` when the agent takes embedded context (``embed``), else a ``text``
    block that says what it is, so the agent cannot take it for more of the prompt."""
    if embed:
        return {"type": "resource", "resource": {"uri": STDIN_URI, "mimeType": "text/plain", "text": piped}}
    ending = "" if piped.endswith("\n") else "\n"
    return text_block(f"{STDIN_HEADER}\n{piped}{ending}{STDIN_FOOTER}")


def unresolved(text: str, cwd: str) -> list[Mention]:
    """The mentions of ``text`` that name nothing under ``cwd`` (what :func:`build_prompt`
    with ``strict=False`` leaves as plain text: ``@dataclass`` in pasted code)."""
    return [m for m in find_mentions(text, cwd) if not os.path.lexists(_full_path(m.path, cwd))]
