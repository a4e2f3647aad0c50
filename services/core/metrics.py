"""Every Prometheus metric of pagemill, declared once. Names are `pagemill_<noun>_<unit>`; labels are bounded.

Processes of one machine share `PROMETHEUS_MULTIPROC_DIR` (set by `pagemill serve` and the images), so the
gateway's `/metrics` and each worker's metrics port show the whole machine.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

PAGE_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300)

DOCUMENTS_TOTAL = Counter(
    "pagemill_documents_total", "Documents accepted and finished, by final status.", ["status"])
PAGES_TOTAL = Counter(
    "pagemill_pages_total", "Pages that ended, by status and engine.", ["status", "engine"])
PAGE_LATENCY = Histogram(
    "pagemill_page_latency_seconds", "Engine time per page (render included), by engine.", ["engine"],
    buckets=PAGE_LATENCY_BUCKETS)
PAGE_RETRIES = Counter(
    "pagemill_page_retries_total", "Page deliveries given back to the queue, by reason.", ["reason"])
UPLOADS_REJECTED = Counter(
    "pagemill_uploads_rejected_total", "Uploads refused before anything was queued, by error code.", ["code"])


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR")


class CallbackCollector(Collector):
    """Gauges read at scrape time (queue depth from Redis, open documents from the database)."""

    def __init__(self, name: str, documentation: str, labels: list[str],
                 read: Callable[[], Iterable[tuple[tuple[str, ...], float]]]) -> None:
        self.name, self.documentation, self.labels, self.read = name, documentation, labels, read

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = GaugeMetricFamily(self.name, self.documentation, labels=self.labels)
        try:
            for label_values, value in self.read():
                family.add_metric(list(label_values), value)
        except Exception:  # noqa: BLE001 - a scrape must not fail because Redis or the DB blinked
            pass
        yield family


def render_metrics(extra: Iterable[Collector] = ()) -> tuple[bytes, str]:
    """The exposition for `/metrics`: this machine's processes (multiprocess mode) plus scrape-time gauges."""
    registry = CollectorRegistry()
    if multiprocess_dir():
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(REGISTRY)  # a single process: its own default registry
    for collector in extra:
        registry.register(collector)
    return generate_latest(registry), CONTENT_TYPE_LATEST
