"""Sentence embedding models for semantic retrieval (see `base.Embedder`)."""
