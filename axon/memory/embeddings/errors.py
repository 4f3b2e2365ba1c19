"""Helpers shared by the embedding models: the load-failure error and row normalisation."""

from __future__ import annotations

import numpy as np


class EmbedderUnavailableError(RuntimeError):
    """An embedding model cannot run here (package missing, CPU lacks AVX2, bad file)."""


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """`matrix` as float32 with every row scaled to unit L2 length (zero rows stay zero)."""
    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    return np.ascontiguousarray(out / norms, dtype=np.float32)
