"""Benchmark: from ``acpcli prompt`` starting to the first agent chunk on stdout (issue 6, #5).

Runs, ``--n`` times each (interleaved, so drift on a shared machine hits all three), in a
fresh ``ACPCLI_HOME`` and working directory:

* **agent start-up**: a tiny stdlib client spawns the demo agent
  (``python -m acpcli.demo_agent --delay 0``) and times the spawn until the answer to
  ``initialize`` arrives -- the agent's own share of any round trip;
* **acpcli**: ``acpcli prompt --cmd "<python> -m acpcli.demo_agent --delay 0" "hi"`` with
  stdout a pipe (the plain view, flushed per chunk), timed from the spawn until the first
  byte of the agent's turn reaches stdout: the first byte after the echo of the prompt
  (``> hi``), which is the agent's thought. Also timed: the first byte of the agent's
  answer message (after the thought, the plan and the permission-gated edit) and the exit;
* **floor**: this file's ``--floor-client`` mode, a minimal stdlib client (its own
  process) that spawns the same agent and sends ``initialize``, ``session/new`` and
  ``session/prompt``, and writes the first agent chunk's text to stdout, timed the same way.

The figure is the median acpcli time minus the median agent start-up: what acpcli itself
adds (interpreter and imports, the session index, the handshake, rendering). The baseline
is the floor's time minus the same start-up. Target: acpcli's share <= 300 ms (a prompt
should feel immediate; the start-up benchmark gives the import budget behind it).
Exits 0 unless ``--check`` is given and the target is missed.

Run: ``.venv/bin/python bench/bench_roundtrip.py [--n 11] [--agent-protocol 1|2] [--check]``.
``--acpcli COMMAND`` runs another build instead of the console script (e.g.
``"env PYTHONPATH=/tmp/old /path/to/python -m acpcli"``); ``--compare COMMAND`` runs that
build as well, in the same rounds, and prints its figure next to this one's (an A/B that
the machine's drift hits equally).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_MS = 300.0
PROMPT = "hi"
ECHO = f"> {PROMPT}\n"  # the plain view's rendering of the user's prompt
ANSWER_MARK = "## Demo agent reply"  # the first line of the demo agent's answer message


def demo_argv(python: str, protocol: int) -> list[str]:
    return [python, "-m", "acpcli.demo_agent", "--delay", "0", "--protocol", str(protocol)]


def bench_env(root: Path) -> dict[str, str]:
    """The environment of every measured process: as a user's shell has it.

    This machine sets ``PYTHONDONTWRITEBYTECODE`` (every run would compile acpcli and the
    demo agent from source: the compiler would be measured) and ``PYTHONUNBUFFERED``; both
    are dropped, and bytecode goes to a cache under ``root`` (filled by a warm-up round).
    """
    env = dict(os.environ)
    for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "ACPCLI_LOG_FILE"):
        env.pop(name, None)
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    return env


def acpcli_argv(python: str) -> list[str]:
    """The installed console script next to ``python`` (what a user runs), else ``-m acpcli``."""
    script = Path(python).parent / "acpcli"
    return [str(script)] if script.exists() else [python, "-m", "acpcli"]


# -- the clients ---------------------------------------------------------------------------------


def _lines(proc: subprocess.Popen[bytes]) -> Any:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip():
            yield json.loads(line)


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def _initialize(protocol: int) -> dict[str, Any]:
    params: dict[str, Any] = {"protocolVersion": protocol}
    if protocol == 1:
        params["clientCapabilities"] = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    else:
        params["capabilities"] = {}
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


def _ends_v2_turn(update: dict[str, Any]) -> bool:
    return update.get("sessionUpdate") == "state_update" and update.get("state") == "idle"


def floor_client(agent: list[str], protocol: int) -> int:
    """initialize, session/new, session/prompt; print the first agent chunk's text; then
    answer any permission request with cancelled, wait for the turn to end and exit."""
    proc = subprocess.Popen(agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    messages = _lines(proc)
    _send(proc, _initialize(protocol))
    next(m for m in messages if m.get("id") == 1)
    _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": os.getcwd(), "mcpServers": []}})
    session_id = next(m for m in messages if m.get("id") == 2)["result"]["sessionId"]
    prompt = [{"type": "text", "text": PROMPT}]
    _send(
        proc,
        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session_id, "prompt": prompt}},
    )
    printed = False
    for message in messages:
        method = message.get("method")
        if method == "session/update" and not printed:
            update = message["params"]["update"]
            if not str(update.get("sessionUpdate", "")).startswith("user_message"):
                content = update.get("content")
                text = content.get("text", "") if isinstance(content, dict) else ""
                sys.stdout.write((text or update.get("sessionUpdate", "?")) + "\n")
                sys.stdout.flush()
                printed = True
        elif method == "session/request_permission":
            _send(proc, {"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": {"outcome": "cancelled"}}})
        elif (message.get("id") == 3 and protocol == 1) or (method == "session/update" and _ends_v2_turn(message["params"]["update"])):
            break
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait()
    return 0


def agent_startup(agent: list[str], protocol: int, cwd: Path, env: dict[str, str]) -> float:
    """Seconds from spawning the agent to its answer to ``initialize``."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd, env=env
    )
    _send(proc, _initialize(protocol))
    next(m for m in _lines(proc) if m.get("id") == 1)
    elapsed = time.perf_counter() - start
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    proc.wait()
    proc.stdout.close()
    return elapsed


