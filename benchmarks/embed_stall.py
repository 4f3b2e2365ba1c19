"""The first recall after many remembers: how long it stalls, and when every vector is ready.

Through the Python handle of a `Session` with the default embedding model (or
`AXON_EMBEDDER`), a hybrid memory (`--backend in_memory` or `sqlite`):

1. `--n` remembers of synthetic texts (the generator of `benchmarks/postgres.py`),
   timed: they never wait for the model, the worker embeds meanwhile;
2. the first recall at the default budget (`manager.DEFAULT_EMBED_WAIT`), timed, with
   how many vectors were still pending (its record's `pending_vectors`);
3. `handle.embed()`: the time from the first remember until every vector is ready.

`--baseline` also times what a first recall cost before vectors were computed in the
background (the old behaviour: the recall embeds everything pending itself), in a
second session over the same texts with `embed_wait="all"` and no time for the worker
(the recall comes right after the remembers, so nearly all of it is on the recall).

    PYTHONPATH=. .venv/bin/python benchmarks/embed_stall.py --n 2000 --baseline
    PYTHONPATH=. .venv/bin/python benchmarks/embed_stall.py --n 20000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres import make_texts

import axon
from axon.runtime.manager import DEFAULT_EMBED_WAIT


def run_once(
    texts: list[str], backend: str, wait: float | str | None, ready: bool = True
) -> dict[str, float]:
    store = "persistent" if backend == "sqlite" else "session"
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as directory, axon.Session(memory_dir=directory) as s:
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
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--no-ready", action="store_true", help="stop after the first recall (no embed())"
    )
    args = parser.parse_args()
    texts = make_texts(args.n, np.random.default_rng(args.seed))
    print(f"{args.n:,} remembers, {args.backend}, default budget {DEFAULT_EMBED_WAIT} s")
    new = run_once(texts, args.backend, None, ready=not args.no_ready)
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
        f"warm recall {new['warm_recall_s'] * 1000:.1f} ms"
    )
    if args.baseline:
        old = run_once(texts, args.backend, "all")
        print(
            f"  wait for all: remembers {old['remember_s']:.2f} s, first recall "
            f"{old['first_recall_s']:.2f} s, all ready after {old['all_ready_s']:.1f} s"
        )


if __name__ == "__main__":
    main()
