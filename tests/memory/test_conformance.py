"""The backend contract, checked on every built-in backend (the `backend` fixture).

The suite itself is `axon.testing.conformance` (the kit a backend package runs the
same tests with, docs/backends.md "Testing your backend"); importing it here runs
each of its tests on every factory in `conftest.BACKEND_FACTORIES` (a test below
fails if a built-in backend has none). Below it: the checks only AXON's own
backends need (SQLite against the in-memory reference). Time is driven with the
shared `FakeClock`.
"""

from __future__ import annotations

import importlib
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.registry import BUILTIN_BACKENDS, BackendInfo, BackendRegistry, registry
from axon.testing.conformance import *  # noqa: F403  (the suite and its fixtures)
from axon.testing.contract_retrieval import _scored
from tests.memory.conftest import BACKEND_FACTORIES, BackendEnv, FakeClock

# ---------------------------------------------------------------------- registry


def test_every_importable_registered_backend_has_a_factory() -> None:
    """A built-in backend cannot skip this suite: if its module imports, it needs a factory."""
    missing = []
    for name in [info.name for info in BUILTIN_BACKENDS]:  # a plugin is tested by its package
        info = registry.lookup(name)
        assert info is not None
        module_name = info.target.partition(":")[0]
        try:
            importlib.import_module(module_name)
        except ImportError:
            continue
        if name not in BACKEND_FACTORIES:
            missing.append(name)
    assert not missing, f"registered backends without a factory in conftest.py: {missing}"


def test_a_plugin_backend_needs_no_factory_in_axon(monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed plugin (entry point `axon.backends`) runs the kit in its own package:
    AXON's suite asks factories of the built-in backends only."""
    plugged = BackendRegistry()
    plugged.register(BackendInfo("kit_plugin", "axon.memory.backends.in_memory:InMemoryBackend"))
    monkeypatch.setattr(f"{__name__}.registry", plugged)
    assert "kit_plugin" in registry.names() and "kit_plugin" not in BACKEND_FACTORIES
    test_every_importable_registered_backend_has_a_factory()


_WORDS = st.sampled_from(
    ["paint", "painting", "paints", "red", "apple", "apples", "the", "meeting", "invoice", "x"]
)
_TEXTS = st.lists(_WORDS, min_size=0, max_size=6).map(" ".join)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    stores=st.lists(
        st.tuples(st.sampled_from(["A", "B", "C"]), st.integers(0, 6), _TEXTS),
        min_size=1,
        max_size=25,
    ),
    query=st.lists(_WORDS, min_size=1, max_size=3).map(" ".join),
    linked=st.booleans(),
)
async def test_sqlite_keyword_scores_equal_in_memory_ones(
    stores: list[tuple[str, int, str]], query: str, linked: bool
) -> None:
    """Generated scopes, overwrites and deletes: SQLite's scores are the in-memory ones."""
    with tempfile.TemporaryDirectory() as directory:
        clocks = (FakeClock(), FakeClock())
        embedder = HashingEmbedder()
        pair = [
            BACKEND_FACTORIES[name](BackendEnv(Path(directory), clock, embedder))
            for name, clock in zip(("in_memory", "sqlite"), clocks, strict=True)
        ]
        try:
            for scope, key, text in stores:
                for store, clock in zip(pair, clocks, strict=True):
                    if text == "x":
                        await store.delete(f"k{key}", scope)
                    else:
                        await store.store(f"k{key}", text, {"scope": scope})
                    clock.advance(1)
            for scope in ("A", "B", None):
                want, got = [
                    await store.retrieve(query, 50, scope, mode="keyword", linked=linked)
                    for store in pair
                ]
                assert _scored(got) == pytest.approx(_scored(want), abs=1e-6)
                assert [e.key for e in got] == [e.key for e in want]
        finally:
            for store in pair:
                await store.close()


@pytest.mark.parametrize("name", ["in_memory", "sqlite"])
async def test_keyword_recall_finds_a_word_of_thousands_of_ys(name: str, tmp_path: Path) -> None:
    """AXON's embedded backends index every word (PostgreSQL's limit is 512 characters):
    a 1,500-'y' word, which once raised RecursionError in the stemmer, is found by itself."""
    store = BACKEND_FACTORIES[name](BackendEnv(tmp_path, FakeClock(), HashingEmbedder()))
    try:
        word = "y" * 1500
        await store.store("w", f"hello {word}", {"scope": "S"})
        await store.store("ay", "ay" * 800, {"scope": "S"})
        await store.store("other", "hello there", {"scope": "S"})
        for linked in (False, True):
            found = await store.retrieve(word, 10, "S", mode="keyword", linked=linked)
            assert [e.key for e in found][:1] == ["w"]  # linked: "ay" has it as context
            found = await store.retrieve("ay" * 800, 10, "S", mode="keyword", linked=linked)
            assert [e.key for e in found][:1] == ["ay"]
    finally:
        await store.close()
