"""The backend contract, stored vectors: `read_vectors` gives the vectors of current texts,
and vectors written with `write_vectors` are searched without embedding again
(part of `conformance`).
"""

from __future__ import annotations

from typing import Any

import pytest

from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import NewEntry
from axon.testing import BackendEnv

# ---------------------------------------------------------------------- stored vectors


async def test_read_vectors_gives_the_stored_vectors_of_current_texts(
    backend: MemoryBackend, backend_env: BackendEnv
) -> None:
    """`read_vectors` returns what the embedder made for each entry's current text;
    an entry stored again with a new text has none until it is embedded again."""
    if "semantic" not in backend.capabilities.retrieval:
        pytest.skip(f"{backend.name} has no semantic retrieval")
    embedder = backend_env.embedder
    texts = {
        f"k{i}": f"note number {i} about {['rivers', 'stones', 'lamps'][i % 3]}" for i in range(12)
    }
    await backend.store_many([NewEntry(k, v, {"scope": "S"}) for k, v in texts.items()])
    await backend.store("other", "note number 1 about rivers", {"scope": "T"})
    assert await backend.read_vectors("S", list(texts), embedder.model_id) == {}
    assert await backend.ensure_vectors("S") == 12
    found = await backend.read_vectors("S", [*texts, "missing", "other"], embedder.model_id)
    assert set(found) == set(texts)
    expected = embedder.embed_passages(list(texts.values()))
    for i, key in enumerate(texts):
        assert found[key].dtype.name == "float32"
        assert found[key].tolist() == pytest.approx(expected[i].tolist(), abs=1e-6)
    assert await backend.read_vectors("S", list(texts), "another-model:64") == {}
    await backend.store("k0", "an entirely new text", {"scope": "S"})
    again = await backend.read_vectors("S", list(texts), embedder.model_id)
    assert set(again) == set(texts) - {"k0"}


class _CountingEmbedder(HashingEmbedder):
    """`HashingEmbedder` that counts the passages it embeds."""

    passages = 0

    def embed_passages(self, texts: Any) -> Any:
        self.passages += len(texts)
        return super().embed_passages(texts)


async def test_write_vectors_keeps_vectors_so_nothing_is_embedded_again(
    backend: MemoryBackend, backend_env: BackendEnv
) -> None:
    """Vectors written for stored entries are searched as if embedded here."""
    if "semantic" not in backend.capabilities.retrieval:
        pytest.skip(f"{backend.name} has no semantic retrieval")
    counting = _CountingEmbedder(backend_env.embedder.dim)
    backend.embedder = counting
    texts = {f"k{i}": f"entry {i} about {['rivers', 'stones', 'lamps'][i % 3]}" for i in range(9)}
    await backend.store_many([NewEntry(k, v, {"scope": "S"}) for k, v in texts.items()])
    vectors = HashingEmbedder(counting.dim).embed_passages(list(texts.values()))
    written = await backend.write_vectors(
        "S",
        counting.model_id,
        [(key, vectors[i]) for i, key in enumerate(texts)] + [("no-such-key", vectors[0])],
    )
    assert written == 9
    found = await backend.retrieve("stones", 3, "S", mode="semantic")
    assert counting.passages == 0
    assert {e.key for e in found} <= set(texts) and len(found) == 3
    assert found[0].value.endswith("stones")


__all__ = sorted(name for name in dict(globals()) if name.startswith("test_"))
