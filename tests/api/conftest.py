"""The in-process API tier: `TestClient` over `create_app(settings)` on a real migrated database and a real
Redis, no gateway, worker or reconciler process. Uploads are accepted and their jobs sit on Redis (nobody
consumes them), so what is tested here is what the gateway alone decides.

`api` runs each test on PostgreSQL and on SQLite; `api_factory(**settings)` builds an app with other settings.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from services.core.settings import Settings
from services.gateway.app import create_app
from tests.harness import TenantKey, redis_database


@dataclass
class Api:
    """One app and, when it has an admin key, a tenant made for it: `client()` sends that tenant's key (or
    `key`), `admin()` the admin key."""

    app: FastAPI
    settings: Settings
    tenant: TenantKey = field(init=False)

    def __post_init__(self) -> None:
        if self.settings.admin_key is not None:
            self.tenant = self.create_tenant(f"tenant-{uuid.uuid4().hex[:8]}")

    def client(self, *, key: str | None = None, auth: bool = True) -> TestClient:
        headers = {"Authorization": f"Bearer {key or self.tenant.key}"} if auth else {}
        return TestClient(self.app, headers=headers)

    def admin(self) -> TestClient:
        key = self.settings.admin_key.get_secret_value() if self.settings.admin_key else "none"
        return TestClient(self.app, headers={"Authorization": f"Bearer {key}"})

    def create_tenant(self, name: str, **limits: float) -> TenantKey:
        """A tenant (with limit overrides) and one API key, through the admin API."""
        with self.admin() as admin:
            response = admin.post("/v1/admin/tenants", json={"name": name, "limits": limits or None})
            assert response.status_code == 201, response.text
            tenant_id = response.json()["id"]
            response = admin.post(f"/v1/admin/tenants/{tenant_id}/keys", json={"name": "tests"})
            assert response.status_code == 201, response.text
            return TenantKey(tenant_id, response.json()["key"], response.json()["id"])

    def upload(self, data: bytes, *, key: str | None = None, expect: int = 202, filename: str = "upload.pdf",
               headers: dict[str, str] | None = None, **fields: str) -> dict[str, Any]:
        with self.client(key=key) as client:
            response = client.post("/v1/documents", files={"file": (filename, data)}, data=fields,
                                   headers=headers or {})
        assert response.status_code == expect, response.text
        body: dict[str, Any] = response.json()
        return body


ApiFactory = Callable[..., Api]


def error_of(response: Any) -> tuple[int, str]:
    """(status, code) of an error response, after checking it has the one error shape."""
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    return response.status_code, body["error"]["code"]


@pytest.fixture(params=["postgres_url", "sqlite_url"], ids=["postgres", "sqlite"])
def database_url(request: pytest.FixtureRequest) -> str:
    url: str = request.getfixturevalue(request.param)
    return url


@pytest.fixture
def api_factory(database_url: str, redis_server: str, tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiFactory]:
    # The app reads its settings from the object it is given, never from a developer's environment.
    for name in [n for n in os.environ if n.startswith("PAGEMILL_") or n == "PROMETHEUS_MULTIPROC_DIR"]:
        monkeypatch.delenv(name)
    redis_url = redis_database(redis_server)

    def make(**overrides: Any) -> Api:
        values: dict[str, Any] = {
            "data_dir": tmp_path / "data", "database_url": database_url, "redis_url": redis_url,
            "admin_key": f"admin-{uuid.uuid4().hex}", "engine": {"kind": "fake"},
            "webhooks": {"allow_private_urls": True},
        }
        for name, value in overrides.items():  # nested sections merge: limits={"max_pages": 2}
            values[name] = {**values[name], **value} if isinstance(values.get(name), dict) else value
        settings = Settings(**values)
        return Api(create_app(settings), settings)

    yield make


@pytest.fixture
def api(api_factory: ApiFactory) -> Api:
    return api_factory()
