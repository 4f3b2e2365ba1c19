"""Candidate features and models for the learned ranker: captured LoCoMo pools in, CV figures out.

An experiment bench beside `benchmarks/locomo_ranker.py` (issue 16): it reads the
pools that script captured (`--pools FILE`), computes the shipped features
(`hybrid.ranker_features`) and, here only, candidate features that the shipped
code does not have, and cross-validates each variant exactly as
`locomo_ranker.py` does (leave one conversation out, pooled over the five
folds), with the 95% paired bootstrap interval of
`locomo_levers.paired_interval` against the hand-weighted default and against
the shipped feature set. Nothing here ships: a variant that holds is brought
into `axon/memory/retrieval` and retrained by `locomo_ranker.py`. The trainer
is the same ListNet loss and Adam steps, vectorised over all questions at
once (the same weights as `locomo_ranker.train_listwise` up to rounding).

Candidate features (each in [0, 1], from the candidates alone, as a backend
would have them; an episode is a run of candidates with no gap in time over
30 minutes, as `hybrid` defines it):

- `ep_kw_max`, `ep_sem_max`, `ep_kw_mean3`, `ep_sem_mean3`: the best keyword /
  semantic score in the candidate's episode, the mean of its three best;
  `ep_kw_second`, `ep_sem_second`: the second best; `ep_rank`: 1 / (1 + place of
  the candidate's own score in its episode); `ep_count`: candidates in the
  episode / 20; `ep_pos`: place in time within the episode, 0 first, 1 last;
- `near_best`, `near_best_t`, `same_ep_best`: 1 / (1 + candidates between it and
  the best own-scored candidate) or 1 / (1 + minutes) when in its episode, and
  whether it is;
- `entity`, `entity_ns`: share of the question's capitalised words (not question
  words; `_ns`: not the speakers either) that the turn says; `qcover`: share of
  the question's stemmed content words it says;
- `prf`, `prf_all`: pseudo-relevance feedback in the pool: the words of the three
  best hand-weighted candidates not in the question, weighted by log(1 + n / df)
  over the pool, share held by the candidate (`prf`: 0 for those three);
- `date_match`: the turn's date has the month / year the question names;
- `kw_rel`, `sem_rel`: score over the best of its list; `*_mm`: min-max in the pool;
  `ep_kw_rel_max`, `ep_sem_rel_max`: the episode's best of those.

Models: `linear` (the shipped listwise linear model), `mlp` (a linear term plus
a 16-unit tanh layer, the same loss), `lambda` (the listwise loss plus a pairwise
logistic term on evidence / non-evidence pairs that a swap would move across
rank 5, LambdaRank style, weight `lam`).

    PYTHONPATH=. .venv/bin/python benchmarks/locomo_ranker.py --cache DIR --pools FILE
    PYTHONPATH=. .venv/bin/python benchmarks/locomo_ranker_variants.py --pools FILE \
        [--only "NAME;NAME"]
"""

from __future__ import annotations

import argparse
import calendar
import datetime
import math
import pickle
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

import locomo_levers  # noqa: E402
import locomo_ranker  # noqa: E402

from axon.memory.entry import MemoryEntry, value_text  # noqa: E402
from axon.memory.retrieval import hybrid, ranker  # noqa: E402
from axon.memory.retrieval.text import STOP_WORDS, stem, tokenize  # noqa: E402

BASE = list(ranker.FEATURES)
MONTHS = {calendar.month_name[n].lower(): n for n in range(1, 13)}
QUESTION_WORDS = frozenset(
    "what when where who how which why did does is was would do has have are were can could".split()  # noqa: SIM905
)
CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")
EPISODE_GAP = hybrid.HybridWeights().episode_gap_seconds

Features = dict[str, np.ndarray]


def _content(text: str) -> set[str]:
    return {stem(w) for w in tokenize(text) if w not in STOP_WORDS}


