"""Semantic recall at a million entries on the embedded default: exact scans vs an ANN index.

    PYTHONPATH=. python benchmarks/ann.py [--n 1000000] [--dim 384] [--queries 50]
        [--threads 1] [--build-threads N] [--dtypes i8,f16,f32] [--expansions 32,64,128]
        [--skip-hnsw]

Issue 15 item 5: today a semantic recall on SQLite scans every vector in memory with
numpy (`VectorIndex`, float32, one matrix-vector product), about 120 ms at 1M entries of
384 dimensions. An option is adopted only if a recall takes <= 20 ms with recall@10 >=
0.95 against that exact scan. This script measures, in one run over the same vectors
and queries:

- `numpy f32 exact`: what `VectorIndex.search` does (matrix @ query, argpartition);
  the baseline and the ground truth of recall@10;
- `numpy f16 exact`: the same over a float16 copy of the matrix (half the bytes read);
- `usearch exact f32`: usearch's SIMD brute-force scan (`usearch.index.search(exact=True)`);
- `usearch HNSW f32 / f16 / i8`: an HNSW index (`usearch.index.Index`, cosine,
  connectivity 16, expansion_add 128) at expansion_search 32/64/128; its build time,
  the median query and recall@10.

The vectors are synthetic: unit vectors around 2,000 random centres (a mixture of
Gaussians, like the clusters of topics of real notes) rather than uniform noise, which
no ANN index handles well and no embedding model produces. Queries are perturbed copies
of stored vectors' centres. Times are medians of `--queries` single-query calls (a
recall embeds one query at a time), each on `--threads` threads (default 1: the
embedded default shares the machine). Nothing here touches a memory file: it measures
the search structures only; adoption (persisting the index beside the SQLite file,
rebuilding or verifying it on open, deletes, expiry and crash consistency) is a
separate step, taken only for an option that meets the bar.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np


def make_data(n: int, dim: int, queries: int, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """`n` stored unit vectors in clusters, and `queries` unit query vectors."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((2000, dim)).astype(np.float32)
    data = np.empty((n, dim), dtype=np.float32)
    step = 100_000
    for start in range(0, n, step):
        stop = min(n, start + step)
        which = rng.integers(0, len(centres), stop - start)
        block = centres[which] + 0.9 * rng.standard_normal((stop - start, dim)).astype(np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        data[start:stop] = block
    which = rng.integers(0, len(centres), queries)
    asked = centres[which] + 1.2 * rng.standard_normal((queries, dim)).astype(np.float32)
    asked /= np.linalg.norm(asked, axis=1, keepdims=True)
    return data, asked


def top10_numpy(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """`VectorIndex.search`'s method: scores of every row, the best 10, best first."""
    scores = matrix @ query.astype(matrix.dtype)
    best = np.argpartition(-scores, 10)[:10]
    return best[np.argsort(-scores[best])]


def timed(search: Callable[[np.ndarray], np.ndarray], asked: np.ndarray) -> tuple[float, list]:
    """Median milliseconds of one query, and the top-10 ids of each query."""
    found, times = [], []
    search(asked[0])  # warm caches
    for query in asked:
        started = time.perf_counter()
        found.append(np.asarray(search(query)))
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), found


def recall_at_10(found: list, truth: list) -> float:
    return float(np.mean([len(set(f[:10].tolist()) & set(t.tolist())) / 10
                          for f, t in zip(found, truth, strict=True)]))


def row(label: str, ms: float, recall: float, extra: str = "") -> None:
    verdict = "meets the bar" if ms <= 20 and recall >= 0.95 else "-"
    print(f"{label:<34} {ms:9.2f} ms  recall@10 {recall:5.3f}  {verdict:<14}{extra}",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--build-threads", type=int, default=None,
                        help="threads for the HNSW build (default: --threads)")
    parser.add_argument("--dtypes", default="i8,f16,f32",
                        help="HNSW scalar kinds, comma-separated")
    parser.add_argument("--expansions", default="32,64,128",
                        help="HNSW expansion_search values, comma-separated")
    parser.add_argument("--skip-hnsw", action="store_true")
    args = parser.parse_args()

    from usearch.index import Index, MetricKind, search

    started = time.perf_counter()
    data, asked = make_data(args.n, args.dim, args.queries)
    print(f"{args.n:,} vectors of {args.dim} dimensions, {args.queries} queries, "
          f"{args.threads} thread(s); data made in {time.perf_counter() - started:.1f} s",
          flush=True)

    base_ms, truth = timed(lambda q: top10_numpy(data, q), asked)
    row("numpy f32 exact (today)", base_ms, 1.0)
    half = data.astype(np.float16)

    def half_scan(query: np.ndarray) -> np.ndarray:
        return top10_numpy(half, query)

    ms, found = timed(half_scan, asked)
    row("numpy f16 exact", ms, recall_at_10(found, truth))

    def brute(query: np.ndarray) -> np.ndarray:
        matches = search(data, query, 10, MetricKind.Cos, exact=True, threads=args.threads)
        return np.asarray(matches.keys)

    ms, found = timed(brute, asked)
    row("usearch exact f32", ms, recall_at_10(found, truth))

    if args.skip_hnsw:
        return
    build_threads = args.build_threads or args.threads
    for dtype in args.dtypes.split(","):
        index = Index(ndim=args.dim, metric=MetricKind.Cos, dtype=dtype, connectivity=16,
                      expansion_add=128)
        started = time.perf_counter()
        index.add(np.arange(args.n), data, threads=build_threads)
        build = time.perf_counter() - started
        for expansion in (int(value) for value in args.expansions.split(",")):
            index.expansion_search = expansion

            def ann(query: np.ndarray, index: Index = index) -> np.ndarray:
                return np.asarray(index.search(query, 10, threads=args.threads).keys)

            ms, found = timed(ann, asked)
            row(f"usearch HNSW {dtype} ef={expansion}", ms, recall_at_10(found, truth),
                f"build {build:.0f} s on {build_threads} thread(s), "
                f"{index.memory_usage / 1e6:.0f} MB")
        del index


if __name__ == "__main__":
    main()
