"""A small Language Server Protocol client over a subprocess's stdio, as an editor talks.

JSON-RPC 2.0 framed by `Content-Length` headers; a reader thread files responses
by id and keeps notifications in order. Used by tests/editors/test_lsp_server.py
and benchmarks/lsp.py.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class LspError(Exception):
    """The server answered a request with an error: `code` and `message`."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message", ""))
        self.code = error.get("code")


class LspClient:
    """`axon lsp` started as a subprocess, driven over its stdin and stdout."""

    def __init__(self, *command: str, cwd: Path | None = None) -> None:
        command = command or (sys.executable, "-m", "axon.cli", "lsp")
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd or ROOT,
            env={**os.environ, "AXON_EMBEDDER": "hashing"},
        )
        self._next_id = 0
        self._responses: dict[int, dict[str, Any]] = {}
        self._answered = threading.Condition()
        self.notifications: queue.Queue[dict[str, Any]] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # ------------------------------------------------------------ wire
    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            assert length is not None, "a message without Content-Length"
            message = json.loads(stream.read(length))
            if "id" in message and "method" not in message:
                with self._answered:
                    self._responses[message["id"]] = message
                    self._answered.notify_all()
            elif "id" in message:  # a request from the server (e.g. registerCapability)
                self._send({"id": message["id"], "result": None})
            else:
                self.notifications.put(message)

    # ------------------------------------------------------------ calls
    def request(self, method: str, params: Any = None, timeout: float = 60) -> Any:
        self._next_id += 1
        id_ = self._next_id
        self._send({"id": id_, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        with self._answered:
            while id_ not in self._responses:
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and id_ not in self._responses):
                    raise TimeoutError(f"no answer to {method}: {self.stderr_so_far()}")
                self._answered.wait(min(left, 0.5))
            response = self._responses.pop(id_)
        if "error" in response:
            raise LspError(response["error"])
        return response.get("result")

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"method": method, "params": params})

    def wait_for(self, method: str, timeout: float = 60, **match: Any) -> dict[str, Any]:
        """The params of the next notification `method` whose params hold `match`."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {method} {match}: {self.stderr_so_far()}")
            try:
                message = self.notifications.get(timeout=left)
            except queue.Empty:
                continue
            params = message.get("params") or {}
            if message.get("method") == method and all(
                params.get(k) == v for k, v in match.items()
            ):
                return params  # type: ignore[no-any-return]

    def stderr_so_far(self) -> str:
        if self.process.poll() is None:
            return "(server running)"
        assert self.process.stderr is not None
        return self.process.stderr.read().decode("utf-8", "replace")

    # ------------------------------------------------------------ session
    def initialize(self, root: Path | None = None) -> dict[str, Any]:
        result = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": (root or ROOT).as_uri(),
                "capabilities": {
                    "textDocument": {
                        "hover": {"contentFormat": ["markdown", "plaintext"]},
                        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
                        "rename": {"prepareSupport": True},
                    }
                },
            },
        )
        self.notify("initialized", {})
        self.capabilities: dict[str, Any] = result["capabilities"]
        return result  # type: ignore[no-any-return]

    def open(self, uri: str, text: str, version: int = 1) -> dict[str, Any]:
        """Open a document; the diagnostics published for it."""
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "axon", "version": version, "text": text}},
        )
        return self.wait_for("textDocument/publishDiagnostics", uri=uri, version=version)

    def close(self) -> int:
        """shutdown, exit; the server's exit status."""
        self.request("shutdown")
        self.notify("exit")
        try:
            return self.process.wait(timeout=30)
        finally:
            for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
                if stream is not None:
                    stream.close()
