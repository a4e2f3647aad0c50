"""Every Prometheus metric of pagemill, declared once. Names are `pagemill_<noun>_<unit>`; labels are bounded.

Processes of one machine share `PROMETHEUS_MULTIPROC_DIR` (set by `pagemill serve` and the images), so the
gateway's `/metrics` and each worker's metrics port show the whole machine.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
    values,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

PAGE_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300)
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

# HTTP (gateway) ----------------------------------------------------------------------------------------------
HTTP_REQUESTS = Counter(
    "pagemill_http_requests_total", "HTTP requests by route template, method and status code.",
    ["route", "method", "status"])
HTTP_LATENCY = Histogram(
    "pagemill_http_request_duration_seconds", "HTTP request latency by route template and method.",
    ["route", "method"], buckets=HTTP_BUCKETS)
UPLOADS_REJECTED = Counter(
    "pagemill_uploads_rejected_total", "Uploads refused before anything was queued, by error code.", ["code"])
RATE_LIMITED = Counter(
    "pagemill_rate_limited_total", "Requests refused with 429, by the limit that was hit.", ["limit"])

# Documents and pages -----------------------------------------------------------------------------------------
DOCUMENTS_TOTAL = Counter(
    "pagemill_documents_total", "Documents accepted (status=queued) and finished (final status), by mode.",
    ["status", "mode"])
PAGES_TOTAL = Counter(
    "pagemill_pages_total", "Pages that ended, by status, engine and mode.", ["status", "engine", "mode"])
PAGE_LATENCY = Histogram(
    "pagemill_page_latency_seconds", "Engine time per page (inputs prepared, retries included), by engine.",
    ["engine"], buckets=PAGE_LATENCY_BUCKETS)
PAGE_STAGE = Histogram(
    "pagemill_page_stage_seconds",
    "Time per page in each stage: queue_wait, fetch, prepare, anchor, render, engine, align, store.",
    ["stage", "engine"], buckets=PAGE_LATENCY_BUCKETS)
PAGE_RETRIES = Counter(
    "pagemill_page_retries_total", "Page retries, by reason (engine_unavailable, lease_expired, invalid output…).",
    ["reason"])
FALLBACK_PAGES = Counter(
    "pagemill_fallback_pages_total", "Pages answered by the fallback engine after the primary gave up, by reason.",
    ["reason"])
CACHE_LOOKUPS = Counter(
    "pagemill_cache_lookups_total", "Result-cache lookups by level (document, page) and outcome (hit, miss).",
    ["level", "outcome"])

# Engines -----------------------------------------------------------------------------------------------------
ENGINE_REQUESTS = Counter(
    "pagemill_engine_requests_total", "Calls to an engine backend, by engine and outcome.", ["engine", "outcome"])
ENGINE_TOKENS = Counter(
    "pagemill_engine_tokens_total", "Tokens consumed by generative engines, by engine and kind (prompt, completion).",
    ["engine", "kind"])
ENGINE_IN_FLIGHT = Gauge(
    "pagemill_engine_in_flight_requests", "Requests currently open against an engine backend.", ["engine"],
    multiprocess_mode="livesum")

# Webhooks ----------------------------------------------------------------------------------------------------
WEBHOOK_DELIVERIES = Counter(
    "pagemill_webhook_deliveries_total", "Webhook delivery attempts by outcome (success, retry, failed).",
    ["outcome"])
WEBHOOK_LATENCY = Histogram(
    "pagemill_webhook_delivery_seconds", "Time for a webhook receiver to answer.", buckets=HTTP_BUCKETS)

# Processes ---------------------------------------------------------------------------------------------------
PROCESS_RSS = Gauge(
    "pagemill_process_resident_memory_bytes", "Resident memory of each live pagemill process, by role.", ["role"],
    multiprocess_mode="liveall")
TASKS = Counter(
    "pagemill_tasks_total", "Celery task runs that ended, by task, queue and state (SUCCESS, RETRY, FAILURE…).",
    ["task", "queue", "state"])


# Known label values ------------------------------------------------------------------------------------------
# A labelled series exists only once its labels are used, so a fresh deployment would show "No data" and rate()
# alerts would start late. Each process sets these to 0 when it starts (Prometheus's advice: "avoid missing
# metrics"); a value the code uses that is not listed here still appears on first use.
UPLOAD_REJECTION_CODES = ("unsupported_media_type", "file_too_large", "too_many_pages", "encrypted_pdf",
                          "corrupt_document", "empty_document", "validation_error", "rate_limited",
                          "idempotency_conflict", "internal_error")
RATE_LIMITS = ("requests_per_minute", "pages_in_flight")
WEBHOOK_OUTCOMES = ("success", "retry", "failed")
ENGINE_OUTCOMES = ("ok", "length", "unavailable", "rejected")
TOKEN_KINDS = ("prompt", "completion")
FALLBACK_REASONS = ("engine_unavailable", "length", "repetition", "empty")


def initialise_gateway_series() -> None:
    """The gateway's labelled series at 0: rejected uploads by code, 429s by limit."""
    for code in UPLOAD_REJECTION_CODES:
        UPLOADS_REJECTED.labels(code=code)
    for limit in RATE_LIMITS:
        RATE_LIMITED.labels(limit=limit)


