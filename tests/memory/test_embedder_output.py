"""A user's embedder that breaks the protocol: every backend checks what it returns."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from axon.errors import AxonMemoryError
from axon.memory import registry
from axon.memory.embeddings.hashing import HashingEmbedder


class ListEmbedder(HashingEmbedder):
    """Returns plain lists (array-like, the right shape): accepted as float32 arrays."""

    def embed_passages(self, texts: Sequence[str]) -> Any:
        return super().embed_passages(texts).tolist()

    def embed_query(self, text: str) -> Any:
        return super().embed_query(text).tolist()


class ShortEmbedder(HashingEmbedder):
    """Vectors one shorter than its `dim`."""

    def embed_passages(self, texts: Sequence[str]) -> Any:
        return super().embed_passages(texts)[:, :-1]

    def embed_query(self, text: str) -> Any:
        return np.asarray(super().embed_query(text))[:-1]


@pytest.mark.parametrize("name", ["in_memory", "sqlite"])
async def test_array_likes_are_taken_and_a_wrong_shape_is_named(name: str, tmp_path: Path) -> None:
    options: dict[str, Any] = {"memory_dir": tmp_path} if name == "sqlite" else {}
    listed = registry.create(name, embedder=ListEmbedder(32), **options)
    await listed.store("a", "the client prefers short answers", {"scope": "N"})
    found = await listed.retrieve("short answers", 1, "N", mode="semantic")
    assert [entry.key for entry in found] == ["a"]
    await listed.close()

    options = {"memory_dir": tmp_path / "short"} if name == "sqlite" else {}
    short = registry.create(name, embedder=ShortEmbedder(32), **options)
    await short.store("a", "the client prefers short answers", {"scope": "N"})
    with pytest.raises(AxonMemoryError, match=r"returned shape \(1, 31\) where \(1, 32\)"):
        await short.retrieve("short answers", 1, "N", mode="semantic")
    await short.close()
