"""Secrets pagemill must read back (webhook signing secrets) are sealed at rest with `PAGEMILL_SECRET_KEY`.

A sealed value is stored as `sealed:v1:<Fernet token>` (AES-128-CBC + HMAC-SHA256). `PAGEMILL_SECRET_KEY` may hold
several keys, comma-separated, newest first: the newest seals, every one opens, so a key is rotated by putting
the new one in front and running `pagemill admin seal-secrets`. A stored value without the prefix was written
before a key was set and is read as it is; `seal-secrets` seals it. A database dump alone no longer lets anyone
forge a tenant's webhooks.
"""

from __future__ import annotations

import base64
import hashlib
import os
from functools import lru_cache
from typing import Any

import sqlalchemy as sa
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from sqlalchemy.orm import Session

PREFIX = "sealed:v1:"
# The setting `secret_key`, read from the environment here: column types have no settings object at hand.
ENV = "PAGEMILL_SECRET_KEY"


class SealingError(RuntimeError):
    """A sealed secret that the configured keys cannot open."""


@lru_cache(maxsize=8)
def _fernet(keys: str) -> MultiFernet | None:
    # Any string is a key: SHA-256 makes the 32 bytes Fernet wants (give it 32 random bytes of entropy or more).
    parts = [k.strip() for k in keys.split(",") if k.strip()]
    if not parts:
        return None
    return MultiFernet([Fernet(base64.urlsafe_b64encode(hashlib.sha256(k.encode()).digest())) for k in parts])


def _keys(keys: str | None) -> MultiFernet | None:
    """The given keys, or the configured ones."""
    return _fernet(os.environ.get(ENV, "") if keys is None else keys)


def is_sealed(stored: str) -> bool:
    return stored.startswith(PREFIX)


def seal(plain: str, keys: str | None = None) -> str:
    """What to store: sealed with the newest key, or `plain` itself when no key is configured."""
    fernet = _keys(keys)
    if fernet is None or is_sealed(plain):
        return plain
    return PREFIX + fernet.encrypt(plain.encode()).decode()


def unseal(stored: str, keys: str | None = None) -> str:
    """The secret behind a stored value; plaintext (stored before a key was set) comes back as it is."""
    if not is_sealed(stored):
        return stored
    fernet = _keys(keys)
    if fernet is None:
        raise SealingError(f"a webhook secret is sealed but {ENV} is not set")
    try:
        return fernet.decrypt(stored[len(PREFIX):].encode()).decode()
    except InvalidToken as exc:
        raise SealingError(f"a webhook secret is sealed with a key that is not in {ENV}") from exc


class SealedString(sa.types.TypeDecorator[str]):
    """A string column whose values are sealed on the way in and opened on the way out."""

    impl = sa.String(512)
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Any) -> str | None:
        return None if value is None else seal(value)

    def process_result_value(self, value: str | None, dialect: Any) -> str | None:
        return None if value is None else unseal(value)


def reseal_all(session: Session) -> int:
    """Seal every plaintext secret and re-seal every sealed one with the newest key. Returns rows rewritten."""
    from services.core.db.models import Tenant, WebhookEndpoint

    if _keys(None) is None:
        raise SealingError(f"set {ENV} first: there is no key to seal with")
    count = 0
    for model, column in ((Tenant, Tenant.webhook_secret), (WebhookEndpoint, WebhookEndpoint.secret)):
        for row_id, secret in session.execute(sa.select(model.id, column)).all():  # opened by the column type
            session.execute(sa.update(model).where(model.id == row_id).values({column.key: secret}))
            count += 1
    return count
