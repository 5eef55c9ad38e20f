"""The session layer: a session's whole life, between the commands (and the REPL) and the wire.

The way of the data, one module a step::

    cli/ (parse arguments)  ->  acpcli.cli.commands: what a command does (agent, link, attach, turn, close)
                            ->  linking     the link of one command run: its policy, form answers, wire tap
                                inputs      which session, which agent, which roots/MCP/protocol
                                attach      new / load / resume, and the index kept in step
                                turn        one prompt turn (Ctrl-C, output loss), the bookkeeping after it
                                conversation
                                            one live session with its link, index and writer, as one
                                            object: what the REPL and the Python API hold
                                link        one agent connection: AgentLink + the Dispatcher of what it sends
                                live        one live session: store, view, event log, turn state
                                forgotten   sessions the agent no longer knows
                                remote      what the agent lists (session/list)
    -> acpcli.wire.connection -> acpcli.wire.transport        (requests out)
    <- acpcli.wire.connection -> Dispatcher -> SessionFeed.feed -> store, event log, view  (updates in)

What is kept (the index, the event log, acpcli's own records in it, search) is
:mod:`acpcli.history`, below this layer.

Nothing here parses a command line or prints a transcript itself: the views (``acpcli.render``)
and a person at the keyboard (``acpcli.repl``, as a :class:`~acpcli.session.context.Person`) are
handed in. This package's ``__init__`` imports nothing, so ``--help`` does not pay for it.
"""
