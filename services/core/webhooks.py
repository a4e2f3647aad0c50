"""Standard Webhooks signing (https://www.standardwebhooks.com) and the receiver-address check.

A message carries `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature`:
`v1,` + base64(HMAC-SHA256(key, f"{id}.{timestamp}.{body}")), where the key is the base64 text after
`whsec_` in the secret. Receivers verify it with the secret and reject old timestamps (replays). After a
rotation, the previous secret signs too, as a second signature, until its overlap window ends.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import secrets
import socket
import time
from collections.abc import Sequence
from datetime import datetime
from urllib.parse import urlsplit

from services.core.errors import ValidationFailed

SECRET_PREFIX = "whsec_"
TOLERANCE_S = 300


def generate_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def _key(secret: str) -> bytes:
    text = secret[len(SECRET_PREFIX):] if secret.startswith(SECRET_PREFIX) else secret
    return base64.b64decode(text + "=" * (-len(text) % 4))


def sign(secret: str, msg_id: str, timestamp: int, body: str) -> str:
    digest = hmac.new(_key(secret), f"{msg_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def headers(secrets: str | Sequence[str], msg_id: str, body: str, timestamp: int | None = None) -> dict[str, str]:
    """The Standard Webhooks headers; several secrets (a rotation's overlap) give one signature each, space-separated
    in `webhook-signature`, and a receiver accepts the message if any of them verifies."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    keys = [secrets] if isinstance(secrets, str) else list(secrets)
    return {"webhook-id": msg_id, "webhook-timestamp": str(timestamp),
            "webhook-signature": " ".join(sign(key, msg_id, timestamp, body) for key in keys),
            "content-type": "application/json"}


def signing_secrets(current: str, previous: str | None, previous_expires_at: datetime | None,
                    now: datetime) -> list[str]:
    """The secrets that sign a message now: the current one, and the one before the last rotation while its
    overlap window lasts (receivers still verifying with it keep working until they switch)."""
    if previous and previous_expires_at is not None and now < previous_expires_at:
        return [current, previous]
    return [current]


def verify(secret: str, received: dict[str, str], body: str, *, now: float | None = None) -> bool:
    """What a receiver does: a `v1` signature matches and the timestamp is within five minutes."""
    lowered = {k.lower(): v for k, v in received.items()}
    msg_id, stamp, signatures = (lowered.get(h, "") for h in ("webhook-id", "webhook-timestamp", "webhook-signature"))
    if not (msg_id and stamp.isdigit() and signatures):
        return False
    if abs((now or time.time()) - int(stamp)) > TOLERANCE_S:
        return False
    expected = sign(secret, msg_id, int(stamp), body)
    return any(hmac.compare_digest(expected, candidate) for candidate in signatures.split())


# IPv6 prefixes that carry an IPv4 address in their last 32 bits and reach it through a translator (RFC 6052's
# NAT64 well-known prefix) or, like ::a.b.c.d (IPv4-compatible, RFC 4291), are routed to it by some stacks.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# RFC 8215's local-use NAT64 prefix: a site's own translator, never a public receiver.
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address leads to (mapped, 6to4, NAT64, IPv4-compatible), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or int(ip) >> 32 == 0:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _NAT64_LOCAL:
            return False
        embedded = _embedded_ipv4(ip)
        if embedded is not None and not _is_public(str(embedded)):
            return False  # the IPv4 address inside decides: [2002:7f00:1::] is 127.0.0.1 by 6to4
    return ip.is_global and not ip.is_multicast


def check_url(url: str, *, allow_private: bool, resolve: bool = True) -> str:
    """The URL, if webhooks may be sent to it: http(s), and unless allowed, no private or loopback address.

    Checked when an endpoint is registered and again before every attempt (a name may resolve
    differently later).
    """
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationFailed("url: must be an http:// or https:// URL with a host")
    if len(url) > 2048:
        raise ValidationFailed("url: at most 2048 characters")
    if parts.username or parts.password:
        raise ValidationFailed("url: credentials in the URL are not allowed")
    if allow_private:
        return url
    host = parts.hostname
    try:
        addresses = [host] if _is_ip(host) else (
            sorted({str(info[4][0]) for info in socket.getaddrinfo(host, parts.port or 443)}) if resolve else [])
    except socket.gaierror as exc:
        raise ValidationFailed(f"url: cannot resolve {host!r}") from exc
    if host.lower() in ("localhost", "localhost.localdomain") or any(not _is_public(a) for a in addresses):
        raise ValidationFailed(f"url: {host!r} is a private, loopback or reserved address")
    return url


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
