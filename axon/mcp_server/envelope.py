"""Request lines the MCP SDK would drop without a reply, answered with a JSON-RPC error.

The SDK's stdio reader validates each line as a JSON-RPC message and, when that
fails, sends nothing back: a client that wrote `{not json`, a batch (`[...]`,
which MCP no longer allows), a message without `"jsonrpc": "2.0"` or a request
whose id is null, a fraction or an object would wait forever. `invalid_reply`
decides, before the SDK sees the line, whether it is such a line, and returns the
error response JSON-RPC 2.0 (section 5.1) prescribes: -32700 for text that is
not JSON, -32600 for JSON that is not a valid request, with the request's id
when one can be read and `null` otherwise. Every other line (requests,
notifications, the client's responses) is left for the SDK.
"""

from __future__ import annotations

import json
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def invalid_reply(line: str) -> str | None:
    """The error response line for `line`, or None when the SDK can take it."""
    if not line.strip():
        return None
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return _error(None, PARSE_ERROR, f"Parse error: the line is not JSON ({_reason(exc)})")
    if isinstance(message, list):
        return _error(
            None,
            INVALID_REQUEST,
            "Invalid Request: a batch (a JSON array) is not accepted; send one JSON-RPC "
            "message per line",
        )
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
    request_id = message.get("id")
    readable = _valid_id(request_id)
    if message.get("jsonrpc") != "2.0":
        return _error(
            request_id if readable else None,
            INVALID_REQUEST,
            'Invalid Request: "jsonrpc" must be "2.0"',
        )
    if "id" in message and not readable:
        return _error(
            None,
            INVALID_REQUEST,
            'Invalid Request: "id" must be a string or an integer',
        )
    if "method" in message and not isinstance(message["method"], str):
        return _error(
            request_id if readable else None,
            INVALID_REQUEST,
            'Invalid Request: "method" must be a string',
        )
    if "method" not in message and "result" not in message and "error" not in message:
        return _error(
            request_id if readable else None,
            INVALID_REQUEST,
            'Invalid Request: a message needs a "method" (or is a response with "result" '
            'or "error")',
        )
    return None


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    return str(exc).split(":", 1)[0]


def _error(request_id: Any, code: int, message: str) -> str:
    reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return json.dumps(reply, ensure_ascii=False) + "\n"
