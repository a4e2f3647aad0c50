"""`AsyncClient`: the same calls as `Client`, awaited (httpx.AsyncClient); `list()` is an async iterator."""

from __future__ import annotations

import asyncio
import builtins
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
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
from pagemill_client._client import _as_dict
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

PAGE_CONCURRENCY = 8  # pages() fetches this many pages at a time
# A callback may be a plain function or a coroutine function.
AsyncProgressCallback = Callable[[Progress], Awaitable[None] | None]


class AsyncClient:
    """See `Client`: the same arguments, defaults and retry policy."""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, *, timeout: float = 60.0,
                 max_retries: int = 4, retry: RetryPolicy | None = None,
                 http_client: httpx.AsyncClient | None = None) -> None:
        self.base_url = resolve_base_url(base_url)
        self.retry = retry or RetryPolicy(max_retries=max_retries)
        headers = {"User-Agent": user_agent()}
        if key := resolve_api_key(api_key):
            headers["Authorization"] = f"Bearer {key}"
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._http.base_url, self._http.headers = httpx.URL(self.base_url), httpx.Headers({**headers})

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = await self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if attempt >= self.retry.max_retries:
                    raise APIConnectionError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
                await asyncio.sleep(self.retry.delay(attempt))
            else:
                if response.status_code not in RETRY_STATUSES or attempt >= self.retry.max_retries:
                    return check(response)
                await asyncio.sleep(self.retry.delay(attempt, response))
            attempt += 1

    async def submit(self, file: FileInput, *, filename: str | None = None, pages: str | None = None,
                     mode: Mode | None = None, metadata: dict[str, Any] | None = None,
                     webhook_url: str | None = None, cache: bool = True, do_not_cache: bool = False,
                     idempotency_key: str | None = None, task: Task | None = None,
                     target_language: str | None = None, schema: dict[str, Any] | None = None,
                     figures: bool = True, furniture: Furniture = "drop",
                     merge_tables: bool = True) -> DocumentCreated:
        upload = build_upload(file, filename=filename, pages=pages, mode=mode, metadata=metadata,
                              webhook_url=webhook_url, cache=cache, do_not_cache=do_not_cache,
                              idempotency_key=idempotency_key, task=task,
                              target_language=target_language, schema=schema, figures=figures,
                              furniture=furniture, merge_tables=merge_tables)
        response = await self._request("POST", "/v1/documents", files=upload.files, data=upload.fields,
                                       headers={"Idempotency-Key": upload.idempotency_key})
        return created_from(response)

    async def get(self, document_id: str, *, wait: float = 0) -> DocumentRead:
        params = {"wait": wait} if wait else {}
        timeout = httpx.Timeout(self._http.timeout.read or 60, read=wait + 30) if wait else httpx.USE_CLIENT_DEFAULT
        response = await self._request("GET", f"/v1/documents/{document_id}", params=params, timeout=timeout)
        return DocumentRead.from_json(response.json())

    async def wait(self, document_id: str, *, timeout: float | None = None,
                   on_progress: AsyncProgressCallback | None = None, sse: bool = True) -> DocumentRead:
        deadline = None if timeout is None else time.monotonic() + timeout
        seen: list[tuple[int, int]] = []

        async def report(progress: Progress) -> None:
            counts = (progress.pages_done, progress.pages_failed)
            if on_progress and (not seen or seen[-1] != counts):
                seen.append(counts)
                outcome = on_progress(progress)
                if outcome is not None:
                    await outcome

        if sse:
            try:
                if await self._follow_events(document_id, deadline, report):
                    state = await self.get(document_id)
                    if state.finished:
                        await report(progress_of(document_id, _as_dict(state)))
                        return state
            except (httpx.TransportError, httpx.StreamError, APIConnectionError, ValueError):
                pass  # on to long-polling
            except APIError as exc:
                if exc.status_code < 500:  # the document is missing, or the key wrong: polling would say the same
                    raise
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise WaitTimeout(f"document {document_id} has not finished after {timeout} s",
                                  await self.get(document_id))
            state = await self.get(document_id, wait=min(LONG_POLL_S, remaining) if remaining else LONG_POLL_S)
            await report(progress_of(document_id, _as_dict(state)))
            if state.finished:
                return state

    async def _follow_events(self, document_id: str, deadline: float | None,
                             report: Callable[[Progress], Awaitable[None]]) -> bool:
        timeout = httpx.Timeout(30.0, read=SSE_READ_TIMEOUT_S)
        async with self._http.stream("GET", f"/v1/documents/{document_id}/events", timeout=timeout,
                                     headers={"Accept": "text/event-stream"}) as response:
            if response.status_code >= 400:
                await response.aread()
                check(response)
            if not response.headers.get("content-type", "").startswith("text/event-stream"):
                return False
            parser = SSEParser()
            async for line in response.aiter_lines():
                frame = parser.feed(line)
                if frame and frame[1]:
                    event_type, data = frame
                    await report(progress_of(document_id, data.get("data", data)))
                    if event_type.removeprefix("document.") in FINAL_STATUSES:
                        return True
                if deadline is not None and time.monotonic() > deadline:
                    return False
        return False

    async def result(self, document_id: str, format: Format = "markdown") -> Any:
        response = await self._request("GET", f"/v1/documents/{document_id}/result", params={"format": format})
        return decode_result(response, format)

    async def page(self, document_id: str, n: int) -> PageRead:
        return PageRead.from_json((await self._request("GET", f"/v1/documents/{document_id}/pages/{n}")).json())

    async def pages(self, document_id: str) -> builtins.list[PageRead]:
        total = (await self.get(document_id)).pages_total
        gate = asyncio.Semaphore(PAGE_CONCURRENCY)

        async def one(n: int) -> PageRead:
            async with gate:
                return await self.page(document_id, n)

        return list(await asyncio.gather(*(one(n) for n in range(1, total + 1))))

    async def figure(self, document_id: str, name: str) -> bytes:
        """One figure's image: `name` as the JSON result's `figures[].path` gives it (`figures/p3-e5.png`) or
        without the folder."""
        return (await self._request("GET", f"/v1/documents/{document_id}/figures/{figure_path(name)}")).content

    async def figures(self, document_id: str) -> dict[str, bytes]:
        """Every figure image of a finished document, by path (`figures/p3-e5.png`): save each at its path
        beside the Markdown or LaTeX result and their links work."""
        listed = (await self.result(document_id, "json")).get("figures") or []
        return {figure["path"]: await self.figure(document_id, figure["path"]) for figure in listed}

    async def delete(self, document_id: str) -> DocumentDeleted:
        return DocumentDeleted.from_json((await self._request("DELETE", f"/v1/documents/{document_id}")).json())

    async def parse(self, file: FileInput, *, filename: str | None = None, pages: str | None = None,
                    mode: Mode | None = None, formats: Sequence[Format] | None = None,
                    metadata: dict[str, Any] | None = None, webhook_url: str | None = None,
                    on_progress: AsyncProgressCallback | None = None, timeout: float | None = None,
                    task: Task | None = None, target_language: str | None = None,
                    schema: dict[str, Any] | None = None, figures: bool = True,
                    furniture: Furniture = "drop", merge_tables: bool = True) -> Document:
        formats = formats_for(formats, task)
        created = await self.submit(file, filename=filename, pages=pages, mode=mode, metadata=metadata,
                                    webhook_url=webhook_url, task=task, target_language=target_language,
                                    schema=schema, figures=figures, furniture=furniture,
                                    merge_tables=merge_tables)
        state = await self.wait(created.id, timeout=timeout, on_progress=on_progress)
        if state.status in ("failed", "cancelled"):
            raise DocumentFailed(Document(state))
        results = await asyncio.gather(*(self.result(created.id, fmt) for fmt in formats))
        return Document(state, dict(zip(formats, results, strict=True)))

    async def submit_many(self, files: Sequence[FileInput] = (), *, urls: Sequence[str] = (),
                          mode: Mode | None = None, pages: str | None = None, metadata: dict[str, Any] | None = None,
                          webhook_url: str | None = None) -> BatchCreated:
        parts, data = build_batch(files, urls, mode=mode, metadata=metadata, webhook_url=webhook_url, pages=pages)
        return BatchCreated.from_json((await self._request("POST", "/v1/batches", files=parts, data=data)).json())

    async def batch(self, batch_id: str) -> BatchRead:
        return BatchRead.from_json((await self._request("GET", f"/v1/batches/{batch_id}")).json())

    async def parse_many(self, files: Sequence[FileInput] = (), *, urls: Sequence[str] = (),
                         mode: Mode | None = None, pages: str | None = None, formats: Sequence[Format] | None = None,
                         metadata: dict[str, Any] | None = None, webhook_url: str | None = None,
                         timeout: float | None = None) -> BatchParsed:
        """As Client.parse_many; the documents are waited for side by side."""
        created = await self.submit_many(files, urls=urls, mode=mode, pages=pages, metadata=metadata,
                                         webhook_url=webhook_url)

        async def finish(document_id: str) -> Document:
            state = await self.wait(document_id, timeout=timeout)
            if state.status in ("failed", "cancelled"):
                return Document(state)
            wanted = formats_for(formats, None)
            results = await asyncio.gather(*(self.result(document_id, fmt) for fmt in wanted))
            return Document(state, dict(zip(wanted, results, strict=True)))

        documents = await asyncio.gather(*(finish(item.document_id) for item in created.items if item.document_id))
        return BatchParsed(created.id, list(documents), [item for item in created.items if item.document_id is None])

    async def usage(self, from_: str | None = None, to: str | None = None) -> UsageRead:
        params = {k: v for k, v in (("from", from_), ("to", to)) if v}
        return UsageRead.from_json((await self._request("GET", "/v1/usage", params=params)).json())

    async def list(self, *, status: str | None = None, page_size: int = 50) -> AsyncIterator[DocumentRead]:
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": page_size}
            if cursor:
                params["cursor"] = cursor
            if status:
                params["status"] = status
            body = (await self._request("GET", "/v1/documents", params=params)).json()
            for item in body["data"]:
                yield DocumentRead.from_json(item)
            cursor = body.get("next_cursor")
            if not cursor:
                return
