"""A form field's ``pattern`` checked against a value in bounded time.

The agent chooses the pattern, and Python's ``re`` backtracks: ``^(a+)+$`` against forty ``a``
and a ``!`` runs for hours inside C code that holds the GIL, where no thread, no signal handler
and no Ctrl-C gets a turn. So a pattern never meets a value in ``re`` in this process:

* the patterns JSON Schema recommends (characters, ``.``, classes ``[...]``, escapes such as
  ``\\d \\w \\s \\x41``, groups ``(...)`` ``(?:...)`` ``(?P<n>...)``, ``|``, the quantifiers
  ``* + ? {n} {n,} {n,m}`` and their lazy forms, ``^ $ \\A \\Z``) are compiled here to an
  automaton that never backtracks: the value is read once, each character costing at most the
  size of the pattern, and the sets of states met are cached, so a character usually costs one
  dictionary look-up. The run is capped at :data:`MAX_STEPS` steps all the same;
* any other pattern (back-references, look-around, ``\\b``, inline flags), one too large to
  compile here (:data:`MAX_PROGRAM`), or a run past the cap goes to ``re`` in a child process,
  killed after :data:`CHILD_SECONDS`. The value (maybe a secret) reaches the child on its
  standard input, never on its command line, where other users could read it.

:func:`search` answers as ``re.search(pattern, value) is not None`` would (each single-character
piece of the pattern is still read by ``re`` itself, so ``\\d``, ``\\w`` and classes mean what
they mean there), or None: the pattern could not be checked in time. The caller refuses a value
it could not check; it never accepts one unchecked.

Pure but for the child process; nothing here is imported before a form has a pattern.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

#: The most steps (states visited, characters tested) a run here may take before the pattern
#: goes to the child process instead (about a second of Python on a slow machine).
MAX_STEPS = 1_000_000
#: The most instructions a pattern compiles to here (``x{1000}`` is a thousand of them).
MAX_PROGRAM = 20_000
#: The most sets of states remembered at once (the cache starts over past it).
MAX_CACHED = 4_096
#: How long the child process may take to start and run ``re`` (seconds); then it is killed.
CHILD_SECONDS = 5.0

# Instructions: (CHAR, test) goes on to the next one when the character passes ``test``;
# (SPLIT, a, b) to both a and b; (JUMP, a) to a; BOL/EOL/EOS go on to the next one at the
# beginning, at the end (or before a last newline, as ``$`` in ``re``), at the very end.
CHAR, SPLIT, JUMP, BOL, EOL, EOS, MATCH = range(7)

Instruction = tuple[Any, ...]


class Unsupported(Exception):
    """The pattern uses something this module does not compile (``re`` in a child decides)."""


class _OverBudget(Exception):
    """The run took more than :data:`MAX_STEPS` steps."""


def search(pattern: str, value: str) -> bool | None:
    """Whether ``pattern`` matches somewhere in ``value`` (as ``re.search``); None when that
    could not be decided in time (see the module docstring)."""
    program = _compiled(pattern)
    if program is not None:
        try:
            return program.search(value)
        except _OverBudget:
            pass
    return _in_child(pattern, value)


# -- reading a pattern ----------------------------------------------------------------------

# A node of the parsed pattern: ("char", test), ("cat", [nodes]), ("alt", [nodes]),
# ("rep", node, least, most or None), ("bol",), ("eol",), ("eos",).
Node = tuple[Any, ...]

_SINGLE_ESCAPES = set("dDwWsSafnrtv")
_REPEAT = re.compile(r"\{(\d*)(,(\d*))?\}")


def _single(source: str) -> Node:
    """A piece of the pattern that matches one character, tested by ``re`` itself."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "possible nested set" and the like: re's business
        try:
            test = re.compile(source).fullmatch
        except (re.error, RecursionError, OverflowError):
            raise Unsupported(source) from None
    return ("char", test)


