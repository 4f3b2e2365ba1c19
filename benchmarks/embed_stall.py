"""The first recall after many remembers: how long it stalls, and when every vector is ready.

Through the Python handle of a `Session` with the default embedding model (or
`AXON_EMBEDDER`), a hybrid memory (`--backend in_memory` or `sqlite`):

1. `--n` remembers of synthetic texts (the generator of `benchmarks/postgres.py`),
   timed: they never wait for the model, the worker embeds meanwhile;
2. the first recall at the default budget (`manager.DEFAULT_EMBED_WAIT`), timed, with
   how many vectors were still pending (its record's `pending_vectors`);
3. `handle.embed()`: the time from the first remember until every vector is ready.

`--baseline` also times a second session over the same texts whose first recall
waits for all (`embed_wait="all"`, the worker doing the work while the recall waits),
and `--inline` the model alone over the same texts in the same process: batches of 64
(`backend.EMBED_BATCH`) on the caller's thread, what a recall did before the worker
(the old path; saving the vectors is negligible beside the model). The worker's
model calls are traced (`Traced`): how many, their sizes, the model's time and the
gaps between calls (the worker's own overhead: event-loop handoffs, scans, saves),
so a slow "all ready" says whether the model or the worker took the time.

    PYTHONPATH=. .venv/bin/python benchmarks/embed_stall.py --n 2000 --inline
    PYTHONPATH=. .venv/bin/python benchmarks/embed_stall.py --n 20000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres import make_texts

import axon
from axon.memory.backend import EMBED_BATCH
from axon.memory.embeddings.default import default_embedder
from axon.runtime.manager import DEFAULT_EMBED_WAIT


class Traced:
    """The default model, with every passage call timed: `(start, end, texts)`."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[float, float, int]] = []
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:  # model_id, dim, similarity_floor, ...
        return getattr(self.inner, name)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        began = time.perf_counter()
        vectors = self.inner.embed_passages(texts)
        with self._lock:
            self.calls.append((began, time.perf_counter(), len(texts)))
        return vectors

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)

    def summary(self) -> str:
        calls = sorted(self.calls)
        if not calls:
            return "no model calls"
        model = sum(end - start for start, end, _ in calls)
        gaps = [calls[i + 1][0] - calls[i][1] for i in range(len(calls) - 1)] or [0.0]
        sizes = [size for _, _, size in calls]
        return (
            f"{len(calls)} model calls of {min(sizes)}-{max(sizes)} texts "
            f"(median {statistics.median(sizes):.0f}), model {model:.1f} s "
            f"({model / sum(sizes) * 1000:.1f} ms/text), gaps between calls "
            f"{sum(gaps):.2f} s (median {statistics.median(gaps) * 1000:.1f} ms, "
            f"max {max(gaps) * 1000:.0f} ms)"
        )


def inline(texts: list[str], embedder: Any) -> float:
    """Seconds for the model alone over `texts`, as the recall did before the worker."""
    began = time.perf_counter()
    for start in range(0, len(texts), EMBED_BATCH):
        embedder.embed_passages(texts[start : start + EMBED_BATCH])
    return time.perf_counter() - began


def run_once(
    texts: list[str],
    backend: str,
    wait: float | str | None,
    ready: bool = True,
    embedder: Traced | None = None,
) -> dict[str, float]:
    store = "persistent" if backend == "sqlite" else "session"
    figures: dict[str, float] = {}
    with (
        tempfile.TemporaryDirectory() as directory,
        axon.Session(memory_dir=directory, embedder=embedder) as s,
    ):
        s.execute(f"memory Notes {{ store: {store} backend: {backend} retrieval: hybrid }}")
        notes = s.memory("Notes")
        started = time.perf_counter()
        for i, text in enumerate(texts):
            notes.remember(text, key=f"e{i}")
        figures["remember_s"] = time.perf_counter() - started
        query = " ".join(texts[len(texts) // 2].split()[:3])
        before = time.perf_counter()
        notes.recall(query, embed_wait=wait)
        figures["first_recall_s"] = time.perf_counter() - before
        figures["pending"] = float(s.records[-1].get("pending_vectors", 0))
        if not ready:  # closing stops the worker after the batch in flight
            return figures
        notes.embed()
        figures["all_ready_s"] = time.perf_counter() - started
        before = time.perf_counter()
        notes.recall(query)
        figures["warm_recall_s"] = time.perf_counter() - before
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--backend", choices=["in_memory", "sqlite"], default="in_memory")
    parser.add_argument("--baseline", action="store_true", help="also time embed_wait='all'")
    parser.add_argument(
        "--inline", action="store_true", help="also time the model alone, batches of 64"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--no-ready", action="store_true", help="stop after the first recall (no embed())"
    )
    args = parser.parse_args()
    texts = make_texts(args.n, np.random.default_rng(args.seed))
    model = default_embedder()
    if model is None:
        sys.exit("no embedding model on this machine")
    model.embed_passages(texts[:2])  # load it: the first recall is not the model's load
    traced = Traced(model)
    print(
        f"{args.n:,} remembers, {args.backend}, default budget {DEFAULT_EMBED_WAIT} s, "
        f"model {model.model_id}, load {load()}"
    )
    new = run_once(texts, args.backend, None, ready=not args.no_ready, embedder=traced)
    if args.no_ready:
        print(
            f"  background: remembers {new['remember_s']:.2f} s "
            f"({args.n / new['remember_s']:,.0f}/s), first recall "
            f"{new['first_recall_s']:.3f} s ({new['pending']:,.0f} pending)"
        )
        return
    print(
        f"  background: remembers {new['remember_s']:.2f} s "
        f"({args.n / new['remember_s']:,.0f}/s), first recall {new['first_recall_s']:.3f} s "
        f"({new['pending']:,.0f} pending), all vectors ready after {new['all_ready_s']:.1f} s, "
        f"warm recall {new['warm_recall_s'] * 1000:.1f} ms; load {load()}"
    )
    print(f"  worker: {traced.summary()}")
    if args.inline:
        seconds = inline(texts, model)
        print(
            f"  inline (the model alone, batches of {EMBED_BATCH}, caller's thread): "
            f"{seconds:.1f} s; worker's all ready / inline = "
            f"{new['all_ready_s'] / seconds:.2f}; load {load()}"
        )
    if args.baseline:
        old = run_once(texts, args.backend, "all")
        print(
            f"  wait for all: remembers {old['remember_s']:.2f} s, first recall "
            f"{old['first_recall_s']:.2f} s, all ready after {old['all_ready_s']:.1f} s"
        )


def load() -> str:
    """The 1-minute load average: how busy the machine was (2 cores here)."""
    return f"{os.getloadavg()[0]:.1f}"


if __name__ == "__main__":
    main()
