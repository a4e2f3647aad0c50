"""The TypeScript SDK (clients/typescript) against a real platform: `node --test` runs its tests with the
platform's URL, a tenant key and the admin key in the environment. Needs `make sdk-ts` (npm ci + build)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.proxy import DroppingProxy
from tests.harness import REPO, Platform

pytestmark = pytest.mark.slow
SDK = REPO / "clients" / "typescript"


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> Iterator[Platform]:
    if shutil.which("node") is None:
        pytest.skip("node is not installed (Node 20 runs the TypeScript SDK's tests)")
    if not (SDK / "dist" / "index.js").exists() or not (SDK / "node_modules").is_dir():
        pytest.skip("the TypeScript SDK is not built: make sdk-ts")
    workdir = tmp_path_factory.mktemp("sdk-ts")
    platform = Platform(workdir=workdir, database_url=f"sqlite:///{workdir / 'pagemill.db'}",
                        redis_base_url=redis_server, engine="fake",
                        extra_env={"PAGEMILL_ENGINE__FAKE_LATENCY_MS": "150"})
    platform.start(concurrency=2)
    yield platform
    platform.stop()


def test_node_runs_the_typescript_sdk_tests_against_the_platform(platform: Platform, corpus: Path) -> None:
    proxy = DroppingProxy(("127.0.0.1", platform.port), drop={b"POST /v1/documents": 1})
    env = {**os.environ, "PAGEMILL_BASE_URL": platform.url, "PAGEMILL_API_KEY": platform.api_key or "",
           "PAGEMILL_ADMIN_KEY": platform.admin_key, "PAGEMILL_FLAKY_URL": proxy.url,
           "PAGEMILL_TEST_PDF": str(corpus / "dev" / "docling_multi_page" / "multi_page.pdf")}
    try:
        result = subprocess.run(["node", "--test", "test/"], cwd=SDK, env=env, capture_output=True, text=True,
                                timeout=300, check=False)
    finally:
        proxy.close()
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "# pass 8" in result.stdout and "# fail 0" in result.stdout, result.stdout[-2000:]
    assert proxy.dropped == [b"POST /v1/documents HTTP/1.1"]  # the answer was lost once, and the SDK retried
