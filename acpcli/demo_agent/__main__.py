"""``python -m acpcli.demo_agent``."""

from __future__ import annotations

from acpcli.demo_agent.agent import main

if __name__ == "__main__":
    raise SystemExit(main())