def _literal(ch: str) -> Node:
    return ("char", ch.__eq__)


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.pos = 0

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def parse(self) -> Node:
        node = self.alternation()
        if self.pos != len(self.text):
            raise Unsupported(f"an unexpected {self.peek()!r}")  # an unbalanced ")"
        return node

    def alternation(self) -> Node:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.pos += 1
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def sequence(self) -> Node:
        items: list[Node] = []
        while self.peek() not in ("", "|", ")"):
            atom = self.atom()
            items.append(self.repeated(atom))
        return ("cat", items)

    def repeated(self, atom: Node) -> Node:
        ch = self.peek()
        least: int
        most: int | None
        if ch == "*":
            least, most, self.pos = 0, None, self.pos + 1
        elif ch == "+":
            least, most, self.pos = 1, None, self.pos + 1
        elif ch == "?":
            least, most, self.pos = 0, 1, self.pos + 1
        elif ch == "{" and (found := self._repeat_here()) is not None:
            low, comma, high = found.group(1), found.group(2), found.group(3)
            least = int(low) if low else 0
            most = (int(high) if high else None) if comma else least
            self.pos = found.end()
        else:
            return atom  # (a "{" that starts no repeat is the next atom: a character)
        if atom[0] in ("bol", "eol", "eos"):
            raise Unsupported("a repeated anchor")
        if self.peek() == "?":
            self.pos += 1  # lazy: the same language, and only whether it matches counts here
        if self.peek() in ("*", "+", "?") or self._repeat_here():
            raise Unsupported("a possessive or second quantifier")
        return ("rep", atom, least, most)

    def _repeat_here(self) -> re.Match[str] | None:
        """The ``{m,n}`` that starts here, if one does (else a ``{`` is a character)."""
        if self.text[self.pos + 1 : self.pos + 2] == "}":
            return None
        return _REPEAT.match(self.text, self.pos)

    def atom(self) -> Node:
        text, start = self.text, self.pos
        ch = text[start]
        self.pos += 1
        if ch == "(":
            if text.startswith("?:", self.pos):
                self.pos += 2
            elif text.startswith("?P<", self.pos):
                end = text.find(">", self.pos)
                if end < 0:
                    raise Unsupported("a group name")
                self.pos = end + 1
            elif text.startswith("?", self.pos):
                raise Unsupported("a (?...) construct")
            inner = self.alternation()
            if self.peek() != ")":
                raise Unsupported("an unclosed group")
            self.pos += 1
            return inner
        if ch == "[":
            return _single(text[start : self._class_end(start)])
        if ch == ".":
            return ("char", "\n".__ne__)
        if ch == "^":
            return ("bol",)
        if ch == "$":
            return ("eol",)
        if ch == "\\":
            return self.escape(start)
        if ch in "*+?":
            raise Unsupported("nothing to repeat")
        return _literal(ch)

    def escape(self, start: int) -> Node:
        text = self.text
        ch = self.peek()
        if not ch:
            raise Unsupported("a trailing backslash")
        self.pos += 1
        if ch == "A":
            return ("bol",)
        if ch == "Z":
            return ("eos",)
        if ch in _SINGLE_ESCAPES:
            return _single(text[start : self.pos])
        if ch == "0":
            digits = 0
            while digits < 2 and self.peek() in tuple("01234567"):
                self.pos += 1
                digits += 1
            return _single(text[start : self.pos])
        if ch in "xuU":
            self.pos += {"x": 2, "u": 4, "U": 8}[ch]
            return _single(text[start : self.pos])
        if ch == "N":
            end = text.find("}", self.pos)
            if end < 0:
                raise Unsupported("a \\N escape")
            self.pos = end + 1
            return _single(text[start : self.pos])
        if ch.isascii() and ch.isalnum():
            raise Unsupported(f"\\{ch}")  # back-references, \b, \B, \z...
        return _literal(ch)

    def _class_end(self, start: int) -> int:
        """The index just past the ``]`` that closes the class opened at ``start``."""
        text, pos = self.text, start + 1
        if text.startswith("^", pos):
            pos += 1
        if text.startswith("]", pos):
            pos += 1  # a "]" first in a class is a character of it
        while pos < len(text):
            if text[pos] == "\\":
                pos += 2
            elif text[pos] == "]":
                self.pos = pos + 1
                return pos + 1
            else:
                pos += 1
        raise Unsupported("an unclosed class")


# -- the automaton --------------------------------------------------------------------------


