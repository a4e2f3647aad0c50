"""pagemill's REST API as the MCP tools call it: each call carries the caller's own API key, so the API's tenancy,
limits and errors apply to an agent exactly as to any client."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from services.core.errors import clip

LONG_POLL_S = 30.0  # one `GET /v1/documents/{id}?wait=` (the API answers sooner on any change)


class ApiError(Exception):
    """An error answer of the API (`{"error": {"code", "message"}}`), or a failure to reach it (status 503)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.status, self.code, self.message = status, code, message


@dataclass(frozen=True, slots=True)
class Upload:
    filename: str
    content: bytes


class PagemillApi:
    """Async calls to `/v1/documents`. `http` carries the base URL and the `Authorization` header; on the gateway it
    is an in-process transport to the gateway's own app, so a tool call passes the same middleware and routes."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = await self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ApiError(503, "service_unavailable", f"pagemill cannot be reached: {type(exc).__name__}") from exc
        if response.status_code >= 400:
            try:
                error = response.json()["error"]
                code, message = str(error["code"]), str(error["message"])
            except (ValueError, KeyError, TypeError):
                code, message = "error", clip(response.text) or f"HTTP {response.status_code}"
            raise ApiError(response.status_code, code, message)
        return response

    async def submit(self, upload: Upload, fields: dict[str, str]) -> dict[str, Any]:
        files = {"file": (upload.filename, upload.content, "application/octet-stream")}
        response = await self._call("POST", "/v1/documents", files=files, data=fields)
        body: dict[str, Any] = response.json()
        return body

    async def document(self, document_id: str, *, wait: float = 0) -> dict[str, Any]:
        params = {"wait": wait} if wait else {}
        timeout = httpx.Timeout(30.0, read=wait + 30) if wait else httpx.USE_CLIENT_DEFAULT
        body: dict[str, Any] = (await self._call("GET", f"/v1/documents/{document_id}", params=params,
                                                 timeout=timeout)).json()
        return body

    async def result(self, document_id: str, format: str) -> Any:
        """Text for markdown, html and latex (and a task's text answers); parsed JSON for json, chunks, extraction."""
        response = await self._call("GET", f"/v1/documents/{document_id}/result", params={"format": format})
        if response.headers.get("content-type", "").startswith("application/json"):
            return json.loads(response.content)
        return response.text

    async def documents(self, *, limit: int, cursor: str | None, status: str | None) -> dict[str, Any]:
        params: dict[str, Any] = {"limit": limit}
        if cursor:
            params["cursor"] = cursor
        if status:
            params["status"] = status
        body: dict[str, Any] = (await self._call("GET", "/v1/documents", params=params)).json()
        return body
