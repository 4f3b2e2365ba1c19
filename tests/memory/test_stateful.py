"""Every built-in backend against the plain model of `axon.testing.stateful`.

The state machine and what it checks are in axon/testing/stateful.py (the kit a
backend package runs the same test with).
"""

from __future__ import annotations

import pytest

from axon.testing.stateful import run_stateful
from tests.memory.conftest import BACKEND_FACTORIES

FEWER_EXAMPLES = {"chroma": 15}
"""Chroma answers every step over HTTP (two to four round trips): 50 examples take
about 100 s there, so it runs fewer (the other backends keep the kit's default)."""


@pytest.mark.parametrize("name", sorted(BACKEND_FACTORIES))
def test_backend_agrees_with_the_model(name: str) -> None:
    run_stateful(BACKEND_FACTORIES[name], name=name, max_examples=FEWER_EXAMPLES.get(name))
