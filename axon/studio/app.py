"""A `StudioData`, the given trace files and the start's options in, the Starlette
application of AXON Studio out (`build_app`), and `serve`, which runs it with uvicorn.

Routes (docs/studio.md): pages `/`, `/memory?name=`, `/entry?memory=&key=`, `/search`,
`/trace`, `/stats`; the same data as JSON under `/api/` (`memories`, `entries`, `entry`,
`search`, `trace`, `stats`); with `--write` the POST forms `/write/forget`,
`/write/update`, `/write/purge`; the two assets under `/static/`. Handlers run in
Starlette's thread pool (the session blocks while it works). A refusal (unknown memory
or key, bad filter) is a 4xx page or JSON `{"error": ...}`, never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

import axon.studio.pages as pages
import axon.studio.traces as traces
from axon.errors import AxonError
from axon.studio.auth import TokenGate, new_token, same
from axon.studio.data import NotFound, StudioData, StudioError
from axon.studio.templates import error_page

SESSION_TRACE = -1
"""The trace index of this Studio session's own events (its changes and recalls)."""

ASSETS = {"studio.css": "text/css; charset=utf-8", "studio.js": "text/javascript; charset=utf-8"}


class Studio:
    """One running Studio: the store's data, the traces, the tokens, the write switch."""

    def __init__(
        self, data: StudioData, trace_paths: Sequence[Path] = (), *, write: bool = False,
        token: str | None = None,
    ) -> None:
        self.data = data
        self.trace_paths = list(trace_paths)
        self.write = write
        self.token = token or new_token()
        self.csrf = new_token()
        self._traces: dict[Path, tuple[tuple[float, int], traces.TraceFile]] = {}

    # ------------------------------------------------------------ plumbing
    def _html(self, render: Callable[[dict[str, str]], str]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            query = dict(request.query_params)
            try:
                return HTMLResponse(await run_in_threadpool(render, query))
            except AxonError as exc:
                status = 404 if isinstance(exc, NotFound) else 400
                return HTMLResponse(error_page("Not shown", str(exc), write=self.write), status)
        return endpoint

    def _json(self, produce: Callable[[dict[str, str]], Any]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            query = dict(request.query_params)
            try:
                return JSONResponse(await run_in_threadpool(produce, query))
            except AxonError as exc:
                status = 404 if isinstance(exc, NotFound) else 400
                return JSONResponse({"error": str(exc)}, status)
        return endpoint

    def _change(self, act: Callable[[dict[str, str]], str]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            if not self.write:
                return HTMLResponse(error_page(
                    "Read only", "Studio was started without --write: nothing can be changed."
                ), 403)
            form = dict(parse_qsl((await request.body()).decode("utf-8", "replace"),
                                  keep_blank_values=True))
            if not same(form.get("csrf"), self.csrf):
                return HTMLResponse(error_page(
                    "Refused", "missing or wrong CSRF token: reload the page and try again",
                    write=True,
                ), 403)
            try:
                location = await run_in_threadpool(act, form)
            except AxonError as exc:
                status = 404 if isinstance(exc, NotFound) else 400
                return HTMLResponse(error_page("Not changed", str(exc), write=True), status)
            return RedirectResponse(location, 303)
        return endpoint

    # ------------------------------------------------------------ pages
    def overview(self, query: dict[str, str]) -> str:
        return pages.overview(self.data.overview(), self.write, self.csrf)

    def memory(self, query: dict[str, str]) -> str:
        data = self.data.entries(query.get("name", ""), query)
        return pages.memory(data, query, self.write, self.csrf)

    def entry(self, query: dict[str, str]) -> str:
        data = self.data.entry(query.get("memory", ""), query.get("key", ""))
        return pages.entry(data, self.write, self.csrf)

    def search(self, query: dict[str, str]) -> str:
        from axon.memory.backend import RETRIEVAL_MODES

        names = self.data.names()
        chosen = query.get("memory") or (names[0] if names else "")
        data = self.data.search(chosen, query) if chosen and query.get("q") else None
        return pages.search(data, names, query, RETRIEVAL_MODES, self.write)

    def stats(self, query: dict[str, str]) -> str:
        return pages.stats(self.data.stats(), self.write)

    def _trace_files(self) -> list[tuple[int, str, str | None]]:
        files: list[tuple[int, str, str | None]] = [(SESSION_TRACE, "this Studio session", None)]
        return files + [(i, str(p), None) for i, p in enumerate(self.trace_paths)]

    def _trace_events(self, query: dict[str, str]) -> tuple[int, list[dict[str, Any]]]:
        default = 0 if self.trace_paths else SESSION_TRACE
        try:
            index = int(query.get("file", default))
        except ValueError:
            raise NotFound(f"no trace '{query.get('file')}'") from None
        if index == SESSION_TRACE:
            return index, self.data.events()
        if not 0 <= index < len(self.trace_paths):
            raise NotFound(f"no trace '{index}' (Studio was given {len(self.trace_paths)})")
        loaded = self._load(self.trace_paths[index])
        if loaded.error is not None:
            raise AxonError(f"{loaded.path}: {loaded.error}")
        return index, list(loaded.events)

    def _load(self, path: Path) -> traces.TraceFile:
        """The trace file, read again only when its size or time changed."""
        try:
            stat = path.stat()
            stamp: tuple[float, int] | None = (stat.st_mtime, stat.st_size)
        except OSError:
            stamp = None
        cached = self._traces.get(path)
        if stamp is not None and cached is not None and cached[0] == stamp:
            return cached[1]
        loaded = traces.load(path)
        if stamp is not None:
            self._traces[path] = (stamp, loaded)
        return loaded

    def _timeline(self, events: list[dict[str, Any]], query: dict[str, str]) -> Any:
        try:
            start = int(query.get("start") or 0)
        except ValueError:
            raise StudioError(f"start must be a number, not '{query.get('start')}'") from None
        return traces.timeline(
            events, query.get("memory", ""), query.get("operation", ""), start=start
        )

    def trace(self, query: dict[str, str]) -> str:
        index, events = self._trace_events(query)
        data = self._timeline(events, query)
        return pages.trace(self._trace_files(), index, data, query, self.write)

    # ------------------------------------------------------------ the JSON API
    def api_memories(self, query: dict[str, str]) -> Any:
        return self.data.overview()

    def api_entries(self, query: dict[str, str]) -> Any:
        return self.data.entries(query.get("memory", ""), query)

    def api_entry(self, query: dict[str, str]) -> Any:
        return self.data.entry(query.get("memory", ""), query.get("key", ""))

    def api_search(self, query: dict[str, str]) -> Any:
        return self.data.search(query.get("memory", ""), query)

    def api_stats(self, query: dict[str, str]) -> Any:
        return self.data.stats()

    def api_trace(self, query: dict[str, str]) -> Any:
        index, events = self._trace_events(query)
        data = self._timeline(events, query)
        data["files"] = [{"index": i, "name": n} for i, n, _ in self._trace_files()]
        data["file"] = index
        return json.loads(json.dumps(data, default=str))

    # ------------------------------------------------------------ changes
    def do_forget(self, form: dict[str, str]) -> str:
        name, key = form.get("memory", ""), form.get("key", "")
        if not self.data.forget(name, key):
            raise NotFound("no such entry", memory=name, key=key)
        return pages.url("/memory", name=name).replace("&amp;", "&")

    def do_update(self, form: dict[str, str]) -> str:
        name, key = form.get("memory", ""), form.get("key", "")
        self.data.update(
            name, key, value=form.get("value"), tags=form.get("tags"),
            importance=form.get("importance"),
        )
        return pages.url("/entry", memory=name, key=key).replace("&amp;", "&")

    def do_purge(self, form: dict[str, str]) -> str:
        self.data.purge()
        return "/"


async def _asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in ASSETS:  # only the package's own files, never a path
        return Response("not found", 404, media_type="text/plain")
    text = resources.files("axon.studio").joinpath("static", name).read_bytes()
    return Response(text, media_type=ASSETS[name])


def build_app(studio: Studio) -> Any:
    """The ASGI application: Starlette's routes behind the token gate."""
    routes = [
        Route("/", studio._html(studio.overview)),
        Route("/memory", studio._html(studio.memory)),
        Route("/entry", studio._html(studio.entry)),
        Route("/search", studio._html(studio.search)),
        Route("/stats", studio._html(studio.stats)),
        Route("/trace", studio._html(studio.trace)),
        Route("/api/memories", studio._json(studio.api_memories)),
        Route("/api/entries", studio._json(studio.api_entries)),
        Route("/api/entry", studio._json(studio.api_entry)),
        Route("/api/search", studio._json(studio.api_search)),
        Route("/api/stats", studio._json(studio.api_stats)),
        Route("/api/trace", studio._json(studio.api_trace)),
        Route("/write/forget", studio._change(studio.do_forget), methods=["POST"]),
        Route("/write/update", studio._change(studio.do_update), methods=["POST"]),
        Route("/write/purge", studio._change(studio.do_purge), methods=["POST"]),
        Route("/static/{name}", _asset),
    ]
    return TokenGate(Starlette(routes=routes), studio.token)
