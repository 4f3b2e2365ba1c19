"""Retrieval strategies shared by every backend: text analysis, vector search, fusion."""