def candidate_features(question: str, entries: Sequence[MemoryEntry], x: np.ndarray) -> Features:
    """The candidate features of one pool (see the module docstring), rows as in `x`."""
    n = len(entries)
    column = {name: x[:, BASE.index(name)] for name in ("fused", "own", "keyword", "semantic")}
    kw, sem, own, fused = column["keyword"], column["semantic"], column["own"], column["fused"]
    times = np.asarray([e.timestamp for e in entries])
    order = np.argsort(times, kind="stable")
    ep = np.zeros(n, dtype=int)
    for i in range(1, n):
        ep[order[i]] = ep[order[i - 1]] + (times[order[i]] - times[order[i - 1]] > EPISODE_GAP)
    episodes = [np.where(ep == k)[0] for k in range(int(ep.max()) + 1)]
    out: Features = {}
    for name, arr in (("kw", kw), ("sem", sem)):
        best, top3, second = np.zeros(n), np.zeros(n), np.zeros(n)
        for idx in episodes:
            ranked = np.sort(arr[idx])[::-1]
            best[idx], top3[idx] = ranked[0], ranked[:3].sum() / 3
            second[idx] = ranked[1] if len(ranked) > 1 else 0.0
        out[f"ep_{name}_max"], out[f"ep_{name}_mean3"] = best, top3
        out[f"ep_{name}_second"] = second
    out["ep_rank"], out["ep_count"], out["ep_pos"] = np.zeros(n), np.zeros(n), np.zeros(n)
    for idx in episodes:
        for place, i in enumerate(idx[np.argsort(-own[idx], kind="stable")]):
            out["ep_rank"][i] = 1.0 / (1 + place)
        out["ep_count"][idx] = min(1.0, len(idx) / 20)
        for place, i in enumerate(idx[np.argsort(times[idx], kind="stable")]):
            out["ep_pos"][i] = place / max(1, len(idx) - 1)
    best_own = int(np.argmax(own))
    place_in_time = np.empty(n, dtype=int)
    place_in_time[order] = np.arange(n)
    same = ep == ep[best_own]
    out["near_best"] = np.where(
        same, 1.0 / (1 + np.abs(place_in_time - place_in_time[best_own])), 0
    )
    out["near_best_t"] = np.where(same, 1.0 / (1 + np.abs(times - times[best_own]) / 60.0), 0)
    out["same_ep_best"] = same.astype(float)
    texts = [ranker.said(value_text(e.value)) for e in entries]
    words = [set(tokenize(t)) for t in texts]
    names = [w.lower() for w in CAPITALISED.findall(question) if w.lower() not in QUESTION_WORDS]
    speakers = {str(e.metadata.get("speaker", "")).lower() for e in entries}
    others = [w for w in names if w not in speakers]
    for label, wanted in (("entity", names), ("entity_ns", others)):
        out[label] = np.asarray(
            [sum(w in said for w in wanted) / len(wanted) if wanted else 0.0 for said in words]
        )
    asked = _content(question)
    contents = [_content(t) for t in texts]
    out["qcover"] = np.asarray([len(asked & c) / len(asked) if asked else 0.0 for c in contents])
    top = set(np.argsort(-fused, kind="stable")[:3].tolist())
    df: dict[str, int] = {}
    for c in contents:
        for w in c:
            df[w] = df.get(w, 0) + 1
    expansion: dict[str, float] = {}
    for i in sorted(top):
        for w in contents[i] - asked:
            expansion[w] = expansion.get(w, 0.0) + math.log(1 + n / df[w])
    total = sum(expansion.values()) or 1.0
    held = np.asarray([sum(expansion.get(w, 0.0) for w in c) / total for c in contents])
    out["prf_all"] = held
    out["prf"] = np.asarray([0.0 if i in top else v for i, v in enumerate(held)])
    months = {MONTHS[w] for w in tokenize(question) if w in MONTHS}
    years = {int(y) for y in re.findall(r"\b(19\d\d|20\d\d)\b", question)}
    out["date_match"] = np.zeros(n)
    if months or years:
        for i, e in enumerate(entries):
            day = datetime.datetime.fromtimestamp(e.timestamp, datetime.UTC)
            ok = (not months or day.month in months) and (not years or day.year in years)
            out["date_match"][i] = 1.0 if ok else 0.0
    for name, arr in (("kw", kw), ("sem", sem), ("fused", fused), ("own", own)):
        high = arr.max()
        out[f"{name}_rel"] = arr / high if high > 0 else np.zeros(n)
        low = arr[arr > 0].min() if (arr > 0).any() else 0.0
        out[f"{name}_mm"] = (
            np.where(arr > 0, (arr - low) / (high - low), 0.0) if high > low else np.zeros(n)
        )
    for name in ("kw_rel", "sem_rel"):
        best = np.zeros(n)
        for idx in episodes:
            best[idx] = out[name][idx].max()
        out[f"ep_{name}_max"] = best
    return out


