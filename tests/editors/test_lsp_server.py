"""`axon lsp` as an editor drives it: a real subprocess spoken to over stdio with JSON-RPC."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_extra, unavailable
from tests.editors.lsp_client import LspClient, LspError

PROGRAM = """\
// Notes kept between sessions.
memory Notes {
  store: persistent
  retrieval: keyword
}

flow Summarize(topic: String) -> Summary {
  recall(topic) from Notes as known
  remember(known) -> Notes with { tags: ["summary"] }
}

remember("The launch moved to May") -> Notes
recall("launch") from Notes
run Summarize("launch")
"""


def position(text: str, needle: str, nth: int = 0, within: int = 0) -> dict[str, int]:
    """The LSP position of the `nth` occurrence of `needle` (plus `within` characters)."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    at += within
    line = text.count("\n", 0, at)
    return {"line": line, "character": at - (text.rfind("\n", 0, at) + 1)}


@pytest.fixture(scope="module")
def client() -> Iterator[LspClient]:
    require_extra("pygls", "lsprotocol")
    lsp = LspClient()
    result = lsp.initialize()
    capabilities = result["capabilities"]
    for feature in (
        "completionProvider",
        "hoverProvider",
        "definitionProvider",
        "referencesProvider",
        "renameProvider",
        "documentSymbolProvider",
        "codeActionProvider",
    ):
        assert capabilities.get(feature), feature
    assert result["serverInfo"]["name"] == "axon"
    yield lsp
    assert lsp.close() == 0


WITHOUT_PYGLS = """
import sys
class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pygls", "lsprotocol"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Missing())
sys.argv = ["axon", "lsp"]
from axon.cli import main
main()
"""


def test_without_pygls_axon_lsp_says_which_extra_to_install() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_PYGLS], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: axon lsp needs pygls, which is not installed: ")
    assert "pip install '.[lsp]'" in done.stderr and "Traceback" not in done.stderr


def params(uri: str, text: str, needle: str, nth: int = 0, within: int = 0) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": position(text, needle, nth, within)}


def test_a_clean_program_has_no_diagnostics(client: LspClient, tmp_path: Path) -> None:
    uri = (tmp_path / "clean.axon").as_uri()
    assert client.open(uri, PROGRAM)["diagnostics"] == []


def test_diagnostics_on_open_and_change_with_ranges_severities_and_fixes(
    client: LspClient, tmp_path: Path
) -> None:
    uri = (tmp_path / "typo.axon").as_uri()
    text = PROGRAM.replace("recall(\"launch\") from Notes", "recall(\"launch\") from Notse")
    published = client.open(uri, text)
    [diagnostic] = published["diagnostics"]
    assert diagnostic["severity"] == 1  # Error
    assert diagnostic["source"] == "axon"
    assert diagnostic["message"].startswith("Undefined memory 'Notse' (did you mean 'Notes'?)")
    start = position(text, "Notse")
    assert diagnostic["range"] == {
        "start": start,
        "end": {"line": start["line"], "character": start["character"] + 5},
    }
    # the "did you mean" is a quick fix
    actions = client.request(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": uri},
            "range": diagnostic["range"],
            "context": {"diagnostics": [diagnostic]},
        },
    )
    [action] = actions
    assert action["kind"] == "quickfix" and action["title"] == "Change to 'Notes'"
    assert action["edit"]["changes"][uri] == [{"range": diagnostic["range"], "newText": "Notes"}]
    # an incremental edit that fixes it: diagnostics for the new version, empty
    client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": diagnostic["range"], "text": "Notes"}],
        },
    )
    assert client.wait_for("textDocument/publishDiagnostics", uri=uri, version=2)[
        "diagnostics"
    ] == []
    # a warning has its severity
    client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": 3},
            "contentChanges": [{"text": "memory Kept { store: session backend: sqlite }\n"}],
        },
    )
    [warning] = client.wait_for("textDocument/publishDiagnostics", uri=uri, version=3)[
        "diagnostics"
    ]
    assert warning["severity"] == 2, warning  # Warning


