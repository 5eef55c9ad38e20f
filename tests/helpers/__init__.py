"""Scripts and helpers that tests run in subprocesses."""
