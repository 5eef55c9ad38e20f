"""The Python API: :func:`~acpcli.api.client.connect`, :class:`~acpcli.api.client.Agent`,
:class:`~acpcli.api.client.Session`, the typed events and results (:mod:`acpcli.api.types`),
and :func:`~acpcli.api.sync.run` for scripts.

Import the public names from :mod:`acpcli` itself (``acpcli.connect``, ``acpcli.AgentText``):
what ``acpcli/__init__.py`` exports is the public API; these modules are its implementation.
The library sits above the session layer and below the command tree, the REPL and the
host (tests/test_layers.py); it is the library alone: the command bodies are in ``acpcli/cli``.
This package's ``__init__`` imports nothing, so ``import acpcli`` stays cheap.
"""
