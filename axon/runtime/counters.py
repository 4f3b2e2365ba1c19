"""A memory's operations -> its `stats()` counters: per tier, how many entries were stored,
recalled, forgotten, promoted and demoted.

An untiered memory has one tier, its `store:`, counted in this session only; a tiered
memory's persistent tier counts across sessions (`axon.runtime.tiers` keeps those in
its backend).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

COUNTERS = ("stores", "recalls", "forgets", "promotions", "demotions")
"""What `stats()` counts per tier."""


@attrs.define
class TierStats:
    """The counters of one memory, per tier; `dirty` says the persistent tier's
    counters changed since they were last written."""

    counts: dict[str, dict[str, int]]
    dirty: bool = False

    @classmethod
    def empty(cls, tiers: Sequence[str]) -> TierStats:
        return cls({tier: dict.fromkeys(COUNTERS, 0) for tier in tiers})

    def add(self, tier: str, counter: str, n: int = 1) -> None:
        if n:
            self.counts[tier][counter] += n
            self.dirty = self.dirty or tier == "persistent"

    def add_all(self, counter: str, n: int = 1) -> None:
        """Count `n` in every tier (an untiered memory has one)."""
        for tier in self.counts:
            self.add(tier, counter, n)

    def snapshot(self) -> dict[str, dict[str, int]]:
        return {tier: dict(c) for tier, c in self.counts.items()}
