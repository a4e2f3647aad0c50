"""The error shape both drop-in APIs answer in (FastAPI's `{"detail": message}`), with pagemill's `code` beside it."""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse

DETAIL_SCHEMA = {"type": "object", "required": ["detail"],
                 "properties": {"detail": {"type": "string"}, "code": {"type": "string"}}}


# What the framework refuses before the route runs answers in pagemill's own shape: a malformed query or path
# parameter (422), a body that is not multipart at all (400, "Invalid multipart data.").
EITHER_SCHEMA = {"anyOf": [DETAIL_SCHEMA, {"$ref": "#/components/schemas/ErrorResponse"}]}


def detail_errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI `responses` entries of these error statuses (400 and 422 also in pagemill's shape: see above)."""
    return {status: {"description": "the client's error shape, with pagemill's code",
                     "content": {"application/json": {
                         "schema": EITHER_SCHEMA if status in (400, 422) else DETAIL_SCHEMA}}}
            for status in statuses}


class DetailError(Exception):
    """An answer to refuse with: its status, pagemill's code and the message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message

    def response(self) -> JSONResponse:
        return JSONResponse({"detail": self.message, "code": self.code}, status_code=self.status)