def initialise_worker_series(engine: str) -> None:
    """A worker's labelled series at 0, for the engine it runs: engine calls, tokens and open requests,
    fallbacks, webhook deliveries (the results tasks run in workers)."""
    for outcome in ENGINE_OUTCOMES:
        ENGINE_REQUESTS.labels(engine=engine, outcome=outcome)
    for kind in TOKEN_KINDS:
        ENGINE_TOKENS.labels(engine=engine, kind=kind)
    ENGINE_IN_FLIGHT.labels(engine=engine).set(0)
    for reason in FALLBACK_REASONS:
        FALLBACK_PAGES.labels(reason=reason)
    for outcome in WEBHOOK_OUTCOMES:
        WEBHOOK_DELIVERIES.labels(outcome=outcome)


# Scrape-time gauges --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ScrapeGauge:
    """A gauge computed when `/metrics` is scraped (from Redis or the database), not kept by any process."""

    name: str
    documentation: str
    labels: tuple[str, ...]


QUEUE_DEPTH = ScrapeGauge("pagemill_queue_depth", "Messages waiting in each queue.", ("queue",))
QUEUE_OLDEST_AGE = ScrapeGauge(
    "pagemill_queue_oldest_age_seconds", "Age of the oldest message waiting in each queue (0 when empty).",
    ("queue",))
QUEUE_CONSUMER_SLOTS = ScrapeGauge(
    "pagemill_queue_consumer_slots", "Slots (worker processes or threads) the live workers of each page queue "
    "announce: what a document's chunks are sized by.", ("queue",))
DOCUMENTS_OPEN = ScrapeGauge("pagemill_documents", "Documents in the database, by status.", ("status",))
TENANT_OPEN_PAGES = ScrapeGauge(
    "pagemill_tenant_open_pages", "Queued and running pages of the busiest tenants (the top "
    "`PAGEMILL_METRICS__TENANT_TOP_N` named, the rest as `other`).", ("tenant",))
SCRAPE_GAUGES = (QUEUE_DEPTH, QUEUE_OLDEST_AGE, QUEUE_CONSUMER_SLOTS, DOCUMENTS_OPEN, TENANT_OPEN_PAGES)


@contextmanager
def stage_timer(stage: str, engine: str, pages: int = 1) -> Iterator[None]:
    """Observes how long the block took into `pagemill_page_stage_seconds`, also when it raises. A block that
    served `pages` pages at once (one result object for a chunk) counts once per page, each with its share."""
    started = time.perf_counter()
    try:
        yield
    finally:
        share = (time.perf_counter() - started) / max(1, pages)
        series = PAGE_STAGE.labels(stage=stage, engine=engine)
        for _ in range(max(1, pages)):
            series.observe(share)


def resident_memory_bytes() -> float:
    """This process's current resident set size (Linux `/proc`; peak RSS elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return float(int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, IndexError):
        import resource

        return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def record_rss(role: str) -> None:
    PROCESS_RSS.labels(role=role).set(resident_memory_bytes())


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR")


def writes_to_multiprocess_dir() -> bool:
    """Whether this process's metrics are written to the shared directory. prometheus_client decides once, when
    it is imported: a process that set `PROMETHEUS_MULTIPROC_DIR` later keeps its series to itself, and a
    `/metrics` that reads the directory never shows them."""
    return values.ValueClass is not values.MutexValue


class CallbackCollector(Collector):
    """Gauges read at scrape time (queue depth from Redis, open documents from the database)."""

    def __init__(self, name: str, documentation: str, labels: list[str],
                 read: Callable[[], Iterable[tuple[tuple[str, ...], float]]]) -> None:
        self.name, self.documentation, self.labels, self.read = name, documentation, labels, read

    @classmethod
    def of(cls, gauge: ScrapeGauge, read: Callable[[], Iterable[tuple[tuple[str, ...], float]]]) -> CallbackCollector:
        return cls(gauge.name, gauge.documentation, list(gauge.labels), read)

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = GaugeMetricFamily(self.name, self.documentation, labels=self.labels)
        try:
            for label_values, value in self.read():
                family.add_metric(list(label_values), value)
        except Exception:  # noqa: BLE001 - a scrape must not fail because Redis or the DB blinked
            pass
        yield family


def start_metrics_server(port: int, addr: str = "0.0.0.0") -> None:
    """`/metrics` on its own port, in a thread (workers and the reconciler, which serve no HTTP otherwise)."""
    from prometheus_client import start_http_server

    if multiprocess_dir():
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        start_http_server(port, addr=addr, registry=registry)
    else:
        start_http_server(port, addr=addr)


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
