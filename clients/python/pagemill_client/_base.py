"""What both clients share: settings, the retry policy, building an upload, reading answers and SSE frames."""

from __future__ import annotations

import email.utils
import json
import os
import random
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

from pagemill_client._errors import ERRORS_BY_CODE, APIError
from pagemill_client._models import JSON_FORMATS, DocumentCreated, Progress

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
# Statuses worth another try: over a limit, or the server (or a proxy in front of it) failing for now.
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
FileInput = str | os.PathLike[str] | bytes | IO[bytes]
# The SSE stream sends a comment every 15 s; a read that waits longer means the connection is dead.
SSE_READ_TIMEOUT_S = 40.0
LONG_POLL_S = 30.0


def resolve_base_url(base_url: str | None) -> str:
    return (base_url or os.environ.get("PAGEMILL_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def resolve_api_key(api_key: str | None) -> str | None:
    return api_key or os.environ.get("PAGEMILL_API_KEY") or None


def user_agent() -> str:
    from pagemill_client import __version__

    return f"pagemill-python/{__version__}"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Capped exponential backoff with full jitter; a server's Retry-After wins when it says longer."""

    max_retries: int = 4
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    max_retry_after_s: float = 120.0

    def delay(self, attempt: int, response: httpx.Response | None = None) -> float:
        backoff = random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2**attempt))
        retry_after = parse_retry_after(response.headers.get("retry-after")) if response is not None else None
        if retry_after is not None:
            return min(self.max_retry_after_s, max(retry_after, backoff))
        return backoff


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: a number, or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def error_from(response: httpx.Response) -> APIError:
    try:
        body = response.json()
        error = body["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):  # a proxy's HTML page, say
        body, code, message = response.text[:500], f"http_{response.status_code}", response.text[:200]
    cls = ERRORS_BY_CODE.get(code, APIError)
    return cls(message, status_code=response.status_code, code=code, request_id=response.headers.get("x-request-id"),
               retry_after=parse_retry_after(response.headers.get("retry-after")), body=body)


def check(response: httpx.Response) -> httpx.Response:
    if response.status_code >= 400:
        raise error_from(response)
    return response


@dataclass(frozen=True, slots=True)
class Upload:
    """One upload, read into memory once so every retry sends the same bytes under the same Idempotency-Key."""

    filename: str
    data: bytes
    fields: dict[str, str]
    idempotency_key: str

    @property
    def files(self) -> dict[str, tuple[str, bytes]]:
        return {"file": (self.filename, self.data)}


def build_upload(file: FileInput, *, filename: str | None, pages: str | None, mode: str | None,
                 metadata: dict[str, Any] | None, webhook_url: str | None, cache: bool, do_not_cache: bool,
                 idempotency_key: str | None, task: str | None = None, target_language: str | None = None,
                 schema: dict[str, Any] | None = None, figures: bool = True,
                 furniture: str = "drop", merge_tables: bool = True) -> Upload:
    if isinstance(file, bytes):
        data, name = file, filename or "document"
    elif isinstance(file, str | os.PathLike):
        path = Path(file)
        data, name = path.read_bytes(), filename or path.name
    else:
        data, name = file.read(), filename or Path(str(getattr(file, "name", "document"))).name
    fields: dict[str, str] = {}
    if pages:
        fields["pages"] = pages
    if mode:
        fields["mode"] = mode
    if metadata is not None:
        fields["metadata"] = json.dumps(metadata)
    if webhook_url:
        fields["webhook_url"] = webhook_url
    if not cache:
        fields["cache"] = "false"
    if do_not_cache:
        fields["do_not_cache"] = "true"
    if task:
        fields["task"] = task
    if target_language:
        fields["target_language"] = target_language
    if schema is not None:
        fields["schema"] = json.dumps(schema)
    if not figures:
        fields["figures"] = "false"
    if furniture != "drop":
        fields["furniture"] = furniture
    if not merge_tables:
        fields["merge_tables"] = "false"
    return Upload(name, data, fields, idempotency_key or f"pmc-{uuid.uuid4().hex}")


def created_from(response: httpx.Response) -> DocumentCreated:
    created = DocumentCreated.from_json(response.json())
    if response.headers.get("idempotent-replayed") == "true":
        created = DocumentCreated(**{**{f: getattr(created, f) for f in created.__dataclass_fields__},
                                     "replayed": True})
    return created


def figure_path(name: str) -> str:
    """`figures/p3-e5.png` or `p3-e5.png` -> the route's name, `p3-e5.png`."""
    return name.removeprefix("figures/")


def decode_result(response: httpx.Response, fmt: str) -> Any:
    """Parsed JSON when the server answers JSON (json, chunks), else the text (markdown, html, latex)."""
    content_type = response.headers.get("content-type", "")
    is_json = "json" in content_type if content_type else fmt in JSON_FORMATS
    return response.json() if is_json else response.text


def progress_of(document_id: str, data: dict[str, Any]) -> Progress:
    return Progress(document_id=document_id, status=str(data.get("status", "")),
                    pages_total=int(data.get("pages_total", 0)), pages_done=int(data.get("pages_done", 0)),
                    pages_failed=int(data.get("pages_failed", 0)))


class SSEParser:
    """SSE frames, fed line by line: `feed` returns (event type, JSON data) at a frame's end, ("", {}) for a
    comment (the server's keep-alive, so a caller can look at its clock), else None."""

    def __init__(self) -> None:
        self.event_type, self.data = "message", list[str]()

    def feed(self, line: str) -> tuple[str, dict[str, Any]] | None:
        if line == "":
            frame = (self.event_type, json.loads("\n".join(self.data))) if self.data else None
            self.event_type, self.data = "message", []
            return frame
        if line.startswith(":"):
            return "", {}
        if line.startswith("event:"):
            self.event_type = line[6:].strip()
        elif line.startswith("data:"):
            self.data.append(line[5:].lstrip())
        return None
