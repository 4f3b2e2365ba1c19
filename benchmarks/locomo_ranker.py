"""Learned ranker for linked memories: LoCoMo dev candidate pools in, cross-validated recall out.

For every dev question this captures the candidate pool the hybrid path of a
linked memory sees, by calling the backend's own searches (in-memory backend,
the protocol and loading code of `benchmarks/locomo.py`, imported): the keyword
and the semantic candidate lists (`max(top_k * CANDIDATES_PER_RESULT, 50)` of
each, top_k 10 as in `locomo.py`) with their scores, each entry with its
timestamp and metadata. The default ranking is replayed from the same lists
with `hybrid.fuse` (checked against `backend.retrieve`).

Each candidate gets features in [0, 1] (`FEATURES`): the existing signals
(keyword, semantic, mention, neighbour, episode, when, the default fused score),
its ranks in each list, found by both, the keyword and semantic scores of its
neighbours, its length, whether it is itself a question, and a few interactions
with the question's type words (when, how many, would/likely). A linear model is
trained on them (`--model logistic`: pointwise logistic regression, Newton
steps with an L2 penalty; `--model listwise`: a softmax over each question's
pool towards its evidence turns), and evaluated by leave-one-conversation-out
cross-validation: trained on four dev conversations, ranking the fifth, figures
pooled over the five folds, against the default ranking of the same questions,
with the 95% paired bootstrap interval of `locomo_levers.paired_interval`.

    PYTHONPATH=. .venv/bin/python benchmarks/locomo_ranker.py --cache DIR
    PYTHONPATH=. .venv/bin/python benchmarks/locomo_ranker.py --cache DIR --model listwise \
        --drop rank
"""

from __future__ import annotations

import argparse
import asyncio
import math
import pickle
import re
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

import locomo  # noqa: E402
import locomo_levers  # noqa: E402

from axon.memory.entry import MemoryEntry, value_text  # noqa: E402
from axon.memory.retrieval import hybrid  # noqa: E402
from axon.memory.retrieval.text import tokenize  # noqa: E402

TOP_K = 10


@dataclass
class Pool:
    """One question and the candidates the hybrid path of its linked memory sees."""

    conversation: str
    question: str
    evidence: frozenset[str]
    category: int
    keyword: list[MemoryEntry]
    semantic: list[MemoryEntry]
    default: list[str]
    """The keys `backend.retrieve(top_k=10, linked=True)` returned."""


async def capture(args: argparse.Namespace) -> list[Pool]:
    """Every dev question's keyword and semantic candidate lists, from the real backend."""
    conversations = locomo.load_conversations(Path(args.data))
    embedder = locomo.default_embedder()
    if embedder is None:
        raise SystemExit("no embedding model installed (the ranker needs semantic candidates)")
    cached: locomo.CachedEmbedder | None = None
    if args.cache:
        cached = locomo.CachedEmbedder(embedder, Path(args.cache))
        embedder = cached
    pools: list[Pool] = []
    size = max(TOP_K * hybrid.CANDIDATES_PER_RESULT, 50)
    with tempfile.TemporaryDirectory(prefix="axon-ranker-") as tmp:
        backend = locomo.make_backend("in_memory", embedder, Path(tmp))
        try:
            for conv in conversations:
                places = locomo.session_indexes(conv.turns)
                await backend.store_many(
                    [
                        locomo.turn_entry(
                            conv.name, turn, date=True, speaker_metadata=True, index=place
                        )
                        for turn, place in zip(conv.turns, places, strict=True)
                    ]
                )
                await backend.ensure_vectors(conv.name)
            if cached is not None:
                cached.save()
            for conv in conversations:
                for question, evidence, category in conv.questions:
                    now = backend.clock()
                    keyword = await backend._retrieve_keyword(
                        question, size, conv.name, None, now, True
                    )
                    semantic = await backend._semantic(question, size, conv.name, None, now)
                    default = await backend.retrieve(
                        question, top_k=TOP_K, scope=conv.name, mode="hybrid", linked=True
                    )
                    pools.append(
                        Pool(
                            conv.name,
                            question,
                            evidence,
                            category,
                            keyword,
                            semantic,
                            [e.key for e in default],
                        )
                    )
        finally:
            await backend.close()
    return pools


# ------------------------------------------------------------------ features

TYPE_WORDS: dict[str, Callable[[frozenset[str], str], bool]] = {
    "when": lambda words, _: "when" in words,
    "count": lambda _, text: re.search(r"\bhow (?:many|often|long)\b", text) is not None,
    "would": lambda words, _: bool(words & {"would", "likely", "might", "could"}),
}
"""Question types whose evidence looks different: each interacts with a few signals."""

