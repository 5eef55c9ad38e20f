"""The wire: the agent's pipes, JSON-RPC framing, the wire log, redaction, version and
capability negotiation, and the gates in front of every request acpcli sends.

Floor: above :mod:`acpcli.protocol` (pure shapes); below the session layer.
"""
