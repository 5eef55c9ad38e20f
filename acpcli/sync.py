"""The Python API without async: ``acpcli.sync.connect(...)`` blocks where ``acpcli.connect``
awaits, for scripts and threads that are not async::

    import acpcli.sync

    with acpcli.sync.connect("demo", permissions="read-only") as agent:
        session = agent.new_session()
        for event in session.prompt("explain this repository"):
            if isinstance(event, acpcli.AgentText):
                print(event.text, end="")
        print(session.ask("and in one line?").text)

It runs the async API on an event loop of its own in a background thread (anyio's blocking
portal), so it can be used from any thread, one connection per ``with``. ``acpcli.sync.run`` is
``acpcli.run``.
"""

from acpcli.api.sync import SyncAgent, SyncSession, connect, run

__all__ = ["SyncAgent", "SyncSession", "connect", "run"]