INTERACTING = ("keyword", "semantic", "episode", "neighbour")

FEATURES: tuple[str, ...] = (
    "fused",
    "own",
    "keyword",
    "semantic",
    "mention",
    "neighbour",
    "episode",
    "when",
    "keyword_rank",
    "semantic_rank",
    "keyword_top5",
    "semantic_top5",
    "both",
    "neighbour_keyword",
    "neighbour_semantic",
    "length",
    "short",
    "asks",
    "relative_time",
    *(f"{kind}*{name}" for kind in TYPE_WORDS for name in INTERACTING),
)

GROUPS: dict[str, tuple[str, ...]] = {
    "rank": ("keyword_rank", "semantic_rank", "keyword_top5", "semantic_top5", "both"),
    "neighbour_lists": ("neighbour_keyword", "neighbour_semantic"),
    "text": ("length", "short", "asks", "relative_time"),
    "types": tuple(f"{kind}*{name}" for kind in TYPE_WORDS for name in INTERACTING),
    "signals": ("own", "keyword", "semantic", "mention", "neighbour", "episode", "when"),
}
"""Families of features `--drop` can leave out (ablation)."""


def pool_features(
    keyword: Sequence[MemoryEntry],
    semantic: Sequence[MemoryEntry],
    query: str,
    weights: hybrid.HybridWeights,
) -> tuple[list[MemoryEntry], np.ndarray]:
    """The pool's entries (the default fused order, scored) and their features (`FEATURES`)."""
    fused = hybrid.fuse(
        keyword,
        semantic,
        top_k=len(keyword) + len(semantic),
        now=0.0,
        weights=weights,
        query=query,
        linked=True,
    )
    words = frozenset(tokenize(query))
    lowered = query.lower()
    when = hybrid.asks_when(words)
    total = 1.0 + weights.neighbour + weights.episode + (weights.when if when else 0.0)
    kw_rank = {(e.scope, e.key): n for n, e in enumerate(keyword)}
    sem_rank = {(e.scope, e.key): n for n, e in enumerate(semantic)}
    kw = {(e.scope, e.key): e.score for e in keyword}
    sem = {(e.scope, e.key): e.score for e in semantic}
    idents = [(e.scope, e.key) for e in fused]
    times = {ident: e.timestamp for ident, e in zip(idents, fused, strict=True)}
    near_kw = hybrid._nearest_neighbours(
        {i: kw.get(i, 0.0) for i in idents}, times, weights.neighbour_seconds
    )
    near_sem = hybrid._nearest_neighbours(
        {i: sem.get(i, 0.0) for i in idents}, times, weights.neighbour_seconds
    )
    types = {kind: test(words, lowered) for kind, test in TYPE_WORDS.items()}
    rows = []
    for ident, entry in zip(idents, fused, strict=True):
        signals = entry.signals or {}
        text = value_text(entry.value)
        said = text.split(": ", 1)[-1]
        length = len(tokenize(said))
        values: dict[str, float] = {
            "fused": entry.score,
            "own": min(
                1.0,
                total
                * (
                    signals.get("keyword", 0.0)
                    + signals.get("semantic", 0.0)
                    + signals.get("mention", 0.0)
                ),
            ),
            "keyword": kw.get(ident, 0.0),
            "semantic": sem.get(ident, 0.0),
            "mention": 1.0 if signals.get("mention", 0.0) > 0 else 0.0,
            "neighbour": min(1.0, total * signals.get("neighbour", 0.0) / weights.neighbour)
            if weights.neighbour
            else 0.0,
            "episode": min(1.0, total * signals.get("episode", 0.0) / weights.episode)
            if weights.episode
            else 0.0,
            "when": 1.0 if when and hybrid.holds_relative_time(text) else 0.0,
            "keyword_rank": 1.0 / (1.0 + kw_rank[ident]) if ident in kw_rank else 0.0,
            "semantic_rank": 1.0 / (1.0 + sem_rank[ident]) if ident in sem_rank else 0.0,
            "keyword_top5": 1.0 if kw_rank.get(ident, 99) < 5 else 0.0,
            "semantic_top5": 1.0 if sem_rank.get(ident, 99) < 5 else 0.0,
            "both": 1.0 if ident in kw_rank and ident in sem_rank else 0.0,
            "neighbour_keyword": near_kw[ident],
            "neighbour_semantic": near_sem[ident],
            "length": min(1.0, length / 40.0),
            "short": 1.0 if length < 6 else 0.0,
            "asks": 1.0 if "?" in said else 0.0,
            "relative_time": 1.0 if hybrid.holds_relative_time(text) else 0.0,
        }
        for kind, on in types.items():
            for name in INTERACTING:
                values[f"{kind}*{name}"] = values[name] if on else 0.0
        rows.append([values[name] for name in FEATURES])
    return fused, np.asarray(rows, dtype=np.float64)


