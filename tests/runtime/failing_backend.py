"""`axon` with one more backend registered, `failing_close`, whose close fails.

Usage: `python failing_backend.py ARGS...` runs the `axon` command with ARGS. The
backend is the real in-memory backend except that `_close` raises the
`AxonMemoryError` a real store raises when its file or server goes away.
"""

from __future__ import annotations

from axon.errors import AxonMemoryError
from axon.memory.backend import RETRIEVAL_MODES, Capabilities
from axon.memory.backends.in_memory import InMemoryBackend
from axon.memory.registry import BackendInfo, registry


class FailingCloseBackend(InMemoryBackend):
    """In-memory, but closing it fails."""

    name = "failing_close"

    async def _close(self) -> None:
        await super()._close()
        raise AxonMemoryError("the store went away while closing")


def main() -> None:
    registry.register(
        BackendInfo(
            "failing_close",
            f"{__name__}:FailingCloseBackend",
            Capabilities(persistent=False, retrieval=frozenset(RETRIEVAL_MODES)),
        )
    )
    from axon.cli import main as axon_main

    axon_main()


if __name__ == "__main__":
    main()
