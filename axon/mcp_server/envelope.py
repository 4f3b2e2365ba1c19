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

`top_level_id` reads the id of a line too deeply nested to parse (the server refuses
those before the SDK sees them): only the object's own top-level `"id"` member
counts, never one nested in its params.
"""

from __future__ import annotations

import json
import re
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
        return error_reply(None, PARSE_ERROR, f"Parse error: the line is not JSON ({_reason(exc)})")
    if isinstance(message, list):
        return error_reply(
            None,
            INVALID_REQUEST,
            "Invalid Request: a batch (a JSON array) is not accepted; send one JSON-RPC "
            "message per line",
        )
    if not isinstance(message, dict):
        return error_reply(
            None, INVALID_REQUEST, "Invalid Request: a message must be a JSON object"
        )
    request_id = message.get("id")
    readable = _valid_id(request_id)
    if message.get("jsonrpc") != "2.0":
        return error_reply(
            request_id if readable else None,
            INVALID_REQUEST,
            'Invalid Request: "jsonrpc" must be "2.0"',
        )
    if "id" in message and not readable:
        return error_reply(
            None,
            INVALID_REQUEST,
            'Invalid Request: "id" must be a string or an integer',
        )
    if "method" in message and not isinstance(message["method"], str):
        return error_reply(
            request_id if readable else None,
            INVALID_REQUEST,
            'Invalid Request: "method" must be a string',
        )
    if "method" not in message and "result" not in message and "error" not in message:
        return error_reply(
            request_id if readable else None,
            INVALID_REQUEST,
            'Invalid Request: a message needs a "method" (or is a response with "result" '
            'or "error")',
        )
    return None


def top_level_id(line: str) -> str | int | None:
    """The `id` member of the JSON object on `line`, found without parsing the line's
    other values (they may be nested too deeply to parse); None unless the line is one
    object whose top level holds exactly one `"id"`, a string or an integer.

    An `"id"` nested inside the params belongs to none of the client's requests:
    answering under it would reply to the wrong request (or spoof the reply to one
    not yet sent), so only the top level counts. Two top-level ids (parsers differ on
    which wins) or a line whose strings and brackets do not close give None: JSON-RPC
    answers a request whose id cannot be read with a null id.
    """
    end = len(line)
    at = _skip(line, 0)
    if not line.startswith("{", at):
        return None
    at = _skip(line, at + 1)
    ids: list[str] = []
    if line.startswith("}", at):
        return None
    while True:
        key = _STRING.match(line, at)
        if key is None:
            return None
        at = _skip(line, key.end())
        if not line.startswith(":", at):
            return None
        start = _skip(line, at + 1)
        after = _value_end(line, start)
        if after is None:
            return None
        if _decoded(key.group()) == "id":
            ids.append(line[start:after])
        at = _skip(line, after)
        if line.startswith(",", at):
            at = _skip(line, at + 1)
            continue
        if line.startswith("}", at) and _skip(line, at + 1) == end and len(ids) == 1:
            try:
                value = json.loads(ids[0])
            except ValueError:  # an integer of more digits than Python converts
                return None
            return value if _valid_id(value) else None
        return None


_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null")
_BRACKET = re.compile(r'["\[\]{}]')
_CLOSES = {"[": "]", "{": "}"}


def _skip(line: str, at: int) -> int:
    """The index of the first character from `at` on that is not JSON whitespace."""
    while at < len(line) and line[at] in " \t\r\n":
        at += 1
    return at


def _decoded(token: str) -> str | None:
    try:
        value = json.loads(token)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _value_end(line: str, at: int) -> int | None:
    """The index just past the JSON value starting at `at` (its strings and brackets
    followed, without recursion, so any depth is read), or None when it does not close."""
    if line.startswith('"', at):
        string = _STRING.match(line, at)
        return string.end() if string else None
    if not line.startswith(("[", "{"), at):
        scalar = _SCALAR.match(line, at)
        return scalar.end() if scalar else None
    open_brackets: list[str] = []
    while True:
        found = _BRACKET.search(line, at)
        if found is None:
            return None
        char = found.group()
        if char == '"':
            string = _STRING.match(line, found.start())
            if string is None:
                return None
            at = string.end()
            continue
        at = found.end()
        if char in _CLOSES:
            open_brackets.append(_CLOSES[char])
        elif not open_brackets or open_brackets.pop() != char:
            return None
        if not open_brackets:
            return at


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    return str(exc).split(":", 1)[0]


def error_reply(request_id: Any, code: int, message: str) -> str:
    """JSON-RPC's error response to `request_id` (None: unknown), as one line."""
    reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return json.dumps(reply, ensure_ascii=False) + "\n"