@dataclass
class Matrix:
    """One question's candidates: keys, timestamps, features and which are evidence."""

    keys: list[str]
    times: np.ndarray
    x: np.ndarray
    y: np.ndarray


def matrices(pools: Sequence[Pool], weights: hybrid.HybridWeights) -> list[Matrix]:
    found = []
    for pool in pools:
        entries, x = pool_features(pool.keyword, pool.semantic, pool.question, weights)
        keys = [e.key for e in entries]
        y = np.asarray([1.0 if k in pool.evidence else 0.0 for k in keys])
        found.append(Matrix(keys, np.asarray([e.timestamp for e in entries]), x, y))
    return found


# ------------------------------------------------------------------ models


def train_logistic(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], l2: float) -> np.ndarray:
    """Pointwise logistic regression (weights then bias), Newton steps with an L2 penalty."""
    x = np.hstack([np.vstack(xs), np.ones((sum(len(a) for a in xs), 1))])
    y = np.concatenate(ys)
    w = np.zeros(x.shape[1])
    penalty = l2 * np.eye(x.shape[1])
    penalty[-1, -1] = 0.0
    for _ in range(30):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        gradient = x.T @ (p - y) + penalty @ w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.max(np.abs(step)) < 1e-7:
            break
    return w


def train_listwise(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], l2: float) -> np.ndarray:
    """A softmax over each question's pool towards its evidence (ListNet), Adam steps."""
    usable = [(x, y / y.sum()) for x, y in zip(xs, ys, strict=True) if y.sum() > 0]
    w = np.zeros(xs[0].shape[1])
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    rate = 0.05
    for step in range(1, 601):
        gradient = l2 * w
        for x, target in usable:
            z = x @ w
            p = np.exp(z - z.max())
            p /= p.sum()
            gradient += x.T @ (p - target)
        gradient /= len(usable)
        m = 0.9 * m + 0.1 * gradient
        v = 0.999 * v + 0.001 * gradient**2
        w -= rate * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return np.append(w, 0.0)


TRAINERS = {"logistic": train_logistic, "listwise": train_listwise}


def ranked(matrix: Matrix, w: np.ndarray, columns: np.ndarray) -> list[str]:
    """The candidates' keys by model score, ties to the newer entry (as `fuse` does)."""
    z = matrix.x[:, columns] @ w[:-1] + w[-1]
    order = sorted(range(len(z)), key=lambda n: (-z[n], -matrix.times[n]))
    return [matrix.keys[n] for n in order]


def evaluate(
    pools: Sequence[Pool],
    mats: Sequence[Matrix],
    columns: np.ndarray,
    model: str,
    l2: float,
) -> tuple[locomo.Score, locomo.Score, dict[str, np.ndarray]]:
    """Leave-one-conversation-out: (ranker, default) scores pooled over the folds, and each
    fold's weights."""
    names = sorted({p.conversation for p in pools})
    learned = locomo.Score()
    default = locomo.Score()
    fold_weights = {}
    order = []
    for held in names:
        train = [m for p, m in zip(pools, mats, strict=True) if p.conversation != held]
        w = TRAINERS[model]([m.x[:, columns] for m in train], [m.y for m in train], l2)
        fold_weights[held] = w
        for n, (pool, matrix) in enumerate(zip(pools, mats, strict=True)):
            if pool.conversation == held:
                order.append(n)
                learned.add(ranked(matrix, w, columns), pool.evidence, 0.0, pool.category)
    for n in order:  # the same question order as the learned score, for the paired interval
        pool = pools[n]
        default.add(pool.default, pool.evidence, 0.0, pool.category)
    return learned, default, fold_weights


def in_sample(
    pools: Sequence[Pool], mats: Sequence[Matrix], columns: np.ndarray, model: str, l2: float
) -> tuple[locomo.Score, np.ndarray]:
    w = TRAINERS[model]([m.x[:, columns] for m in mats], [m.y for m in mats], l2)
    score = locomo.Score()
    for pool, matrix in zip(pools, mats, strict=True):
        score.add(ranked(matrix, w, columns), pool.evidence, 0.0, pool.category)
    return score, w