def test_a_syntax_error_points_at_it_and_the_server_keeps_answering(
    client: LspClient, tmp_path: Path
) -> None:
    uri = (tmp_path / "broken.axon").as_uri()
    text = PROGRAM.replace("  retrieval: keyword\n}", "  retrieval: keyword\n")
    [diagnostic] = client.open(uri, text)["diagnostics"]
    assert diagnostic["severity"] == 1
    assert diagnostic["message"].startswith("'{' opened at line 2, column 14 is never closed")
    assert diagnostic["range"]["start"] == position(text, "{")
    # still answers about the half-written program
    hover = client.request("textDocument/hover", params(uri, text, "Notes", nth=1))
    assert "memory Notes" in hover["contents"]["value"]
    symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    assert symbols[0]["name"] == "Notes"
    # a character no token matches
    uri2 = (tmp_path / "stray.axon").as_uri()
    [stray] = client.open(uri2, "memory A {}\n§\n")["diagnostics"]
    assert stray["range"]["start"] == {"line": 1, "character": 0}


def labels(result: dict[str, Any] | list[dict[str, Any]]) -> list[str]:
    items = result["items"] if isinstance(result, dict) else result
    return [item["label"] for item in items]


def test_completion(client: LspClient, tmp_path: Path) -> None:
    uri = (tmp_path / "complete.axon").as_uri()
    text = (
        "memory Notes { store: persistent }\nmemory Facts {  }\n"
        "memory Draft { store:  backend:  retrieval:  link:  }\n"
        'remember("x") -> N\nrecall("x") from \n'
        'remember("y") -> Notes with {  type:  }\nrecall("y") from Notes with {  }\n'
    )
    client.open(uri, text)

    def at(needle: str, nth: int = 0, within: int = 0) -> list[str]:
        return labels(
            client.request("textDocument/completion", params(uri, text, needle, nth, within))
        )

    assert at('-> N', within=4) == ["Notes", "Facts", "Draft"]
    assert at("from \n", within=5) == ["Notes", "Facts", "Draft"]
    fields = at("Facts {  }", within=8)
    assert {"store", "backend", "retrieval", "decay", "top_k", "link", "min_score"} <= set(fields)
    assert at("store:  ", within=7) == ["ephemeral", "none", "persistent", "session"]
    assert {"sqlite", "in_memory", "pgvector", "chroma"} <= set(at("backend:  ", within=9))
    assert at("retrieval:  ", within=11) == ["exact", "keyword", "semantic", "hybrid"]
    assert at("link:  ", within=6) == ["none", "sequence"]
    assert "long_term" in at("type:  ", within=6)
    remember_options = at("with {  type", within=6)
    assert "expires_in" in remember_options and "top_k" not in remember_options
    recall_options = at("with {  }", within=6)
    assert "top_k" in recall_options and "expires_in" not in recall_options


def test_hover_shows_the_declaration_and_a_fields_meaning(
    client: LspClient, tmp_path: Path
) -> None:
    uri = (tmp_path / "hover.axon").as_uri()
    client.open(uri, PROGRAM)
    hover = client.request("textDocument/hover", params(uri, PROGRAM, "Notes", nth=2))
    assert hover["contents"]["kind"] == "markdown"
    assert "memory Notes {\n  store: persistent\n  retrieval: keyword\n}" in hover["contents"][
        "value"
    ]
    assert hover["range"]["start"] == position(PROGRAM, "Notes", nth=2)
    field = client.request("textDocument/hover", params(uri, PROGRAM, "retrieval"))
    assert "exact | keyword | semantic | hybrid" in field["contents"]["value"]
    assert client.request("textDocument/hover", params(uri, PROGRAM, "launch")) is None


