"""Texts -> vectors, slowly: `SlowEmbedder`, the test embedder with a model's delay, for
tests of what waits for vectors and what never does."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np

from axon.memory.embeddings.hashing import HashingEmbedder


class SlowEmbedder(HashingEmbedder):
    """The test embedder, `delay` seconds per passage batch (a big model on a small machine).

    With `per_texts`, the delay is for a batch of that many texts and a batch of another
    size takes proportionally long (as a real model does), so a worker that shrinks its
    batches does not make waiting for all of them slower."""

    def __init__(self, delay: float, per_texts: int | None = None) -> None:
        super().__init__()
        self.delay = delay
        self.per_texts = per_texts
        self.passages = 0
        self.calls_lock = threading.Lock()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        scale = 1.0 if self.per_texts is None else max(1, len(texts)) / self.per_texts
        time.sleep(self.delay * scale)
        with self.calls_lock:
            self.passages += len(texts)
        return super().embed_passages(texts)
