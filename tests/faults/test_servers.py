"""Faults of the servers underneath: Redis restarted empty, PostgreSQL restarted, the S3 API failing and stalling,
each mid-document. Every server here is the test's own (never the machine's shared PostgreSQL on 5432)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.core.db.session import get_engine
from tests.conftest import PlatformFactory
from tests.faults.recovery import check_documents, now_utc, record, wait_pages_done
from tests.faults.s3proxy import FaultyS3Proxy
from tests.faults.test_workers import pdf
from tests.servers import PostgresCluster, free_port, machine_postgres_cluster, start_redis

pytestmark = [pytest.mark.slow, pytest.mark.faults]

# What the platform's processes log, rightly, while a server is away (Celery's broker reconnects, a failed
# statement, a retried page); anything else is still an error.
REDIS_AWAY = r"[Rr]edis|broker|Connection refused|Error 111|ConnectionError|Connection closed"
POSTGRES_AWAY = r"psycopg|OperationalError|InterfaceError|server closed the connection|connection is (lost|closed)|" \
                r"Connection refused|starting up|shutting down|terminating connection"
S3_AWAY = r"InternalError|SlowDown|ServiceUnavailable|ClientError|\b50[03]\b"


def test_redis_restarted_empty_mid_document(platform_factory: PlatformFactory, postgres_url: str, corpus: Path,
                                            tmp_path: Path) -> None:
    port = free_port()
    (tmp_path / "redis").mkdir()
    url, stop = start_redis(tmp_path / "redis", port=port)  # no persistence: it comes back with nothing
    try:
        platform = platform_factory(postgres_url, engine="fake", redis_base_url=url,
                                    extra_env={"PAGEMILL_ENGINE__FAKE_LATENCY_MS": "250"}).start(
            concurrency=2, reconciler=True)
        platform.expect_log_errors(REDIS_AWAY)
        created = [platform.upload(pdf(corpus, tmp_path, 12)) for _ in range(2)]
        wait_pages_done(platform, created[0]["id"], 2)
        stop()
        time.sleep(3)
        url, stop = start_redis(tmp_path / "redis", port=port)
        back = now_utc()
        record(check_documents(platform, "Redis restarted empty (3 s down) mid-document",
                               [c["id"] for c in created], back))
    finally:
        stop()


@pytest.fixture
def own_postgres(tmp_path: Path) -> Iterator[PostgresCluster]:
    cluster = machine_postgres_cluster()
    if cluster is None:
        pytest.skip("restarting PostgreSQL needs the machine's initdb/pg_ctl (Debian: postgresql)")
    yield cluster
    cluster.remove()


def test_postgres_restarted_mid_document(platform_factory: PlatformFactory, own_postgres: PostgresCluster,
                                         corpus: Path, tmp_path: Path) -> None:
    # A commit cut off by the stop may have reached the server without its answer reaching the worker (a page's
    # last finish, with its claim of the assembly): that assembly is claimed again when its lease runs out,
    # shortened here from 300 s so that the test sees the recovery.
    platform = platform_factory(own_postgres.url, engine="fake",
                                extra_env={"PAGEMILL_ENGINE__FAKE_LATENCY_MS": "250",
                                           "PAGEMILL_RECONCILER__ASSEMBLY_LEASE_S": "20"}).start(
        concurrency=2, reconciler=True)
    platform.expect_log_errors(POSTGRES_AWAY)
    created = [platform.upload(pdf(corpus, tmp_path, 12)) for _ in range(2)]
    wait_pages_done(platform, created[0]["id"], 2)
    own_postgres.stop()  # immediate: every connection cut mid-statement
    time.sleep(3)
    own_postgres.start()
    back = now_utc()
    get_engine(own_postgres.url).dispose()  # this test process's own pool held connections to the old server
    record(check_documents(platform, "PostgreSQL restarted (3 s down, immediate stop) mid-document",
                           [c["id"] for c in created], back))


def test_s3_answering_500_503_then_stalling(platform_factory: PlatformFactory, postgres_url: str,
                                            s3_endpoint: str, corpus: Path, tmp_path: Path) -> None:
    proxy = FaultyS3Proxy(s3_endpoint, stall_s=20)
    try:
        platform = platform_factory(postgres_url, engine="fake", s3_endpoint=proxy.url,
                                    extra_env={"PAGEMILL_ENGINE__FAKE_LATENCY_MS": "250"}).start(
            concurrency=2, reconciler=True)
        platform.expect_log_errors(S3_AWAY)
        created = [platform.upload(pdf(corpus, tmp_path, 12)) for _ in range(2)]
        wait_pages_done(platform, created[0]["id"], 2)
        proxy.set_mode("error")  # every request: 500 InternalError / 503 SlowDown
        time.sleep(8)
        with platform.client() as client, (tmp_path / "12.pdf").open("rb") as handle:
            during = client.post("/v1/documents", files={"file": ("12.pdf", handle)})
        assert during.status_code in (202, 503), during.text  # never a 500, never half-accepted
        proxy.set_mode("stall")  # requests hang (20 s at most each), then pass
        time.sleep(8)
        proxy.set_mode("pass")
        back = now_utc()
        ids = [c["id"] for c in created] + ([during.json()["id"]] if during.status_code == 202 else [])
        figures = check_documents(platform, "S3 API: 8 s of 500/503, then 8 s stalled", ids, back,
                                  upload_during_errors=during.status_code, requests=dict(proxy.requests))
        record(figures)
    finally:
        proxy.close()