def test_definition_references_and_symbols(client: LspClient, tmp_path: Path) -> None:
    uri = (tmp_path / "names.axon").as_uri()
    client.open(uri, PROGRAM)
    definition = client.request("textDocument/definition", params(uri, PROGRAM, "Summarize", 1))
    assert definition["uri"] == uri
    assert definition["range"]["start"] == position(PROGRAM, "Summarize")
    refs = client.request(
        "textDocument/references",
        {**params(uri, PROGRAM, "Notes", nth=3), "context": {"includeDeclaration": True}},
    )
    # the declaration, then every use (the comment's "Notes" is not one)
    expected = [position(PROGRAM, "Notes", n) for n in range(1, 6)]
    assert [r["range"]["start"] for r in refs] == expected
    symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    assert [(s["name"], s["detail"]) for s in symbols] == [
        ("Notes", "memory"),
        ("Summarize", "flow"),
    ]
    assert symbols[0]["range"]["end"] == {"line": 4, "character": 1}


def test_rename_a_memory(client: LspClient, tmp_path: Path) -> None:
    uri = (tmp_path / "rename.axon").as_uri()
    client.open(uri, PROGRAM)
    prepared = client.request("textDocument/prepareRename", params(uri, PROGRAM, "Notes", 4))
    assert prepared["start"] == position(PROGRAM, "Notes", 4)
    edit = client.request(
        "textDocument/rename", {**params(uri, PROGRAM, "Notes", 4), "newName": "Journal"}
    )
    edits = edit["changes"][uri]
    assert len(edits) == 5 and {e["newText"] for e in edits} == {"Journal"}
    with pytest.raises(LspError, match="already declared"):
        client.request(
            "textDocument/rename", {**params(uri, PROGRAM, "Notes", 4), "newName": "Summarize"}
        )
    with pytest.raises(LspError, match="keyword"):
        client.request(
            "textDocument/rename", {**params(uri, PROGRAM, "Notes", 4), "newName": "recall"}
        )


def test_formatting_is_axon_fmt(client: LspClient, tmp_path: Path) -> None:
    from axon.lsp.server import formatter

    format_source = formatter()
    if format_source is None:
        unavailable("this build has no axon fmt (axon/compiler/formatter.py)")
    assert client.capabilities["documentFormattingProvider"]
    uri = (tmp_path / "fmt.axon").as_uri()
    text = 'memory   Notes{store:persistent}\nremember("x")->Notes\n'
    client.open(uri, text)
    options = {"tabSize": 2, "insertSpaces": True}
    edits = client.request(
        "textDocument/formatting", {"textDocument": {"uri": uri}, "options": options}
    )
    [edit] = edits
    assert edit["newText"] == format_source(text, path=str(tmp_path / "fmt.axon"))
    assert edit["range"]["start"] == {"line": 0, "character": 0}
    # a formatted file: no edits; one that does not parse: none either
    formatted = edit["newText"]
    client.open((tmp_path / "done.axon").as_uri(), formatted)
    assert client.request(
        "textDocument/formatting",
        {"textDocument": {"uri": (tmp_path / "done.axon").as_uri()}, "options": options},
    ) == []
    client.open((tmp_path / "bad.axon").as_uri(), "memory {")
    assert client.request(
        "textDocument/formatting",
        {"textDocument": {"uri": (tmp_path / "bad.axon").as_uri()}, "options": options},
    ) is None


WITHOUT_FORMATTER = """
import sys
class Missing:
    def find_spec(self, name, path=None, target=None):
        if name == "axon.compiler.formatter":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Missing())
from axon.lsp.server import serve
serve()
"""


def test_a_build_without_axon_fmt_offers_no_formatting() -> None:
    require_extra("pygls", "lsprotocol")
    lsp = LspClient(sys.executable, "-c", WITHOUT_FORMATTER)
    capabilities = lsp.initialize()["capabilities"]
    assert not capabilities.get("documentFormattingProvider")
    assert capabilities["hoverProvider"]
    assert lsp.close() == 0
