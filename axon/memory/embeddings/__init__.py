"""Sentence embedding models for semantic retrieval (see `base.Embedder`).

`default_embedder()` picks the best model this machine can run (lazily loaded);
`get_embedder(name)` asks for one by name.
"""

from axon.memory.embeddings.default import available_models, default_embedder, get_embedder
from axon.memory.embeddings.errors import EmbedderUnavailableError

__all__ = ["EmbedderUnavailableError", "available_models", "default_embedder", "get_embedder"]
