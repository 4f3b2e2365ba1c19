"""Sentence embedding models for semantic retrieval (see `base.Embedder`).

`default_embedder()` picks the best model this machine can run (lazily loaded);
`get_embedder(name)` asks for one by name; `availability` tells, cheaply, whether
semantic retrieval will run at all. The names below are imported on first use,
so that importing `axon.memory.embeddings.availability` (the checker does) does
not import numpy and the models.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from axon.memory.embeddings.default import available_models, default_embedder, get_embedder
    from axon.memory.embeddings.errors import EmbedderUnavailableError

__all__ = ["EmbedderUnavailableError", "available_models", "default_embedder", "get_embedder"]

_HOMES = {
    "EmbedderUnavailableError": "axon.memory.embeddings.errors",
    "available_models": "axon.memory.embeddings.default",
    "default_embedder": "axon.memory.embeddings.default",
    "get_embedder": "axon.memory.embeddings.default",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