# ------------------------------------------------------------------ training


class Stack:
    """Every training question's candidates in one matrix, with each question's segment."""

    def __init__(self, xs: Sequence[np.ndarray], ys: Sequence[np.ndarray]) -> None:
        keep = [i for i, y in enumerate(ys) if y.sum() > 0]
        self.x = np.vstack([xs[i] for i in keep])
        self.lens = np.asarray([len(xs[i]) for i in keep])
        self.starts = np.concatenate([[0], np.cumsum(self.lens)[:-1]])
        self.seg = np.repeat(np.arange(len(keep)), self.lens)
        self.target = np.concatenate([ys[i] / ys[i].sum() for i in keep])
        self.y = np.concatenate([ys[i] for i in keep])
        self.questions = len(keep)
        self._pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def softmax(self, z: np.ndarray) -> np.ndarray:
        p = np.exp(z - np.maximum.reduceat(z, self.starts)[self.seg])
        return p / np.add.reduceat(p, self.starts)[self.seg]

    def lambda_gradient(self, z: np.ndarray) -> np.ndarray:
        """d/dz of the pairwise logistic loss over (evidence, other) pairs of a question
        whose swap would move one of them across rank 5, each evidence turn weighing 1."""
        if self._pairs is None:
            pos, neg, share = [], [], []
            for q in range(self.questions):
                a, n = self.starts[q], self.lens[q]
                good = a + np.where(self.y[a : a + n] > 0)[0]
                bad = a + np.where(self.y[a : a + n] == 0)[0]
                pos.append(np.repeat(good, len(bad)))
                neg.append(np.tile(bad, len(good)))
                share.append(np.full(len(good) * len(bad), 1.0 / len(good)))
            self._pairs = (np.concatenate(pos), np.concatenate(neg), np.concatenate(share))
        pos_i, neg_i, share_i = self._pairs
        order = np.lexsort((-z, self.seg))
        rank = np.empty(len(z), dtype=int)
        rank[order] = np.arange(len(z)) - np.repeat(self.starts, self.lens)
        top = rank < 5
        weight = (top[pos_i] != top[neg_i]) * share_i
        g = -weight / (1.0 + np.exp(np.clip(z[pos_i] - z[neg_i], -30, 30)))
        size = len(z)
        return np.bincount(pos_i, g, size) - np.bincount(neg_i, g, size)


def adam(
    params: list[np.ndarray],
    gradient: Callable[[list[np.ndarray]], list[np.ndarray]],
    steps: int = 600,
    rate: float = 0.05,
) -> list[np.ndarray]:
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for step in range(1, steps + 1):
        for k, g in enumerate(gradient(params)):
            m[k] = 0.9 * m[k] + 0.1 * g
            v[k] = 0.999 * v[k] + 0.001 * g**2
            params[k] = params[k] - rate * (m[k] / (1 - 0.9**step)) / (
                np.sqrt(v[k] / (1 - 0.999**step)) + 1e-8
            )
    return params