@dataclass
class _Program:
    code: list[Instruction]
    #: (state, character) -> the state after it (states: frozensets of instruction indexes)
    cache: dict[tuple[frozenset[int], str], frozenset[int]] = field(default_factory=dict)

    def search(self, value: str) -> bool:
        code, cache, end = self.code, self.cache, len(value)
        match = len(code) - 1
        budget = [MAX_STEPS]
        state = self._closure((0,), True, end == 0 or (end == 1 and value == "\n"), end == 0, budget)
        if match in state:
            return True
        for index, ch in enumerate(value):
            at = index + 1
            last = at == end
            eol = last or (at == end - 1 and value[at] == "\n")
            key = (state, ch)
            following = None if eol else cache.get(key)
            if following is None:
                budget[0] -= len(state)
                targets = [pc + 1 for pc in state if code[pc][0] == CHAR and code[pc][1](ch)]
                targets.append(0)  # a match may start at every character
                following = self._closure(targets, False, eol, last, budget)
                if not eol:
                    if len(cache) >= MAX_CACHED:
                        cache.clear()
                    cache[key] = following
            if match in following:
                return True
            state = following
        return False

    def _closure(self, pcs: list[int] | tuple[int, ...], bol: bool, eol: bool, eos: bool, budget: list[int]) -> frozenset[int]:
        code = self.code
        stack = list(pcs)
        seen: set[int] = set()
        kept: list[int] = []
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op = code[pc]
            kind = op[0]
            if kind in (CHAR, MATCH):
                kept.append(pc)
            elif kind == SPLIT:
                stack.append(op[2])
                stack.append(op[1])
            elif kind == JUMP:
                stack.append(op[1])
            elif (kind == BOL and bol) or (kind == EOL and eol) or (kind == EOS and eos):
                stack.append(pc + 1)
        budget[0] -= len(seen)
        if budget[0] < 0:
            raise _OverBudget
        return frozenset(kept)


class _Emitter:
    def __init__(self) -> None:
        self.code: list[list[Any]] = []

    def add(self, *op: Any) -> int:
        if len(self.code) >= MAX_PROGRAM:
            raise Unsupported("too large to compile here")
        self.code.append(list(op))
        return len(self.code) - 1

    def emit(self, node: Node) -> None:
        kind = node[0]
        if kind == "char":
            self.add(CHAR, node[1])
        elif kind == "cat":
            for item in node[1]:
                self.emit(item)
        elif kind == "alt":
            jumps = []
            branches = node[1]
            for branch in branches[:-1]:
                split = self.add(SPLIT, 0, 0)
                self.code[split][1] = len(self.code)
                self.emit(branch)
                jumps.append(self.add(JUMP, 0))
                self.code[split][2] = len(self.code)
            self.emit(branches[-1])
            for jump in jumps:
                self.code[jump][1] = len(self.code)
        elif kind == "rep":
            _, inner, least, most = node
            for _ in range(least):
                self.emit(inner)
            if most is None:
                loop = self.add(SPLIT, 0, 0)
                self.code[loop][1] = len(self.code)
                self.emit(inner)
                self.add(JUMP, loop)
                self.code[loop][2] = len(self.code)
            else:
                for _ in range(most - least):
                    split = self.add(SPLIT, 0, 0)
                    self.code[split][1] = len(self.code)
                    self.emit(inner)
                    self.code[split][2] = len(self.code)
        else:
            self.add({"bol": BOL, "eol": EOL, "eos": EOS}[kind])


@lru_cache(maxsize=32)
def _compiled(pattern: str) -> _Program | None:
    """The automaton of ``pattern``, or None when it uses what this module does not compile."""
    try:
        tree = _Parser(pattern).parse()
        emitter = _Emitter()
        emitter.emit(tree)
        emitter.add(MATCH)
    except (Unsupported, RecursionError, IndexError, ValueError):
        return None
    return _Program([tuple(op) for op in emitter.code])


# -- the child process ----------------------------------------------------------------------

_CHILD = (
    "import json, re, sys\n"
    "pattern, value = json.loads(sys.stdin.read())\n"
    "sys.stdout.write('1' if re.search(pattern, value) else '0')\n"
)


@lru_cache(maxsize=64)
def _in_child(pattern: str, value: str) -> bool | None:
    """``re.search`` in a child process killed after :data:`CHILD_SECONDS` (None: it did not
    answer in time, or could not run)."""
    import json
    import subprocess
    import sys

    if not sys.executable:
        return None
    data = json.dumps([pattern, value]).encode("ascii")  # lone surrogates too, as \\udXXX
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _CHILD],
            input=data,
            capture_output=True,
            timeout=CHILD_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):  # the timeout too: run() has killed it
        return None
    answer = proc.stdout.strip()
    if proc.returncode != 0 or answer not in (b"0", b"1"):
        return None
    return answer == b"1"
