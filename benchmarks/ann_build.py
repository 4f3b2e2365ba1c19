"""What an HNSW build costs on these machines, by setting: where `sqlite_ann`'s build time goes.

    PYTHONPATH=. python benchmarks/ann_build.py [--n 50000] [--dim 384] [--queries 50]
        [--dtypes f16,i8,f32] [--expansions 128,64] [--threads 1,2] [--batches 0]
        [--repeats 3]

Issue 15 item 5, the build half: the first index of 100,000 vectors took 209 s on one
thread. This script builds usearch indexes (cosine, connectivity 16, as `sqlite_ann`)
over the same clustered unit vectors as benchmarks/ann.py, for every combination of
storage dtype, `expansion_add` and build threads, and reports the median build time of
`--repeats` builds (vectors per second), then recall@10 against numpy's exact top 10 at
`expansion_search` 128 (the backend's). `--batches N` adds in N slices instead of one
call, as the backend reads the table (`BUILD_BATCH`); 0 is a single call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ann import make_data, top10_numpy


def build(
    data: np.ndarray, dtype: str, expansion_add: int, threads: int, batches: int
) -> tuple[float, object]:
    from usearch.index import Index, MetricKind

    index = Index(
        ndim=data.shape[1],
        metric=MetricKind.Cos,
        dtype=dtype,
        connectivity=16,
        expansion_add=expansion_add,
    )
    keys = np.arange(len(data), dtype=np.uint64)
    started = time.perf_counter()
    if batches <= 1:
        index.add(keys, data, threads=threads)
    else:
        step = -(-len(data) // batches)
        for start in range(0, len(data), step):
            index.add(keys[start : start + step], data[start : start + step], threads=threads)
    return time.perf_counter() - started, index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--dtypes", default="f16,i8,f32")
    parser.add_argument("--expansions", default="128,64")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--batches", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    data, asked = make_data(args.n, args.dim, args.queries)
    truth = [set(top10_numpy(data, query).tolist()) for query in asked]
    print(f"{args.n:,} x {args.dim}, load {os.getloadavg()[0]:.1f}", flush=True)
    for dtype in args.dtypes.split(","):
        for expansion in (int(e) for e in args.expansions.split(",")):
            for threads in (int(t) for t in args.threads.split(",")):
                times = []
                for _ in range(args.repeats):
                    seconds, index = build(data, dtype, expansion, threads, args.batches)
                    times.append(seconds)
                index.expansion_search = 128  # type: ignore[attr-defined]
                found = [
                    set(np.asarray(index.search(q, 10).keys).tolist())  # type: ignore[attr-defined]
                    for q in asked
                ]
                recall = float(
                    np.mean([len(f & t) / 10 for f, t in zip(found, truth, strict=True)])
                )
                median = statistics.median(times)
                print(
                    f"{dtype:4} expansion_add {expansion:4} threads {threads}: build median "
                    f"{median:7.2f} s ({args.n / median:7.0f} vectors/s, runs "
                    f"{', '.join(f'{t:.2f}' for t in times)}), recall@10 {recall:.3f}, "
                    f"load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
