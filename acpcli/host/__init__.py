"""Live sessions: one background process (the *host*) per session keeps its agent warm.

What runs where::

    acpcli prompt --session ID ─┐                       ┌─ the agent (its own process group)
    acpcli prompt --session ID ─┼─ unix socket ─ host ──┤
    acpcli stop ID ─────────────┘  (run/*.sock)         └─ the index and event log (writes)

* :mod:`acpcli.session.hostwire.address` — where a session's socket and lock live (``ACPCLI_HOME/run``,
  0700; sockets 0600), and who holds them.
* :mod:`acpcli.session.hostwire.channel` — newline-delimited JSON messages over the socket; the peer's
  user is checked on every connection (another user is refused).
* :mod:`acpcli.host.server` — the host: links the agent once (resume, else load), then runs the
  prompts its clients send one after another, in arrival order, streams each turn's updates
  to every client, asks the client whose prompt started the turn about permissions, and ends
  after ``keep_alive`` seconds with no turn and no client, stopping the agent as ``close`` does.
* :mod:`acpcli.host.client` — what commands use: find the session's host or start one (one
  host per session, whoever races), send a prompt, render the turn with the command's own view.
* :mod:`acpcli.session.hosted` (in the session layer, beside the local backend) — what the
  REPL drives when its session lives in a host (the interactive ``new``/``load``/``resume``
  and ``attach``): a link shaped like the session's own (turns, settings by name, close,
  login) and a mirror of the session kept from the host's update stream.

The host sits between the CLI/REPL and the Python API: it drives the session layer directly,
and only the CLI and the REPL import it.
"""
