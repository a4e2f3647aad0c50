"""The MCP server with the `mcp` SDK's own client against a running pagemill (gateway, Celery workers, Redis,
SQLite): the tool list, a parse with progress notifications over streamable HTTP, a file by path and by URL, errors
as MCP errors with pagemill's codes, another tenant's document not found, and `pagemill mcp` over stdio."""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.harness import REPO, Platform

pytestmark = pytest.mark.slow
T = TypeVar("T")
TOOLS = {"parse_document", "get_document", "get_result", "list_documents"}


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, redis_server: str, corpus: Path) -> Iterator[Platform]:
    workdir = tmp_path_factory.mktemp("mcp")
    platform = Platform(workdir=workdir, database_url=f"sqlite:///{workdir / 'pagemill.db'}",
                        redis_base_url=redis_server, engine="fake",
                        extra_env={"PAGEMILL_ENGINE__FAKE_LATENCY_MS": "150",
                                   "PAGEMILL_MCP__ROOTS": json.dumps([str(corpus / "dev")])})
    platform.start(concurrency=2)
    yield platform
    platform.stop()


@pytest.fixture
def pdf(corpus: Path) -> Path:
    return corpus / "dev" / "docling_multi_page" / "multi_page.pdf"


def over_http(platform: Platform, key: str | None = None, *, mode: str = "auto") -> Client:
    """`mode="legacy"`: the 2025 protocol's initialize handshake, which most agents of the day still speak."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key or platform.api_key}"},
                              timeout=httpx2.Timeout(30, read=300))
    return Client(streamable_http_client(f"{platform.url}/mcp", http_client=http), mode=mode)


def run(session: Client, work: Callable[[Client], Awaitable[T]]) -> T:
    async def main() -> T:
        async with session as client:
            return await work(client)

    return asyncio.run(main())


def error_of(session: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The MCP error the call answers (caught inside the session: leaving it wraps it in an exception group)."""
    async def call(client: Client) -> MCPError:
        with pytest.raises(MCPError) as raised:
            await client.call_tool(tool, arguments)
        return raised.value

    error = run(session, call)
    data: dict[str, Any] = error.data
    assert error.message.startswith(data["code"])
    return data


def test_tools_are_listed(platform: Platform) -> None:
    async def tools(client: Client) -> Any:
        return (await client.list_tools()).tools

    listed = {tool.name: tool for tool in run(over_http(platform), tools)}
    assert set(listed) == TOOLS
    schema = listed["parse_document"].input_schema["properties"]
    assert {"path", "url", "content_base64", "mode", "pages", "task", "wait"} <= set(schema)
    assert listed["get_result"].input_schema["properties"]["format"]["enum"][:5] == [
        "markdown", "html", "latex", "json", "chunks"]


@pytest.mark.parametrize(("mode", "first"), [("auto", 1), ("legacy", 2)])  # other pages: not the result cache's
def test_parse_reports_progress_and_returns_markdown(platform: Platform, pdf: Path, mode: str, first: int) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def note(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def parse(client: Client) -> Any:
        return await client.call_tool("parse_document", {
            "content_base64": base64.b64encode(pdf.read_bytes()).decode(), "filename": pdf.name,
            "pages": f"{first}-{first + 2}"}, progress_callback=note)

    result = run(over_http(platform, mode=mode), parse)
    assert not result.is_error
    markdown = result.content[0].text
    assert [line for line in markdown.splitlines() if line.startswith("<!-- page")] == [
        f"<!-- page {n} -->" for n in range(first, first + 3)]
    assert "fake engine output" in markdown
    assert result.structured_content["status"] == "succeeded" and result.structured_content["pages_done"] == 3
    # notifications as pages ended: counts never go back, and the last one is the whole document
    assert len(progress) >= 2 and progress[-1][:2] == (3, 3) and progress[-1][2].startswith("succeeded")
    assert [p[0] for p in progress] == sorted(p[0] for p in progress)

    document_id = result.structured_content["id"]

    async def read_back(client: Client) -> tuple[Any, Any, Any]:
        state = await client.call_tool("get_document", {"document_id": document_id})
        middle = await client.call_tool("get_result", {"document_id": document_id, "pages": str(first + 1)})
        chunks = await client.call_tool("get_result", {"document_id": document_id, "format": "chunks",
                                                       "pages": str(first + 2)})
        return state, middle, chunks

    state, middle, chunks = run(over_http(platform, mode=mode), read_back)
    assert state.structured_content["id"] == document_id and "markdown" in state.structured_content["formats"]
    text = middle.content[0].text
    assert text.startswith(f"<!-- page {first + 1} -->") and text.count("<!-- page") == 1
    selected = json.loads(chunks.content[0].text)["chunks"]
    assert selected and all(first + 2 in chunk["pages"] for chunk in selected)


def test_parse_by_path_without_waiting_then_list(platform: Platform, pdf: Path) -> None:
    async def submit(client: Client) -> tuple[Any, Any]:
        created = await client.call_tool("parse_document", {"path": str(pdf), "pages": "1", "wait": False,
                                                            "furniture": "keep", "figures": False})
        listed = await client.call_tool("list_documents", {"limit": 50})
        return created, listed

    created, listed = run(over_http(platform), submit)
    document_id = created.content[0].text
    assert document_id.startswith("doc_") and created.structured_content["id"] == document_id
    assert document_id in [d["id"] for d in listed.structured_content["data"]]
    platform.wait_done(document_id)


def test_path_outside_the_roots_is_refused(platform: Platform, tmp_path: Path) -> None:
    outside = tmp_path / "secret.pdf"
    outside.write_bytes(b"%PDF-1.4")
    data = error_of(over_http(platform), "parse_document", {"path": str(outside)})
    assert data["code"] == "validation_error" and data["status"] == 422 and "outside" in data["message"]
    traversal = error_of(over_http(platform), "parse_document", {"path": "../../../../etc/passwd"})
    assert traversal["code"] == "validation_error"


def test_parse_by_url(platform: Platform, pdf: Path) -> None:
    """The gateway fetches the URL (the platform allows loopback receivers, as its webhooks do)."""
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(pdf.parent))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{pdf.name}"

        async def parse(client: Client) -> Any:
            return await client.call_tool("parse_document", {"url": url, "pages": "2"})

        result = run(over_http(platform), parse)
        assert result.content[0].text.startswith("<!-- page 2 -->")
        missing = error_of(over_http(platform), "parse_document", {"url": url + ".missing"})
        assert missing["code"] == "validation_error" and "404" in missing["message"]
    finally:
        server.shutdown()


