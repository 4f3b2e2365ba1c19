"""A request in, allowed or refused: Studio's start token, its cookie, the CSRF token of
changes and the security headers of every response.

A random token is made per start and printed in the address (`/?token=T`). A request
carrying it as `token=` gets an HttpOnly SameSite=Strict cookie holding it and is sent
on to the same address without the token (so it stays out of history and referrers); a
request without either is 401, with a wrong one 403. Changes (`--write`) are POSTs that
carry the CSRF token (a second random value, in each form) as `csrf`. Every response
has a Content-Security-Policy without `unsafe-inline` (scripts and styles only from
`/static/`), `nosniff`, no referrer and no framing.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

COOKIE = "axon_studio"

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)

HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


def new_token() -> str:
    return secrets.token_urlsafe(24)


def same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


class TokenGate:
    """ASGI middleware: lets through requests with the token (parameter or cookie), adds
    the security headers to every response."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(
        self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def secured(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v) for k, v in message.get("headers", [])
                    if k.decode().lower() not in HEADERS
                ]
                headers += [(k.encode(), v.encode()) for k, v in HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        given = next((v for k, v in query if k == "token"), None)
        cookie = _cookie(scope)
        if given is not None:
            if not same(given, self.token):
                await _refuse(secured, 403, "wrong token: use the address axon studio printed")
                return
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            location = quote(scope.get("path", "/")) + (f"?{rest}" if rest else "")
            await _redirect(secured, location, self.token)
            return
        if cookie is None:
            await _refuse(secured, 401, "no token: open the address axon studio printed")
            return
        if not same(cookie, self.token):
            await _refuse(secured, 403, "wrong token: open the address axon studio printed")
            return
        await self.app(scope, receive, secured)


def _cookie(scope: dict[str, Any]) -> str | None:
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for name, value in headers:
        if name == b"cookie":
            for part in value.decode("latin-1").split(";"):
                key, _, content = part.strip().partition("=")
                if key == COOKIE:
                    return content
    return None


async def _refuse(send: Callable[[Any], Awaitable[None]], status: int, text: str) -> None:
    body = text.encode()
    await send({
        "type": "http.response.start", "status": status,
        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode())],
    })
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Callable[[Any], Awaitable[None]], location: str, token: str) -> None:
    cookie = f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
    await send({
        "type": "http.response.start", "status": 303,
        "headers": [(b"location", location.encode("latin-1", "replace")),
                    (b"set-cookie", cookie.encode()), (b"content-length", b"0")],
    })
    await send({"type": "http.response.body", "body": b""})
