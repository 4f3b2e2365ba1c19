"""Waits for pending vectors, shown: a memory's pending vectors in, a progress bar on stderr out.

Vectors of semantic and hybrid memories are computed after the write, by the
background worker (`axon.memory.embeddings.worker`). Whoever waits for them says so:
`axon memory embed` and `search` (which run the worker here, on the command's own
backend) and the recall statements of `axon run` and the REPL (whose session's worker
shows `wait_progress`). On a terminal that is a `rich` progress bar on stderr; on a
pipe one line, and only when the wait lasts longer than `PIPE_NOTE_AFTER` seconds, so
output that scripts read does not change with the machine's speed. `--embed-wait`
(`embed_wait_text`) bounds the wait; past it the recall runs with the vectors there are.
Ctrl-C cancels the wait: the worker is closed after the batch in flight (`embed_now`,
`wait_for_vectors`), so what was saved is whole batches.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from axon import cli_output as out
from axon.cli_store import Failed, progress
from axon.render import counted

if TYPE_CHECKING:
    from axon.memory.backend import MemoryBackend

PIPE_NOTE_AFTER = 1.0
"""Seconds a wait lasts before it says one line on a stderr that is not a terminal."""

EMBED_WAIT_HELP = (
    "Seconds a semantic or hybrid recall waits for vectors still being computed, or "
    "'all' (the default); past it, it runs with the vectors there are."
)


def embed_wait_text(text: str | None, option: str = "--embed-wait") -> float | str | None:
    """`--embed-wait`'s value as `Session(embed_wait=)` takes it: 'all', seconds, or None
    (not given); anything else is a usage error (exit 2) naming the option."""
    if text is None:
        return None
    if text.strip().lower() == "all":
        return "all"
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise Failed(
            f"error: {option} takes a number of seconds (0 or more) or 'all', not '{text}'",
            out.EXIT_USAGE,
        )
    return seconds


def budget_of(embed_wait: float | str | None) -> float:
    """A wait's budget in seconds (`math.inf`: every vector; None means 'all')."""
    return math.inf if embed_wait is None or embed_wait == "all" else float(embed_wait)


@contextlib.contextmanager
def wait_progress(memory: str, pending: int, hint: str = "") -> Iterator[Callable[[int], None]]:
    """Shown while a recall waits for `pending` vectors of `memory` (`worker.WaitProgress`):
    a progress bar on a terminal, else one line once the wait passes `PIPE_NOTE_AFTER`
    (followed by `hint`: how to bound the wait, where there is a way)."""
    what = f"computing {counted(pending, 'vector', 'vectors')} of {memory}"
    if sys.stderr.isatty():
        with progress(what, pending) as advance:
            yield advance
        return
    started = time.monotonic()
    said = False

    def note(done: int) -> None:
        nonlocal said
        if not said and time.monotonic() - started > PIPE_NOTE_AFTER:
            said = True
            out.err(f"{what} before the recall{hint}")

    yield note


def command_wait_progress(
    memory: str, pending: int
) -> AbstractContextManager[Callable[[int], None]]:
    """`wait_progress` for the commands that take `--embed-wait` (`run`, `memory search`)."""
    return wait_progress(memory, pending, " (--embed-wait SECONDS bounds the wait)")


async def wait_for_vectors(
    backend: MemoryBackend, scope: str, budget: float, *, name: str | None = None
) -> int:
    """Compute the pending vectors of `scope` (a memory's, shown as `name`) for at most
    `budget` seconds, showing it (`wait_progress`); returns how many are still pending.
    The backend's recall then uses the vectors there are (it no longer embeds
    everything itself)."""
    from axon.memory.embeddings.worker import VectorWorker

    backend.embed_on_recall = False
    worker = VectorWorker()
    worker.wait_progress = command_wait_progress
    try:
        worker.notify(backend, scope)
        return await worker.wait(backend, scope, budget, name=name or scope)
    finally:
        await worker.close()  # also on Ctrl-C: after the batch in flight, none half-saved


async def embed_now(backend: MemoryBackend, scope: str, *, name: str | None = None) -> int:
    """Every pending vector of `scope` (a memory's, shown as `name`), now, with a progress
    bar; returns how many.

    The model runs on the embedding thread while the command's loop waits, so Ctrl-C
    stops it at once (between batches: every saved batch is whole)."""
    from axon.memory.embeddings.worker import VectorWorker

    backend.embed_on_recall = False
    worker = VectorWorker()
    with contextlib.ExitStack() as bar:
        shown: list[Callable[[int], None]] = []

        def advance(done: int, total: int) -> None:
            if not shown:  # the first call (0, total): the bar starts with its total
                shown.append(bar.enter_context(progress(f"embedding {name or scope}", total)))
            shown[0](done)

        try:
            return await worker.embed_all(backend, scope, advance)
        finally:
            await worker.close()


async def pending_lines(
    backend: MemoryBackend, memories: list[str], again: list[str]
) -> tuple[dict[str, int], list[str]]:
    """After an import: how many entries of each memory (`transfer.shown_name`:
    `acme/u42/Notes` in a namespace) have no vector of the store's model yet, and the
    lines saying so (none without a model, or when none is pending). `again` are the
    options that name the store (`Store.options`), for the hint."""
    import shlex

    from axon.memory.transfer import split_shown

    embedder = backend.embedder
    if embedder is None:
        return {}, []
    counts: dict[str, int] = {}
    lines: list[str] = []
    store = _without_namespace(again)
    for memory in memories:
        space, name = split_shown(memory)
        count = len(await backend._pending_texts(space.scope(name), embedder.model_id))
        if not count:
            continue
        counts[memory] = count
        where = [] if space.is_root else ["--namespace", space.text]
        command = shlex.join(["axon", "memory", "embed", name, *store, *where])
        verb = "has" if count == 1 else "have"
        lines.append(
            f"{counted(count, 'entry', 'entries')} of {memory} {verb} no vector yet: the first "
            f"semantic or hybrid recall computes them (showing progress), or now: {command}"
        )
    return counts, lines


def _without_namespace(words: list[str]) -> list[str]:
    """Command-line words without their `--namespace P` (each line says its own)."""
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word == "--namespace":
            skip = True
        else:
            kept.append(word)
    return kept
