"""Processes: the children acpcli starts (found and ended, whatever they started), and the
command's supervisor (signals, sudden failures, the event log's clock).

:func:`python_module_argv` is here, not in :mod:`.children`, because the config's built-in
agents need it on every start-up (a TAB completing agent names too), and the children's
plumbing (signals, process groups) is not needed there.
"""

from __future__ import annotations

import os
import sys


def python_module_argv(module: str) -> list[str]:
    """The argv that runs acpcli's own ``module`` (``python -m`` style) with an import path
    that never holds the working directory.

    ``python -m`` puts the current directory first on ``sys.path``, so a folder holding
    ``acpcli/demo_agent/__main__.py`` would run that file. Here Python runs isolated (``-I``:
    no current directory, no ``PYTHON*`` variables, no user site) with the directory acpcli
    itself was imported from put first, so the module is acpcli's whatever the folder holds.
    Only for modules that need nothing but the standard library and acpcli.
    """
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    boot = f"import sys,runpy;sys.path.insert(0,sys.argv.pop(1));runpy.run_module({module!r},run_name='__main__',alter_sys=True)"
    return [sys.executable, "-I", "-c", boot, root]