Scorer = Callable[[np.ndarray], np.ndarray]


def train_linear(
    xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], l2: float = 1.0, lam: float = 0.0
) -> Scorer:
    stack = Stack(xs, ys)

    def gradient(params: list[np.ndarray]) -> list[np.ndarray]:
        z = stack.x @ params[0]
        r = stack.softmax(z) - stack.target
        if lam:
            r = r + lam * stack.lambda_gradient(z)
        return [(l2 * params[0] + stack.x.T @ r) / stack.questions]

    (w,) = adam([np.zeros(stack.x.shape[1])], gradient)
    return lambda x: x @ w


def train_mlp(
    xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], l2: float = 1.0, hidden: int = 16
) -> Scorer:
    stack = Stack(xs, ys)
    d = stack.x.shape[1]
    rng = np.random.default_rng(0)
    start = [rng.normal(0, 0.3, (d, hidden)), np.zeros(hidden), np.zeros(hidden), np.zeros(d)]

    def gradient(params: list[np.ndarray]) -> list[np.ndarray]:
        w1, b1, v, w = params
        h = np.tanh(stack.x @ w1 + b1)
        r = stack.softmax(stack.x @ w + h @ v) - stack.target
        dh = np.outer(r, v) * (1 - h**2)
        q = stack.questions
        return [
            (stack.x.T @ dh + l2 * w1) / q,
            dh.sum(axis=0) / q,
            (h.T @ r + l2 * v) / q,
            (stack.x.T @ r + l2 * w) / q,
        ]

    w1, b1, v, w = adam(start, gradient, rate=0.02)
    return lambda x: x @ w + np.tanh(x @ w1 + b1) @ v


EP4 = ["ep_kw_max", "ep_kw_mean3", "ep_sem_max", "ep_sem_mean3"]
VARIANTS: dict[str, tuple[list[str], str, dict[str, Any]]] = {
    "shipped": ([], "linear", {}),
    "episode best + best-3": (EP4, "linear", {}),
    "episode best": (["ep_kw_max", "ep_sem_max"], "linear", {}),
    "episode best-3": (["ep_kw_mean3", "ep_sem_mean3"], "linear", {}),
    "episode second best": (["ep_kw_second", "ep_sem_second"], "linear", {}),
    "rank and count in episode": (["ep_rank", "ep_count"], "linear", {}),
    "position in episode": (["ep_pos"], "linear", {}),
    "distance to the best": (["near_best", "same_ep_best", "near_best_t"], "linear", {}),
    "question entities": (["entity", "entity_ns"], "linear", {}),
    "question words covered": (["qcover"], "linear", {}),
    "pseudo-relevance feedback": (["prf", "prf_all"], "linear", {}),
    "date matches the question": (["date_match"], "linear", {}),
    "relative to the list's best": (["kw_rel", "sem_rel"], "linear", {}),
    "min-max in the pool": (["kw_mm", "sem_mm", "fused_mm", "own_mm"], "linear", {}),
    "episode + relative": ([*EP4, "kw_rel", "sem_rel"], "linear", {}),
    "episode + episode's relative best": ([*EP4, "ep_kw_rel_max", "ep_sem_rel_max"], "linear", {}),
    "episode + date": ([*EP4, "date_match"], "linear", {}),
    "shipped, L2 0.5": ([], "linear", {"l2": 0.5}),
    "episode, L2 0.5": (EP4, "linear", {"l2": 0.5}),
    "shipped, L2 2": ([], "linear", {"l2": 2.0}),
    "episode, L2 2": (EP4, "linear", {"l2": 2.0}),
    "MLP 16 tanh": ([], "mlp", {}),
    "episode, LambdaRank term 0.5": (EP4, "linear", {"lam": 0.5}),
}
"""Each variant: candidate features added to the shipped ones, model, its options."""

TRAINERS: dict[str, Callable[..., Scorer]] = {"linear": train_linear, "mlp": train_mlp}


