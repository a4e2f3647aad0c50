"""Event streams while Redis is away: the final event still arrives (the gateway's re-check reads the database,
the record), and once Redis is back the gateway subscribes again and pushes as before."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import redis

from services.core.db.models import DocumentStatus
from services.core.db.session import session_scope
from services.core.lifecycle import finalize_document
from services.core.notices import channel_name
from services.core.queues import make_celery, outbox
from tests.conftest import PlatformFactory
from tests.events_client import EventStream
from tests.faults.test_servers import REDIS_AWAY
from tests.harness import Platform, wait_until
from tests.servers import free_port, start_redis

pytestmark = [pytest.mark.slow, pytest.mark.faults]

ONE_PAGE = Path("dev") / "pypdf_crazyones" / "crazyones.pdf"
RECHECK_S = 3.0


def finish(platform: Platform, document_id: str) -> datetime:
    """Ends the document as the results service does (the status, its event, the notice after the commit)."""
    settings = platform.settings()
    with outbox(make_celery(settings)), session_scope(platform.database_url) as session:
        assert finalize_document(session, document_id, DocumentStatus.SUCCEEDED)
    return datetime.now(UTC)


def subscribers(platform: Platform) -> int:
    client = redis.Redis.from_url(platform.redis_url, socket_connect_timeout=1)
    try:
        return int(dict(client.pubsub_numsub(channel_name(platform.redis_url)))  # type: ignore[arg-type]
                   .get(channel_name(platform.redis_url).encode(), 0))
    except redis.RedisError:
        return 0
    finally:
        client.close()


def test_the_final_event_arrives_while_redis_is_down_and_pushing_resumes_after_it_returns(
        platform_factory: PlatformFactory, postgres_url: str, corpus: Path, tmp_path: Path) -> None:
    port = free_port()
    (tmp_path / "redis").mkdir()
    url, stop = start_redis(tmp_path / "redis", port=port)
    try:
        # No worker: the documents stay queued until the test ends them, exactly when it chooses.
        platform = platform_factory(postgres_url, engine="fake", redis_base_url=url, extra_env={
            "PAGEMILL_EVENTS__RECHECK_S": str(RECHECK_S)}).start(worker=False)
        platform.expect_log_errors(REDIS_AWAY)
        # A second gateway that never re-checks within the test: what its streams get once Redis is back can only
        # have been pushed. (With one gateway re-checking every 3 s, pushing was told from the re-check by the
        # lag alone, under 0.75 s: a loaded machine's push could be slower, and a re-check faster by chance.)
        platform.extra_env["PAGEMILL_EVENTS__RECHECK_S"] = "3600"
        pushed_url = platform.start_gateway("gateway-no-recheck", port=free_port())
        first, *later = (platform.upload(corpus / ONE_PAGE, cache="false")["id"] for _ in range(4))
        with platform.client() as client, httpx.Client(
                base_url=pushed_url, headers={"Authorization": f"Bearer {platform.api_key}"}, timeout=60) as pushed:
            stream = EventStream(client, first).start()
            stream.wait_for("document.queued", 10)
            # (a gateway subscribes when its first stream opens)
            unchecked = EventStream(pushed, first).start()
            unchecked.wait_for("document.queued", 10)
            wait_until(lambda: subscribers(platform) >= 2, 10, "the gateways' subscriptions")
            stop()  # Redis away: the notice of the final state cannot be published, nor heard
            finish(platform, first)
            final = stream.wait_for("document.succeeded", RECHECK_S + 10)
            assert stream.wait_closed(5)[-1] is final  # Redis is still away: it came from the re-check alone

            url, stop = start_redis(tmp_path / "redis", port=port)
            wait_until(lambda: subscribers(platform) >= 2, 30, "the gateways subscribing again")
            # The gateway that does not re-check learns of the change it missed when it subscribes again.
            unchecked.wait_for("document.succeeded", 10)
            unchecked.wait_closed(5)
            lags = []
            for document_id in later:
                stream = EventStream(pushed, document_id).start()
                # The stream's first read is done (it has the queued event): what follows comes from a notice.
                stream.wait_for("document.queued", 10)
                ended = finish(platform, document_id)
                lags.append((stream.wait_for("document.succeeded", 30).at - ended).total_seconds())
                stream.wait_closed(5)
            print(f"pushed after Redis came back: the final events came {lags} s after their commits")
    finally:
        stop()
