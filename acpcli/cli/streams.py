"""What a command reads and writes beside the session: streams, prompt text, ``-o FILE``.

The prompt comes from arguments, ``-f FILE`` or standard input, checked alike (UTF-8, no NUL).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import IO

from acpcli.env import Environment
from acpcli.errors import UsageError


def environment() -> Environment:
    """The process's streams, with logging pointed away from them (to the log file)."""
    from acpcli.env import configure_logging

    configure_logging()
    return Environment.from_process()


def prompt_text(text: Sequence[str] | None, file: Path | None, env: Environment) -> str:
    """The prompt from arguments, ``-f FILE`` (``-`` for stdin), or a piped stdin."""
    if text and file is not None:
        raise UsageError("give the prompt as arguments or with -f, not both")
    if text:
        result = " ".join(text)
    elif file is not None:
        if str(file) == "-":
            result = read_stdin_text(env)
        else:
            try:
                data = Path(file).read_bytes()
            except OSError as err:
                raise UsageError(f"cannot read prompt file {file}: {err.strerror or err}") from None
            result = prompt_from_bytes(data, f"prompt file {file}")
    elif not env.stdin_isatty:
        result = read_stdin_text(env)
    else:
        raise UsageError("no prompt: pass TEXT, -f FILE, or pipe it on stdin")
    if not result.strip():
        raise UsageError("the prompt is empty")
    return result


def prompt_from_bytes(data: bytes, where: str) -> str:
    """A prompt's bytes as text: UTF-8 without NUL bytes, else a usage error naming ``where``.

    The one check for ``-f FILE`` and standard input alike, so a binary file piped in is
    refused exactly as the same file given with ``-f``.
    """
    nul = data.find(b"\0")
    if nul >= 0:
        raise UsageError(f"cannot read {where}: binary data, not text (a NUL byte at offset {nul})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(
            f"cannot read {where}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})"
        ) from None


def read_stdin_text(env: Environment) -> str:
    """Standard input as a prompt, checked like a prompt file (:func:`prompt_from_bytes`)."""
    raw = getattr(env.stdin, "buffer", None)
    try:
        data = raw.read() if raw is not None else env.stdin.read().encode("utf-8", "surrogateescape")
    except UnicodeError:  # a text stream that could not decode what it read
        raise UsageError("cannot read the prompt from standard input: not UTF-8 text") from None
    except OSError as err:
        raise UsageError(f"cannot read the prompt from standard input: {err.strerror or err}") from None
    return prompt_from_bytes(data, "the prompt from standard input")


def close_output(stream: IO[str], name: str) -> None:
    """Close the ``-o FILE`` stream; a failed last flush (a full disk) is
    :class:`~acpcli.errors.OutputError` unless another error is already on its way out."""
    import sys

    from acpcli.supervise import output_error

    failing = sys.exc_info()[1]
    try:
        stream.close()
    except OSError as err:
        if failing is None:
            raise output_error(name, err) from None
