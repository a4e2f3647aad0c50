"""What admins see, on the real platform: JSON logs that follow one request id, and the metrics it exports.

One platform (gateway, worker, reconciler as real processes on real Redis and PostgreSQL, the `fake` engine)
serves the module. A document is uploaded while no worker runs (so the queue really holds it and ages), then a
worker with a metrics port drains it. The scrape it produces is also what the dashboards and alert rules are
checked against (`tests/unit/test_dashboards.py` holds the query checks; they run here on this scrape).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import yaml
from prometheus_client.parser import text_string_to_metric_families

from services.core.queues import Queue
from services.reconciler.loop import EPOCH_KEY
from tests.conftest import TemplateCopies
from tests.harness import Platform, wait_until
from tests.observability import (
    AWAITING_PRODUCER,
    alert_rules,
    dashboard_queries,
    grafana_to_promql,
    metric_names,
    rule_files,
    unknown_metrics,
    vllm_documented_metrics,
)
from tests.servers import free_port, wait_for

pytestmark = pytest.mark.slow

REQUEST_ID = "req-observability-0001"
PDF = Path("dev") / "docling_multi_page" / "multi_page.pdf"  # 5 digital pages
IMAGE = Path("dev") / "tesseract_phototest" / "phototest.tif"  # one page, queued at once (no split step)


@dataclass
class Run:
    platform: Platform
    document: dict[str, Any]  # the PDF
    image: dict[str, Any]  # the single-page image
    queued_scrape: str  # the gateway's /metrics while the document waited with no worker running
    scrapes: dict[str, str]  # gateway, worker and reconciler /metrics after the document finished
    metrics_ports: dict[str, int]  # worker and reconciler


def scrape(url: str) -> str:
    response = httpx.get(url, timeout=10)
    assert response.status_code == 200, response.text
    return response.text


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [(s.name, s.labels, s.value) for family in text_string_to_metric_families(text) for s in family.samples]


def value(text: str, name: str, **labels: str) -> float:
    """The sum of every sample of `name` whose labels include `labels`."""
    return sum(v for n, lab, v in samples(text) if n == name and labels.items() <= lab.items())


def aged(text: str) -> str | None:
    """The scrape, once the job on each of the documents and pages.cpu queues has waited a second."""
    queues = (Queue.DOCUMENTS, Queue.PAGES_CPU)
    return text if all(value(text, "pagemill_queue_oldest_age_seconds", queue=q.value) >= 1 for q in queues) else None


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, redis_server: str, postgres_copies: TemplateCopies,
        corpus: Path) -> Iterator[Run]:
    database_url, drop = postgres_copies.take()  # a copy of the migrated template
    platform = Platform(workdir=tmp_path_factory.mktemp("observability"), database_url=database_url,
                        redis_base_url=redis_server, engine="fake",
                        # every PDF split into page files: the PDF's split job waits on the documents queue
                        extra_env={"PAGEMILL_LOG_JSON": "true", "PAGEMILL_METRICS__TENANT_TOP_N": "3",
                                   "PAGEMILL_WORKER__PAGE_FILES_OVER_MB": "0"})
    try:
        platform.start(worker=False)
        # Mark Redis as seen, as a reconciler that ran before would have: a first pass that finds the key missing
        # takes every queued message for lost and sends it again (right, but the exact counts below would vary).
        redis.Redis.from_url(platform.redis_url).set(EPOCH_KEY, "observability")
        reconciler_port = free_port()
        platform.start_reconciler(metrics_port=reconciler_port)
        created = platform.upload(corpus / PDF, headers={"X-Request-ID": REQUEST_ID})
        image = platform.upload(corpus / IMAGE)
        platform.upload(Path(__file__), expect=415)  # a Python file is no document: a rejected upload
        # the split job and the image's page job wait, with nobody consuming them, until they have aged
        queued_scrape = wait_until(lambda: aged(scrape(f"{platform.url}/metrics")), 30, "the queued jobs to age")

        worker_port = free_port()
        platform.start_worker(metrics_port=worker_port)
        state = platform.wait_done(created["id"], timeout=120)
        assert state["status"] == "succeeded", state
        assert platform.wait_done(image["id"], timeout=60)["status"] == "succeeded"
        wait_for(lambda: httpx.get(f"http://127.0.0.1:{reconciler_port}/metrics", timeout=2).status_code == 200,
                 30, "reconciler metrics")

        def settled() -> dict[str, str] | None:
            """The scrapes once both assemblies have been counted: a task is counted when it has returned,
            right after it flipped the status."""
            scrapes = {
                "gateway": scrape(f"{platform.url}/metrics"),
                "worker": scrape(f"http://127.0.0.1:{worker_port}/metrics"),
                "reconciler": scrape(f"http://127.0.0.1:{reconciler_port}/metrics"),
            }
            assembled = value(scrapes["gateway"], "pagemill_tasks_total", queue=Queue.RESULTS.value, state="SUCCESS")
            return scrapes if assembled >= 2 else None

        scrapes = wait_until(settled, 30, "the assemblies to be counted")
        yield Run(platform, {**created, **state}, image, queued_scrape, scrapes,
                  {"worker": worker_port, "reconciler": reconciler_port})
    finally:
        platform.stop(graceful=False)
        postgres_copies.drop(drop)


# Logs ---------------------------------------------------------------------------------------------------------


def json_lines(text: str) -> list[dict[str, Any]]:
    lines = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                lines.append(json.loads(line))
            except ValueError:
                continue
    return lines


def test_one_request_id_follows_the_document_from_upload_to_assembly(run: Run) -> None:
    document_id = run.document["id"]
    gateway = [e for e in json_lines(run.platform.log("gateway")) if e.get("request_id") == REQUEST_ID]
    accepted = [e for e in gateway if e["event"] == "document.accepted"]
    assert len(accepted) == 1 and accepted[0]["document_id"] == document_id, gateway
    assert any(e["event"] == "http.request" and e["route"] == "/v1/documents" and e["status"] == 202
               for e in gateway), gateway

    def worker_lines() -> list[dict[str, Any]]:
        return [e for e in json_lines(run.platform.log("worker")) if e.get("document_id") == document_id]

    # The split logs its end after its last chunk of pages is queued: the pages (and the document) may end first.
    wait_for(lambda: any(e["event"] == "document.split" for e in worker_lines()), 30, "the split's log line")
    worker = worker_lines()
    assert worker, run.platform.log("worker")[-3000:]
    assert {e.get("request_id") for e in worker} == {REQUEST_ID}, "a worker line lost the request id"
    parsed = sorted(e["page"] for e in worker if e["event"] == "page.parsed")
    assert parsed == list(range(run.document["pages_total"])), worker
    assert sorted(e["event"] for e in worker if e["event"] in ("document.split", "document.finished")) == \
        ["document.finished", "document.split"]
    for entry in gateway + worker:
        assert {"timestamp", "level", "event"} <= entry.keys()


# Metrics ------------------------------------------------------------------------------------------------------


def test_the_queue_exporter_sees_a_waiting_document_and_its_age(run: Run) -> None:
    text = run.queued_scrape
    for queue in (Queue.DOCUMENTS, Queue.PAGES_CPU):
        assert value(text, "pagemill_queue_depth", queue=queue.value) == 1, queue
        assert 1.0 <= value(text, "pagemill_queue_oldest_age_seconds", queue=queue.value) < 60, queue
    assert value(text, "pagemill_queue_depth", queue=Queue.RESULTS.value) == 0
    assert value(text, "pagemill_queue_oldest_age_seconds", queue=Queue.RESULTS.value) == 0
    assert value(text, "pagemill_queue_consumer_slots", queue=Queue.PAGES_CPU.value) == 0  # no worker yet
    assert value(text, "pagemill_documents", status="queued") == 2
    # The image's page is queued; the PDF's pages are not split yet.
    assert value(text, "pagemill_tenant_open_pages", tenant=run.platform.tenant_id or "") == 1


def test_metrics_count_what_happened(run: Run) -> None:
    pages = run.document["pages_total"] + run.image["pages_total"]
    for name, text in run.scrapes.items():
        assert value(text, "pagemill_pages_total", status="succeeded", engine="fake") == pages, name
    text = run.scrapes["gateway"]
    assert value(text, "pagemill_http_requests_total", route="/v1/documents", method="POST", status="202") == 2
    assert value(text, "pagemill_http_requests_total", route="/v1/documents", method="POST", status="415") == 1
    assert value(text, "pagemill_http_requests_total", route="/v1/documents/{document_id}", status="200") >= 1
    assert value(text, "pagemill_http_request_duration_seconds_count", route="/v1/documents") == 3
    assert value(text, "pagemill_uploads_rejected_total", code="unsupported_media_type") == 1
    assert value(text, "pagemill_documents_total", status="queued", mode="fast") == 2
    assert value(text, "pagemill_documents_total", status="succeeded", mode="fast") == 2
    for stage in ("queue_wait", "fetch", "render", "engine", "store"):
        assert value(text, "pagemill_page_stage_seconds_count", stage=stage, engine="fake") == pages, stage
    assert value(text, "pagemill_page_latency_seconds_count", engine="fake") == pages
    # page messages carry chunks of a document's pages (worker.chunk_max_pages): one to `pages` of them
    assert 1 <= value(text, "pagemill_tasks_total", queue=Queue.PAGES_CPU.value, state="SUCCESS") <= pages
    assert value(text, "pagemill_tasks_total", queue=Queue.DOCUMENTS.value, state="SUCCESS") == 1
    assert value(text, "pagemill_tasks_total", queue=Queue.RESULTS.value, state="SUCCESS") == 2
    assert value(text, "pagemill_queue_depth", queue=Queue.PAGES_CPU.value) == 0
    for queue in (Queue.PAGES_CPU, Queue.PAGES_GPU):  # the worker (2 processes, every queue) announced its slots
        assert value(text, "pagemill_queue_consumer_slots", queue=queue.value) == 2, queue
    assert value(text, "pagemill_documents", status="succeeded") == 2
    assert value(text, "pagemill_tenant_open_pages", tenant=run.platform.tenant_id or "") == 0
    for role in ("gateway", "worker", "reconciler"):
        assert value(text, "pagemill_process_resident_memory_bytes", role=role) > 10 * 2**20, role
    assert value(run.scrapes["reconciler"], "pagemill_page_retries_total", reason="lease_expired") == 0


# Dashboards and alerts against this scrape --------------------------------------------------------------------


def exported(run: Run) -> set[str]:
    return {name for text in (*run.scrapes.values(), run.queued_scrape) for name, _, _ in samples(text)}


def test_every_dashboard_query_uses_a_real_metric(run: Run) -> None:
    names = exported(run)
    missing = {f"{where}: {m}" for where, expr in dashboard_queries() for m in unknown_metrics(expr, names)}
    assert not missing, "panels query metrics nobody exports:\n" + "\n".join(sorted(missing))


def test_every_alert_rule_uses_a_real_metric(run: Run) -> None:
    names = exported(run)
    missing = {f"{rule['alert']}: {m}" for rule in alert_rules() for m in unknown_metrics(rule["expr"], names)}
    assert not missing, "alert rules use metrics nobody exports:\n" + "\n".join(sorted(missing))


def test_metrics_awaiting_a_producer_are_still_missing(run: Run) -> None:
    """Declared metrics whose producers land with other issues. Once one is exported, drop it from the list, so
    the dashboards are checked against the real thing from then on."""
    # A metric without labels is exported (as zero) from the moment it is declared; it counts as produced once
    # it shows a labelled series or a non-zero value.
    seen = {name for text in (*run.scrapes.values(), run.queued_scrape) for name, labels, v in samples(text)
            if v != 0 or set(labels) - {"le", "pid"}}
    produced = {m for m in AWAITING_PRODUCER if metric_names(m) & seen}
    assert not produced, f"now exported, remove from AWAITING_PRODUCER: {sorted(produced)}"
    assert not AWAITING_PRODUCER & vllm_documented_metrics()


# A real Prometheus (Debian's package, `make ops-tools`) scraping this platform -----------------------------------

PROMETHEUS = shutil.which("prometheus")


@pytest.fixture(scope="module")
def prometheus(run: Run, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if PROMETHEUS is None:
        pytest.skip("prometheus is not installed (make ops-tools)")
    workdir = tmp_path_factory.mktemp("prometheus")
    targets = {"gateway": run.platform.url.removeprefix("http://"), **{
        name: f"127.0.0.1:{port}" for name, port in run.metrics_ports.items()}}
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(path) for path in rule_files()],
        "scrape_configs": [{"job_name": "pagemill", "static_configs": [
            {"targets": [address], "labels": {"component": name}} for name, address in targets.items()]}],
    }
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    process = subprocess.Popen(
        [PROMETHEUS, f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={workdir / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
        stderr=(workdir / "prometheus.log").open("wb"))
    url = f"http://127.0.0.1:{port}"
    try:
        def scraped_twice() -> bool:
            result = query(url, 'count_over_time(up{component="worker"}[1m])')
            return bool(result) and float(result[0]["value"][1]) >= 3
        wait_for(scraped_twice, 60, "prometheus scraping the platform")
        yield url
    finally:
        process.terminate()
        process.wait(20)


def query(url: str, expr: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{url}/api/v1/query", params={"query": expr}, timeout=10)
    body = response.json()
    assert response.status_code == 200 and body["status"] == "success", (expr, body)
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def test_prometheus_runs_every_dashboard_query(run: Run, prometheus: str) -> None:
    empty = []
    for where, expr in dashboard_queries():
        if not query(prometheus, grafana_to_promql(expr)):
            empty.append(where)
    # These panels must show data after one document (the rest wait for failures, webhooks, vLLM…).
    for must in ("Queue depth", "Oldest waiting message", "Pages per second, by status", "Page time by stage",
                 "Tasks consumed per second, by queue", "Resident memory", "Documents by status",
                 "API requests per second", "Page latency", "API latency p95"):
        assert not [w for w in empty if must in w and w.startswith("platform.json")], (must, empty)


def test_prometheus_loads_the_alert_rules_and_they_stay_quiet(run: Run, prometheus: str) -> None:
    response = httpx.get(f"{prometheus}/api/v1/rules", timeout=10).json()
    rules = [r for group in response["data"]["groups"] for r in group["rules"]]
    assert {r["name"] for r in rules} == {r["alert"] for r in alert_rules()}
    assert all(r["health"] == "ok" for r in rules), [(r["name"], r.get("lastError")) for r in rules]
    # A healthy platform: nothing pending or firing except vLLM's, which is absent here by design.
    active = {r["name"] for r in rules if r["state"] != "inactive"}
    assert active == set(), active


# A fresh deployment: every series the dashboards and alerts read exists before anything happened -------------

GATEWAY_SERIES = {"pagemill_uploads_rejected_total": {"code": "file_too_large"},
                  "pagemill_rate_limited_total": {"limit": "requests_per_minute"},
                  "pagemill_tenant_open_pages": {"tenant": "other"}}
WORKER_SERIES = {"pagemill_engine_requests_total": {"engine": "fake", "outcome": "ok"},
                 "pagemill_engine_tokens_total": {"engine": "fake", "kind": "completion"},
                 "pagemill_engine_in_flight_requests": {"engine": "fake"},
                 "pagemill_fallback_pages_total": {"reason": "engine_unavailable"},
                 "pagemill_webhook_deliveries_total": {"outcome": "failed"}}


def test_a_fresh_gateway_and_worker_export_every_labelled_series_at_zero(tmp_path: Path, redis_server: str,
                                                                       postgres_copies: TemplateCopies) -> None:
    """Issue 13, defect 8: these series did not exist until first used, so dashboards showed "No data"."""
    database_url, drop = postgres_copies.take()  # a copy of the migrated template
    platform = Platform(workdir=tmp_path, database_url=database_url, redis_base_url=redis_server, engine="fake")
    try:
        platform.start(worker=False)
        gateway = scrape(f"{platform.url}/metrics")
        for name, labels in GATEWAY_SERIES.items():
            found = [(lab, v) for n, lab, v in samples(gateway) if n == name and labels.items() <= lab.items()]
            assert found and all(v == 0 for _, v in found), (name, found)
        port = free_port()
        platform.start_worker(metrics_port=port)
        wait_for(lambda: httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).status_code == 200, 60, "worker")
        worker = scrape(f"http://127.0.0.1:{port}/metrics")
        for name, labels in WORKER_SERIES.items():
            assert not [n for n, _, _ in samples(gateway) if n == name], f"{name} came before the worker started"
            found = [(lab, v) for n, lab, v in samples(worker) if n == name and labels.items() <= lab.items()]
            assert found and all(v == 0 for _, v in found), (name, found)
    finally:
        platform.stop()
        drop()
