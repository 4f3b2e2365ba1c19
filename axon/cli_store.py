"""Where an `axon memory` command works, and how it fails: the store, its options, the plumbing.

`Store` is the memory directory, PostgreSQL schema or Chroma collection a subcommand
opens, and the namespace it works in: `--memory-dir`, `--namespace` and every
registered backend's own options (`--pg-dsn`/`--pg`, `--pg-schema`, `--chroma`:
`BackendInfo.options`), added to each command by
`store_command` when the CLI is built, given to the subcommand or to `axon memory`
(`store_group`). `run`
runs a command's body so that every failure is one line on stderr and an exit code
(`Failed` for the command's own refusals, `axon.cli_output`'s codes otherwise),
never a traceback. The small printers (`say`, `say_json`, `table`, `progress`) write
through `axon.cli_output`, as every `axon` command does. The subcommands themselves
are in `axon.cli_memory` (reading and forgetting) and `axon.cli_transfer` (export and
import).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import shutil
import sys
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from axon import cli_output as out
from axon.compiler.names import Suggester
from axon.errors import AxonError
from axon.memory.backend import (
    MAX_TOP_K,
    MemoryBackend,
    resolve_memory_dir,
)
from axon.memory.entry import MemoryEntry
from axon.memory.lifetimes import OWNED_MARKER
from axon.memory.namespaces import Namespace
from axon.redaction import redact_secrets
from axon.render import terminal_json, visible

if TYPE_CHECKING:
    from axon.memory.registry import BackendInfo, StoreOption

T = TypeVar("T")

PAGE = 2000
"""Entries read per page by the commands that walk a whole memory (stats, forget --tag)."""


MemoryDir = Annotated[
    Path | None,
    typer.Option(
        "--memory-dir", help="The memory directory (default $AXON_MEMORY_DIR, else ./.axon)."
    ),
]
AsJson = Annotated[
    bool, typer.Option("--json", help="Print one JSON document (for scripts), not a table.")
]
NamespaceOption = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        metavar="P",
        help="Work in namespace P, e.g. acme/u42 (default $AXON_NAMESPACE, else the root).",
    ),
]


class Failed(Exception):
    """A user-facing failure: one line for stderr and the exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _store_options() -> list[tuple[BackendInfo, StoreOption]]:
    """Every registered backend's store options, in registration order."""
    from axon.memory.registry import registry

    return [(info, option) for info in registry.infos() for option in info.options]


def _flags(info: BackendInfo) -> str:
    return "/".join(option.flag for option in info.options if option.selects)


