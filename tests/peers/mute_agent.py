"""An agent that stops answering: a raw-stdio v1 peer for the setup-step timeout.

``--until METHOD``: answer every request up to (not including) the first ``METHOD``, then
answer nothing more while still reading its input (a stuck agent, not a dead one).
Without ``--until`` it answers nothing at all, not even ``initialize``.
"""

from __future__ import annotations

import argparse
import json
import sys

RESULTS = {
    "initialize": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []},
    "session/new": {"sessionId": "mute-1"},
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--until", default="initialize")
    until = parser.parse_args().until
    mute = False
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue
        mute = mute or message["method"] == until
        if mute:
            continue  # read on, answer nothing
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": RESULTS.get(message["method"], {})}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
