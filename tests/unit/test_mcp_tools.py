"""The MCP tools in-process, with the SDK's client and no pagemill behind them: what is refused before any API
call (unknown arguments, arguments off the schema, a path with no roots, not exactly one source), and the page
selections of `get_result`. tests/clients/test_mcp.py runs them against a running pagemill."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from services.core.errors import ValidationFailed
from services.gateway.mcp.api import PagemillApi
from services.gateway.mcp.sources import SourcePolicy
from services.gateway.mcp.tools import _select_chunks, _select_pages, build_server


@contextlib.asynccontextmanager
async def no_api(_: object) -> AsyncIterator[PagemillApi]:
    raise AssertionError("the call reached the API")
    yield  # pragma: no cover


def call(tool: str, arguments: dict[str, Any]) -> Any:
    async def main() -> Any:
        async with Client(build_server(no_api, SourcePolicy())) as client:
            try:
                return await client.call_tool(tool, arguments)
            except MCPError as exc:  # inside the session: leaving it would wrap it in an exception group
                return exc

    return anyio.run(main)


def test_unknown_arguments_are_refused_not_dropped() -> None:
    error = call("get_result", {"document_id": "doc_" + "0" * 32, "pags": "1-2"})
    assert isinstance(error, MCPError) and error.code == -32602
    assert error.data["code"] == "validation_error" and error.data["message"].startswith("pags: unknown argument")


def test_arguments_off_the_schema_are_a_tool_error() -> None:
    result = call("parse_document", {"content_base64": "AAAA", "mode": "fastest"})
    assert result.is_error and "mode" in result.content[0].text
    assert call("get_document", {"document_id": "../etc"}).is_error


@pytest.mark.parametrize(("arguments", "message"), [
    ({"path": "report.pdf"}, "path: this server reads no files by path"),
    ({}, "exactly one of path, url and content_base64"),
    ({"content_base64": "AAAA", "url": "https://example.com/a.pdf"}, "exactly one of"),
    ({"content_base64": "not base64!"}, "content_base64: not valid base64"),
])
def test_sources_refused_before_any_call(arguments: dict[str, Any], message: str) -> None:
    error = call("parse_document", arguments)
    assert isinstance(error, MCPError) and error.data["code"] == "validation_error" and message in error.message


def test_a_page_range_of_html_is_refused() -> None:
    error = call("get_result", {"document_id": "doc_" + "0" * 32, "format": "html", "pages": "1"})
    assert isinstance(error, MCPError) and "a page range takes markdown, json, chunks" in error.data["message"]


def page(number: int, status: str = "succeeded") -> dict[str, Any]:
    return {"page_number": number, "status": status, "markdown": f"text of {number}"}


def test_page_selections() -> None:
    body = {"id": "doc_x", "pages": [page(3), page(4, "failed"), page(5)]}  # a `pages="3-5"` upload
    assert _select_pages(body, "markdown", "4-5") == "<!-- page 4: failed -->\n\n<!-- page 5 -->\n\ntext of 5\n"
    assert [p["page_number"] for p in _select_pages(body, "json", "3,5")["pages"]] == [3, 5]
    with pytest.raises(ValidationFailed, match="the document has 5 pages"):
        _select_pages(body, "json", "6")
    chunks = {"chunks": [{"id": "c1", "pages": [3]}, {"id": "c2", "pages": [3, 4]}, {"id": "c3", "pages": [5]}]}
    assert [c["id"] for c in _select_chunks(chunks, "4")["chunks"]] == ["c2"]
