"""History: what acpcli keeps of sessions. The SQLite index and its guard, the event log,
search, write transactions, the message store, replay merging, the session lock, the
records acpcli writes itself, housekeeping, and checking and salvaging a damaged index.

Floor: below the session layer; nothing here talks to an agent.
"""