def describe(name: str, score: locomo.Score) -> str:
    row = score.row()
    by = " ".join(f"{c}:{v:.3f}" for c, v in row["recall@5_by_category"].items())
    return f"{name:<26} {row['recall@5']:>9.3f} {row['recall@10']:>10.3f} {row['mrr']:>7.3f}  {by}"


def load_pools(args: argparse.Namespace) -> list[Pool]:
    path = Path(args.pools) if args.pools else None
    if path is not None and path.exists():
        with path.open("rb") as stored:
            pools: list[Pool] = pickle.load(stored)
        return pools
    pools = asyncio.run(capture(args))
    if path is not None:
        with path.open("wb") as out:
            pickle.dump(pools, out)
    return pools


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(locomo.DEFAULT_DATA), help="folder of LoCoMo *.json")
    parser.add_argument("--cache", default=None, help="keep passage vectors in DIR")
    parser.add_argument("--pools", default=None, help="keep the captured pools in FILE (pickle)")
    parser.add_argument("--model", default="logistic", choices=sorted(TRAINERS))
    parser.add_argument("--l2", type=float, default=1.0, help="L2 penalty")
    parser.add_argument(
        "--drop", default="", help=f"comma-separated feature groups to leave out: {sorted(GROUPS)}"
    )
    parser.add_argument("--weights-out", default=None, help="write the all-dev weights (JSON)")
    args = parser.parse_args(argv)
    pools = load_pools(args)
    weights = hybrid.HybridWeights()
    mats = matrices(pools, weights)
    replay = sum(1 for p, m in zip(pools, mats, strict=True) if m.keys[:TOP_K] == p.default)
    dropped = {f for group in args.drop.split(",") if group for f in GROUPS[group]}
    columns = np.asarray([n for n, f in enumerate(FEATURES) if f not in dropped])
    in_pool = sum(len(p.evidence & set(m.keys)) for p, m in zip(pools, mats, strict=True))
    evidence = sum(len(p.evidence) for p in pools)
    print(
        f"{len(pools)} questions, {sum(len(m.keys) for m in mats) / len(mats):.0f} candidates "
        f"per question; pool holds {in_pool / evidence:.3f} of the evidence; replayed default "
        f"top 10 identical to backend.retrieve on {replay}/{len(pools)} questions"
    )
    print(f"model {args.model}, l2 {args.l2}, {len(columns)} features, dropped: {args.drop or '-'}")
    learned, default, folds = evaluate(pools, mats, columns, args.model, args.l2)
    sample, w_all = in_sample(pools, mats, columns, args.model, args.l2)
    print(
        f"{'ranking':<26} {'recall@5':>9} {'recall@10':>10} {'MRR':>7}  "
        "recall@5 by category (1 multi-hop, 2 temporal, 3 open, 4 single)"
    )
    print(describe("default (hybrid, linked)", default))
    print(describe("ranker, cross-validated", learned))
    print(describe("ranker, in-sample", sample))
    gain, low, high = locomo_levers.paired_interval(learned.per_question, default.per_question)
    print(f"cross-validated recall@5 gain {gain:+.3f} [95% CI {low:+.3f}, {high:+.3f}]")
    names = sorted({p.conversation for p in pools})
    for held in names:
        mine = [n for n, p in enumerate(pools) if p.conversation == held]
        start = sum(1 for p in pools if p.conversation < held)
        new = learned.per_question[start : start + len(mine)]
        old = default.per_question[start : start + len(mine)]
        ev = sum(e for _, e in new) or 1
        print(
            f"  fold {held}: {len(mine)} questions, default {sum(f for f, _ in old) / ev:.3f}"
            f" -> ranker {sum(f for f, _ in new) / ev:.3f}"
        )
    print(
        "all-dev weights: "
        + ", ".join(f"{FEATURES[c]} {v:+.2f}" for c, v in zip(columns, w_all[:-1], strict=True))
        + f", bias {w_all[-1]:+.2f}"
    )
    if args.weights_out:
        import json

        Path(args.weights_out).write_text(
            json.dumps(
                {
                    "features": [FEATURES[c] for c in columns],
                    "weights": [float(v) for v in w_all[:-1]],
                    "bias": float(w_all[-1]),
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )
    _ = (math, Mapping, Any, folds)


if __name__ == "__main__":
    main()
