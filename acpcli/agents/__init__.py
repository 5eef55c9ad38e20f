"""Agents: the ACP Registry and the installs of the agents it lists.

Floor: below the session layer, which turns an agent's name into a command line.
"""
