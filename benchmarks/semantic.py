"""Semantic recall speed: N precomputed unit vectors in, median ms per top-10 search out.

Three measurements per size, on the same random unit vectors (dim 384, float32):
- `numpy`: the baseline, a bare `matrix @ query` + `argpartition` in this process;
- `index`: `axon.memory.retrieval.vectors.VectorIndex.search` (exact cosine);
- `backend`: a full `retrieve(mode="semantic")` on the in-memory backend (or the one
  `--backend` names, e.g. `sqlite`), whose
  vectors were filled by `ensure_vectors` beforehand from a lookup "embedder" that
  returns the precomputed vectors (so no model runs: the figure is the search,
  filtering and result building). `--no-backend` skips it (storing 100k entries
  takes a while).

Every search is exact, so recall@10 against exact search is 1.0 by construction;
there is no approximate index to measure. Target: <= 15 ms at 100k.

    .venv/bin/python benchmarks/semantic.py                  # 10k and 100k
    .venv/bin/python benchmarks/semantic.py --sizes 1000000 --no-backend
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from axon.memory.backend import MemoryBackend  # noqa: E402
from axon.memory.entry import NewEntry  # noqa: E402
from axon.memory.registry import registry  # noqa: E402
from axon.memory.retrieval.vectors import VectorIndex  # noqa: E402

DIM = 384
TOP_K = 10


class LookupEmbedder:
    """An `Embedder` whose vectors were computed beforehand: text "e<i>" / "q<i>" -> row i."""

    def __init__(self, passages: np.ndarray, queries: np.ndarray) -> None:
        self.passages = passages
        self.queries = queries
        self.dim = passages.shape[1]
        self.model_id = f"lookup:{self.dim}"

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.passages[[int(t[1:]) for t in texts]]

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.queries[int(text[1:])]
        return vector


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    matrix = rng.standard_normal((n, DIM), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def median_ms(samples: list[float]) -> float:
    return 1000 * statistics.median(samples)


async def backend_search(
    passages: np.ndarray, queries: np.ndarray, name: str = "in_memory"
) -> tuple[float, float]:
    """(median ms per semantic recall, seconds to store + index) on backend `name`."""
    embedder = LookupEmbedder(passages, queries)
    with tempfile.TemporaryDirectory() as directory:
        backend = registry.create(name, embedder=embedder, memory_dir=directory)
        try:
            return await _timed_search(backend, passages, queries)
        finally:
            await backend.close()


async def _timed_search(
    backend: MemoryBackend, passages: np.ndarray, queries: np.ndarray
) -> tuple[float, float]:
    t0 = time.perf_counter()
    batch = 10_000
    for start in range(0, len(passages), batch):
        await backend.store_many(
            [
                NewEntry(f"k{i}", f"e{i}", {"scope": "bench"})
                for i in range(start, min(start + batch, len(passages)))
            ]
        )
    await backend.ensure_vectors("bench")
    setup = time.perf_counter() - t0
    samples = []
    for i in range(len(queries)):
        t0 = time.perf_counter()
        await backend.retrieve(f"q{i}", top_k=TOP_K, scope="bench", mode="semantic")
        samples.append(time.perf_counter() - t0)
    return median_ms(samples), setup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated entry counts")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--no-backend", action="store_true", help="skip the backend measurement")
    parser.add_argument(
        "--backend", default="in_memory", help="backend of the full recall: in_memory or sqlite"
    )
    args = parser.parse_args()
    rng = np.random.default_rng(42)
    print(f"dim {DIM}, top {TOP_K}, {args.queries} queries, median ms per search")
    print(f"{'entries':>9} {'numpy':>8} {'index':>8} {'ratio':>6} {'backend':>8} {'ratio':>6}")
    for size in (int(s) for s in args.sizes.split(",")):
        passages = unit_vectors(rng, size)
        queries = unit_vectors(rng, args.queries)
        raw = []
        for q in queries:
            t0 = time.perf_counter()
            scores = passages @ q
            top = np.argpartition(-scores, TOP_K)[:TOP_K]
            top[np.argsort(-scores[top])]
            raw.append(time.perf_counter() - t0)
        index = VectorIndex(DIM)
        index.upsert_many(list(range(size)), passages)
        indexed = []
        for q in queries:
            t0 = time.perf_counter()
            index.search(q, TOP_K)
            indexed.append(time.perf_counter() - t0)
        base = median_ms(raw)
        ms_index = median_ms(indexed)
        line = f"{size:>9} {base:>8.2f} {ms_index:>8.2f} {ms_index / base:>6.2f}"
        if not args.no_backend:
            ms, setup = asyncio.run(backend_search(passages, queries, args.backend))
            line += f" {ms:>8.2f} {ms / base:>6.2f}   (store + index {setup:.1f} s)"
        print(line)


if __name__ == "__main__":
    main()