def test_errors_carry_pagemill_codes_and_tenants_stay_apart(platform: Platform, pdf: Path) -> None:
    mine = platform.upload(pdf)["id"]
    platform.wait_done(mine)
    other = platform.create_tenant("mcp-other")
    data = error_of(over_http(platform, other.key), "get_document", {"document_id": mine})
    assert data == {"code": "not_found", "status": 404, "message": data["message"]}
    assert error_of(over_http(platform, other.key), "get_result", {"document_id": mine})["code"] == "not_found"
    bad = error_of(over_http(platform), "get_result", {"document_id": mine, "format": "html", "pages": "1"})
    assert bad["code"] == "validation_error"
    # the upload's own refusal, as the REST API gives it
    words = base64.b64encode(b"plain words").decode()
    text = error_of(over_http(platform), "parse_document", {"content_base64": words})
    assert text["code"] == "unsupported_media_type" and text["status"] == 415
    neither = error_of(over_http(platform), "parse_document", {"mode": "fast"})
    assert neither["code"] == "validation_error" and "exactly one" in neither["message"]

    async def listed(client: Client) -> Any:
        return await client.call_tool("list_documents", {})

    assert mine not in [d["id"] for d in run(over_http(platform, other.key), listed).structured_content["data"]]


def test_the_endpoint_needs_an_api_key(platform: Platform) -> None:
    for headers in ({}, {"Authorization": "Bearer pm_not_a_key"}):
        response = httpx.post(f"{platform.url}/mcp", headers=headers, timeout=30,
                              json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert response.status_code == 401 and response.json()["error"]["code"] == "unauthorized"
        assert response.headers["www-authenticate"] == "Bearer"


def test_stdio_server(platform: Platform, pdf: Path, tmp_path: Path) -> None:
    """`pagemill mcp` as an agent starts it: a subprocess on stdin/stdout, calling the running pagemill."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "services.cli", "mcp", "--server", platform.url, "--root", str(pdf.parent)],
        env={"PAGEMILL_API_KEY": platform.api_key or "", "PYTHONPATH": str(REPO)}, cwd=str(tmp_path))

    async def session(client: Client) -> tuple[set[str], Any]:
        names = {tool.name for tool in (await client.list_tools()).tools}
        return names, await client.call_tool("parse_document", {"path": pdf.name, "pages": "1-2"})

    names, result = run(Client(params), session)
    assert names == TOOLS
    assert result.content[0].text.startswith("<!-- page 1 -->") and "<!-- page 2 -->" in result.content[0].text
    # without --api-key: the key `pagemill serve` saved in its data dir; loopback URLs are refused as they are for
    # webhooks, unless --allow-private-urls
    (tmp_path / "api_key").write_text(f"{platform.api_key}\n")
    saved = StdioServerParameters(command=sys.executable, args=["-m", "services.cli", "mcp", "--server", platform.url],
                                  env={"PAGEMILL_DATA_DIR": str(tmp_path), "PYTHONPATH": str(REPO)}, cwd=str(tmp_path))

    async def saved_key_session(client: Client) -> tuple[Any, MCPError]:
        listed = await client.call_tool("list_documents", {"limit": 200})
        with pytest.raises(MCPError) as refused:
            await client.call_tool("parse_document", {"url": f"{platform.url}/healthz"})
        return listed, refused.value

    listed, refused = run(Client(saved), saved_key_session)
    assert result.structured_content["id"] in [d["id"] for d in listed.structured_content["data"]]
    assert refused.data["code"] == "validation_error" and "private" in refused.data["message"]
