"""Scrape-time gauges: queue depth and oldest-message age read from Redis, documents and busy tenants from the DB.

Celery's Redis transport keeps each queue as a Redis list of JSON envelopes; producers `LPUSH` and workers
`BRPOP`, so the oldest waiting message is the list's last element. Its age comes from the `pagemill_sent_at`
header `queues.send_jobs` stamps on every message, or, for a message sent without it, from the `enqueued_at` of the
page task inside the body.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

import redis
import sqlalchemy as sa
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from services.core.db.models import Document, Page, PageStatus
from services.core.db.session import session_scope
from services.core.metrics import (
    DOCUMENTS_OPEN,
    QUEUE_CONSUMER_SLOTS,
    QUEUE_DEPTH,
    QUEUE_OLDEST_AGE,
    TENANT_OPEN_PAGES,
    CallbackCollector,
)
from services.core.queues import SENT_AT_HEADER, Queue, consumer_slots, redis_lists
from services.core.settings import Settings

Samples = Iterable[tuple[tuple[str, ...], float]]


def message_sent_at(raw: bytes | str) -> float | None:
    """When a queued Celery message was sent (epoch seconds), or None when it does not say."""
    try:
        envelope: dict[str, Any] = json.loads(raw)
    except ValueError:
        return None
    sent = (envelope.get("headers") or {}).get(SENT_AT_HEADER)
    if isinstance(sent, int | float):
        return float(sent)
    return _payload_enqueued_at(envelope)


def _payload_enqueued_at(envelope: dict[str, Any]) -> float | None:
    body = envelope.get("body")
    if not isinstance(body, str):
        return None
    try:
        if (envelope.get("properties") or {}).get("body_encoding") == "base64":
            body = base64.b64decode(body).decode()
        args = json.loads(body)[0]  # task protocol 2: [args, kwargs, embed]
        stamp = args[0].get("enqueued_at") if args and isinstance(args[0], dict) else None
        return datetime.fromisoformat(stamp).timestamp() if isinstance(stamp, str) else None
    except (ValueError, TypeError, IndexError, KeyError):
        return None


def read_queues(client: redis.Redis, now: float | None = None) -> tuple[dict[str, int], dict[str, float]]:
    """(depth, oldest age in seconds) per queue, in one round trip. A queue is one Redis list per priority
    step (fair share); its depth is their sum and its age that of the oldest message in any of them."""
    now = time.time() if now is None else now
    with client.pipeline(transaction=False) as pipe:
        for queue in Queue:
            for name in redis_lists(queue):
                pipe.llen(name)
                pipe.lindex(name, -1)
        replies = iter(pipe.execute())
    depth: dict[str, int] = {}
    age: dict[str, float] = {}
    for queue in Queue:
        depth[queue.value], oldest_sent = 0, None
        for _ in redis_lists(queue):
            length, oldest = int(next(replies)), next(replies)
            depth[queue.value] += length
            sent = message_sent_at(oldest) if oldest is not None else None
            if sent is not None and (oldest_sent is None or sent < oldest_sent):
                oldest_sent = sent
        age[queue.value] = max(0.0, now - oldest_sent) if oldest_sent is not None else 0.0
    return depth, age


class QueueCollector(Collector):
    """Depth and oldest-message age of every queue, and the slots of each page queue's consumers, from two Redis
    round trips per scrape."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def collect(self) -> Iterator[GaugeMetricFamily]:
        depth_family = GaugeMetricFamily(QUEUE_DEPTH.name, QUEUE_DEPTH.documentation, labels=list(QUEUE_DEPTH.labels))
        age_family = GaugeMetricFamily(QUEUE_OLDEST_AGE.name, QUEUE_OLDEST_AGE.documentation,
                                       labels=list(QUEUE_OLDEST_AGE.labels))
        slots_family = GaugeMetricFamily(QUEUE_CONSUMER_SLOTS.name, QUEUE_CONSUMER_SLOTS.documentation,
                                         labels=list(QUEUE_CONSUMER_SLOTS.labels))
        try:
            client = redis.Redis.from_url(self.settings.resolved_redis_url(), socket_timeout=2)
            try:
                depth, age = read_queues(client)
                slots = consumer_slots(client)
            finally:
                client.close()
            for queue in depth:
                depth_family.add_metric([queue], float(depth[queue]))
                age_family.add_metric([queue], age[queue])
            for queue, count in slots.items():
                slots_family.add_metric([queue], float(count))
        except Exception:  # noqa: BLE001 - a scrape must not fail because Redis blinked; the series just gap
            pass
        yield depth_family
        yield age_family
        yield slots_family


def scrape_collectors(settings: Settings) -> list[Collector]:
    """Everything the gateway's `/metrics` computes at scrape time."""
    return [QueueCollector(settings), *database_collectors(settings)]


def database_collectors(settings: Settings) -> list[CallbackCollector]:
    def documents_by_status() -> Samples:
        with session_scope(settings.resolved_database_url()) as session:
            rows = session.execute(sa.select(Document.status, sa.func.count()).group_by(Document.status)).all()
        return [((str(status),), float(count)) for status, count in rows]

    top_n = settings.metrics.tenant_top_n

    def busiest_tenants() -> Samples:
        with session_scope(settings.resolved_database_url()) as session:
            rows = session.execute(
                sa.select(Document.tenant_id, sa.func.count())
                .join(Page, Page.document_id == Document.id)
                .where(Page.status.in_([PageStatus.QUEUED, PageStatus.RUNNING]))
                .group_by(Document.tenant_id)
            ).all()
        return top_n_with_other([(tenant or "none", float(n)) for tenant, n in rows], top_n)

    # With N = 0 (the default) every tenant is `other`: the series exists and no tenant id is exported.
    return [CallbackCollector.of(DOCUMENTS_OPEN, documents_by_status),
            CallbackCollector.of(TENANT_OPEN_PAGES, busiest_tenants)]


def top_n_with_other(rows: list[tuple[str, float]], n: int) -> Samples:
    """The n largest values by name, the rest summed as `other` (0 when there is no rest, so the series always
    exists): at most n + 1 label values, whatever the load."""
    ranked = sorted(rows, key=lambda row: (-row[1], row[0]))
    head, tail = ranked[:n], ranked[n:]
    samples = [((name,), value) for name, value in head]
    samples.append((("other",), sum(value for _, value in tail)))
    return samples
