"""`pagemill mcp`: the MCP tools over stdio, for an agent that starts pagemill as a subprocess; the tools call a
running pagemill (`--server`, with `--api-key`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import click

from services.cli.root import main

DEFAULT_SERVER = "http://127.0.0.1:8000"


@main.command("mcp")
@click.option("--server", envvar="PAGEMILL_BASE_URL", default=DEFAULT_SERVER, show_default=True,
              help="the pagemill the tools call (or $PAGEMILL_BASE_URL)")
@click.option("--api-key", envvar="PAGEMILL_API_KEY", default=None,
              help="a tenant's API key (or $PAGEMILL_API_KEY; default: the one `pagemill serve` saved in the data dir)")
@click.option("--root", "roots", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="a folder whose files parse_document may read by path (repeatable; default: the current one)")
@click.option("--allow-private-urls", is_flag=True, envvar="PAGEMILL_WEBHOOKS__ALLOW_PRIVATE_URLS",
              help="let parse_document fetch URLs on private and loopback addresses (as webhooks' setting)")
@click.option("--max-bytes", default=200 * 1024 * 1024, show_default=True, type=click.IntRange(min=1),
              help="the largest file parse_document reads or fetches")
def mcp(server: str, api_key: str | None, roots: tuple[str, ...], allow_private_urls: bool, max_bytes: int) -> None:
    """Serve pagemill's MCP tools on stdin/stdout (parse_document, get_document, get_result, list_documents)."""
    api_key = api_key or _saved_key()
    import anyio
    import httpx

    from services.gateway.mcp.api import PagemillApi
    from services.gateway.mcp.sources import SourcePolicy
    from services.gateway.mcp.tools import build_server

    api = PagemillApi(httpx.AsyncClient(base_url=server.rstrip("/"), timeout=httpx.Timeout(60.0, read=120.0),
                                        headers={"Authorization": f"Bearer {api_key}"}))

    @contextlib.asynccontextmanager
    async def open_api(_: object) -> AsyncIterator[PagemillApi]:
        yield api  # one client for the process: its connections are reused from call to call

    policy = SourcePolicy(roots=tuple(Path(r) for r in roots) or (Path.cwd(),),
                          allow_private_urls=allow_private_urls, max_bytes=max_bytes)
    anyio.run(build_server(open_api, policy).run_stdio_async)


def _saved_key() -> str:
    """The key `pagemill serve` saved on its embedded defaults (`<data dir>/api_key`), for a local pagemill."""
    from services.core.settings import get_settings

    key_file = get_settings().data_dir / "api_key"
    if not key_file.is_file():
        raise click.UsageError(f"no API key: give --api-key or $PAGEMILL_API_KEY ({key_file} does not exist)")
    return key_file.read_text().strip()
