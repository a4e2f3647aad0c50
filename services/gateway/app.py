"""The gateway: `create_app(settings)` builds the FastAPI app; nothing is read at import time."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path

import kombu.exceptions
import redis
import sqlalchemy as sa
from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import ClientError
from celery import Celery
from fastapi import Depends, FastAPI, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from prometheus_client.registry import Collector
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from services.core import outbox as outbox_module
from services.core.db.session import get_engine
from services.core.errors import DETAIL_CHARS, PagemillError, ServiceUnavailable, clip, describe
from services.core.exporters import scrape_collectors as core_scrape_collectors
from services.core.logging import configure_logging, get_logger
from services.core.metrics import (
    initialise_gateway_series,
    record_rss,
    render_metrics,
)
from services.core.queues import get_celery, send_jobs
from services.core.retry import is_retryable
from services.core.settings import Settings, get_settings
from services.core.storage import get_store
from services.gateway import openapi
from services.gateway.admin.router import router as admin_router
from services.gateway.batches.router import router as batches_router
from services.gateway.compat.llamaparse import router as llamaparse_router
from services.gateway.compat.unstructured import router as unstructured_router
from services.gateway.deps import check_query
from services.gateway.docs import install_docs
from services.gateway.documents.figures import router as figures_router
from services.gateway.documents.images import router as page_images_router
from services.gateway.documents.router import router as documents_router
from services.gateway.mcp.mount import PATH as MCP_PATH
from services.gateway.mcp.mount import McpEndpoint
from services.gateway.middleware import HeadAsGet, RefuseOversizedUploads, RequestRecord, error_response
from services.gateway.tenants.router import router as tenant_router
from services.gateway.usage.router import router as usage_router
from services.gateway.webhooks.router import router as webhooks_router

log = get_logger(__name__)
# A folder, not an import: the gateway serves the files the results service renders with.
KATEX_DIST = Path(__file__).resolve().parents[1] / "results" / "render" / "katex" / "node_modules" / "katex" / "dist"

HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
              405: "method_not_allowed", 409: "conflict", 413: "file_too_large", 415: "unsupported_media_type",
              429: "rate_limited"}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(PagemillError)
    async def pagemill_error(_: Request, exc: PagemillError) -> JSONResponse:
        response = error_response(exc.status_code, exc.code, exc.message)
        response.headers.update(exc.headers)
        return response

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path"))
        return error_response(422, "validation_error", f"{where}: {first.get('msg', 'invalid request')}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        response = error_response(exc.status_code, HTTP_CODES.get(exc.status_code, "error"), str(exc.detail))
        response.headers.update(exc.headers or {})
        if exc.status_code == 405:
            response.headers["Allow"] = allowed_methods(request)
        return response

    @app.exception_handler(redis.RedisError)
    @app.exception_handler(kombu.exceptions.OperationalError)
    async def dependency_down(_: Request, exc: Exception) -> JSONResponse:
        log.warning("request.dependency_down", error=describe(exc))
        unavailable = ServiceUnavailable("a service pagemill depends on (Redis) cannot be reached; try again shortly")
        return await pagemill_error(_, unavailable)

    @app.exception_handler(sa.exc.DBAPIError)
    @app.exception_handler(ClientError)
    @app.exception_handler(S3UploadFailedError)  # the streamed upload's multipart transfer wraps the ClientError
    async def backend_error(_: Request, exc: Exception) -> JSONResponse:
        """The database or the object store blinked (a restart, a 503): the client may retry, nothing was taken."""
        if not is_retryable(exc):
            raise exc  # a real bug: the 500 handler below
        log.warning("request.backend_unavailable", error=describe(exc, DETAIL_CHARS))
        response = error_response(503, "service_unavailable", "a backend is briefly unavailable; retry shortly")
        response.headers["Retry-After"] = "1"
        return response

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("request.error", error=str(exc))
        response = error_response(500, "internal_error", "an unexpected error occurred; it has been logged")
        # Starlette raises the exception on after this answer and uvicorn then closes the connection: said here,
        # so that a client does not send its next request on a connection that is closing
        response.headers["Connection"] = "close"
        return response


def allowed_methods(request: Request) -> str:
    """Every method some route serves on this path (Starlette's `Allow` names only the first route's): the
    documented operations, plus the routes outside the schema (`/metrics`, `/docs`)."""
    path = request.url.path
    methods: set[str] = set()
    for template, operations in request.app.openapi().get("paths", {}).items():
        pattern = "[^/]+".join(re.escape(part) for part in re.split(r"\{[^}]+\}", template))
        if re.fullmatch(pattern, path):
            methods |= {method.upper() for method in operations}
    for route in request.app.routes:
        regex = getattr(route, "path_regex", None)
        if regex is not None and regex.match(path):
            methods |= set(getattr(route, "methods", None) or ())
    if "GET" in methods:  # answered by `HeadAsGet`
        methods.add("HEAD")
    return ", ".join(sorted(methods))


def scrape_collectors(settings: Settings) -> Iterable[Collector]:
    """Queue depth and oldest age (Redis), documents by status and, when enabled, the busiest tenants (DB)."""
    return core_scrape_collectors(settings)


class OutboxMiddleware:
    """Each request is a unit of work: the jobs it enqueues go out after its transactions commit
    (`services.core.outbox`). Plain ASGI, so the outbox is in the context every route and dependency sees."""

    def __init__(self, app: ASGIApp, celery: Callable[[], Celery]) -> None:
        self.app, self.celery = app, celery

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        box = outbox_module.Outbox(lambda jobs: send_jobs(self.celery(), jobs))
        token = outbox_module.bind(box)
        try:
            await self.app(scope, receive, send)
        except BaseException:
            box.discard()
            raise
        finally:
            outbox_module.unbind(token)
        if box.pending:  # enqueued outside a transaction: sent now, off the event loop
            await run_in_threadpool(box.flush)


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """`/mcp` handles requests while the app runs. The document feeds (`deps.get_feeds`) start with the first
    stream; their subscription ends with the app."""
    endpoint: McpEndpoint | None = getattr(app.state, "mcp", None)
    async with endpoint.run() if endpoint is not None else contextlib.nullcontext():
        yield
    feeds = getattr(app.state, "feeds", None)
    if feeds is not None:
        await feeds.close()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    configure_logging(json=settings.log_json, level=settings.log_level)
    app = FastAPI(title="pagemill", version="1.0", summary="PDFs and page images in, Markdown out.",
                  docs_url=None, redoc_url=None, lifespan=lifespan,  # docs: install_docs
                  dependencies=[Depends(check_query)])
    app.state.settings = settings
    install_error_handlers(app)
    openapi.install(app, settings)
    initialise_gateway_series()

    for router in (documents_router, batches_router, page_images_router, figures_router, webhooks_router, usage_router,
                   tenant_router, admin_router, unstructured_router, llamaparse_router):
        app.include_router(router)
    install_docs(app)
    if settings.mcp.enabled:  # the MCP tools; they call the routes above in-process, with the caller's key
        app.state.mcp = McpEndpoint(settings, app)
        app.add_route(MCP_PATH, app.state.mcp, include_in_schema=False)
    if KATEX_DIST.is_dir():  # `make katex`; the same build document.html inlines, for clients typesetting LaTeX
        app.mount("/assets/katex", StaticFiles(directory=KATEX_DIST), name="katex")
    app.add_middleware(OutboxMiddleware, celery=lambda: get_celery(settings))
    # Added innermost first: a request passes RequestRecord, then HeadAsGet, then the upload size check.
    app.add_middleware(RefuseOversizedUploads, max_file_bytes=settings.limits.max_file_bytes)
    app.add_middleware(HeadAsGet)
    app.add_middleware(RequestRecord)

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"])
    async def readyz() -> JSONResponse:
        checks: dict[str, str] = {}

        def check_database() -> None:
            with get_engine(settings.resolved_database_url()).connect() as connection:
                connection.execute(sa.text("SELECT 1"))

        def check_redis() -> None:
            client = redis.Redis.from_url(settings.resolved_redis_url(), socket_timeout=2)
            try:
                client.ping()
            finally:
                client.close()

        for name, check in (("database", check_database), ("redis", check_redis),
                            ("store", lambda: get_store(settings).check())):
            try:
                await run_in_threadpool(check)
                checks[name] = "ok"
            except Exception as exc:  # noqa: BLE001 - report every dependency, not just the first failure
                checks[name] = clip(f"error: {type(exc).__name__}: {exc}")
        ready = all(v == "ok" for v in checks.values())
        return JSONResponse({"status": "ok" if ready else "unavailable", "checks": checks},
                            status_code=200 if ready else 503)

    collectors = list(scrape_collectors(settings))

    @app.get("/metrics", tags=["ops"], include_in_schema=False)
    async def metrics() -> Response:
        record_rss("gateway")
        body, content_type = await run_in_threadpool(render_metrics, collectors)
        return Response(body, media_type=content_type)

    return app
