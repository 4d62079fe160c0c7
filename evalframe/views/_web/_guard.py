"""What every request passes before the viewer answers it.

* **Host.** Bound to a loopback address, the viewer answers only requests addressed to
  ``127.0.0.1``, ``localhost`` or ``[::1]``: a web page elsewhere cannot reach it by
  pointing a name of its own at 127.0.0.1 (DNS rebinding).
* **Token.** When a token is set (always, when bound to any other address), every request
  carries it: ``Authorization: Bearer TOKEN``, or the cookie the page sets when opened once
  with ``?token=TOKEN`` (then redirected to the same address without it, so the token stays
  out of the history and of referrers).
* **Writes.** A request that is not GET or HEAD must be ``application/json`` (a cross-site
  form cannot send that without the browser asking first, and the viewer never allows it),
  and a browser's ``Origin`` and ``Sec-Fetch-Site`` must say it came from the viewer's own
  pages. So another site open in the same browser cannot add labels.
* **Headers.** Every response forbids framing, sniffing and referrers, and pages may run
  scripts only from the viewer's ``/assets/``; nothing but the assets is cached.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode

__all__ = ["COOKIE", "LOOPBACK_NAMES", "Guard"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE: Final = "evalframe_view_token"
LOOPBACK_NAMES: Final = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
CSP: Final = (
    "default-src 'none'; script-src 'self' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
_HEADERS: Final = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
_NO_STORE: Final = (b"cache-control", b"no-store")


def _host_name(host: str) -> str:
    """``host`` without its port (``[::1]:8765`` -> ``[::1]``)."""
    if host.startswith("["):
        return host[: host.index("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class Guard:
    """ASGI middleware: the checks of the module docstring, around ``app``.

    Args:
        app: the application.
        token: the token every request must carry (None: none needed).
        hosts: the host names requests may be addressed to (None: any).
    """

    def __init__(self, app: App, *, token: str | None, hosts: frozenset[str] | None) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no websockets
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if self.hosts is not None and _host_name(host).lower() not in self.hosts:
            await _refuse(send, scope, 421, f"This viewer does not answer for host {host!r}.")
            return
        if self.token is not None:
            given = _token_of(headers, scope)
            if given is None or not hmac.compare_digest(given.encode(), self.token.encode()):
                await _refuse(
                    send,
                    scope,
                    401,
                    "This viewer needs its token: open the address it printed (with "
                    "?token=...), or send Authorization: Bearer TOKEN.",
                )
                return
            if _in_query(scope) and scope["method"] in ("GET", "HEAD"):
                await _set_cookie_and_redirect(send, scope, self.token)
                return
        if scope["method"] not in ("GET", "HEAD"):
            problem = _cross_site(headers, host, scope)
            if problem:
                await _refuse(send, scope, 403, problem)
                return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                given = list(message.get("headers", []))
                cached = any(k.lower() == b"cache-control" for k, _ in given)
                message["headers"] = [*given, *_HEADERS, *(() if cached else (_NO_STORE,))]
            await send(message)

        await self.app(scope, receive, secured)


def _in_query(scope: Scope) -> bool:
    return any(k == "token" for k, _ in parse_qsl(scope.get("query_string", b"").decode()))


def _token_of(headers: dict[str, str], scope: Scope) -> str | None:
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    query: str = scope.get("query_string", b"").decode()
    for k, v in parse_qsl(query):
        if k == "token":
            return v
    if "cookie" in headers:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(headers["cookie"])
        except Exception:  # a malformed cookie header: no token from it
            return None
        if COOKIE in jar:
            return str(jar[COOKIE].value)
    return None


def _cross_site(headers: dict[str, str], host: str, scope: Scope) -> str | None:
    """Why a write request may not come from this viewer's pages, or None."""
    kind = headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        return "Writes take a JSON body (Content-Type: application/json)."
    origin = headers.get("origin")
    if origin is not None:
        scheme = scope.get("scheme", "http")
        if origin.lower() != f"{scheme}://{host}".lower():
            return f"Refused a write from another origin ({origin})."
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return f"Refused a {fetch_site} write."
    return None


async def _refuse(send: Send, scope: Scope, status: int, message: str) -> None:
    import orjson

    path = scope.get("path", "")
    if path.startswith("/api/"):
        body = orjson.dumps({"status": status, "message": message})
        kind = b"application/json"
    else:
        body = message.encode()
        kind = b"text/plain; charset=utf-8"
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", kind),
                (b"content-length", str(len(body)).encode()),
                *_HEADERS,
                _NO_STORE,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _set_cookie_and_redirect(send: Send, scope: Scope, token: str) -> None:
    rest = [(k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode()) if k != "token"]
    path = scope.get("raw_path") or scope.get("path", "/").encode("utf-8")
    target = path.decode("latin-1") + ("?" + urlencode(rest) if rest else "")
    cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", target.encode("latin-1", "replace")),
                (b"set-cookie", cookie.encode()),
                (b"content-length", b"0"),
                *_HEADERS,
                _NO_STORE,
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})
