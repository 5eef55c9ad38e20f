"""``acpcli.api.frontends``, the one door of the CLI, the REPL and the host to the session layer:
every name it lists resolves, lazily, to the session layer's own object."""

from __future__ import annotations

import subprocess
import sys

import pytest

from acpcli.api import frontends


@pytest.mark.parametrize("name", frontends.__all__)
def test_every_name_is_the_session_layers_own(name: str) -> None:
    import importlib

    where = frontends._WHERE[name]
    own = getattr(importlib.import_module(where), "_exporter" if name == "exporter" else name)
    assert getattr(frontends, name) is own


def test_it_lists_what_it_resolves_and_nothing_else() -> None:
    assert sorted(frontends._WHERE) == sorted(frontends.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        frontends.nothing_here  # noqa: B018


def test_a_name_loads_only_its_own_module() -> None:
    code = (
        "import sys\n"
        "from acpcli.api.frontends import Options\n"
        "print('acpcli.session.inputs' in sys.modules, 'acpcli.session.link' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False"]