class Store:
    """Where a command works: which backend (the registry's, chosen by the options given),
    its location and settings, how to name it to a person. Holds no per-backend code:
    each backend's options, settings and store check come from its `BackendInfo`."""

    def __init__(self, given: Mapping[str, Any]) -> None:
        from axon.memory.registry import DEFAULT_STORE_BACKEND, registry

        self.given = dict(given)
        chosen: dict[str, BackendInfo] = {}
        location: str | None = None
        for info, option in _store_options():
            value = given.get(option.param)
            if not value or not option.selects:
                continue
            chosen.setdefault(info.name, info)
            if option.env is not None:
                value = os.environ.get(option.env) or None
                if value is None:
                    raise Failed(f"error: {option.flag} needs {option.env} to be set",
                                 out.EXIT_USAGE)
            if location is None or option.env is None:
                location = str(value)
        if len(chosen) > 1:
            first, second = list(chosen.values())[:2]
            raise Failed(
                f"error: give {_flags(second)} or {_flags(first)}, not both", out.EXIT_USAGE
            )
        memory_dir = given.get("memory_dir")
        default = registry.lookup(DEFAULT_STORE_BACKEND)
        assert default is not None
        info = next(iter(chosen.values()), default)
        if memory_dir is not None and not info.uses_memory_dir:
            raise Failed(f"error: give --memory-dir or {_flags(info)}, not both", out.EXIT_USAGE)
        self.info = info
        self.location = location
        self.settings: dict[str, str] = {
            option.setting: str(given[option.param])
            for owner, option in _store_options()
            if owner is info and option.setting != "location" and given.get(option.param)
        }
        # A relative directory is in the memory directory, as in a declaration.
        self.memory_dir: Path = resolve_memory_dir(memory_dir)
        if info.uses_memory_dir and self.memory_dir.exists() and not self.memory_dir.is_dir():
            raise Failed(
                f"error: the memory directory {self.memory_dir} is a file, not a directory",
                out.EXIT_USAGE,
            )
        self.place = info.place(self.location, self.settings, self.memory_dir)
        self.namespace = _namespace_of(given.get("namespace"))

    def scope(self, memory: str) -> str:
        """The physical scope of `memory` in the command's namespace (`Namespace.scope`)."""
        return self.namespace.scope(memory)

    def named(self, memory: str) -> str:
        """`memory` as a person reads it: `acme/u42/Notes` in a namespace, `Notes` in the root."""
        from axon.memory.transfer import shown_name

        return shown_name(self.namespace, memory)

    @property
    def backend_name(self) -> str:
        """The registry name of the backend `open` creates."""
        return self.info.name

    def options(self) -> list[str]:
        """The command-line options that name this store again, as they were given (for a
        hint a person pastes: `--memory-dir D`, `--pg-dsn DSN`, `--chroma LOCATION`...).
        A value holding a password is written as the flag that reads it from the
        environment when it is that variable's value (`--pg` for `$AXON_PG_DSN`), else
        with the password as `***` (it is never printed)."""
        words: list[str] = []
        if self.given.get("memory_dir") is not None:
            words += ["--memory-dir", str(self.given["memory_dir"])]
        if self.given.get("namespace"):
            words += ["--namespace", self.namespace.text]
        for info, option in _store_options():
            value = self.given.get(option.param)
            if not value:
                continue
            if option.env is not None:
                words.append(option.flag)
                continue
            twin = next(
                (o for o in info.options if o.env is not None and o.setting == option.setting),
                None,
            )
            if twin is not None and self.given.get(twin.param):
                continue  # the flag names it
            text = str(value)
            if (
                twin is not None
                and text == os.environ.get(twin.env or "")
                and redact_secrets(text) != text
            ):
                words.append(twin.flag)
            else:
                words += [option.flag, redact_secrets(text)]
        return words

    @property
    def label(self) -> str:
        return self.place.label

    @property
    def missing(self) -> str:
        """Why `exists()` said no, for the one line a read prints."""
        return self.place.missing

    def exists(self) -> bool:
        """False for a store that is not there (a memory directory without a store file, a
        PostgreSQL schema without AXON's tables...): a read creates nothing to find out."""
        return self.place.exists()

    def open(self, *, embedder: bool = False) -> MemoryBackend:
        """A backend over the store (the embedding model attached when asked)."""
        model = embedder_or_fail() if embedder else None
        return self.info.open(
            self.location, self.settings, memory_dir=self.memory_dir, embedder=model
        )


def _namespace_of(text: str | None) -> Namespace:
    """`--namespace P`, else `AXON_NAMESPACE`, else the root; a bad one is exit 2."""
    try:
        if text is not None:
            return Namespace.of(text, what="--namespace")
        return Namespace.from_env()
    except AxonError as exc:
        raise Failed(f"error: {exc}", out.EXIT_USAGE) from None


def embedder_or_fail() -> Any:
    """The embedding model `axon run` would use, or None (semantic recall then runs keyword)."""
    from axon.memory.embeddings.default import default_embedder
    from axon.memory.embeddings.errors import EmbedderUnavailableError

    try:
        return default_embedder()
    except EmbedderUnavailableError as exc:
        raise Failed(f"error: {exc}", out.EXIT_RUNTIME) from None


# ---------------------------------------------------------------------- plumbing


