"""The gateway's ASGI middleware, outermost first: HEAD answered as GET without its body, each request's id,
metrics and access log, and the refusals made from the headers alone (an upload declared over the size limit).

Plain ASGI rather than `BaseHTTPMiddleware`: the route runs in the middleware's own context (the request id
is bound where the route logs), and a streamed answer is passed on as it is sent, never buffered.
"""

from __future__ import annotations

import time
import uuid

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import JSONResponse
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.core import batches
from services.core.logging import bind_request_id, get_logger
from services.core.metrics import HTTP_LATENCY, HTTP_REQUESTS, UPLOADS_REJECTED

log = get_logger(__name__)

# Requests that are not worth an access log line: probes and scrapes arrive every few seconds.
QUIET_ROUTES = frozenset({"/healthz", "/readyz", "/metrics"})
MAX_REQUEST_ID_CHARS = 64
# What a multipart body may carry beside its file before its declared length alone makes it too large.
FORM_ALLOWANCE_BYTES = 1024 * 1024


def error_response(status_code: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status_code)


class _HeadDone(Exception):
    """Raised into the app when it sends more of a body nobody will read (an event stream would go on)."""


class HeadAsGet:
    """HEAD on any GET route: the route runs as for GET and its status and headers (Content-Length included)
    are sent, its body is not (RFC 9110 §9.3.2). A streamed body is cut off after its first chunk."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        finished = False

        async def send_headers_only(message: Message) -> None:
            nonlocal finished
            if message["type"] == "http.response.start":
                await send(message)
            elif message["type"] == "http.response.body":
                if finished:
                    raise _HeadDone
                finished = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        async def receive_until_done() -> Message:
            if finished:  # a streamed answer waiting for the client to leave: it has
                return {"type": "http.disconnect"}
            return await receive()

        try:
            scope["method"] = "GET"  # in place: the request's record (outside) reads its route from this scope
            await self.app(scope, receive_until_done, send_headers_only)
        except _HeadDone:
            pass


def route_template(scope: Scope) -> str:
    """The matched route's template (`/v1/documents/{document_id}`), never the raw path: labels stay bounded.
    A request answered before routing (an early 413) is matched here; one no route matches is `unmatched`."""
    route = scope.get("route")
    if route is None and "app" in scope:
        route = next((r for r in scope["app"].router.routes if r.matches(scope)[0] == Match.FULL), None)
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "unmatched"


class RequestRecord:
    """Gives each request its id (`X-Request-ID`, taken from the client or made), binds it for the logs, and
    records what was answered: `pagemill_http_requests_total`, the latency histogram and an access log line."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        request_id = (headers.get("x-request-id") or uuid.uuid4().hex)[:MAX_REQUEST_ID_CHARS]
        scope.setdefault("state", {})["request_id"] = request_id
        bind_request_id(request_id)
        sends_body = "content-length" in headers or "transfer-encoding" in headers
        method = scope["method"]  # before `HeadAsGet` (inside) runs a HEAD as GET
        status = 500
        started = time.perf_counter()

        async def send_recorded(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                answer = MutableHeaders(scope=message)
                answer["X-Request-ID"] = request_id
                if status >= 400 and sends_body:
                    # The body may not have been read (a 401 answers before it, a 413 in the middle): close the
                    # connection rather than let the server read and discard the rest of it.
                    answer["Connection"] = "close"
            await send(message)

        try:
            await self.app(scope, receive, send_recorded)
        finally:
            elapsed = time.perf_counter() - started
            route = route_template(scope)
            HTTP_REQUESTS.labels(route=route, method=method, status=str(status)).inc()
            HTTP_LATENCY.labels(route=route, method=method).observe(elapsed)
            if route not in QUIET_ROUTES:
                log.info("http.request", method=method, route=route, status=status, ms=round(elapsed * 1000, 1))


class RefuseOversizedUploads:
    """413 from the `Content-Length` header, before a byte of the body is spooled: a body declared larger than
    the file size limit plus the form's allowance cannot hold an acceptable file."""

    def __init__(self, app: ASGIApp, max_file_bytes: int) -> None:
        self.app, self.max_file_bytes = app, max_file_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            declared = Headers(scope=scope).get("content-length", "")
            limit = self.max_file_bytes
            if scope.get("path") == "/v1/batches":  # many files in one body, each checked by its own upload
                limit *= batches.MAX_DOCUMENTS
            if declared.isdigit() and int(declared) > limit + FORM_ALLOWANCE_BYTES:
                UPLOADS_REJECTED.labels(code="file_too_large").inc()
                response = error_response(413, "file_too_large", f"the file is over the {limit} byte limit")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
