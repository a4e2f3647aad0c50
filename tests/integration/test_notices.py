"""Document notices on real Redis: handed to the process's publisher thread, they reach a subscriber without
the committing code waiting for Redis; the notices waiting together go in one pipeline."""

from __future__ import annotations

import time

import redis

from services.core import notices


def test_notices_handed_to_the_publisher_thread_reach_a_subscriber(broker: tuple[str, redis.Redis]) -> None:
    url, client = broker
    subscription = client.pubsub()  # type: ignore[no-untyped-call]
    subscription.subscribe(notices.channel_name(url))
    assert subscription.get_message(timeout=5)["type"] == "subscribe"
    notices.publish_soon(url, [notices.DocumentNotice("doc_a"), notices.DocumentNotice("doc_b"),
                               notices.DocumentNotice("doc_a")])
    notices.publish_soon(url, [notices.DocumentNotice("doc_c")])
    received: list[bytes] = []
    deadline = time.monotonic() + 10
    while len(received) < 3 and time.monotonic() < deadline:
        message = subscription.get_message(timeout=1)  # returns as soon as one arrives
        if message is not None and message["type"] == "message":
            received.append(message["data"])
    assert sorted(received) == [b"doc_a", b"doc_b", b"doc_c"], "each document once, none lost"
    assert subscription.get_message(timeout=0.2) is None, "no duplicate"
    subscription.close()
