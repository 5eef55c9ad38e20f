"""History: what acpcli keeps of sessions. The SQLite index and its guard, the event log,
search and the indexing that keeps its documents in step, write transactions, the message
store, replay merging, the session lock, the records acpcli writes itself, housekeeping,
and checking and salvaging a damaged index. All SQL is here, behind the index.

Floor: below the session layer; nothing here talks to an agent.
"""