def _store_parameters() -> list[inspect.Parameter]:
    """`--memory-dir` and every registered backend's store options, as typer parameters."""
    params = [
        inspect.Parameter("memory_dir", _KEYWORD, default=None, annotation=MemoryDir),
        inspect.Parameter("namespace", _KEYWORD, default=None, annotation=NamespaceOption),
    ]
    for _, option in _store_options():
        if option.env is not None:
            kind: Any = Annotated[bool, typer.Option(option.flag, help=option.help)]
            params.append(inspect.Parameter(option.param, _KEYWORD, default=False,
                                            annotation=kind))
        else:
            kind = Annotated[str | None, typer.Option(option.flag, help=option.help)]
            params.append(inspect.Parameter(option.param, _KEYWORD, default=None,
                                            annotation=kind))
    return params


_KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD


class _StoreCommand:
    """A command taking the store options of every registered backend, built from the
    registry when the CLI is (typer reads `__signature__` then), so a backend registered
    before that has its options on every `axon memory` command. The command itself
    receives `store` (a `Store`, the subcommand's options over the group's)."""

    def __init__(self, func: Callable[..., Any]) -> None:
        functools.update_wrapper(self, func)
        self._func = func

    @property
    def __signature__(self) -> inspect.Signature:
        own = [
            p for p in inspect.signature(self._func, eval_str=True).parameters.values()
            if p.name != "store"
        ]
        at = next((i for i, p in enumerate(own) if p.name == "as_json"), len(own))
        return inspect.Signature([*own[:at], *_store_parameters(), *own[at:]])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        names = {p.name for p in _store_parameters()}
        given = {name: kwargs.pop(name) for name in list(kwargs) if name in names}
        return self._func(*args, store=store_of(kwargs.get("ctx"), given), **kwargs)


def store_command(func: Callable[..., T]) -> Callable[..., T]:
    """Decorate an `axon memory` command whose last keyword is `store: Store`: it takes
    the registry's store options (`--memory-dir`, `--pg-dsn`, `--chroma`, ...)."""
    return _StoreCommand(func)


class _StoreGroup(_StoreCommand):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        names = {p.name for p in _store_parameters()}
        given = {name: kwargs.pop(name) for name in list(kwargs) if name in names}
        kwargs["ctx"].obj = {"store": given}
        return self._func(*args, **kwargs)


def store_group(func: Callable[..., T]) -> Callable[..., T]:
    """Decorate the `axon memory` group callback: it takes the same store options and
    keeps them in `ctx.obj["store"]` for the subcommands (which override them)."""
    return _StoreGroup(func)


def store_of(ctx: typer.Context | None, given: Mapping[str, Any] | None = None) -> Store:
    """The store named by the subcommand's options, else by those given to `axon memory`."""
    group: dict[str, Any] = ((ctx.obj if ctx is not None else None) or {}).get("store") or {}
    merged = {**group, **{k: v for k, v in (given or {}).items() if v}}
    try:
        return Store(merged)
    except Failed as fail:  # before `run`: one line and the exit code here too
        out.err(str(fail))
        raise typer.Exit(fail.code) from None
    except AxonError as exc:  # a bad --chroma location, an unset env: location
        out.err(f"error: {exc}")
        raise typer.Exit(out.EXIT_USAGE) from None


def run(
    command: Callable[[], Coroutine[Any, Any, None]], *, interrupted: str = "interrupted"
) -> None:
    """Run one command: errors become one line and an exit code, never a traceback.

    Ctrl-C cancels the command (asyncio's first-interrupt handling: its awaits unwind,
    its backends close) and prints `interrupted`, exit 130."""
    import asyncio  # here, not at the top: `axon check` imports this module (~20 ms)

    out.configure_logging(False)
    code = 0
    try:
        asyncio.run(command())
        out.flush()
    except Failed as fail:
        out.err(str(fail))
        code = fail.code
    except out.OutputFailed as failure:
        code = out.output_failed(failure)
    except AxonError as exc:
        from axon.memory.transfer import TransferError

        message = " ".join(str(exc).split())  # one line (a driver's message may hold several)
        out.err(message if isinstance(exc, TransferError) else f"error: {message}")
        code = out.EXIT_CHECK if isinstance(exc, TransferError) else out.EXIT_RUNTIME
    except KeyboardInterrupt:
        out.err(interrupted)
        code = out.EXIT_INTERRUPTED
    except Exception as exc:
        out.internal(exc)
    if code:
        raise typer.Exit(code)


