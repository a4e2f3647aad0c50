"""`/mcp` on the gateway: the MCP tools over streamable HTTP, with a tenant's API key as the bearer token.

    POST /mcp ──key checked (401 as the API answers it)──▶ stateless streamable HTTP (one request, one answer,
              progress notifications on its event stream) ──tool──▶ the gateway's own routes, in-process, same key

Stateless: no MCP session lives in one gateway's memory, so any replica behind a load balancer answers any call.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping

import httpx
from fastapi.concurrency import run_in_threadpool
from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from services.core.settings import Settings
from services.gateway.deps import tenant_of_key
from services.gateway.mcp.api import PagemillApi
from services.gateway.mcp.sources import SourcePolicy
from services.gateway.mcp.tools import build_server
from services.gateway.middleware import FORM_ALLOWANCE_BYTES, error_response

PATH = "/mcp"
INTERNAL_BASE_URL = "http://pagemill.internal"


def bearer_key(headers: Mapping[str, str] | None) -> str:
    value = (headers or {}).get("authorization", "")
    scheme, _, key = value.partition(" ")
    return key.strip() if scheme.lower() == "bearer" else ""


class McpEndpoint:
    """The ASGI endpoint of `/mcp`; `run()` (the gateway's lifespan) starts and ends its request handling."""

    def __init__(self, settings: Settings, gateway: ASGIApp) -> None:
        self.settings, self.gateway = settings, gateway
        policy = SourcePolicy(roots=tuple(settings.mcp.roots), allow_private_urls=settings.webhooks.allow_private_urls,
                              max_bytes=settings.limits.max_file_bytes, fetch_timeout_s=settings.mcp.fetch_timeout_s)
        self.server = build_server(self._open_api, policy)
        self.manager: StreamableHTTPSessionManager | None = None

    @contextlib.asynccontextmanager
    async def _open_api(self, ctx: Context) -> AsyncIterator[PagemillApi]:
        """The gateway's own app, called in-process with the key this MCP request came with."""
        headers = {"Authorization": f"Bearer {bearer_key(ctx.headers)}"}
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.gateway), base_url=INTERNAL_BASE_URL,
                                 headers=headers, timeout=None)
        api = PagemillApi(http)
        try:
            yield api
        finally:
            await api.aclose()

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        # A manager runs once: each lifespan (a test may enter an app's twice) gets a new one.
        self.server.streamable_http_app(
            streamable_http_path=PATH, stateless_http=True,
            # as an upload's body (RefuseOversizedUploads says so first): base64 carries 3/4 of it
            max_request_body_size=self.settings.limits.max_file_bytes + FORM_ALLOWANCE_BYTES,
            # The bearer key, not the Host header, is what guards this endpoint (a browser page cannot send it).
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        manager = self.server.session_manager
        async with manager.run():
            self.manager = manager
            try:
                yield
            finally:
                self.manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = bearer_key(Headers(scope=scope))
        tenant_id = await run_in_threadpool(tenant_of_key, self.settings.resolved_database_url(), key) if key else None
        if tenant_id is None:
            response = error_response(401, "unauthorized", "an API key is required: Authorization: Bearer <key>"
                                      if not key else "the API key is unknown or has been revoked")
            response.headers["WWW-Authenticate"] = "Bearer"
            await response(scope, receive, send)
            return
        if self.manager is None:
            await error_response(503, "service_unavailable", "the MCP endpoint is starting or stopping; retry"
                                 )(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)
