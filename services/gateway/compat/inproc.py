"""pagemill's REST API called in-process from a compatibility route, with the key the caller sent."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
from fastapi import Request

from services.core.db.models import DOCUMENT_FINAL
from services.gateway.mcp.api import LONG_POLL_S, ApiError, PagemillApi, Upload

INTERNAL_BASE_URL = "http://pagemill.internal"

__all__ = ["ApiError", "PagemillApi", "Upload", "open_api", "wait_until_final"]


@contextlib.asynccontextmanager
async def open_api(request: Request, key: str) -> AsyncIterator[PagemillApi]:
    """The gateway's own app (the same middleware and routes), called with `Authorization: Bearer <key>`."""
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=request.app), base_url=INTERNAL_BASE_URL,
                             headers={"Authorization": f"Bearer {key}"}, timeout=None)
    api = PagemillApi(http)
    try:
        yield api
    finally:
        await api.aclose()


async def wait_until_final(api: PagemillApi, document_id: str, timeout_s: float) -> dict[str, Any]:
    """The document once it has ended (long-polls: the API answers as soon as it changes); on timeout, an
    `ApiError` 504 `wait_timeout` naming the document, which goes on and can be fetched later."""
    deadline = time.monotonic() + timeout_s
    state = await api.document(document_id)
    while state["status"] not in {status.value for status in DOCUMENT_FINAL}:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ApiError(504, "wait_timeout", f"document {document_id} did not finish within {timeout_s:.0f} s; "
                                                f"it goes on: GET /v1/documents/{document_id}")
        state = await api.document(document_id, wait=min(LONG_POLL_S, max(left, 1.0)))
    return state
