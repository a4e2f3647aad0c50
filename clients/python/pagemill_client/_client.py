"""`Client`: the synchronous SDK (httpx). `AsyncClient` in _async_client.py mirrors it call for call."""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import httpx

from pagemill_client._base import (
    LONG_POLL_S,
    RETRY_STATUSES,
    SSE_READ_TIMEOUT_S,
    FileInput,
    RetryPolicy,
    SSEParser,
    build_upload,
    check,
    created_from,
    decode_result,
    figure_path,
    progress_of,
    resolve_api_key,
    resolve_base_url,
    user_agent,
)
from pagemill_client._batches import BatchCreated, BatchParsed, BatchRead, build_batch
from pagemill_client._errors import APIConnectionError, APIError, DocumentFailed, WaitTimeout
from pagemill_client._models import (
    FINAL_STATUSES,
    Document,
    DocumentCreated,
    DocumentDeleted,
    DocumentRead,
    Format,
    Furniture,
    Mode,
    PageRead,
    Progress,
    Task,
    UsageRead,
    formats_for,
)

ProgressCallback = Callable[[Progress], None]


class Client:
    """A pagemill API client. `base_url` defaults to $PAGEMILL_BASE_URL (else http://127.0.0.1:8000), `api_key`
    to $PAGEMILL_API_KEY. Requests are retried `max_retries` times on 429, 5xx and connection errors."""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, *, timeout: float = 60.0,
                 max_retries: int = 4, retry: RetryPolicy | None = None,
                 http_client: httpx.Client | None = None) -> None:
        self.base_url = resolve_base_url(base_url)
        self.retry = retry or RetryPolicy(max_retries=max_retries)
        headers = {"User-Agent": user_agent()}
        if key := resolve_api_key(api_key):
            headers["Authorization"] = f"Bearer {key}"
        self._http = http_client or httpx.Client(timeout=timeout)
        self._http.base_url, self._http.headers = httpx.URL(self.base_url), httpx.Headers({**headers})

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One call with the retry policy; raises the API's typed error, or APIConnectionError."""
        attempt = 0
        while True:
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if attempt >= self.retry.max_retries:
                    raise APIConnectionError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
                time.sleep(self.retry.delay(attempt))
            else:
                if response.status_code not in RETRY_STATUSES or attempt >= self.retry.max_retries:
                    return check(response)
                time.sleep(self.retry.delay(attempt, response))
            attempt += 1

    # documents ---------------------------------------------------------------------------------------------

    def submit(self, file: FileInput, *, filename: str | None = None, pages: str | None = None,
               mode: Mode | None = None, metadata: dict[str, Any] | None = None, webhook_url: str | None = None,
               cache: bool = True, do_not_cache: bool = False, idempotency_key: str | None = None,
               task: Task | None = None, target_language: str | None = None,
               schema: dict[str, Any] | None = None, figures: bool = True,
               furniture: Furniture = "drop", merge_tables: bool = True) -> DocumentCreated:
        """Uploads a file (a path, bytes or a binary file object). Every retry carries the same Idempotency-Key
        (made here unless given), so a retried upload never makes a second document. `task`: parse (default),
        translate (`target_language`), extract (a JSON Schema in `schema`) or summarize; the answer is the
        result format extraction, translation or summary."""
        upload = build_upload(file, filename=filename, pages=pages, mode=mode, metadata=metadata,
                              webhook_url=webhook_url, cache=cache, do_not_cache=do_not_cache,
                              idempotency_key=idempotency_key, task=task,
                              target_language=target_language, schema=schema, figures=figures,
                              furniture=furniture, merge_tables=merge_tables)
        response = self._request("POST", "/v1/documents", files=upload.files, data=upload.fields,
                                 headers={"Idempotency-Key": upload.idempotency_key})
        return created_from(response)

    def get(self, document_id: str, *, wait: float = 0) -> DocumentRead:
        """The document's state; `wait` long-polls up to that many seconds (60 at most) for a change."""
        params = {"wait": wait} if wait else {}
        timeout = httpx.Timeout(self._http.timeout.read or 60, read=wait + 30) if wait else httpx.USE_CLIENT_DEFAULT
        response = self._request("GET", f"/v1/documents/{document_id}", params=params, timeout=timeout)
        return DocumentRead.from_json(response.json())

    def wait(self, document_id: str, *, timeout: float | None = None, on_progress: ProgressCallback | None = None,
             sse: bool = True) -> DocumentRead:
        """Until the document ends: follows its server-sent events, falling back to long-polling when the stream
        cannot be had (a proxy that buffers, a dropped connection). Raises WaitTimeout after `timeout` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        seen: list[tuple[int, int]] = []

        def report(progress: Progress) -> None:
            counts = (progress.pages_done, progress.pages_failed)
            if on_progress and (not seen or seen[-1] != counts):
                seen.append(counts)
                on_progress(progress)

        if sse:
            try:
                if self._follow_events(document_id, deadline, report):
                    state = self.get(document_id)
                    if state.finished:
                        report(progress_of(document_id, _as_dict(state)))
                        return state
            except (httpx.TransportError, httpx.StreamError, APIConnectionError, ValueError):
                pass  # on to long-polling
            except APIError as exc:
                if exc.status_code < 500:  # the document is missing, or the key wrong: polling would say the same
                    raise
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise WaitTimeout(f"document {document_id} has not finished after {timeout} s", self.get(document_id))
            state = self.get(document_id, wait=min(LONG_POLL_S, remaining) if remaining else LONG_POLL_S)
            report(progress_of(document_id, _as_dict(state)))
            if state.finished:
                return state

    def _follow_events(self, document_id: str, deadline: float | None, report: ProgressCallback) -> bool:
        """True once the final event arrived; False when the stream ended (or the deadline came) before it."""
        timeout = httpx.Timeout(30.0, read=SSE_READ_TIMEOUT_S)
        with self._http.stream("GET", f"/v1/documents/{document_id}/events", timeout=timeout,
                               headers={"Accept": "text/event-stream"}) as response:
            if response.status_code >= 400:
                response.read()
                check(response)
            if not response.headers.get("content-type", "").startswith("text/event-stream"):
                return False
            parser = SSEParser()
            for line in response.iter_lines():
                frame = parser.feed(line)
                if frame and frame[1]:
                    event_type, data = frame
                    report(progress_of(document_id, data.get("data", data)))
                    if event_type.removeprefix("document.") in FINAL_STATUSES:
                        return True
                if deadline is not None and time.monotonic() > deadline:
                    return False
        return False

    def result(self, document_id: str, format: Format = "markdown") -> Any:
        """The finished document in one format: text for markdown, html and latex; parsed JSON for json, chunks."""
        response = self._request("GET", f"/v1/documents/{document_id}/result", params={"format": format})
        return decode_result(response, format)

    def page(self, document_id: str, n: int) -> PageRead:
        """Page `n` (1-based position in the document)."""
        return PageRead.from_json(self._request("GET", f"/v1/documents/{document_id}/pages/{n}").json())

    def pages(self, document_id: str) -> builtins.list[PageRead]:
        total = self.get(document_id).pages_total
        return [self.page(document_id, n) for n in range(1, total + 1)]

    def figure(self, document_id: str, name: str) -> bytes:
        """One figure's image: `name` as the JSON result's `figures[].path` gives it (`figures/p3-e5.png`) or
        without the folder."""
        return (self._request("GET", f"/v1/documents/{document_id}/figures/{figure_path(name)}")).content

    def figures(self, document_id: str) -> dict[str, bytes]:
        """Every figure image of a finished document, by path (`figures/p3-e5.png`): save each at its path
        beside the Markdown or LaTeX result and their links work."""
        listed = (self.result(document_id, "json")).get("figures") or []
        return {figure["path"]: self.figure(document_id, figure["path"]) for figure in listed}

    def delete(self, document_id: str) -> DocumentDeleted:
        """Cancels what is pending and erases the document's stored data."""
        return DocumentDeleted.from_json(self._request("DELETE", f"/v1/documents/{document_id}").json())

    def parse(self, file: FileInput, *, filename: str | None = None, pages: str | None = None,
              mode: Mode | None = None, formats: Sequence[Format] | None = None,
              metadata: dict[str, Any] | None = None, webhook_url: str | None = None,
              on_progress: ProgressCallback | None = None, timeout: float | None = None,
              task: Task | None = None, target_language: str | None = None,
              schema: dict[str, Any] | None = None, figures: bool = True,
              furniture: Furniture = "drop", merge_tables: bool = True) -> Document:
        """Upload, wait, fetch `formats` (default: Markdown, and the task's answer for a model task). Raises
        DocumentFailed when the document ends failed or cancelled."""
        formats = formats_for(formats, task)
        created = self.submit(file, filename=filename, pages=pages, mode=mode, metadata=metadata,
                              webhook_url=webhook_url, task=task, target_language=target_language, schema=schema,
                              figures=figures, furniture=furniture,
                              merge_tables=merge_tables)
        state = self.wait(created.id, timeout=timeout, on_progress=on_progress)
        if state.status in ("failed", "cancelled"):
            raise DocumentFailed(Document(state))
        return Document(state, {fmt: self.result(created.id, fmt) for fmt in formats})

    def submit_many(self, files: Sequence[FileInput] = (), *, urls: Sequence[str] = (), mode: Mode | None = None,
                    pages: str | None = None, metadata: dict[str, Any] | None = None,
                    webhook_url: str | None = None) -> BatchCreated:
        """Files and URLs (which the server fetches) as one batch; each item's document id, or why it was refused.
        `metadata` is the batch's; `batch.completed` goes to `webhook_url` (and the tenant's webhooks)."""
        parts, data = build_batch(files, urls, mode=mode, metadata=metadata, webhook_url=webhook_url, pages=pages)
        return BatchCreated.from_json(self._request("POST", "/v1/batches", files=parts, data=data).json())

    def batch(self, batch_id: str) -> BatchRead:
        """A batch's documents per status."""
        return BatchRead.from_json(self._request("GET", f"/v1/batches/{batch_id}").json())

    def parse_many(self, files: Sequence[FileInput] = (), *, urls: Sequence[str] = (), mode: Mode | None = None,
                   pages: str | None = None, formats: Sequence[Format] | None = None,
                   metadata: dict[str, Any] | None = None, webhook_url: str | None = None,
                   timeout: float | None = None) -> BatchParsed:
        """One batch, waited for: every accepted item's Document with `formats` (default: Markdown), in the order
        given; a document that failed comes back with its state and no results, never as an exception."""
        created = self.submit_many(files, urls=urls, mode=mode, pages=pages, metadata=metadata,
                                   webhook_url=webhook_url)
        deadline = None if timeout is None else time.monotonic() + timeout
        documents = []
        for item in created.items:
            if item.document_id is None:
                continue
            left = None if deadline is None else max(deadline - time.monotonic(), 0.001)
            state = self.wait(item.document_id, timeout=left)
            results: dict[str, Any] = {} if state.status in ("failed", "cancelled") else {
                fmt: self.result(item.document_id, fmt) for fmt in formats_for(formats, None)}
            documents.append(Document(state, results))
        return BatchParsed(created.id, documents, [item for item in created.items if item.document_id is None])

    def usage(self, from_: str | None = None, to: str | None = None) -> UsageRead:
        """Pages that ended in [from_, to) (ISO dates or date-times), by mode and engine."""
        params = {k: v for k, v in (("from", from_), ("to", to)) if v}
        return UsageRead.from_json(self._request("GET", "/v1/usage", params=params).json())

    def list(self, *, status: str | None = None, page_size: int = 50) -> Iterator[DocumentRead]:
        """Every document of the tenant, newest first, fetching pages of `page_size` as it goes."""
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": page_size}
            if cursor:
                params["cursor"] = cursor
            if status:
                params["status"] = status
            body = self._request("GET", "/v1/documents", params=params).json()
            yield from (DocumentRead.from_json(d) for d in body["data"])
            cursor = body.get("next_cursor")
            if not cursor:
                return


def _as_dict(state: DocumentRead) -> dict[str, Any]:
    return {"status": state.status, "pages_total": state.pages_total, "pages_done": state.pages_done,
            "pages_failed": state.pages_failed}

