"""The MCP server and its four tools: `parse_document`, `get_document`, `get_result`, `list_documents`.

Each tool calls pagemill's REST API with the caller's key (`api.PagemillApi`), so tenancy, limits and errors are the
API's own. An error answer becomes an MCP error (JSON-RPC `-32602` for a 4xx, `-32603` otherwise) whose `data`
carries pagemill's `code`, the HTTP `status` and the `message`: a client switches on `data.code`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any, Literal

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from services.core.db.models import DOCUMENT_FINAL, DOCUMENT_ID_PATTERN
from services.core.document_tasks import TASK_FORMATS
from services.core.errors import PagemillError, ValidationFailed
from services.core.selection import parse_page_selection
from services.gateway.mcp import sources
from services.gateway.mcp.api import LONG_POLL_S, ApiError, PagemillApi, Upload

# How a tool reaches the API for the request it serves (the gateway: in-process, with the request's key).
ApiOpener = Callable[[Context], AbstractAsyncContextManager[PagemillApi]]

INSTRUCTIONS = ("pagemill parses documents (PDF, images, office files, e-mail) into Markdown. parse_document takes "
                "a path, a URL or base64 content and returns the Markdown; get_result fetches any format of a "
                "finished document, or a page range of it.")
PAGED_FORMATS = ("markdown", "json", "chunks")
ResultFormat = Literal["markdown", "html", "latex", "json", "chunks", "extraction", "translation", "summary"]
DocumentId = Annotated[str, Field(pattern=DOCUMENT_ID_PATTERN, description="a document id (doc_...)")]


def mcp_error(status: int, code: str, message: str, **extra: Any) -> MCPError:
    return MCPError(INVALID_PARAMS if status < 500 else INTERNAL_ERROR, f"{code}: {message}",
                    {"code": code, "status": status, "message": message, **extra})


def _as_mcp_error(exc: Exception) -> MCPError:
    if isinstance(exc, ApiError):
        return mcp_error(exc.status, exc.code, exc.message)
    if isinstance(exc, PagemillError):
        return mcp_error(exc.status_code, exc.code, exc.message)
    raise exc


def _text(body: str | Any) -> str:
    return body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)


def _select_pages(body: dict[str, Any], format: str, spec: str) -> str | Any:
    """The part of a finished document's JSON result on the selected pages (numbers in the uploaded file)."""
    numbers = [page["page_number"] for page in body["pages"]]
    selected = set(parse_page_selection(spec, max(numbers, default=0)))
    pages = [page for page in body["pages"] if page["page_number"] in selected]
    if format == "json":
        return {**body, "pages": pages}
    # The same page markers as the whole document's Markdown.
    return "\n".join(f"<!-- page {page['page_number']} -->\n\n{(page.get('markdown') or '').strip()}\n"
                     if page["status"] == "succeeded" else f"<!-- page {page['page_number']}: {page['status']} -->\n"
                     for page in pages)


def _select_chunks(body: dict[str, Any], spec: str) -> dict[str, Any]:
    pages = {page for chunk in body["chunks"] for page in chunk["pages"]}
    selected = set(parse_page_selection(spec, max(pages, default=0)))
    return {**body, "chunks": [chunk for chunk in body["chunks"] if selected & set(chunk["pages"])]}


