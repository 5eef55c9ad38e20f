"""What a command reads and writes beside the session: streams, prompt text, ``-o FILE``.

The prompt comes from arguments, ``-f FILE`` or standard input, checked alike (UTF-8, no NUL,
at most :data:`MAX_PROMPT_BYTES`, read no further than that). Standard input piped beside a
prompt given otherwise is context sent with it (:func:`piped_context`), checked the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import IO

from acpcli.bounded import Readable
from acpcli.env import Environment
from acpcli.errors import UsageError


def environment() -> Environment:
    """The process's streams, with logging pointed away from them (to the log file)."""
    from acpcli.env import configure_logging

    configure_logging()
    return Environment.from_process()


#: The most a prompt may hold (bytes of UTF-8): about two million tokens, more than any model
#: reads at once. A larger file or stream is refused after reading just past this much.
MAX_PROMPT_BYTES = 8 * 1024 * 1024


def prompt_text(text: Sequence[str] | None, file: Path | None, env: Environment) -> str:
    """The prompt from arguments, ``-f FILE`` (``-`` for stdin), or a piped stdin."""
    if text and file is not None:
        raise UsageError("give the prompt as arguments or with -f, not both")
    if text:
        result = " ".join(text)  # the system bounds arguments far below the cap
    elif file is not None:
        if str(file) == "-":
            result = read_stdin_text(env)
        else:
            from acpcli.bounded import open_bounded

            where = f"prompt file {file}"
            try:
                with open_bounded(file) as stream:  # a FIFO: not waited on forever
                    data = _read_prompt(stream, where)
            except OSError as err:
                raise UsageError(f"cannot read {where}: {err.strerror or err}") from None
            result = prompt_from_bytes(data, where)
    elif not env.stdin_isatty:
        result = read_stdin_text(env)
    else:
        raise UsageError("no prompt: pass TEXT, -f FILE, or pipe it on stdin")
    if not result.strip():
        raise UsageError("the prompt is empty")
    return result


def _read_prompt(stream: Readable, where: str) -> bytes:
    """A prompt's bytes, read in chunks (never more than just past :data:`MAX_PROMPT_BYTES`);
    binary data is refused at the chunk holding its first NUL byte, so ``/dev/zero`` costs one
    chunk and a FIFO fed by ``yes`` the cap."""
    from acpcli.bounded import TooLarge, read_capped, size_text

    def no_nul(chunk: bytes, offset: int) -> None:
        nul = chunk.find(b"\0")
        if nul >= 0:
            raise UsageError(f"cannot read {where}: {_BINARY} (a NUL byte at offset {offset + nul})")

    try:
        return read_capped(stream, MAX_PROMPT_BYTES, no_nul)
    except TooLarge:
        raise UsageError(
            f"{where} is too large: more than {size_text(MAX_PROMPT_BYTES)}, the most a prompt may hold",
            hint="mention a large file with @PATH instead of pasting it into the prompt",
        ) from None


_BINARY = "binary data, not text"


def prompt_from_bytes(data: bytes, where: str) -> str:
    """A prompt's bytes as text: UTF-8 without NUL bytes, else a usage error naming ``where``.

    The one check for ``-f FILE`` and standard input alike, so a binary file piped in is
    refused exactly as the same file given with ``-f``.
    """
    nul = data.find(b"\0")
    if nul >= 0:
        raise UsageError(f"cannot read {where}: {_BINARY} (a NUL byte at offset {nul})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(
            f"cannot read {where}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})"
        ) from None


class _Encoded:
    """A text stream read as UTF-8 bytes (a test's ``StringIO`` stdin has no ``buffer``)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def read(self, size: int) -> bytes:
        # At most 4 bytes a character: never more than ``size`` characters' worth past the cap.
        return self._stream.read(max(1, size // 4)).encode("utf-8", "surrogateescape")


def piped_context(text: Sequence[str] | None, file: Path | None, env: Environment) -> str | None:
    """What is piped on standard input beside a prompt given as arguments or ``-f FILE``
    (``git diff | acpcli prompt "review this"``): sent with the prompt as context. None when
    the prompt itself came from standard input, when standard input is a terminal (never
    read: nothing would end it) or closed, and when it holds nothing but whitespace
    (``</dev/null``). Checked and bounded as a prompt from standard input is."""
    if not (text or (file is not None and str(file) != "-")):
        return None  # standard input is the prompt (or there is no prompt: refused before)
    if env.stdin is None or env.stdin_isatty:
        return None
    piped = read_stdin_text(env, "standard input")
    return piped if piped.strip() else None


def read_stdin_text(env: Environment, where: str = "the prompt from standard input") -> str:
    """Standard input as a prompt, checked like a prompt file (:func:`prompt_from_bytes`),
    and bounded like one (:data:`MAX_PROMPT_BYTES`); ``where`` names it in errors."""
    raw = getattr(env.stdin, "buffer", None)
    try:
        data = _read_prompt(raw if raw is not None else _Encoded(env.stdin), where)
    except UnicodeError:  # a text stream that could not decode what it read
        raise UsageError(f"cannot read {where}: not UTF-8 text") from None
    except OSError as err:
        raise UsageError(f"cannot read {where}: {err.strerror or err}") from None
    return prompt_from_bytes(data, where)


def close_output(stream: IO[str], name: str) -> None:
    """Close the ``-o FILE`` stream; a failed last flush (a full disk) is
    :class:`~acpcli.errors.OutputError` unless another error is already on its way out."""
    import sys

    from acpcli.processes.supervisor import output_error

    failing = sys.exc_info()[1]
    try:
        stream.close()
    except OSError as err:
        if failing is None:
            raise output_error(name, err) from None
