"""Store and recall timings of the in-memory backend: sizes in, medians (ms) and ratios out.

For each size (10k and 100k by default; 1M with `--full`, or any list with
`--sizes`), it builds an `InMemoryBackend` from deterministic synthetic entries
(sentences drawn from a Zipf-distributed vocabulary), then times:

- store: batched `store_many` throughput, and single `store` latency;
- `exact` recall next to the seed's linear scan (its code, copied) on the same
  entries, in the same process, checking that both return identical results;
- `keyword` (BM25) recall.

Queries are realistic kinds: common words, mid-frequency words, rare words,
misses, misses made of common trigrams, two-word phrases taken from stored text,
key lookups, and (reported apart) one- and two-character queries.

    .venv/bin/python benchmarks/memory.py            # 10k, 100k
    .venv/bin/python benchmarks/memory.py --full     # 10k, 100k, 1M
    .venv/bin/python benchmarks/memory.py --sizes 1000000 --repeat 7
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from axon.memory.backends.in_memory import InMemoryBackend
from axon.memory.entry import MemoryEntry, NewEntry

SCOPE = "Bench"
BATCH = 10_000
TOP_K = 5

HEAD_WORDS = """
the of and memory contract risk agreement party payment notice meeting project team
report budget customer review schedule delivery warranty liability clause term research
quantum model data training result summary decision plan travel finance legal medical
patient doctor school student teacher garden recipe music concert movie book friend family
weekend holiday birthday office manager client invoice deadline launch product design
""".split()  # noqa: SIM905

SYLLABLES = """
ka lo mi ne ro ta vi su pe da ren tor lin mar sel qua zo bri fen gal dor vek mun pal sib tru
wex yon hal cor
""".split()  # noqa: SIM905


def vocabulary(size: int, rng: random.Random) -> list[str]:
    """`HEAD_WORDS`, then made-up words of 2-3 syllables, most frequent first."""
    words = list(HEAD_WORDS)
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class Corpus:
    """Deterministic synthetic entries and the queries to time on them."""

    def __init__(self, seed: int = 7, vocab_size: int = 20_000) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(vocab_size, self.rng)
        weights = [1.0 / (rank + 1) for rank in range(len(self.words))]
        self.cumulative = list(_accumulate(weights))

    def sentence(self) -> str:
        n = self.rng.randint(6, 14)
        return " ".join(self.rng.choices(self.words, cum_weights=self.cumulative, k=n))

    def entries(self, n: int) -> list[NewEntry]:
        return [
            NewEntry(
                f"{self.words[self.rng.randrange(200)]}_{i:07d}",
                self.sentence(),
                {"scope": SCOPE, "source": "bench"},
            )
            for i in range(n)
        ]

    def queries(self, stored: list[NewEntry]) -> dict[str, list[str]]:
        rng = random.Random(11)
        words = self.words
        phrases = []
        for item in rng.sample(stored, 6):
            tokens = str(item.value).split()
            i = rng.randrange(len(tokens) - 1)
            phrases.append(f"{tokens[i]} {tokens[i + 1]}")
        picks = rng.sample(stored, 2)
        return {
            "common": [words[i] for i in (1, 3, 5, 8, 13, 21, 34, 45)],
            "mid": [words[i] for i in (150, 300, 600, 900, 1200, 1600, 2000, 2500)],
            "rare": [words[i] for i in (9000, 11000, 13000, 15000, 17000, 19000)],
            "miss": ["xylophone", "zzyzx", "blorptang", "quizzical", "jukebox", "wizardry"],
            "miss-common-grams": ["contractrisk", "memorythe", "kalomi", "parties"],
            "phrase": phrases,
            "key": [picks[0].key, picks[1].key[:-2], "contract_"],
            "short": ["a", "q", "e", "ka", "zq", "x"],
        }


def _accumulate(values: list[float]) -> list[float]:
    total = 0.0
    out = []
    for v in values:
        total += v
        out.append(total)
    return out


def seed_scan(
    store: dict[str, MemoryEntry], query: str, top_k: int, scope: str | None
) -> list[MemoryEntry]:
    """The seed's `InMemoryBackend.retrieve` loop, verbatim (without the tracer)."""
    candidates: list[MemoryEntry] = []
    query_lower = query.lower()
    for entry in store.values():
        if scope and entry.metadata.get("scope") != scope:
            continue
        score = 0.0
        if entry.key.lower() == query_lower:
            score = 1.0
        elif query_lower in entry.key.lower():
            score = 0.7
        elif query_lower in str(entry.value).lower():
            score = 0.4
        if score > 0:
            candidates.append(
                MemoryEntry(
                    key=entry.key,
                    value=entry.value,
                    metadata=entry.metadata,
                    score=score,
                    timestamp=entry.timestamp,
                )
            )
    candidates.sort(key=lambda e: (-e.score, -e.timestamp))
    return candidates[:top_k]


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median milliseconds of `repeat` calls, and the last result."""
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def fmt(ms: float) -> str:
    return f"{ms:.3f}" if ms < 10 else f"{ms:.1f}"


async def bench_size(n: int, repeat: int, scan_repeat: int) -> None:
    corpus = Corpus()
    items = corpus.entries(n)
    backend = InMemoryBackend()

    gc.collect()
    gc.disable()  # the indexes are millions of small objects: keep the collector out
    start = time.perf_counter()
    stored: list[MemoryEntry] = []
    for i in range(0, n, BATCH):
        stored.extend(await backend.store_many(items[i : i + BATCH]))
    build = time.perf_counter() - start
    single = []
    for i in range(1000):
        t0 = time.perf_counter()
        stored.append(await backend.store(f"single_{i}", corpus.sentence(), {"scope": SCOPE}))
        single.append((time.perf_counter() - t0) * 1000)
    gc.enable()
    print(f"\n== {n:,} entries (+1,000 single stores) ==")
    print(
        f"store_many (batches of {BATCH:,}): {build:.1f} s, {n / build:,.0f} entries/s; "
        f"single store median {fmt(statistics.median(single))} ms"
    )

    seed_store = {entry.key: entry for entry in stored}  # the seed's dict, in store order

    queries = corpus.queries(items)
    exact_ms: dict[str, list[float]] = {}
    scan_ms: dict[str, list[float]] = {}
    keyword_ms: dict[str, list[float]] = {}
    mismatches = []
    for kind, qs in queries.items():
        for q in qs:
            times = []
            got: list[MemoryEntry] = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                got = await backend.retrieve(q, TOP_K, SCOPE)
                times.append((time.perf_counter() - t0) * 1000)
            exact_ms.setdefault(kind, []).append(statistics.median(times))
            ms, want = timed(lambda q=q: seed_scan(seed_store, q, TOP_K, SCOPE), scan_repeat)
            scan_ms.setdefault(kind, []).append(ms)
            if [(e.key, e.score) for e in got] != [(e.key, e.score) for e in want]:
                mismatches.append(q)
            if kind not in ("short", "key"):
                times = []
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    await backend.retrieve(q, TOP_K, SCOPE, mode="keyword")
                    times.append((time.perf_counter() - t0) * 1000)
                keyword_ms.setdefault(kind, []).append(statistics.median(times))

    def overall(table: dict[str, list[float]], skip: tuple[str, ...] = ("short",)) -> float:
        return statistics.median([v for k, vs in table.items() if k not in skip for v in vs])

    exact_med, scan_med = overall(exact_ms), overall(scan_ms)
    print(
        f"exact   median {fmt(exact_med)} ms | seed linear scan median {fmt(scan_med)} ms | "
        f"speed-up {scan_med / exact_med:,.0f}x | identical results: "
        + ("yes" if not mismatches else f"NO {mismatches}")
    )
    for kind in queries:
        e, s = statistics.median(exact_ms[kind]), statistics.median(scan_ms[kind])
        print(
            f"  {kind:<18} exact {fmt(e):>8} ms (max {fmt(max(exact_ms[kind]))})"
            f"   scan {fmt(s):>8} ms   x{s / e:,.0f}"
        )
    print(f"keyword median {fmt(overall(keyword_ms))} ms")
    for kind, values in keyword_ms.items():
        print(f"  {kind:<18} keyword {fmt(statistics.median(values)):>8} ms")
    await backend.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--full", action="store_true", help="include 1,000,000 entries")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per query (median)")
    parser.add_argument(
        "--scan-repeat", type=int, default=1, help="timed runs per query of the linear scan"
    )
    args = parser.parse_args()
    sizes = args.sizes or ([10_000, 100_000, 1_000_000] if args.full else [10_000, 100_000])
    print(
        f"in-memory backend, top_k={TOP_K}, one scope, medians over queries of the median of "
        f"{args.repeat} runs (short queries reported apart, not in the overall median)"
    )
    for n in sizes:
        await bench_size(n, args.repeat, args.scan_repeat)


if __name__ == "__main__":
    asyncio.run(main())
