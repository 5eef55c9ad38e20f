"""acpcli: a terminal client for ACP (Agent Client Protocol) agents.

Importing this package is cheap on purpose: it builds no pydantic models and imports
neither rich.markdown nor prompt_toolkit. Heavy modules are imported where they are used.
"""

__version__ = "0.1.0.dev0"