def build_server(open_api: ApiOpener, policy: sources.SourcePolicy) -> MCPServer:
    """The tools; `open_api` gives each call its API client, `policy` what `parse_document` may read."""
    server: MCPServer = MCPServer(name="pagemill", instructions=INSTRUCTIONS, version="1.0")

    @server.tool(structured_output=False, annotations=ToolAnnotations(title="Parse a document", open_world_hint=True))
    async def parse_document(
        ctx: Context,
        path: Annotated[str | None, Field(description="a file the server may read (under its allowed folders)")
                        ] = None,
        url: Annotated[str | None, Field(description="an http(s) URL on a public address the server fetches")
                       ] = None,
        content_base64: Annotated[str | None, Field(description="the file itself, base64")] = None,
        filename: Annotated[str | None, Field(description="the file's name (its extension helps with base64)")
                            ] = None,
        mode: Literal["fast", "balanced", "accurate"] | None = None,
        pages: Annotated[str | None, Field(description="pages to parse, like '1-3,7' (default: all)")] = None,
        task: Annotated[Literal["parse", "translate", "extract", "summarize"] | None,
                        Field(description="after parsing, a model task; its answer is returned instead")] = None,
        target_language: Annotated[str | None, Field(description="task=translate: the language")] = None,
        schema: Annotated[dict[str, Any] | None, Field(description="task=extract: a JSON Schema")] = None,
        metadata: Annotated[dict[str, Any] | None, Field(description="stored with the document")] = None,
        furniture: Annotated[Literal["drop", "keep"] | None,
                             Field(description="keep: page headers, footers and numbers stay in the Markdown")] = None,
        figures: Annotated[bool | None, Field(description="false: keep no figure images")] = None,
        wait: Annotated[bool, Field(description="wait for the result (progress notifications as pages end); "
                                                "false: answer at once with the document id")] = True,
        timeout_s: Annotated[float, Field(gt=0, le=3600, description="the longest wait; then an error with "
                                                                     "code wait_timeout and the document id")
                             ] = 600,
    ) -> CallToolResult:
        """Parse a document into Markdown (or run a model task on it) and return the text; the document's id,
        status and page counts come as structured content."""
        try:
            given = [name for name, value in (("path", path), ("url", url), ("content_base64", content_base64))
                     if value]
            if len(given) != 1:
                raise ValidationFailed("give exactly one of path, url and content_base64")
            if path:
                upload = sources.read_path(policy, path)
            elif url:
                upload = await sources.fetch_url(policy, url, filename)
            else:
                upload = sources.read_base64(policy, content_base64 or "", filename)
            if filename:
                upload = Upload(filename, upload.content)
            fields = {name: value for name, value in (
                ("mode", mode), ("pages", pages), ("task", task if task != "parse" else None),
                ("target_language", target_language), ("schema", json.dumps(schema) if schema else None),
                ("metadata", json.dumps(metadata) if metadata else None), ("furniture", furniture),
                ("figures", None if figures is None else str(figures).lower())) if value}
            async with open_api(ctx) as api:
                created = await api.submit(upload, fields)
                document_id = created["id"]
                if not wait:
                    return CallToolResult(content=[TextContent(type="text", text=document_id)],
                                          structured_content=_summary(created))
                state = await _wait(ctx, api, document_id, timeout_s)
                if state["status"] in ("failed", "cancelled"):
                    error = state.get("error") or {"code": state["status"], "message": "the document did not finish"}
                    raise mcp_error(422, error["code"], error["message"], document_id=document_id)
                format = TASK_FORMATS.get(task, "markdown") if task else "markdown"  # type: ignore[call-overload]
                body = await api.result(document_id, format)
        except (ApiError, PagemillError) as exc:
            raise _as_mcp_error(exc) from exc
        return CallToolResult(content=[TextContent(type="text", text=_text(body))], structured_content=_summary(state))

    @server.tool(annotations=ToolAnnotations(title="A document's status", read_only_hint=True))
    async def get_document(ctx: Context, document_id: DocumentId) -> dict[str, Any]:
        """A document's status, page counts, error and the result formats ready to fetch."""
        try:
            async with open_api(ctx) as api:
                return await api.document(document_id)
        except ApiError as exc:
            raise _as_mcp_error(exc) from exc

    @server.tool(structured_output=False, annotations=ToolAnnotations(title="A document's result",
                                                                      read_only_hint=True))
    async def get_result(
        ctx: Context, document_id: DocumentId, format: ResultFormat = "markdown",
        pages: Annotated[str | None, Field(description="markdown, json, chunks: only these pages of the uploaded "
                                                       "file, like '2-4'")] = None,
    ) -> CallToolResult:
        """A finished document in one format: markdown, html, latex, json (pages and elements), chunks (for
        retrieval), or a model task's answer (extraction, translation, summary)."""
        try:
            if pages and format not in PAGED_FORMATS:
                raise ValidationFailed(f"pages: {format} is one piece per document; a page range takes "
                                       f"{', '.join(PAGED_FORMATS)}")
            async with open_api(ctx) as api:
                if pages and format != "chunks":
                    body = _select_pages(await api.result(document_id, "json"), format, pages)
                else:
                    body = await api.result(document_id, format)
                    if pages:
                        body = _select_chunks(body, pages)
        except (ApiError, PagemillError) as exc:
            raise _as_mcp_error(exc) from exc
        return CallToolResult(content=[TextContent(type="text", text=_text(body))])

    @server.tool(annotations=ToolAnnotations(title="The tenant's documents", read_only_hint=True))
    async def list_documents(
        ctx: Context,
        status: Literal["queued", "running", "succeeded", "partial", "failed", "cancelled"] | None = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous answer")] = None,
    ) -> dict[str, Any]:
        """The documents of the API key's tenant, newest first, a page at a time."""
        try:
            async with open_api(ctx) as api:
                return await api.documents(limit=limit, cursor=cursor, status=status)
        except ApiError as exc:
            raise _as_mcp_error(exc) from exc

    server.middleware.append(_KnownArguments(server))
    return server


class _KnownArguments:
    """A tool call naming an argument the tool does not take is refused (`validation_error`), not run without it:
    the SDK would drop it silently, and a misspelt `pags` would parse every page."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.takes: dict[str, frozenset[str]] | None = None

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params
        if ctx.method == "tools/call" and isinstance(params, Mapping) and isinstance(params.get("arguments"), Mapping):
            if self.takes is None:
                self.takes = {tool.name: frozenset(tool.input_schema.get("properties", {}))
                              for tool in await self.server.list_tools()}
            allowed = self.takes.get(str(params.get("name")))
            if allowed is not None and (unknown := sorted(set(params["arguments"]) - allowed)):
                raise mcp_error(422, "validation_error", f"{', '.join(unknown)}: unknown argument of "
                                                         f"{params['name']}; it takes {', '.join(sorted(allowed))}")
        return await call_next(ctx)


def _summary(document: dict[str, Any]) -> dict[str, Any]:
    return {name: document.get(name) for name in ("id", "status", "pages_total", "pages_done", "pages_failed")}


async def _wait(ctx: Context, api: PagemillApi, document_id: str, timeout_s: float) -> dict[str, Any]:
    """Until the document ends, a progress notification per change (pages done and failed out of the total)."""
    deadline = time.monotonic() + timeout_s
    state = await api.document(document_id)
    reported: tuple[Any, ...] = ()
    while True:
        seen = (state["status"], state["pages_done"], state["pages_failed"])
        if seen != reported:
            reported = seen
            await ctx.report_progress(state["pages_done"] + state["pages_failed"], state["pages_total"] or None,
                                      f"{state['status']}: {state['pages_done']} of {state['pages_total']} pages")
        if state["status"] in DOCUMENT_FINAL:
            return state
        left = deadline - time.monotonic()
        if left <= 0:
            raise mcp_error(408, "wait_timeout", f"the document has not finished after {timeout_s:g} s; "
                                                 "follow it with get_document", document_id=document_id)
        state = await api.document(document_id, wait=min(LONG_POLL_S, left))
