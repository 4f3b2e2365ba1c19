"""A tiny deterministic embedder for tests: hashed word and character-trigram features.

It knows nothing about meaning, but texts sharing words get similar vectors, and it
needs no model file, so tests of the semantic machinery run in microseconds. It is
never chosen as a default. Like the real models it reads a bounded prefix: the
first `MAX_TOKENS` words (of the first `limits.char_bound` characters).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from axon.memory.embeddings.limits import char_bound
from axon.memory.retrieval.text import tokenize

MAX_TOKENS = 512
"""Words of a text this embedder reads, as a real model reads a bounded number of tokens."""


class HashingEmbedder:
    """Feature hashing of words and trigrams into `dim` buckets, L2-normalised."""

    max_tokens = MAX_TOKENS

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.model_id = f"hashing:{dim}"

    @staticmethod
    def model_input(text: str) -> list[str]:
        """The words of `text` this embedder reads: at most `MAX_TOKENS`."""
        return tokenize(text[: char_bound(MAX_TOKENS)])[:MAX_TOKENS]

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        features = self.model_input(text)
        for word in list(features):
            padded = f"#{word}#"
            features.extend(padded[i : i + 3] for i in range(len(padded) - 2))
        for feature in features:
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            h = int.from_bytes(digest, "little")
            vec[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0
            return vec
        return vec / norm

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vector(text) for text in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)
