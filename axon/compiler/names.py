"""Naming rules shared by the checker and the runtime: keys, snake_case, suggestions."""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

_CAMEL_1 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL_2 = re.compile(r"([a-z0-9])([A-Z])")
_WORD = re.compile(r"[^\W_]+")


def snake_case(name: str) -> str:
    """`ContractSummary` -> `contract_summary`, `HTTPResponse` -> `http_response`."""
    name = _CAMEL_1.sub(r"\1_\2", name)
    name = _CAMEL_2.sub(r"\1_\2", name)
    return name.replace("-", "_").lower()


def key_for_name(parts: Iterable[str]) -> str:
    """The memory key of a remembered name: `Extract.output` -> `extract_output`."""
    return "_".join(snake_case(part) for part in parts)


def key_for_literal(value: Any) -> str:
    """A stable, readable key derived from a literal's content.

    The first words of the value (slugged) plus 8 hex digits of a SHA-256 of its
    JSON form, so remembering the same literal twice keeps one entry:
    `"The client prefers short answers"` -> `the_client_prefers_short_answers_1c5d...`.
    """
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    digest = hashlib.sha256(
        json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8")
    ).hexdigest()[:8]
    slug = "_".join(_WORD.findall(text.lower())[:6])[:48].strip("_")
    return f"{slug}_{digest}" if slug else f"value_{digest}"


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest candidate, or `""`."""
    pool = list(candidates)
    close = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in pool}
        close = [lowered[name.lower()]] if name.lower() in lowered else []
    return f" (did you mean '{close[0]}'?)" if close else ""
