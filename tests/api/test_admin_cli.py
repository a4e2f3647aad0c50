"""`pagemill admin ...` makes tenants and keys that the API accepts, and revokes them: the command runs in this
process (click's runner) on the same migrated database as the app."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result

from services.cli import main
from services.core.settings import get_settings
from tests.api.conftest import Api
from tests.pdfs import text_pages


@pytest.fixture
def admin_cli(api: Api, database_url: str) -> Iterator[CliRunner]:
    get_settings.cache_clear()  # the command reads its settings from the environment given to the runner
    yield CliRunner(env={"PAGEMILL_DATABASE_URL": database_url})
    get_settings.cache_clear()


def run(runner: CliRunner, *args: str) -> Result:
    result = runner.invoke(main, ["admin", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_admin_commands_make_tenants_and_keys_that_the_api_accepts_and_revoke_them(api: Api,
                                                                                  admin_cli: CliRunner) -> None:
    tenant_id = run(admin_cli, "tenant", "create", "cli-co", "--requests-per-minute", "7").stdout.split()[0]
    assert tenant_id.startswith("ten_")
    created = run(admin_cli, "key", "create", "cli-co", "--name", "laptop")
    key = created.stdout.strip()
    key_id = created.stderr.split("key id: ")[1].split()[0]
    assert key.startswith("pm_") and key_id.startswith("key_")
    with api.client(key=key) as client:
        me = client.get("/v1/tenant").json()
        assert me["id"] == tenant_id and me["limits"]["requests_per_minute"] == 7
        response = client.post("/v1/documents", files={"file": ("c.pdf", text_pages(1))})
        assert response.status_code == 202, response.text
    listed = run(admin_cli, "key", "list", "cli-co").stdout
    assert key_id in listed and key[:11] in listed and key not in listed and "active" in listed
    run(admin_cli, "tenant", "set-limits", "cli-co", "--pages-in-flight", "3")
    assert "pages_in_flight=3" in run(admin_cli, "tenant", "list").stdout
    run(admin_cli, "key", "revoke", key_id)
    assert "revoked" in run(admin_cli, "key", "list", "cli-co").stdout
    with api.client(key=key) as client:
        assert client.get("/v1/tenant").status_code == 401