# ------------------------------------------------------------------ evaluation


class Bench:
    """The captured pools with every feature, and cross-validation over them."""

    def __init__(self, pools: Sequence[locomo_ranker.Pool]) -> None:
        self.pools = pools
        weights = hybrid.HybridWeights(learned=0.0)
        self.rows = []
        for pool in pools:
            found = hybrid.ranker_features(
                pool.keyword, pool.semantic, now=0.0, weights=weights, query=pool.question
            )
            entries = [entry for entry, _ in found]
            x = np.asarray([values for _, values in found], dtype=np.float64)
            y = np.asarray([1.0 if e.key in pool.evidence else 0.0 for e in entries])
            extra = candidate_features(pool.question, entries, x)
            self.rows.append((entries, x, y, extra))
        self.default = [self.found(n, pool.default) for n, pool in enumerate(pools)]

    def found(self, n: int, keys: Sequence[str]) -> tuple[int, int]:
        evidence = self.pools[n].evidence
        return sum(1 for key in keys[:5] if key in evidence), len(evidence)

    def matrix(self, n: int, added: Sequence[str]) -> np.ndarray:
        _, x, _, extra = self.rows[n]
        return np.column_stack([x, *(extra[name] for name in added)]) if added else x

    def cross_validate(
        self, added: Sequence[str], model: str, options: dict[str, Any]
    ) -> list[tuple[int, int]]:
        xs = [self.matrix(n, added) for n in range(len(self.pools))]
        ys = [row[2] for row in self.rows]
        per: list[tuple[int, int]] = [(0, 0)] * len(self.pools)
        for held in sorted({p.conversation for p in self.pools}):
            train = [n for n, p in enumerate(self.pools) if p.conversation != held]
            score = TRAINERS[model]([xs[n] for n in train], [ys[n] for n in train], **options)
            for n, pool in enumerate(self.pools):
                if pool.conversation == held:
                    entries = self.rows[n][0]
                    z = score(xs[n])
                    times = np.asarray([e.timestamp for e in entries])
                    order = np.lexsort((-times, -z))
                    per[n] = self.found(n, [entries[i].key for i in order])
        return per

    def describe(self, label: str, per: Sequence[tuple[int, int]], shipped: Any) -> str:
        recall = sum(f for f, _ in per) / sum(e for _, e in per)
        gain, low, high = locomo_levers.paired_interval(per, self.default)
        line = f"{label:<36} CV {recall:.4f}  vs default {gain:+.3f} [{low:+.3f}, {high:+.3f}]"
        if shipped is not None:
            gain, low, high = locomo_levers.paired_interval(per, shipped)
            line += f"  vs shipped {gain:+.3f} [{low:+.3f}, {high:+.3f}]"
        tally: dict[int, list[int]] = {}
        for n, (f, e) in enumerate(per):
            counts = tally.setdefault(self.pools[n].category, [0, 0])
            counts[0] += f
            counts[1] += e
        return line + "  " + " ".join(f"{c}:{f / e:.3f}" for c, (f, e) in sorted(tally.items()))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pools", required=True, help="pools captured by locomo_ranker.py")
    parser.add_argument("--only", default="", help="variant names separated by ; (default all)")
    args = parser.parse_args(argv)
    sys.modules["__main__"].Pool = locomo_ranker.Pool  # type: ignore[attr-defined]
    with Path(args.pools).open("rb") as stored:
        pools: list[locomo_ranker.Pool] = pickle.load(stored)
    bench = Bench(pools)
    wanted = [v for v in args.only.split(";") if v] or list(VARIANTS)
    shipped = bench.cross_validate(*VARIANTS["shipped"])
    print(bench.describe("shipped", shipped, None), flush=True)
    for name in wanted:
        if name != "shipped":
            print(bench.describe(name, bench.cross_validate(*VARIANTS[name]), shipped), flush=True)


if __name__ == "__main__":
    main()
