"""One prompt from a plain (not async) script: the answer and how the turn ended.

    python examples/one_shot.py [AGENT] [PROMPT]
"""

from __future__ import annotations

import sys

import acpcli


def main() -> int:
    args = sys.argv[1:]
    try:
        result = acpcli.run(
            args[0] if args else "demo", args[1] if len(args) > 1 else "hello", cwd=".", permissions="read-only"
        )
    except acpcli.AcpcliError as err:  # every failure is one of acpcli's errors
        print(f"failed: {err}", file=sys.stderr)
        return 2
    print(result.text)
    print(f"stop reason: {result.stop_reason}; session: {result.session_id}", file=sys.stderr)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
