"""Webhook signing secrets sealed at rest: round trip, plaintext rows, key rotation, wrong or missing keys."""

from __future__ import annotations

import pytest

from services.core import sealing
from services.core.webhooks import generate_secret

OLD, NEW = "old-key-" + "a" * 56, "new-key-" + "b" * 56


def test_a_sealed_secret_opens_to_itself_and_does_not_contain_it() -> None:
    secret = generate_secret()
    stored = sealing.seal(secret, OLD)
    assert stored.startswith(sealing.PREFIX) and secret not in stored and secret[6:] not in stored
    assert len(stored) <= 512  # the column's width
    assert sealing.unseal(stored, OLD) == secret
    assert sealing.seal(secret, OLD) != stored  # a fresh IV each time


def test_without_a_key_secrets_stay_plaintext_and_plaintext_rows_read_as_they_are() -> None:
    secret = generate_secret()
    assert sealing.seal(secret, "") == secret
    assert sealing.unseal(secret, OLD) == secret


def test_rotation_seals_with_the_newest_key_and_still_opens_old_values() -> None:
    secret = generate_secret()
    old_stored = sealing.seal(secret, OLD)
    both = f"{NEW}, {OLD}"
    assert sealing.unseal(old_stored, both) == secret
    new_stored = sealing.seal(secret, both)
    assert sealing.unseal(new_stored, NEW) == secret
    with pytest.raises(sealing.SealingError, match="not in PAGEMILL_SECRET_KEY"):
        sealing.unseal(new_stored, OLD)


def test_a_sealed_value_without_a_key_is_a_clear_error() -> None:
    stored = sealing.seal(generate_secret(), OLD)
    with pytest.raises(sealing.SealingError, match="PAGEMILL_SECRET_KEY is not set"):
        sealing.unseal(stored, "")
