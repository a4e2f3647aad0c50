"""`/docs` (Swagger UI) and `/redoc` served with their assets from the gateway itself: no CDN, so the API docs
work without internet. The assets come from the `fastapi-offline` package (MIT; Swagger UI is Apache-2.0,
ReDoc MIT)."""

from __future__ import annotations

import functools
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import Scope

ASSETS = Path(fastapi_offline.__file__).parent / "static"
ASSETS_URL = "/docs-assets"
PLAYGROUND = Path(__file__).parent / "playground"
# ReDoc's sidebar shows a logo fetched from its CDN; without internet that is a failed request on every load.
REDOC_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"


# The playground shows untrusted documents: beside its sanitizer, the browser runs only the playground's own
# scripts and talks only to this gateway. (Inline styles: KaTeX positions glyphs with style attributes.)
PLAYGROUND_CSP = ("default-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' blob: data:; "
                  "style-src 'self' 'unsafe-inline'; font-src 'self'; object-src 'none'; base-uri 'none'; "
                  "frame-ancestors 'none'")


class PlaygroundFiles(StaticFiles):
    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers["Content-Security-Policy"] = PLAYGROUND_CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response


@functools.cache
def redoc_js() -> bytes:
    return (ASSETS / "redoc.standalone.js").read_bytes().replace(REDOC_LOGO, f"{ASSETS_URL}/favicon.png".encode())


def install_docs(app: FastAPI) -> None:
    """Swagger UI at /docs, ReDoc at /redoc, the web playground at /playground (the app has docs_url=None)."""
    @app.get("/docs-redoc.js", include_in_schema=False)
    def redoc_script() -> Response:
        return Response(redoc_js(), media_type="text/javascript", headers={"Cache-Control": "public, max-age=86400"})

    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS), name="docs-assets")
    app.mount("/playground", PlaygroundFiles(directory=PLAYGROUND, html=True), name="playground")
    openapi_url = app.openapi_url or "/openapi.json"
    oauth_redirect = app.swagger_ui_oauth2_redirect_url or "/docs/oauth2-redirect"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=openapi_url, title=f"{app.title} API",
                                   oauth2_redirect_url=oauth_redirect,
                                   swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
                                   swagger_favicon_url=f"{ASSETS_URL}/favicon.png")

    @app.get(oauth_redirect, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url=openapi_url, title=f"{app.title} API",
                              redoc_js_url="/docs-redoc.js",
                              redoc_favicon_url=f"{ASSETS_URL}/favicon.png", with_google_fonts=False)
