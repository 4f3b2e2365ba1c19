"""Generalisation first: captured recall candidates in, each lever's cross-validated gain out.

A retrieval lever (a `HybridWeights` field) ships only when it holds on data
it was not tuned on. For each lever this reports:

- LoCoMo dev by leave-one-conversation-out cross-validation: the lever's value
  is chosen from its grid on four conversations (best recall@5, ties to the
  value nearest "off") and scores the fifth; the five held-out folds are pooled
  and compared with the lever off on the same questions (recall@5 gain and its
  95% paired bootstrap interval, `locomo_levers.paired_interval`), with each
  fold's pick and gain;
- the notes benchmark (`benchmarks/notes.py` data, independent notes, hybrid):
  recall@5 and recall@1 at the lever's default against off, with intervals.

The candidates are captured once through the backend's own searches (in-memory,
the LoCoMo protocol of `benchmarks/locomo.py`: each turn remembered at the time
it was said, `link: sequence`; `locomo_ranker.load_pools`) and replayed through
`hybrid.fuse`, the function `retrieve` ranks with, so a lever costs no model
pass. `--pools` and `--notes-pools` keep the captures between runs, `--cache`
the passage vectors.

`--ranker` also re-examines the learned ranker's features: for each feature
group of `locomo_ranker.GROUPS`, the ranker is retrained without it in every
fold, and the cross-validated recall@5 of all features against that is its gain.

    PYTHONPATH=. .venv/bin/python benchmarks/locomo_cv.py --cache /tmp/vcache \\
        --pools /tmp/pools.pkl --notes-pools /tmp/notes-pools.pkl [--ranker]
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import attrs
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

import locomo  # noqa: E402
import locomo_levers  # noqa: E402
import locomo_ranker  # noqa: E402
import notes  # noqa: E402

from axon.memory.embeddings import default_embedder  # noqa: E402
from axon.memory.entry import MemoryEntry, NewEntry  # noqa: E402
from axon.memory.retrieval import hybrid  # noqa: E402
from axon.memory.retrieval.scores import SCORE_ROUNDING  # noqa: E402

TOP_K = 10

LEVERS: dict[str, tuple[str, float, tuple[float, ...]]] = {
    "time": ("time", 0.0, (0.1, 0.25, 0.5, 1.0, 2.0)),
    "learned ranker": ("learned", 0.0, (0.5, 1.0)),
    "neighbour": ("neighbour", 0.0, (0.05, 0.1, 0.2)),
    "episode": ("episode", 0.0, (0.2, 0.4, 0.8)),
    "when": ("when", 0.0, (0.03, 0.06, 0.12)),
    "mention": ("mention", 0.0, (0.15, 0.3, 0.6)),
}
"""name -> (HybridWeights field, its "off" value, the grid a fold picks from)."""


@dataclass
class NotesPool:
    """One notes question, its answer keys and the candidates of its hybrid recall."""

    question: str
    keys: frozenset[str]
    keyword: list[MemoryEntry]
    semantic: list[MemoryEntry]
    now: float


async def capture_notes(cache: str | None) -> list[NotesPool]:
    """Every notes question's keyword and semantic candidates, from the real backend."""
    stored, questions = notes.load(notes.DEFAULT_DATA)
    embedder = default_embedder()
    if embedder is None:
        raise SystemExit("no embedding model installed")
    cached = locomo.CachedEmbedder(embedder, Path(cache)) if cache else None
    size = max(TOP_K * hybrid.CANDIDATES_PER_RESULT, 50)
    pools = []
    with tempfile.TemporaryDirectory(prefix="axon-cv-") as tmp:
        backend = locomo.make_backend("in_memory", cached or embedder, Path(tmp))
        try:
            await backend.store_many(
                [NewEntry(key, text, {"scope": notes.SCOPE}) for key, text in stored]
            )
            await backend.ensure_vectors(notes.SCOPE)
            if cached is not None:
                cached.save()
            for question in questions:
                now = backend.clock()
                keyword = await backend._retrieve_keyword(
                    question.text, size, notes.SCOPE, None, now, False
                )
                semantic = await backend._semantic(question.text, size, notes.SCOPE, None, now)
                pools.append(NotesPool(question.text, question.keys, keyword, semantic, now))
        finally:
            await backend.close()
    return pools


