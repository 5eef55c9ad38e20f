"""The Python API: :func:`~acpcli.api.client.connect`, :class:`~acpcli.api.client.Agent`,
:class:`~acpcli.api.client.Session`, the typed events and results (:mod:`acpcli.api.types`),
and :func:`~acpcli.api.sync.run` for scripts.

Import the public names from :mod:`acpcli` itself (``acpcli.connect``, ``acpcli.AgentText``):
what ``acpcli/__init__.py`` exports is the public API; these modules are its implementation.
The façade sits above the session layer and below the command tree (tests/test_layers.py).
Two modules serve acpcli's own front ends rather than scripts: :mod:`acpcli.api.commands`
(what each session command does once parsed, returning an ``Outcome``) and
:mod:`acpcli.api.frontends` (the one door of the CLI, the REPL and the host to the session
layer).
This package's ``__init__`` imports nothing, so ``import acpcli`` stays cheap.
"""