@contextlib.asynccontextmanager
async def opened(store: Store, *, embedder: bool = False) -> Any:
    backend = store.open(embedder=embedder)
    try:
        yield backend
    finally:
        await backend.close()


def say(text: str) -> None:
    for line in text.split("\n"):
        out.out(line)


def say_json(data: Any) -> None:
    out.out(terminal_json(data))


def terminal_width() -> int:
    return max(40, shutil.get_terminal_size((100, 24)).columns)


@contextlib.contextmanager
def progress(description: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr while the block runs (a no-op unless stderr is a terminal).

    `description` may name a stored memory: it is shown `visible`, never read as markup.
    """
    if not sys.stderr.isatty():
        yield lambda done: None
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(escape(visible(description)), total=total)
        yield lambda done: bar.update(task, completed=done)


async def memory_names_of(backend: MemoryBackend, namespace: Namespace) -> list[str]:
    """The memories of `namespace` (not those below it) that hold entries."""
    from axon.memory.transfer import memory_names

    return await memory_names(backend, namespace)


async def require_memory(backend: MemoryBackend, store: Store, name: str) -> None:
    """Exit 1 with a suggestion unless `name` is a memory of the store's namespace."""
    if name.startswith(OWNED_MARKER):
        raise Failed(f"error: '{name}' is session data, not a memory", out.EXIT_CHECK)
    if await backend.count(store.scope(name)):
        return
    names = await memory_names_of(backend, store.namespace)
    hint = Suggester(names).closest(name)  # the checker's rule: close, or the same but case
    if hint:
        suggestion = f"; did you mean '{hint}'?"
    elif names:
        suggestion = f" (memories: {', '.join(names[:10])})"
    else:
        suggestion = " (the store holds no memories)"
    raise Failed(
        f"error: no memory '{name}' in {store.label}{_in(store.namespace)}{suggestion}",
        out.EXIT_CHECK,
    )


def _in(namespace: Namespace) -> str:
    return "" if namespace.is_root else f" namespace {namespace.text}"


def missing_store(store: Store, name: str | None = None) -> Failed:
    where = f"{store.label}{_in(store.namespace)}"
    what = f"no memory '{name}' in {where}" if name else f"nothing stored in {where}"
    return Failed(f"error: {what} ({store.missing})", out.EXIT_CHECK)


def entry_data(entry: MemoryEntry) -> dict[str, Any]:
    """One entry as `--json` prints it: key, value, metadata (without scope), times."""
    data: dict[str, Any] = {
        "key": entry.key,
        "value": entry.value,
        "metadata": {k: v for k, v in entry.metadata.items() if k != "scope"},
        "created_at": entry.created_at,
        "updated_at": entry.updated_at,
        "expires_at": entry.expires_at,
    }
    return data


def when(timestamp: float | None) -> str:
    """Local time of a timestamp; one past what the platform converts reads `far future`."""
    from axon.render import clock_text

    return "" if timestamp is None else clock_text(timestamp)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], **options: Any) -> str:
    from axon.render import text_table

    return text_table(headers, rows, width=terminal_width(), **options)


def check_count(value: int | None, option: str) -> None:
    """A count option (`--limit`, `--top-k`): from 1 to `MAX_TOP_K`, the bound of a
    program's `top_k` (a bigger one would overflow the SQL `LIMIT` it becomes)."""
    if value is not None and value < 1:
        raise Failed(f"error: {option} must be at least 1, not {value}", out.EXIT_USAGE)
    if value is not None and value > MAX_TOP_K:
        raise Failed(f"error: {option} must be at most {MAX_TOP_K:,}, not {value}", out.EXIT_USAGE)


def json_flag(ctx: typer.Context, as_json: bool) -> bool:
    return as_json or bool((ctx.obj or {}).get("json"))
