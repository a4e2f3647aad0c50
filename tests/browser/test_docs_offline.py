"""/docs (Swagger UI) and /redoc render from the gateway's own assets with every non-local request blocked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import Watched
from tests.harness import Platform

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> Iterator[Platform]:
    workdir = tmp_path_factory.mktemp("docs")
    platform = Platform(workdir=workdir, database_url=f"sqlite:///{workdir / 'pagemill.db'}",
                        redis_base_url=redis_server, engine="fake")
    platform.start(worker=False)
    yield platform
    platform.stop()


def test_swagger_ui_renders_offline(gateway: Platform, watched: Watched) -> None:
    page: Any = watched.page
    page.goto(f"{gateway.url}/docs")
    page.wait_for_selector(".swagger-ui .opblock-tag", timeout=30_000)
    assert page.locator(".opblock-summary-path", has_text="/v1/documents/{document_id}/result").count() >= 1
    assert "pagemill" in page.locator(".info .title").inner_text()
    watched.assert_clean()


def test_redoc_renders_offline(gateway: Platform, watched: Watched) -> None:
    page: Any = watched.page
    page.goto(f"{gateway.url}/redoc")
    page.wait_for_selector("h1", timeout=30_000)
    page.wait_for_function("() => document.body.innerText.includes('/v1/documents/{document_id}/result')",
                           timeout=30_000)
    assert "pagemill" in page.locator("h1").first.inner_text()
    watched.assert_clean()
