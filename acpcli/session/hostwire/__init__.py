"""How a live session's host is reached: where its socket and lock live (:mod:`.address`),
the messages it exchanges with its clients (:mod:`.messages`: one JSON object a line, and a
blocking channel that needs no event loop) and the async channel (:mod:`.channel`).

Below the host (:mod:`acpcli.host`, which serves these messages) so that every client of a
host speaks the same protocol from its own floor: the CLI and the REPL, and the Python API
(:class:`acpcli.api.client.HostedSession`), which sits below the host and may not import it. This package's
``__init__`` imports nothing.
"""