def timed_output(argv: list[str], cwd: Path, env: dict[str, str], skip: str) -> tuple[float, float | None, float, str]:
    """Run ``argv``; return seconds from spawn to the first stdout byte after the prefix
    ``skip`` (if the output starts with it), to the answer mark (or None), to exit, and the output."""
    errors = cwd / f"stderr-{Path(argv[0]).name}-{len(list(cwd.glob('stderr-*')))}.txt"
    start = time.perf_counter()
    with open(errors, "wb") as stderr:  # a file: a pipe read only at the end could fill up and stall
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, cwd=cwd, env=env)
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    out = b""
    first: float | None = None
    answer: float | None = None
    while True:
        data = os.read(fd, 65536)
        now = time.perf_counter() - start
        if not data:
            break
        out += data
        text = out.decode("utf-8", "replace")
        if first is None:
            prefix = skip if text.startswith(skip) else ""
            if len(text) > len(prefix) and (prefix or not skip.startswith(text)):
                first = now
        if answer is None and ANSWER_MARK in text:
            answer = now
    code = proc.wait()
    total = time.perf_counter() - start
    proc.stdout.close()
    if code != 0 or first is None:
        text = errors.read_text(encoding="utf-8", errors="replace")
        raise SystemExit(f"{shlex.join(argv)} exited {code} (first byte seen: {first is not None}):\n{text}")
    return first, answer, total, out.decode("utf-8", "replace")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--floor-client"]:
        protocol = int(argv[1])
        return floor_client(argv[3:] if argv[2:3] == ["--"] else argv[2:], protocol)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=11, help="runs of each (default 11); medians are reported")
    parser.add_argument(
        "--agent-protocol", type=int, choices=(1, 2), default=2, help="the demo agent's protocol (default 2)"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if the target is missed")
    parser.add_argument(
        "--acpcli", metavar="COMMAND", default=None,
        help="how to run acpcli (default: the console script next to this interpreter)",
    )
    parser.add_argument(
        "--compare", metavar="COMMAND", default=None,
        help="also run this acpcli build in the same rounds (A/B) and print its figure",
    )
    args = parser.parse_args(argv)

    python = sys.executable
    agent = demo_argv(python, args.agent_protocol)
    tail = ["prompt", "--cmd", shlex.join(agent), PROMPT]
    cli_argv = (shlex.split(args.acpcli) if args.acpcli else acpcli_argv(python)) + tail
    other_argv = shlex.split(args.compare) + tail if args.compare else None
    other_first: list[float] = []
    floor_argv = [python, str(Path(__file__).resolve()), "--floor-client", str(args.agent_protocol), "--", *agent]
    startups: list[float] = []
    cli_first: list[float] = []
    cli_answer: list[float] = []
    cli_total: list[float] = []
    floor_first: list[float] = []
    with tempfile.TemporaryDirectory(prefix="acpcli-bench-roundtrip-") as tmp:
        for i in range(-1, max(1, args.n)):  # round -1 is a warm-up (fills the bytecode cache)
            work = Path(tmp) / f"run-{i}"
            work.mkdir()
            env = bench_env(Path(tmp))
            env["ACPCLI_HOME"] = str(work / "home")
            startup = agent_startup(agent, args.agent_protocol, work, env)
            first, answer, total, out = timed_output(cli_argv, work, env, ECHO)
            floor = timed_output(floor_argv, work, env, "")[0]
            if other_argv is not None:
                env["ACPCLI_HOME"] = str(work / "home-compare")
                other = timed_output(other_argv, work, env, ECHO)[0]
                if i >= 0:
                    other_first.append(other)
            if i < 0:
                continue
            startups.append(startup)
            if answer is None:
                raise SystemExit(f"acpcli printed no answer from the demo agent:\n{out}")
            cli_first.append(first)
            cli_answer.append(answer)
            cli_total.append(total)
            floor_first.append(floor)

    med = statistics.median
    startup = med(startups)
    figure = (med(cli_first) - startup) * 1000
    baseline = (med(floor_first) - startup) * 1000
    verdict = "PASS" if figure <= TARGET_MS else "MISS"
    print(
        f"bench_roundtrip: acpcli prompt -> first agent chunk on stdout, demo agent v{args.agent_protocol} "
        f"--delay 0, median of {args.n}"
    )
    print(f"  agent start-up (spawn -> initialize answered)   {startup * 1000:7.1f} ms")
    print(
        f"  floor client: spawn -> first agent chunk         {med(floor_first) * 1000:7.1f} ms"
        f"   minus agent start-up {baseline:7.1f} ms"
    )
    print(
        f"  acpcli:       spawn -> first agent chunk         {med(cli_first) * 1000:7.1f} ms"
        f"   minus agent start-up {figure:7.1f} ms"
    )
    print(
        f"  acpcli:       spawn -> first answer text         {med(cli_answer) * 1000:7.1f} ms;"
        f" -> exit {med(cli_total) * 1000:7.1f} ms"
    )
    if other_first:
        other = (med(other_first) - startup) * 1000
        print(
            f"  compare:      spawn -> first agent chunk         {med(other_first) * 1000:7.1f} ms"
            f"   minus agent start-up {other:7.1f} ms   ({args.compare})"
        )
    print(f"  ratio   acpcli's share {figure:.0f} ms = {figure / baseline:.1f} x the floor's {baseline:.0f} ms")
    print(f"  target  acpcli's share <= {TARGET_MS:.0f} ms  {verdict}")
    return 1 if args.check and verdict == "MISS" else 0


if __name__ == "__main__":
    sys.exit(main())
