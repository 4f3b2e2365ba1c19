"""Starting a command that a test interrupts as Ctrl-C would."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def sigint_at_default() -> Iterator[None]:
    """Children started inside get SIGINT at its default, whatever this process has.

    A shell starts a background job (`scripts/test &`, `nohup ... &`) with SIGINT
    ignored, and a child inherits an ignored signal: the SIGINT a test sends, standing
    for a Ctrl-C at a terminal, would never reach the command. Only the disposition at
    fork counts, so this process's own is restored as soon as the children started.
    """
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        yield
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
