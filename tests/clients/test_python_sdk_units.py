"""The Python SDK's pure parts: Standard Webhooks verification (the specification's own test vector), the retry
policy and Retry-After, error mapping and the SSE parser."""

from __future__ import annotations

import httpx
import pagemill_client
import pytest
from pagemill_client import verify_webhook
from pagemill_client._base import RetryPolicy, SSEParser, error_from, parse_retry_after

# From the Standard Webhooks specification's reference test suite.
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
HEADERS = {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
           "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}
PAYLOAD = '{"test": 2432232314}'


def test_the_specification_vector_verifies_and_every_tampering_fails() -> None:
    assert verify_webhook(PAYLOAD, HEADERS, SECRET, now=1614265330 + 10) == {"test": 2432232314}
    # several signatures (a rotated secret): any v1 match will do
    rotated = {**HEADERS, "Webhook-Signature": "v1,Zm9v v2,abc " + HEADERS["webhook-signature"]}
    del rotated["webhook-signature"]
    assert verify_webhook(PAYLOAD.encode(), rotated, SECRET, now=1614265330)
    no_id = {k: v for k, v in HEADERS.items() if k != "webhook-id"}
    other_id = {**HEADERS, "webhook-id": "msg_x"}
    cases = [(PAYLOAD.replace("2", "3"), HEADERS, 1614265330), (PAYLOAD, other_id, 1614265330),
             (PAYLOAD, HEADERS, 1614265330 + 301), (PAYLOAD, no_id, 1614265330)]
    for payload, headers, now in cases:
        with pytest.raises(pagemill_client.WebhookVerificationError):
            verify_webhook(payload, headers, SECRET, now=now)


def test_retry_after_wins_over_a_shorter_backoff_and_is_capped() -> None:
    policy = RetryPolicy(backoff_s=0.1, max_backoff_s=1, max_retry_after_s=30)
    assert policy.delay(0, httpx.Response(429, headers={"Retry-After": "7"})) == 7
    assert policy.delay(0, httpx.Response(429, headers={"Retry-After": "3600"})) == 30
    assert all(0 <= policy.delay(5) <= 1 for _ in range(50))  # capped, jittered
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0 and parse_retry_after("soon") is None


def test_error_codes_map_to_their_classes_and_foreign_bodies_do_not_break() -> None:
    limited = error_from(httpx.Response(429, headers={"Retry-After": "2", "X-Request-ID": "r1"},
                                        json={"error": {"code": "rate_limited", "message": "slow down"}}))
    assert isinstance(limited, pagemill_client.RateLimited) and limited.retry_after == 2
    assert limited.request_id == "r1" and limited.message == "slow down"
    proxy = error_from(httpx.Response(502, text="<html>bad gateway</html>"))
    assert type(proxy) is pagemill_client.APIError and proxy.code == "http_502"
    assert isinstance(error_from(httpx.Response(404, json={"error": {"code": "not_found", "message": ""}})),
                      pagemill_client.NotFound)


def test_the_sse_parser_reads_frames_and_keepalives() -> None:
    parser = SSEParser()
    lines = ["retry: 2000", "", ": keepalive", "id: 3", "event: document.progress", 'data: {"data":', 'data: {"a": 1}}',
             ""]
    frames = [f for f in map(parser.feed, lines) if f is not None]
    assert frames == [("", {}), ("document.progress", {"data": {"a": 1}})]
