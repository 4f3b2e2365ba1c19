"""Learned ranker for linked memories: LoCoMo dev candidate pools in, cross-validated recall out.

For every dev question this captures the candidate pool the hybrid path of a
linked memory sees, by calling the backend's own searches (in-memory backend,
the protocol and loading code of `benchmarks/locomo.py`, imported): the keyword
and the semantic candidate lists (`max(top_k * CANDIDATES_PER_RESULT, 50)` of
each, top_k 10 as in `locomo.py`) with their scores, each entry with its
timestamp and metadata. The baseline is the hand-weighted ranking
(`HybridWeights(learned=0)`, the default before the ranker), replayed from the
same lists (checked against `backend.retrieve`).

Each candidate gets the features of `axon.memory.retrieval.ranker` (`FEATURES`,
each in [0, 1], computed by `hybrid.ranker_features`: the very values the
shipped ranker reads): the existing signals (keyword, semantic, mention,
neighbour, episode, when, the hand-weighted fused score), the keyword and
semantic scores of its neighbours, its
length, whether it is itself a question. A linear model is
trained on them (`--model logistic`: pointwise logistic regression, Newton
steps with an L2 penalty; `--model listwise`: a softmax over each question's
pool towards its evidence turns), and evaluated by leave-one-conversation-out
cross-validation: trained on four dev conversations, ranking the fifth, figures
pooled over the five folds, against the default ranking of the same questions,
with the 95% paired bootstrap interval of `locomo_levers.paired_interval`.

    PYTHONPATH=. .venv/bin/python benchmarks/locomo_ranker.py --cache DIR
    PYTHONPATH=. .venv/bin/python benchmarks/locomo_ranker.py --cache DIR --model logistic \
        --drop rank
    PYTHONPATH=. .venv/bin/python benchmarks/locomo_ranker.py --cache DIR \
        --weights-out axon/memory/retrieval/ranker_weights.json     # the shipped weights
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

import locomo  # noqa: E402
import locomo_levers  # noqa: E402

from axon.memory.entry import MemoryEntry  # noqa: E402
from axon.memory.retrieval import hybrid, ranker  # noqa: E402

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
        # The baseline is the hand-weighted ranking (the default before the ranker).
        backend.hybrid_weights = hybrid.HybridWeights(learned=0.0)
        try:
            for conv in conversations:
                places = locomo.session_indexes(conv.turns)
                await backend.store_many(
                    [
                        locomo.turn_entry(
                            conv.name,
                            turn,
                            date=not getattr(args, "no_date", False),
                            speaker_metadata=True,
                            index=place,
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

FEATURES = ranker.FEATURES

GROUPS: dict[str, tuple[str, ...]] = {
    "neighbour_lists": ("neighbour_keyword", "neighbour_semantic"),
    "text": ("length", "short", "asks", "relative_time"),
    "signals": ("own", "keyword", "semantic", "mention", "neighbour", "episode", "when"),
    "names": ("names",),
    "numbers": ("number", "number_asked"),
}
"""Families of features `--drop` can leave out (ablation)."""


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
        rows = hybrid.ranker_features(
            pool.keyword, pool.semantic, now=0.0, weights=weights, query=pool.question
        )
        entries = [entry for entry, _ in rows]
        x = np.asarray([values for _, values in rows], dtype=np.float64)
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


def fusion_cost(pools: Sequence[Pool], repeats: int) -> tuple[list[float], list[float]]:
    """Milliseconds per query of `fuse` over the captured pools, with the ranker (the
    default) and without it (`learned=0`), alternated `repeats` times in this process."""
    with_ranker = hybrid.HybridWeights()
    without = hybrid.HybridWeights(learned=0.0)
    ranker.default_ranker()  # read once, as the first linked recall does
    runs: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(repeats):
        for learned, weights in ((True, with_ranker), (False, without)):
            started = time.perf_counter()
            for pool in pools:
                hybrid.fuse(
                    pool.keyword,
                    pool.semantic,
                    top_k=TOP_K,
                    now=0.0,
                    weights=weights,
                    query=pool.question,
                    linked=True,
                )
            runs[learned].append(1000 * (time.perf_counter() - started) / len(pools))
    return runs[True], runs[False]


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
    parser.add_argument("--model", default="listwise", choices=sorted(TRAINERS))
    parser.add_argument("--l2", type=float, default=1.0, help="L2 penalty")
    parser.add_argument(
        "--drop", default="", help=f"comma-separated feature groups to leave out: {sorted(GROUPS)}"
    )
    parser.add_argument("--weights-out", default=None, help="write the all-dev weights (JSON)")
    parser.add_argument(
        "--fusion-time",
        type=int,
        default=0,
        metavar="REPEATS",
        help="only time fuse per query with and without the ranker, REPEATS rounds alternated",
    )
    args = parser.parse_args(argv)
    pools = load_pools(args)
    if args.fusion_time:
        on, off = fusion_cost(pools, args.fusion_time)
        median_on, median_off = statistics.median(on), statistics.median(off)
        print(
            f"fuse per query over {len(pools)} questions, {args.fusion_time} rounds alternated: "
            f"ranker {median_on:.2f} ms (min {min(on):.2f}), learned=0 {median_off:.2f} ms "
            f"(min {min(off):.2f}): {median_on / median_off:.2f}x, "
            f"+{median_on - median_off:.2f} ms"
        )
        return
    weights = hybrid.HybridWeights(learned=0.0)
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
    learned, default, _folds = evaluate(pools, mats, columns, args.model, args.l2)
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
    if args.weights_out:  # every feature, a dropped one at weight 0 (the bias never ranks)
        kept = dict(zip((FEATURES[c] for c in columns), w_all[:-1], strict=True))
        Path(args.weights_out).write_text(
            json.dumps(
                {
                    "trained_by": f"benchmarks/locomo_ranker.py --model {args.model} "
                    f"--l2 {args.l2}{' --drop ' + args.drop if args.drop else ''}: LoCoMo "
                    f"{Path(args.data).name}, {len(names)} conversations, {len(pools)} questions",
                    "features": list(FEATURES),
                    "weights": [round(float(kept.get(name, 0.0)), 6) for name in FEATURES],
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
