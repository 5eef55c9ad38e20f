"""Text safety: what the agent sends is made safe before it reaches a terminal.
"""
