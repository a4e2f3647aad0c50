"""`pagemill admin`: tenants and API keys, straight on the database (the same as /v1/admin over HTTP)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import click
from sqlalchemy.orm import Session

from services.cli.root import main
from services.core import tenants
from services.core.errors import PagemillError
from services.core.settings import get_settings

LIMIT_OPTIONS = [
    click.option("--requests-per-minute", type=int, default=None, help="submissions per minute"),
    click.option("--pages-in-flight", type=int, default=None, help="pages accepted but not finished"),
    click.option("--max-file-bytes", type=int, default=None, help="largest upload"),
    click.option("--max-pages", type=int, default=None, help="most pages per document"),
    click.option("--retention-days", type=float, default=None, help="days results are kept"),
]


def limit_options(function: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(LIMIT_OPTIONS):
        function = option(function)
    return function


@contextlib.contextmanager
def _admin_session() -> Iterator[Session]:
    """A session on the configured database; a refused input (a name with a NUL, an unknown tenant) is the
    command's error message and exit status 1, not a traceback."""
    from services.core.db.session import session_scope

    try:
        with session_scope(get_settings().resolved_database_url()) as session:
            yield session
    except PagemillError as exc:
        raise click.ClickException(f"{exc.code}: {exc.message}") from exc


@main.group()
def admin() -> None:
    """Tenants and API keys (on the database of PAGEMILL_DATABASE_URL)."""


@admin.group()
def tenant() -> None:
    """Create, list and limit tenants."""


@tenant.command("create")
@click.argument("name")
@limit_options
def tenant_create(name: str, **limits: Any) -> None:
    """Create a tenant; limits not given follow the settings' defaults."""
    with _admin_session() as session:
        row = tenants.create_tenant(session, name, limits={k: v for k, v in limits.items() if v is not None})
        click.echo(f"{row.id}\t{row.name}")


@tenant.command("list")
def tenant_list() -> None:
    """Tenants with their effective limits."""
    with _admin_session() as session:
        for row in tenants.list_tenants(session):
            limits = tenants.effective_limits(row, get_settings()).as_dict()
            click.echo(f"{row.id}\t{row.name}\t" + " ".join(f"{k}={v}" for k, v in limits.items()))


@tenant.command("set-limits")
@click.argument("tenant_ref", metavar="TENANT")
@limit_options
@click.option("--clear", multiple=True, help="a limit to reset to the default (repeatable)")
def tenant_set_limits(tenant_ref: str, clear: tuple[str, ...], **limits: Any) -> None:
    """Override limits of TENANT (id or name)."""
    changes: dict[str, Any] = {k: v for k, v in limits.items() if v is not None}
    changes.update({name.replace("-", "_"): None for name in clear})
    with _admin_session() as session:
        row = tenants.update_limits(session, tenants.find_tenant(session, tenant_ref), changes)
        click.echo(f"{row.id}\t{row.name}\t{row.limits}")


@tenant.command("rotate-webhook-secret")
@click.argument("tenant_ref", metavar="TENANT")
@click.option("--overlap-s", type=click.FloatRange(0, 7 * 86400), default=None,
              help="seconds the previous secret keeps signing (0: stop at once); default "
                   "PAGEMILL_WEBHOOKS__SECRET_OVERLAP_S")
def tenant_rotate_webhook_secret(tenant_ref: str, overlap_s: float | None) -> None:
    """A new webhook signing secret for TENANT (id or name), for its documents' `webhook_url`. The tenant reads it
    from GET /v1/tenant; the previous one signs too until the time printed."""
    overlap = get_settings().webhooks.secret_overlap_s if overlap_s is None else overlap_s
    with _admin_session() as session:
        row = tenants.find_tenant(session, tenant_ref)
        tenants.rotate_webhook_secret(session, row, overlap_s=overlap)
        expires = row.previous_webhook_secret_expires_at
        click.echo(f"{row.id}\t{row.name}\tprevious secret signs until "
                   f"{expires.isoformat() if expires else 'now (no overlap)'}")


@admin.command("seal-secrets")
def seal_secrets() -> None:
    """Seal the stored webhook signing secrets with the newest key of PAGEMILL_SECRET_KEY (after setting or
    rotating it); secrets stored in plaintext before a key was set are sealed too."""
    with _admin_session() as session:
        count = tenants.reseal_secrets(session)
    click.echo(f"sealed {count} webhook secrets")


@admin.group()
def key() -> None:
    """Create, list and revoke API keys."""


@key.command("create")
@click.argument("tenant_ref", metavar="TENANT")
@click.option("--name", default="", help="a label for the key")
def key_create(tenant_ref: str, name: str) -> None:
    """Create an API key for TENANT (id or name). The key is printed once; only its hash is stored."""
    with _admin_session() as session:
        row, raw = tenants.create_key(session, tenants.find_tenant(session, tenant_ref), name=name)
        click.echo(f"key id: {row.id}", err=True)
        click.echo(raw)


@key.command("list")
@click.argument("tenant_ref", metavar="TENANT")
def key_list(tenant_ref: str) -> None:
    """Keys of TENANT: id, prefix, name, revoked."""
    with _admin_session() as session:
        for k in tenants.list_keys(session, tenants.find_tenant(session, tenant_ref)):
            click.echo(f"{k.id}\t{k.prefix}…\t{k.name}\t{'revoked' if k.revoked_at else 'active'}")


@key.command("revoke")
@click.argument("key_id")
def key_revoke(key_id: str) -> None:
    """Revoke an API key: it answers 401 from now on."""
    with _admin_session() as session:
        row = tenants.revoke_key(session, key_id)
        click.echo(f"{row.id} revoked")
