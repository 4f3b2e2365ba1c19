"""The kit's pytest plugin (entry point `pytest11: axon_testing`), loaded by pytest
when axon-memory is installed: it registers `axon.testing`'s modules for assertion
rewriting before any test module imports them, so a failing conformance check shows
the values it compared even when a test file imports a kit module first thing.
"""

from __future__ import annotations

import axon.testing  # noqa: F401  (importing it registers the rewriting)
