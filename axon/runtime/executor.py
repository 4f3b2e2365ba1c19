"""IR statements -> effects: runs flows and top-level statements, yielding output records.

The executor walks IR in order. remember/recall/forget go to the bound memory
(`MemoryManager[name]`, a `Memory`; never to a model); steps and the other
cognitive operations go to the model client; `let`, `if` and `run` are handled
here. Every executed remember, recall and forget yields an output record
(docs/language.md §11 Output records), in execution order. A failure becomes an
`AxonRuntimeError` naming the statement's position.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, assert_never

from axon.compiler import ir
from axon.errors import AxonError, AxonMemoryError, AxonRuntimeError
from axon.runtime.manager import MemoryManager
from axon.runtime.model import ModelClient, ModelRequest, Recalled
from axon.runtime.records import (
    Record,
    entry_metadata,
    expires_in_seconds,
    forget_record,
    recall_record,
    recall_results,
    remember_record,
    statement_window,
)
from axon.runtime.tracer import TraceEventType, Tracer
from axon.runtime.values import Frame, Unbound, condition_holds, evaluate, evaluate_or_text
from axon.source import Source
from axon.trace import History


class FlowRaised(AxonRuntimeError):
    """A `raise Name` action ran: the flow stops with the named error."""


class Executor:
    """Runs checked IR against a session's memories, model client and tracer."""

    def __init__(
        self,
        *,
        memories: MemoryManager,
        model: ModelClient,
        tracer: Tracer,
        declarations: Mapping[str, ir.IRDeclaration],
        flows: Mapping[str, ir.IRFlow],
        keep_records: int | None = None,
    ) -> None:
        self.memories = memories
        self.model = model
        self.tracer = tracer
        self.declarations = declarations
        self.flows = flows
        self.records: list[Record] = History(keep_records)
        """The session's output records, the newest `keep_records` (None: all)."""
        self.run_records: list[Record] = []
        """Every record of the current (or last) `run_statements`, whatever is kept."""
        self.source: Source | None = None
        self._run_context: dict[str, Any] = {}

    # ------------------------------------------------------------ entry points
    async def run_statements(
        self, statements: tuple[ir.IRStatement, ...], frame: Frame, source: Source
    ) -> list[Record]:
        """Run top-level statements; ephemeral writes end with them. Returns their records
        (all of them: `records` keeps only the newest `keep_records`)."""
        self.source = source
        self.run_records = []
        self.memories.push_lifetime()
        try:
            for stmt in statements:
                await self._statement(stmt, frame, origin="main")
        finally:
            await self.memories.pop_lifetime()
        return self.run_records

    def _record(self, record: Record) -> None:
        self.run_records.append(record)
        self.records.append(record)

    # ------------------------------------------------------------ statements
    async def _statement(self, stmt: ir.IRStatement, frame: Frame, origin: str) -> None:
        try:
            await self._dispatch(stmt, frame, origin)
        except AxonMemoryError as exc:  # (an AxonError: it must come first)
            raise AxonRuntimeError(str(exc), stmt.span, self.source) from None
        except AxonError as exc:
            if exc.span.line or not stmt.line:
                raise
            raise AxonRuntimeError(exc.message, stmt.span, self.source) from None
        except Unbound as exc:
            why = exc.why or "nothing bound it before this statement"
            memory = _memory_of(stmt)
            where = f" (memory '{memory}')" if memory else ""
            raise AxonRuntimeError(
                f"Unbound name '{exc.name}': {why}{where}", stmt.span, self.source
            ) from None

    async def _dispatch(self, stmt: ir.IRStatement, frame: Frame, origin: str) -> None:
        match stmt:
            case ir.IRLet(name=name, value=value):
                frame.bind(name, evaluate(value, frame))
            case ir.IRRemember():
                await self._remember(stmt, frame, origin)
            case ir.IRRecall():
                await self._recall(stmt, frame, origin)
            case ir.IRForget():
                await self._forget(stmt, frame, origin)
            case ir.IRStep():
                await self._step(stmt, frame, origin)
            case ir.IRCognitive():
                await self._cognitive(stmt, frame, origin)
            case ir.IRIf(condition=cond, then=then, otherwise=otherwise):
                for inner in then if condition_holds(cond, frame) else otherwise:
                    await self._statement(inner, frame, origin)
            case ir.IRAction():
                await self._action(stmt, frame, origin)
            case ir.IRRun():
                await self._run(stmt, frame)
            case _:
                assert_never(stmt)

    async def _remember(self, stmt: ir.IRRemember, frame: Frame, origin: str) -> None:
        value = evaluate(stmt.value, frame)
        if isinstance(value, Recalled):
            value = [dict(r) for r in value.results]
        source = origin
        if isinstance(stmt.value, ir.IRRef):
            source = frame.source_of(stmt.value.path[0]) or origin
        # The entry's metadata: where it came from, its tags and importance, and the
        # program's own `metadata: { ... }` (the checker keeps their names apart).
        metadata = entry_metadata(
            source, stmt.tags, stmt.importance, stmt.metadata,
            record_type=stmt.type, related=stmt.related,
        )
        entry = await self.memories[stmt.memory_target].remember(
            stmt.key, value, metadata,
            expires_in=expires_in_seconds(stmt.expires_in), tier=stmt.tier,
        )
        self._record(
            remember_record(
                stmt.memory_target, stmt.key, value, entry,
                line=stmt.line, column=stmt.column, flow=None if origin == "main" else origin,
            )
        )

    async def _recall(self, stmt: ir.IRRecall, frame: Frame, origin: str) -> None:
        query = evaluate_or_text(stmt.query_value, frame)
        if isinstance(query, Recalled):
            query = " ".join(str(r.get("value")) for r in query.results)
        text = query if isinstance(query, str) else str(query)
        memory = self.memories[stmt.memory_source]
        filters: dict[str, Any] = dict(stmt.filters)
        filters.update(statement_window(stmt.options))
        entries, retrieval, pending, below_floor = await memory.recall(
            text, stmt.top_k, stmt.retrieval, filters,
            tiers=stmt.tiers, min_score=stmt.min_score,
        )
        results = tuple(recall_results(entries))
        frame.bind(
            stmt.alias or stmt.memory_source,
            Recalled(stmt.memory_source, text, results),
            source=origin,  # the contract's source: the flow that recalled, or "main"
        )
        self._record(
            recall_record(
                stmt.memory_source, text, retrieval, stmt.top_k, stmt.alias, results,
                line=stmt.line, column=stmt.column, flow=None if origin == "main" else origin,
                pending_vectors=pending, below_floor=below_floor,
            )
        )

    async def _forget(self, stmt: ir.IRForget, frame: Frame, origin: str) -> None:
        """Delete one entry by key, or every entry the filter matches; a missing key is 0.

        Both go through the memory's delete path, the one the Python handle's
        `delete` takes, so the record and the `memory_delete` event are the same.
        """
        memory = stmt.memory_source
        flow = None if origin == "main" else origin
        if stmt.key is None:
            deleted = await self.memories[memory].delete_matching(stmt.filters)
            self._record(
                forget_record(memory, None, deleted, filters=stmt.filters,
                              line=stmt.line, column=stmt.column, flow=flow)
            )
            return
        key = evaluate(stmt.key, frame)
        if not isinstance(key, str) or not key.strip():
            shown = "a recall's results" if isinstance(key, Recalled) else repr(key)
            raise AxonMemoryError(
                f"forget: the key must be a non-empty string, but '{stmt.key_text}' is {shown}",
                memory=memory,
            )
        deleted = int(await self.memories[memory].delete(key))
        self._record(
            forget_record(memory, key, deleted, line=stmt.line, column=stmt.column, flow=flow)
        )

    # ------------------------------------------------------------ model-facing steps
    def _request(self, kind: str, name: str, **kwargs: Any) -> ModelRequest:
        return ModelRequest(
            kind=kind,
            name=name,
            persona=self._run_context.get("persona"),
            context=self._run_context.get("context"),
            **kwargs,
        )

    def _call_model(self, request: ModelRequest) -> str:
        started = time.perf_counter()
        answer = self.model.complete(request)
        self.tracer.emit(
            TraceEventType.MODEL_CALL,
            data={
                "client": self.model.name,
                "kind": request.kind,
                "name": request.name,
                "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            },
        )
        return answer

    async def _step(self, stmt: ir.IRStep, frame: Frame, origin: str) -> None:
        started = time.perf_counter()
        self.tracer.emit(TraceEventType.STEP_START, data={"step": stmt.name}, step_name=stmt.name)
        self.tracer.start_span(stmt.name)
        try:
            given = evaluate_or_text(stmt.given, frame) if stmt.given is not None else None
            for action in stmt.actions:
                await self._statement(action, frame, stmt.name)
            answer = self._call_model(
                self._request(
                    "step",
                    stmt.name,
                    ask=stmt.ask,
                    given=given,
                    output_type=stmt.output,
                    fields={k: v for k, v in stmt.fields.items() if k not in ("given", "ask")},
                )
            )
        finally:
            self.tracer.end_span()
        frame.bind(stmt.name, answer, source=stmt.name)
        if stmt.output:
            frame.bind(stmt.output, answer, source=stmt.name)
        self.tracer.emit(
            TraceEventType.STEP_END,
            data={"step": stmt.name, "output": stmt.output},
            step_name=stmt.name,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
        )

    async def _cognitive(self, stmt: ir.IRCognitive, frame: Frame, origin: str) -> None:
        name = stmt.into or stmt.target or stmt.kind
        items = [evaluate_or_text(item, frame) for item in stmt.items]
        target = (
            evaluate_or_text(ir.IRRef(tuple(stmt.target.split("."))), frame)
            if stmt.target and stmt.kind in ("probe", "validate", "reason")
            else None
        )
        started = time.perf_counter()
        self.tracer.emit(TraceEventType.STEP_START, data={"step": name, "kind": stmt.kind})
        answer = self._call_model(
            self._request(
                stmt.kind,
                name,
                given={"target": target, "items": items} if items else target,
                fields=stmt.fields,
            )
        )
        if stmt.kind == "validate":
            # The offline client reports full confidence and no mismatch; rules see that.
            checks = frame.child()
            checks.bind("confidence", 1.0)
            checks.bind("structural_mismatch", False)
            checks.bind("result", answer)
            for rule in stmt.rules:
                await self._statement(rule, checks, origin)
        if stmt.into:
            frame.bind(stmt.into, answer, source=stmt.into)
        self.tracer.emit(
            TraceEventType.STEP_END,
            data={"step": name, "kind": stmt.kind},
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
        )

    async def _action(self, stmt: ir.IRAction, frame: Frame, origin: str) -> None:
        if stmt.kind == "raise":
            raise FlowRaised(f"{stmt.name} raised in '{origin}'", stmt.span, self.source)
        self._call_model(self._request("action", stmt.name, fields=stmt.arguments))

    # ------------------------------------------------------------ run
    async def _run(self, stmt: ir.IRRun, frame: Frame) -> None:
        flow = self.flows.get(stmt.flow)
        if flow is None:
            raise AxonRuntimeError(f"Undefined flow '{stmt.flow}'", stmt.span, self.source)
        failure = stmt.on_failure
        attempts = failure.max_attempts if failure is not None else 1
        for attempt in range(1, attempts + 1):
            try:
                await self._run_flow(flow, stmt, frame)
                return
            except FlowRaised as exc:
                self.tracer.emit(
                    TraceEventType.ERROR,
                    data={"flow": flow.name, "attempt": attempt, "message": exc.message},
                )
                if failure is not None and failure.kind == "log":
                    return
                if attempt == attempts:
                    raise

    async def _run_flow(self, flow: ir.IRFlow, stmt: ir.IRRun, caller: Frame) -> None:
        local = caller.child()
        args = [evaluate_or_text(arg.value, caller) for arg in stmt.args]
        named = {a.name: v for a, v in zip(stmt.args, args, strict=True) if a.name}
        positional = [v for a, v in zip(stmt.args, args, strict=True) if not a.name]
        for param in flow.params:
            if param.name in named:
                local.bind(param.name, named[param.name])
            elif positional:
                local.bind(param.name, positional.pop(0))
            else:
                local.bind(param.name, None)
        self._run_context = {
            "persona": _fields(self.declarations.get(stmt.persona or "")),
            "context": _fields(self.declarations.get(stmt.context or "")),
        }
        started = time.perf_counter()
        self.tracer.emit(
            TraceEventType.FLOW_START,
            data={"flow": flow.name, "persona": stmt.persona, "context": stmt.context,
                  "anchors": list(stmt.anchors)},
        )
        self.memories.push_lifetime()
        result: Any = None
        try:
            for inner in flow.steps:
                await self._statement(inner, local, flow.name)
                if isinstance(inner, ir.IRStep):
                    result = local.lookup(inner.name)
                elif isinstance(inner, ir.IRCognitive) and inner.into:
                    result = local.lookup(inner.into)
        finally:
            await self.memories.pop_lifetime()
            self._run_context = {}
        # The flow's result (and its steps' outputs) are visible after the run.
        caller.bind(flow.name, result, source=flow.name)
        if flow.result_name:
            caller.bind(flow.result_name, result, source=flow.name)
        for name, value in local.values.items():
            if local.sources.get(name) and name not in {p.name for p in flow.params}:
                caller.bind(name, value, source=local.sources[name])
        self.tracer.emit(
            TraceEventType.FLOW_END,
            data={"flow": flow.name},
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
        )


def _fields(decl: ir.IRDeclaration | None) -> dict[str, Any] | None:
    """A persona's or context's fields for the model request (None when there is none)."""
    return dict(decl.fields) if decl is not None else None


def _memory_of(stmt: ir.IRStatement) -> str | None:
    """The memory a statement writes to, reads or forgets from (None for the others)."""
    match stmt:
        case ir.IRRemember(memory_target=memory):
            return memory
        case ir.IRRecall(memory_source=memory) | ir.IRForget(memory_source=memory):
            return memory
    return None
