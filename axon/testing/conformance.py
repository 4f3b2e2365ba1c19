"""The backend contract as a pytest suite any backend package can run (`MemoryBackend`).

Each test states one promise of `MemoryBackend`. A backend package gets all of them
with a test file that star-imports this module and defines a `backend` fixture
yielding a fresh, empty backend built on the `backend_env` fixture's clock and
embedder (docs/backends.md, "Testing your backend"). AXON's own
tests/memory/test_conformance.py runs it over every built-in backend. Time is
driven with the `clock` fixture (a `FakeClock`): a backend must read the time
only from the clock it is given, and embed with the given embedder.

The tests live in eleven groups, `contract_entries`, `contract_expiry`, `contract_history`,
`contract_links`, `contract_namespaces`,
`contract_retrieval`, `contract_filters`, `contract_time`, `contract_contexts`,
`contract_paging` and `contract_vectors`, over
`contract_helpers` (fixtures and helpers); this module gathers them, so one
star-import takes every test.

Needs pytest and pytest-asyncio (`asyncio_mode = "auto"`): `axon-memory[testing]`.
"""

from __future__ import annotations

from axon.testing import (
    contract_contexts,
    contract_entries,
    contract_expiry,
    contract_filters,
    contract_history,
    contract_links,
    contract_namespaces,
    contract_paging,
    contract_retrieval,
    contract_time,
    contract_vectors,
)
from axon.testing.contract_contexts import *  # noqa: F403
from axon.testing.contract_entries import *  # noqa: F403
from axon.testing.contract_expiry import *  # noqa: F403
from axon.testing.contract_filters import *  # noqa: F403
from axon.testing.contract_helpers import backend_env, clock
from axon.testing.contract_history import *  # noqa: F403
from axon.testing.contract_links import *  # noqa: F403
from axon.testing.contract_namespaces import *  # noqa: F403
from axon.testing.contract_paging import *  # noqa: F403
from axon.testing.contract_retrieval import *  # noqa: F403
from axon.testing.contract_time import *  # noqa: F403
from axon.testing.contract_vectors import *  # noqa: F403

__all__ = [  # what `from axon.testing.conformance import *` takes: the fixtures and every test
    "backend_env",
    "clock",
    *sorted(
        contract_entries.__all__
        + contract_expiry.__all__
        + contract_filters.__all__
        + contract_history.__all__
        + contract_links.__all__
        + contract_namespaces.__all__
        + contract_contexts.__all__
        + contract_retrieval.__all__
        + contract_time.__all__
        + contract_paging.__all__
        + contract_vectors.__all__
    ),
]
