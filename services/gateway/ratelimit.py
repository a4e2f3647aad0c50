"""Requests per minute per tenant, as a GCRA (generic cell rate algorithm) in one Redis script.

GCRA keeps a single timestamp per tenant: up to `limit` requests may arrive at once, after that one every
`60 / limit` seconds. It never double-counts at a window edge (a fixed window lets 2x through there), and
the time until the next request is allowed is exact, so `Retry-After` is honest. Redis's clock is used,
so any number of gateways share one limit.
"""

from __future__ import annotations

from typing import Any

import redis

from services.core.errors import RateLimited, ServiceUnavailable
from services.core.metrics import RATE_LIMITED

_GCRA = """
local period = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local interval = period / limit
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - period
if allow_at > now then
  return {0, math.ceil(allow_at - now)}
end
redis.call('SET', KEYS[1], tostring(new_tat), 'PX', math.ceil(new_tat - now) + 1)
return {1, 0}
"""


class RateLimiter:
    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.script: Any = client.register_script(_GCRA)

    def check(self, tenant_id: str, per_minute: int, *, bucket: str = "submissions") -> None:
        """Counts one request in the tenant's `bucket` (each its own rate: viewing page images does not use up
        submissions); raises `RateLimited` (429, Retry-After) when the tenant is over its rate."""
        key = f"pagemill:ratelimit:{tenant_id}" + ("" if bucket == "submissions" else f":{bucket}")
        try:
            allowed, wait_ms = self.script(keys=[key], args=[60_000, per_minute])
        except redis.RedisError as exc:  # the limit cannot be checked: refuse for now rather than let it through
            raise ServiceUnavailable("the rate limiter (Redis) cannot be reached; try again shortly") from exc
        if not int(allowed):
            RATE_LIMITED.labels(limit="requests_per_minute").inc()
            what = bucket.replace("_", " ")
            raise RateLimited(f"more than {per_minute} {what} per minute; retry in {int(wait_ms) / 1000:.1f} s",
                              retry_after_s=int(wait_ms) / 1000, limit="requests_per_minute")
