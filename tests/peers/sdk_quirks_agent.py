"""A v1 ACP agent (official SDK) with quirks observed in the real agents (codex, claude, gemini).

A prompt is answered with "you said: TEXT" and ``end_turn``, except:

* a prompt containing "nothing" is answered ``end_turn`` at once, with no update at all
  (claude, after a cancelled turn, answers its next prompt so and puts the work into the
  following turn);
* a prompt containing "fail" is answered with an internal error (a model API that failed).

At the end of its input (stdin closed), as ``--at-eof`` says:

* ``exit`` (default): it exits;
* ``save``: it writes "saved" to ``$EOF_RECORD`` first, then exits (gemini writes its files
  and exits at once);
* ``stay``: it keeps running until a signal ends it (codex; claude exits only slowly). A
  SIGTERM is recorded ("sigterm") before it exits.

Every step is one line appended to ``$EOF_RECORD`` (if set): "eof" when its input ended,
then "saved" or "sigterm", each with the time it happened (``time.monotonic()``, so a test can
tell how long the agent was given). Its pid is appended to ``$PID_FILE`` (if set) at start-up.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
from typing import Any

import acp
from acp.schema import PromptResponse
from sdk_base import BaseSdkAgent, append_line, note_pid, prompt_text


class QuirksAgent(BaseSdkAgent):
    name = "sdk-quirks"
    session_prefix = "quirks"
    id_digits = 8

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = prompt_text(prompt)
        if "fail" in text:
            raise acp.RequestError.internal_error({"details": "the model API answered 500"})
        if "nothing" not in text:
            await self.say(session_id, f"you said: {text}")
        return PromptResponse(stop_reason="end_turn")


def _step(name: str) -> None:
    append_line("EOF_RECORD", f"{name} {time.monotonic():.3f}")


def _on_sigterm(signum: int, frame: Any) -> None:
    _step("sigterm")
    os._exit(0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--at-eof", choices=("exit", "save", "stay"), default="exit")
    args = parser.parse_args()
    note_pid()
    signal.signal(signal.SIGTERM, _on_sigterm)
    asyncio.run(acp.run_agent(QuirksAgent()))
    _step("eof")
    if args.at_eof == "save":
        _step("saved")
    elif args.at_eof == "stay":
        while True:
            signal.pause()
    sys.exit(0)


if __name__ == "__main__":
    main()
