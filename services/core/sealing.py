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
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from services.core.settings import get_settings

PREFIX = "sealed:v1:"
ENV = "PAGEMILL_SECRET_KEY"  # the setting `secret_key`, named in error messages


class SealingError(RuntimeError):
    """A sealed secret that the configured keys cannot open."""


@lru_cache(maxsize=8)
def _fernet(keys: str) -> MultiFernet | None:
    # Any string is a key: SHA-256 makes the 32 bytes Fernet wants (give it 32 random bytes of entropy or more).
    parts = [k.strip() for k in keys.split(",") if k.strip()]
    if not parts:
        return None
    return MultiFernet([Fernet(base64.urlsafe_b64encode(hashlib.sha256(k.encode()).digest())) for k in parts])


def configured_keys() -> str:
    """The setting `secret_key`, read through `get_settings()`: a column type has no settings object at hand."""
    secret = get_settings().secret_key
    return secret.get_secret_value() if secret is not None else ""


def _keys(keys: str | None) -> MultiFernet | None:
    """The given keys, or the configured ones."""
    return _fernet(configured_keys() if keys is None else keys)


def can_seal() -> bool:
    """A key is configured."""
    return _keys(None) is not None


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