def _load(path: str | None, make: Callable[[], list[NotesPool]]) -> list[NotesPool]:
    """What `make` captures, kept in the pickle `path` (read from it when it exists)."""
    if path and Path(path).exists():
        with Path(path).open("rb") as stored:
            found: list[NotesPool] = pickle.load(stored)
        return found
    found = make()
    if path:
        with Path(path).open("wb") as out:
            pickle.dump(found, out)
    return found


def replay(
    keyword: Sequence[MemoryEntry],
    semantic: Sequence[MemoryEntry],
    question: str,
    weights: hybrid.HybridWeights,
    now: float,
    linked: bool,
) -> list[str]:
    """The keys `retrieve(mode="hybrid", top_k=TOP_K)` returns for these candidates."""
    found = hybrid.fuse(
        keyword,
        [e for e in semantic if e.score > SCORE_ROUNDING],
        top_k=TOP_K,
        now=now,
        weights=weights,
        query=question,
        linked=linked,
        importance=True,
    )
    return [e.key for e in found]


def asked_at(data: Path) -> dict[str, float]:
    """Each conversation's clock when its questions are asked: its last turn's time
    (`locomo.ended`), so "last year" or "in June" resolve as at the conversation's end."""
    return {conv.name: locomo.ended(conv) for conv in locomo.load_conversations(data)}


def locomo_rows(
    pools: Sequence[locomo_ranker.Pool], weights: hybrid.HybridWeights, now: Mapping[str, float]
) -> list[tuple[int, int]]:
    """(evidence in the top 5, evidence) of each question, asked at `now[conversation]`."""
    rows = []
    for pool in pools:
        keys = replay(
            pool.keyword, pool.semantic, pool.question, weights, now[pool.conversation], True
        )
        rows.append((sum(1 for k in keys[:5] if k in pool.evidence), len(pool.evidence)))
    return rows


def notes_rows(
    pools: Sequence[NotesPool], weights: hybrid.HybridWeights, k: int
) -> list[tuple[int, int]]:
    """(answers in the top k, answers) of each notes question."""
    rows = []
    for pool in pools:
        keys = replay(pool.keyword, pool.semantic, pool.question, weights, pool.now, False)
        rows.append((sum(1 for key in keys[:k] if key in pool.keys), len(pool.keys)))
    return rows


def recall(rows: Sequence[tuple[int, int]]) -> float:
    return sum(f for f, _ in rows) / max(sum(e for _, e in rows), 1)


def by_category(
    pools: Sequence[locomo_ranker.Pool], rows: Sequence[tuple[int, int]]
) -> dict[int, float]:
    found: dict[int, list[int]] = {}
    for pool, (hit, evidence) in zip(pools, rows, strict=True):
        tally = found.setdefault(pool.category, [0, 0])
        tally[0] += hit
        tally[1] += evidence
    return {c: h / max(e, 1) for c, (h, e) in sorted(found.items())}


def interval(new: Sequence[tuple[int, int]], old: Sequence[tuple[int, int]]) -> str:
    gain, low, high = locomo_levers.paired_interval(new, old)
    return f"{gain:+.3f} [{low:+.3f}, {high:+.3f}]"


