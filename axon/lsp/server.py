"""LSP requests over stdio -> answers from `analysis`: the `axon lsp` language server.

Built on pygls (JSON-RPC framing, the initialize handshake, incremental text
sync, cancellation) so that this module is only the mapping from protocol types
to `analysis` and back. Diagnostics are published on open and on every change,
analysed at once (only the items an edit touched are parsed and scanned again,
`chunks`; `benchmarks/lsp.py` measures the round trip); every other request
reuses the analysis of the current text. Formatting is `axon fmt`'s own function.
docs/editors.md lists the features.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, cast

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from axon import __version__
from axon.errors import AxonError
from axon.lsp import analysis
from axon.lsp.documents import Document, DocumentStore, LineIndex, filename_of

SYMBOL_KINDS = {
    "memory": types.SymbolKind.Struct,
    "flow": types.SymbolKind.Function,
    "persona": types.SymbolKind.Object,
    "context": types.SymbolKind.Namespace,
    "anchor": types.SymbolKind.Constant,
    "tool": types.SymbolKind.Method,
    "intent": types.SymbolKind.Event,
    "type": types.SymbolKind.Class,
}
COMPLETION_KINDS = {
    "memory": types.CompletionItemKind.Struct,
    "flow": types.CompletionItemKind.Function,
    "field": types.CompletionItemKind.Field,
    "option": types.CompletionItemKind.Property,
    "value": types.CompletionItemKind.EnumMember,
    "keyword": types.CompletionItemKind.Keyword,
}
SEVERITIES = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning}


class AxonLanguageServer(LanguageServer):
    """A pygls server holding the analysis of every open document."""

    def __init__(self) -> None:
        super().__init__("axon", __version__)
        self.store = DocumentStore()

    def document(self, uri: str) -> Document:
        """The current text of `uri` (pygls keeps it in step with the edits), analysed."""
        text_document = self.workspace.get_text_document(uri)
        return self.store.update(uri, text_document.source, text_document.version)


def _range(lines: LineIndex, start: int, end: int) -> types.Range:
    return types.Range(_position(lines, start), _position(lines, end))


def _position(lines: LineIndex, offset: int) -> types.Position:
    line, column = lines.position(offset)
    return types.Position(line=line, character=column)


def _offset(document: Document, position: types.Position) -> int:
    return document.lines.offset(position.line, position.character)


def diagnostics(document: Document) -> list[types.Diagnostic]:
    """The document's problems as LSP diagnostics (a fix's text in `data`)."""
    return [
        types.Diagnostic(
            range=_range(document.lines, p.start, p.end),
            message=p.message,
            severity=SEVERITIES.get(p.severity, types.DiagnosticSeverity.Error),
            source="axon",
            data={"replacement": p.fix[2]} if p.fix else None,
        )
        for p in document.analysis.problems
    ]


def create_server() -> AxonLanguageServer:
    """A server with every feature registered (`start_io()` serves it on stdin/stdout)."""
    server = AxonLanguageServer()

    def publish(document: Document) -> None:
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=document.uri, version=document.version, diagnostics=diagnostics(document)
            )
        )

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AxonLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        publish(ls.document(params.text_document.uri))

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AxonLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        publish(ls.document(params.text_document.uri))

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AxonLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.store.close(params.text_document.uri)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
        )

    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=[">", ":", "{"]),
    )
    def completion(
        ls: AxonLanguageServer, params: types.CompletionParams
    ) -> types.CompletionList:
        document = ls.document(params.text_document.uri)
        found = analysis.completions(document.analysis, _offset(document, params.position))
        items = [
            types.CompletionItem(
                label=c.label, kind=COMPLETION_KINDS.get(c.kind), detail=c.detail or None
            )
            for c in found
        ]
        return types.CompletionList(is_incomplete=False, items=items)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: AxonLanguageServer, params: types.HoverParams) -> types.Hover | None:
        document = ls.document(params.text_document.uri)
        found = analysis.hover(document.analysis, _offset(document, params.position))
        if found is None:
            return None
        text, start, end = found
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
            range=_range(document.lines, start, end),
        )

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def definition(
        ls: AxonLanguageServer, params: types.DefinitionParams
    ) -> types.Location | None:
        document = ls.document(params.text_document.uri)
        declared = document.analysis.declaration_at(_offset(document, params.position))
        if declared is None:
            return None
        return types.Location(
            uri=document.uri,
            range=_range(document.lines, declared.name_start, declared.name_end),
        )

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    def references(
        ls: AxonLanguageServer, params: types.ReferenceParams
    ) -> list[types.Location]:
        document = ls.document(params.text_document.uri)
        spans = analysis.references(
            document.analysis,
            _offset(document, params.position),
            params.context.include_declaration,
        )
        return [
            types.Location(uri=document.uri, range=_range(document.lines, s, e)) for s, e in spans
        ]

    @server.feature(types.TEXT_DOCUMENT_PREPARE_RENAME)
    def prepare_rename(
        ls: AxonLanguageServer, params: types.PrepareRenameParams
    ) -> types.Range | None:
        document = ls.document(params.text_document.uri)
        offset = _offset(document, params.position)
        word = document.analysis.word_at(offset)
        if word is None or document.analysis.declaration_at(offset) is None:
            return None
        return _range(document.lines, word[1], word[2])

    @server.feature(types.TEXT_DOCUMENT_RENAME)
    def rename(ls: AxonLanguageServer, params: types.RenameParams) -> types.WorkspaceEdit:
        document = ls.document(params.text_document.uri)
        try:
            spans = analysis.rename(
                document.analysis, _offset(document, params.position), params.new_name
            )
        except analysis.RenameError as exc:
            raise ValueError(str(exc)) from None  # pygls answers it as the request's error
        edits = [
            types.TextEdit(range=_range(document.lines, s, e), new_text=params.new_name)
            for s, e in spans
        ]
        return types.WorkspaceEdit(changes={document.uri: edits})

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbol(
        ls: AxonLanguageServer, params: types.DocumentSymbolParams
    ) -> list[types.DocumentSymbol]:
        document = ls.document(params.text_document.uri)
        lines = document.lines
        return [
            types.DocumentSymbol(
                name=d.name,
                detail=d.kind,
                kind=SYMBOL_KINDS[d.kind],
                range=_range(lines, d.start, d.end),
                selection_range=_range(lines, d.name_start, d.name_end),
            )
            for d in analysis.symbols(document.analysis)
        ]

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    def code_action(
        ls: AxonLanguageServer, params: types.CodeActionParams
    ) -> list[types.CodeAction]:
        document = ls.document(params.text_document.uri)
        lines = document.lines
        start = _offset(document, params.range.start)
        end = _offset(document, params.range.end)
        actions = []
        for problem in document.analysis.problems:
            if problem.fix is None or problem.end < start or problem.start > end:
                continue
            fix_start, fix_end, replacement = problem.fix
            actions.append(
                types.CodeAction(
                    title=f"Change to '{replacement}'",
                    kind=types.CodeActionKind.QuickFix,
                    is_preferred=True,
                    edit=types.WorkspaceEdit(
                        changes={
                            document.uri: [
                                types.TextEdit(
                                    range=_range(lines, fix_start, fix_end), new_text=replacement
                                )
                            ]
                        }
                    ),
                )
            )
        return actions

    format_source = formatter()
    if format_source is not None:

        @server.feature(types.TEXT_DOCUMENT_FORMATTING)
        def formatting(
            ls: AxonLanguageServer, params: types.DocumentFormattingParams
        ) -> list[types.TextEdit] | None:
            document = ls.document(params.text_document.uri)
            try:
                formatted = format_source(document.text, path=filename_of(document.uri))
            except AxonError:
                return None  # does not parse: nothing to format (its diagnostics say why)
            if formatted == document.text:
                return []
            whole = _range(document.lines, 0, len(document.text))
            return [types.TextEdit(range=whole, new_text=formatted)]

    return server


def formatter() -> Callable[..., str] | None:
    """`axon fmt`'s `format_source(text, path=...)`, or None in a build without it (the
    server then does not offer formatting)."""
    name = "axon.compiler.formatter"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return None
    return cast("Callable[..., str]", module.format_source)


def serve(**streams: Any) -> None:
    """Serve the language server on stdin and stdout until the client says exit."""
    create_server().start_io(**streams)
