"""The error an embedding model raises when it cannot load or run here."""

from __future__ import annotations


class EmbedderUnavailableError(RuntimeError):
    """An embedding model cannot run here (package missing, CPU lacks AVX2, bad file)."""
