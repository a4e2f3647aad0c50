"""Verifying pagemill's webhooks (Standard Webhooks: HMAC-SHA256 over "id.timestamp.body", base64)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

from pagemill_client._errors import WebhookVerificationError

SECRET_PREFIX = "whsec_"
TOLERANCE_S = 300


def verify_webhook(payload: bytes | str, headers: Mapping[str, str], secret: str, *,
                   tolerance_s: int = TOLERANCE_S, now: float | None = None) -> Any:
    """The webhook's parsed JSON body, once its signature and timestamp check out; else WebhookVerificationError.

    payload: the raw request body, exactly as received (not re-serialised JSON); headers: the request's headers
    (any case); secret: the endpoint's `whsec_...` secret (or the tenant's `webhook_secret` for `webhook_url`).
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    try:
        msg_id, timestamp, signatures = (lowered[h] for h in ("webhook-id", "webhook-timestamp", "webhook-signature"))
    except KeyError as exc:
        raise WebhookVerificationError(f"missing header {exc.args[0]}") from None
    try:
        sent_at = int(timestamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not a number") from None
    if abs((time.time() if now is None else now) - sent_at) > tolerance_s:
        raise WebhookVerificationError("webhook-timestamp is too old or in the future (a replay?)")
    try:
        key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError):
        raise WebhookVerificationError("the secret is not a whsec_ base64 secret") from None
    body = payload.encode() if isinstance(payload, str) else payload
    signed = f"{msg_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    for candidate in signatures.split():
        version, _, signature = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(expected, signature):
            return json.loads(body)
    raise WebhookVerificationError("no signature matches")