def judge_lever(
    name: str,
    pools: Sequence[locomo_ranker.Pool],
    notes_pools: Sequence[NotesPool],
    base: hybrid.HybridWeights,
    now: Mapping[str, float],
) -> None:
    """Print the lever's cross-validated LoCoMo gain and its notes gain (module docstring)."""
    field, off, grid = LEVERS[name]
    conversations = sorted({p.conversation for p in pools})
    rows = {
        value: locomo_rows(pools, attrs.evolve(base, **{field: value}), now)
        for value in (off, *grid)
    }
    held_rows: list[tuple[int, int]] = []
    off_rows: list[tuple[int, int]] = []
    held_pools: list[locomo_ranker.Pool] = []
    folds = []
    for held in conversations:
        train = [n for n, p in enumerate(pools) if p.conversation != held]
        test = [n for n, p in enumerate(pools) if p.conversation == held]
        best = max(
            (off, *grid),
            key=lambda v: (recall([rows[v][n] for n in train]), -abs(v - off)),
        )
        new = [rows[best][n] for n in test]
        old = [rows[off][n] for n in test]
        folds.append(f"{held}: {best:g} {recall(new) - recall(old):+.3f}")
        held_rows += new
        off_rows += old
        held_pools += [pools[n] for n in test]
    default = getattr(hybrid.HybridWeights(), field)
    cats = by_category(held_pools, held_rows)
    print(
        f"{name:<15} CV recall@5 {recall(off_rows):.3f} -> {recall(held_rows):.3f} "
        f"{interval(held_rows, off_rows)}; by category "
        + " ".join(f"{c}:{v:.3f}" for c, v in cats.items())
    )
    print(f"{'':<15} folds (picked value, gain): " + "; ".join(folds))
    on = attrs.evolve(base, **{field: default})
    off_weights = attrs.evolve(base, **{field: off})
    for k in (5, 1):
        new = notes_rows(notes_pools, on, k)
        old = notes_rows(notes_pools, off_weights, k)
        print(
            f"{'':<15} notes recall@{k} at the default {default:g}: off {recall(old):.3f} -> "
            f"{recall(new):.3f} {interval(new, old)}"
        )


def judge_ranker(pools: Sequence[locomo_ranker.Pool]) -> None:
    """Each feature group's cross-validated gain: the ranker with all features against
    the ranker retrained without the group (`locomo_ranker.evaluate`, listwise, L2 1)."""
    mats = locomo_ranker.matrices(pools, hybrid.HybridWeights(learned=0.0))
    features = locomo_ranker.FEATURES
    every = np.arange(len(features))
    full, _default, _ = locomo_ranker.evaluate(pools, mats, every, "listwise", 1.0)
    print(f"ranker, all features: CV recall@5 {full.row()['recall@5']:.3f}")
    names = sorted({p.conversation for p in pools})
    for group, members in locomo_ranker.GROUPS.items():
        columns = np.asarray([n for n, f in enumerate(features) if f not in members])
        without, _, _ = locomo_ranker.evaluate(pools, mats, columns, "listwise", 1.0)
        folds = []
        start = 0
        for held in names:
            size = sum(1 for p in pools if p.conversation == held)
            new = full.per_question[start : start + size]
            old = without.per_question[start : start + size]
            folds.append(f"{held} {recall(new) - recall(old):+.3f}")
            start += size
        print(
            f"  {group:<16} without {without.row()['recall@5']:.3f}, its gain "
            f"{interval(full.per_question, without.per_question)}; per fold " + ", ".join(folds)
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(locomo.DEFAULT_DATA), help="folder of LoCoMo *.json")
    parser.add_argument("--cache", default=None, help="keep passage vectors in DIR")
    parser.add_argument("--pools", default=None, help="keep the LoCoMo candidates in FILE")
    parser.add_argument("--notes-pools", default=None, help="keep the notes candidates in FILE")
    parser.add_argument(
        "--no-date",
        action="store_true",
        help="turns without their session date in the text (capture; a new --pools file)",
    )
    parser.add_argument("--levers", default=",".join(LEVERS), help="comma-separated levers")
    parser.add_argument("--ranker", action="store_true", help="also judge the ranker's features")
    args = parser.parse_args(argv)
    pools = locomo_ranker.load_pools(args)
    notes_pools = _load(args.notes_pools, lambda: asyncio.run(capture_notes(args.cache)))
    now = asked_at(Path(args.data))
    base = hybrid.HybridWeights()
    rows = locomo_rows(pools, base, now)
    print(
        f"LoCoMo dev {len(pools)} questions, defaults recall@5 {recall(rows):.3f} ("
        + " ".join(f"{c}:{v:.3f}" for c, v in by_category(pools, rows).items())
        + f"); notes {len(notes_pools)} questions, hybrid recall@5 "
        f"{recall(notes_rows(notes_pools, base, 5)):.3f}, recall@1 "
        f"{recall(notes_rows(notes_pools, base, 1)):.3f}"
    )
    for name in (n for n in args.levers.split(",") if n):
        judge_lever(name, pools, notes_pools, base, now)
    if args.ranker:
        judge_ranker(pools)


if __name__ == "__main__":
    main()
