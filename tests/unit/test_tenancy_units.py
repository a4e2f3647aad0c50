"""Signing, receiver-address checks, cache keys, fair-share priorities and limit overrides (no I/O)."""

from __future__ import annotations

import time

import pytest

from services.core import cache, webhooks
from services.core.db.models import Tenant
from services.core.errors import RateLimited, ValidationFailed
from services.core.fairness import priority_for
from services.core.settings import Settings
from services.core.tenants import clean_limits, effective_limits, hash_key


def test_signature_matches_the_standard_webhooks_reference_vector() -> None:
    # The vector of the Standard Webhooks reference library's own test suite.
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    signature = webhooks.sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}')
    assert signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_verify_accepts_the_right_secret_only_and_rejects_stale_timestamps() -> None:
    secret, other = webhooks.generate_secret(), webhooks.generate_secret()
    assert secret.startswith("whsec_") and secret != other
    body = '{"type":"document.succeeded"}'
    sent = webhooks.headers(secret, "msg_1", body)
    assert webhooks.verify(secret, sent, body)
    assert not webhooks.verify(other, sent, body)
    assert not webhooks.verify(secret, sent, body + " ")
    old = webhooks.headers(secret, "msg_1", body, timestamp=int(time.time()) - 600)
    assert not webhooks.verify(secret, old, body)
    # several signatures (a rotated secret): any one valid v1 signature is enough
    both = {**sent, "webhook-signature": "v1,AAAA " + sent["webhook-signature"]}
    assert webhooks.verify(secret, both, body)


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/hook", "http://localhost/x", "http://10.1.2.3/",
                                 "http://192.168.0.10/", "http://169.254.169.254/latest/meta-data",
                                 "http://[::1]/", "http://[::ffff:127.0.0.1]/", "ftp://example.com/",
                                 "http://user:pw@example.com/", "not a url",
                                 # IPv4 inside IPv6: 6to4, NAT64, IPv4-compatible forms of loopback and private
                                 "http://[2002:7f00:1::]/", "http://[64:ff9b::7f00:1]/", "http://[::127.0.0.1]/",
                                 "http://[2002:a00:1::]/", "http://[64:ff9b::a9fe:a9fe]/", "http://[::10.0.0.1]/",
                                 "http://[::ffff:10.0.0.1]/", "http://[64:ff9b:1::808:808]/"])
def test_private_loopback_and_odd_urls_are_refused(url: str) -> None:
    with pytest.raises(ValidationFailed):
        webhooks.check_url(url, allow_private=False, resolve=False)


def test_public_urls_pass_and_private_ones_pass_when_allowed() -> None:
    assert webhooks.check_url("https://8.8.8.8/hook", allow_private=False) == "https://8.8.8.8/hook"
    # a public IPv4 address inside IPv6 stays public
    for url in ("https://[2002:808:808::]/hook", "https://[64:ff9b::808:808]/hook", "https://[2606:4700::1111]/"):
        assert webhooks.check_url(url, allow_private=False) == url
    assert webhooks.check_url("http://127.0.0.1:9/hook", allow_private=True) == "http://127.0.0.1:9/hook"


def test_page_fingerprint_ignores_the_random_pdf_trailer_id_and_the_creation_time() -> None:
    page = b"%PDF-1.7\n1 0 obj\n<</CreationDate(D:20261129163459+00'00')/Creator(PDFium)>>\nendobj\n" \
           b"trailer\n<</Size 7/ID[<AB12><AB12>]>>\n%%EOF"
    same = page.replace(b"AB12", b"CD34").replace(b"163459", b"170001")
    other = page.replace(b"Creator(PDFium)", b"Creator(Other)")
    assert cache.page_fingerprint(page) == cache.page_fingerprint(same) != cache.page_fingerprint(other)


def test_cache_keys_change_with_every_input_but_not_with_control_options() -> None:
    settings = Settings()
    base = {"sha256": "a" * 64, "page_numbers": [1, 2], "mode": "fast", "engine": "cpu", "options": {}}
    key = cache.document_key(settings=settings, **base)  # type: ignore[arg-type]
    for change in ({"sha256": "b" * 64}, {"page_numbers": [1]}, {"mode": "accurate"}, {"engine": "vllm"},
                   {"options": {"preset": "tables"}}):
        assert cache.document_key(settings=settings, **{**base, **change}) != key  # type: ignore[arg-type]
    controls = {"options": {"cache": False, "do_not_cache": True, "webhook_id": "whe_1"}}
    assert cache.document_key(settings=settings, **{**base, **controls}) == key  # type: ignore[arg-type]
    other_model = Settings(engine={"kind": "vllm", "model": "another-model"})  # type: ignore[arg-type]
    assert cache.document_key(settings=other_model, **{**base, "engine": "vllm"}) != \
        cache.document_key(settings=settings, **{**base, "engine": "vllm"})  # type: ignore[arg-type]


def test_cache_flags() -> None:
    settings = Settings()
    assert cache.reads_cache({}, settings) and cache.writes_cache({}, settings)
    assert not cache.reads_cache({"cache": False}, settings) and cache.writes_cache({"cache": False}, settings)
    assert cache.reads_cache({"do_not_cache": True}, settings)
    assert not cache.writes_cache({"do_not_cache": True}, settings)
    off = Settings(cache={"enabled": False})  # type: ignore[arg-type]
    assert not cache.reads_cache({}, off) and not cache.writes_cache({}, off)


def test_priorities_fall_as_a_tenant_has_more_pages_in_flight() -> None:
    settings = Settings()
    assert [priority_for(n, settings) for n in (1, 50, 51, 500, 2000, 5001)] == [0, 0, 3, 3, 6, 9]
    unfair = Settings(limits={"fair_share": False})  # type: ignore[arg-type]
    assert priority_for(2000, unfair) == 0


def test_limit_overrides() -> None:
    settings = Settings()
    tenant = Tenant(id="ten_1", name="a", limits={"requests_per_minute": 5, "retention_days": 0.5},
                    webhook_secret="whsec_x")
    limits = effective_limits(tenant, settings)
    assert (limits.requests_per_minute, limits.retention_days) == (5, 0.5)
    assert limits.pages_in_flight == settings.limits.pages_in_flight
    assert limits.max_pages == settings.limits.max_pages and limits.max_file_bytes == settings.limits.max_file_bytes
    assert clean_limits({"max_pages": 10, "pages_in_flight": None}) == {"max_pages": 10, "pages_in_flight": None}
    for bad in ({"nope": 1}, {"max_pages": 0}, {"max_pages": True}, {"max_pages": "10"}):
        with pytest.raises(ValidationFailed):
            clean_limits(bad)


def test_keys_are_hashed_and_rate_limit_errors_carry_retry_after() -> None:
    assert hash_key("pm_abc") != "pm_abc" and len(hash_key("pm_abc")) == 64
    error = RateLimited("slow down", retry_after_s=2.2)
    assert (error.status_code, error.code, error.headers) == (429, "rate_limited", {"Retry-After": "3"})
