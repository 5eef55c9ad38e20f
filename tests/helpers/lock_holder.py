"""Holds the write lock of an SQLite database for the lock tests (another process, as a
concurrent acpcli or a user's ``sqlite3`` shell would).

Usage: ``python lock_holder.py DB [EXCLUSIVE|IMMEDIATE]``. Takes the lock (``BEGIN MODE``,
EXCLUSIVE by default) and writes to the database inside it, prints ``locked``, holds it
until a line arrives on stdin (or stdin closes), then commits, prints ``released`` and exits 0.
"""

from __future__ import annotations

import sqlite3
import sys


def main() -> int:
    path = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "EXCLUSIVE"
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.execute(f"BEGIN {mode}")
    conn.execute("PRAGMA user_version").fetchone()
    print("locked", flush=True)
    sys.stdin.readline()
    conn.execute("COMMIT")
    conn.close()
    print("released", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
