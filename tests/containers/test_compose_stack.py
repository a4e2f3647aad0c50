"""docker/compose.yaml, run: every pagemill service in its own container from the images `make images` built,
Redis, PostgreSQL and an S3 API in containers too, all on the compose network; then, through the gateway's
published port only, documents parsed, workers scaled and killed, the stack taken down and up again.

The tests share one stack and run in file order (the down/up test last): each leaves it as the next needs it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.core.queues import CONSUMERS_KEY
from tests.containers.stack import PAGEMILL, Api, Stack, podman, record, require_podman
from tests.faults.recovery import PAGE_MARKER
from tests.harness import wait_until
from tests.pdfs import repeat_pages

pytestmark = [pytest.mark.deploy, pytest.mark.slow]

FORMATS = ("markdown", "html", "latex", "json", "chunks")
UID = "10001"


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    report = require_podman()
    stack = Stack(backing=report["backing"])
    stack.destroy()  # nothing left from an earlier run of the same name
    try:
        figures = stack.up()
        record("compose", {"first_up": figures, "backing": report["backing"]})
        yield stack
    finally:
        for container in (stack.container(s) for s in (*PAGEMILL, "migrate")):
            print(f"--- {container}\n{stack.logs(container)[-2000:]}")
        stack.destroy()


@pytest.fixture(scope="module")
def api(stack: Stack) -> Api:
    api = Api(stack.url, stack.admin_key)
    api.make_tenant()
    return api


def inspect(container: str) -> dict[str, Any]:
    data: list[dict[str, Any]] = json.loads(podman("inspect", container).stdout)
    return data[0]


def page_numbers(markdown: str) -> list[int]:
    return [int(n) for n in PAGE_MARKER.findall(markdown)]


def test_each_service_runs_in_its_own_container_non_root_on_a_read_only_root(stack: Stack) -> None:
    network = f"{stack.project}_default"
    for service in (*PAGEMILL, "migrate"):
        info = inspect(stack.container(service))
        assert info["Config"]["User"] == f"{UID}:{UID}", (service, info["Config"]["User"])
        assert info["HostConfig"]["ReadonlyRootfs"] is True, f"{service}: compose sets read_only, as the chart"
        assert network in info["NetworkSettings"]["Networks"], service
        if service != "migrate":
            assert info["State"]["Running"], service
            assert podman("exec", stack.container(service), "id", "-u").stdout.strip() == UID, service
            # nothing outside /tmp is writable, as on the chart's pods
            probe = podman("exec", stack.container(service), "touch", "/app/x", check=False)
            assert probe.returncode != 0 and "Read-only file system" in probe.stderr, (service, probe.stderr)
    assert inspect(stack.container("migrate"))["State"]["ExitCode"] == 0


def test_a_pdf_a_scan_and_an_office_document_succeed_with_every_format(stack: Stack, api: Api, corpus: Path,
                                                                       tmp_path: Path) -> None:
    documents = {
        "multi-page pdf": (corpus / "dev" / "docling_multi_page" / "multi_page.pdf", "The Evolution of the Word"),
        "scan": (corpus / "dev" / "docling_ocr_test" / "ocr_test.pdf", "Docling bundles PDF document conversion"),
        "office": (corpus / "office" / "docx_word_sample" / "word_sample.docx", "Swimming in the lake"),
    }
    started = time.monotonic()
    created = {kind: api.upload(path) for kind, (path, _) in documents.items()}
    timings = {}
    for kind, body in created.items():
        state = api.wait_done(body["id"])
        timings[kind] = round(time.monotonic() - started, 1)
        assert state["status"] == "succeeded", (kind, state)
        for fmt in FORMATS:
            response = api.result(body["id"], fmt)
            assert response.status_code == 200 and response.content, (kind, fmt, response.text[:300])
        markdown = api.result(body["id"]).text
        assert documents[kind][1].lower() in " ".join(markdown.split()).lower(), (kind, markdown[:500])
    keys = stack.bucket_keys()
    for kind, body in created.items():
        mine = [k for k in keys if body["id"] in k]
        assert mine, f"no object of the {kind} document ({body['id']}) in the bucket: {keys[:20]}"
    record("compose", {"three_documents_s": timings, "objects_in_bucket": len(keys)})


def test_two_cpu_worker_replicas_both_take_pages_of_one_document(stack: Stack, api: Api, corpus: Path,
                                                                 tmp_path: Path) -> None:
    stack.scale_cpu_workers(2)
    second = stack.container("worker-cpu", 2)
    assert inspect(second)["State"]["Running"]
    # Both consume before the upload: each announces its slots on pages.cpu once Celery is consuming.
    wait_until(lambda: len(_cpu_consumers(stack)) >= 2, 180, "both CPU workers to consume", every=0.5)
    source = tmp_path / "scan-16.pdf"
    source.write_bytes(repeat_pages(corpus / "dev" / "docling_ocr_test" / "ocr_test.pdf", 16))
    # Its 16 pages are one page repeated, which the earlier test uploaded: without cache=false every page would
    # be answered by the page cache (logged `page.cached`, not `page.parsed`) and no replica would parse one.
    created = api.upload(source, cache="false")
    state = api.wait_done(created["id"])
    assert state["status"] == "succeeded", state
    by_worker = {n: stack.page_events(stack.container("worker-cpu", n), created["id"]) for n in (1, 2)}
    assert by_worker[1] and by_worker[2], (f"pages per replica: {by_worker}", [
        line for n in (1, 2) for line in stack.logs(stack.container("worker-cpu", n)).splitlines()
        if "page.parsed" in line][-6:])
    assert sorted(by_worker[1] + by_worker[2]) == list(range(16)), by_worker
    assert sorted(page_numbers(api.result(created["id"]).text)) == list(range(1, 17))
    record("compose", {"replicas": {"pages": 16, "worker_1": len(by_worker[1]), "worker_2": len(by_worker[2])}})


def _cpu_consumers(stack: Stack) -> set[str]:
    """The Celery nodes whose announcement on pages.cpu is live (services.core.queues.announce_consumer: a
    worker writes it on worker_ready, renews it while it runs), read with redis-cli in the Redis container. The
    results worker consumes no page queue, so it is not counted, unlike with a ping of every node."""
    now = str(int(time.time()))
    out = podman("exec", stack.container("redis"), "redis-cli", "--raw", "zrangebyscore",
                 CONSUMERS_KEY.format(queue="pages.cpu"), now, "+inf", check=False).stdout
    return {line.split(" ", 1)[1] for line in out.splitlines() if " " in line}


def test_a_worker_container_killed_mid_document_every_page_ends_once(stack: Stack, api: Api, corpus: Path,
                                                                     tmp_path: Path) -> None:
    victim = stack.container("worker-cpu", 1)
    hostname = inspect(victim)["Config"]["Hostname"]
    wait_until(lambda: len(_cpu_consumers(stack)) >= 2, 180, "both CPU workers to consume", every=0.5)
    source = tmp_path / "scan-24.pdf"
    source.write_bytes(repeat_pages(corpus / "dev" / "docling_ocr_test" / "ocr_test.pdf", 24))
    # cache=false: the page is in the result cache from the tests above, and a cached page is running for the
    # milliseconds of one lookup, which a poll may never see (a CI run waited 180 s for it); parsed, the victim
    # holds each of its pages for the seconds OCR takes.
    created = api.upload(source, cache="false")
    # Kill once the victim holds a running page of the document (its lease names the container's host).
    wait_until(lambda: stack.psql(f"select index from pages where document_id = '{created['id']}' and "
                                  f"status = 'running' and lease_owner like '{hostname}:%'"),
               180, "a page running on the victim", every=0.2)
    killed_at = time.monotonic()
    podman("kill", "-s", "KILL", victim)  # kill -9 of the container, as the OOM killer or a lost node would
    state = api.wait_done(created["id"])
    recovered_s = round(time.monotonic() - killed_at, 1)
    assert state["status"] == "succeeded" and state["pages_failed"] == 0, state
    seen = page_numbers(api.result(created["id"]).text)
    assert sorted(seen) == list(range(1, 25)), f"pages lost or twice: {sorted(seen)}"
    rows = stack.psql(f"select index, deliveries from pages where document_id = '{created['id']}'")
    rerun = sorted(int(i) for i, d in rows if int(d) > 1)
    restarts = inspect(victim)["State"].get("RestartCount", inspect(victim).get("RestartCount", 0))
    record("compose", {"kill": {"pages": 24, "rerun_pages": rerun, "document_done_after_kill_s": recovered_s,
                                "victim_restarted_by_podman": restarts}})


def test_down_and_up_again_keeps_documents_and_results(stack: Stack, api: Api, corpus: Path) -> None:
    created = api.upload(corpus / "dev" / "docling_multi_page" / "multi_page.pdf")
    assert api.wait_done(created["id"])["status"] == "succeeded"
    before = api.result(created["id"]).text
    with api.client() as client:
        listed_before = client.get("/v1/documents").json()
    stack.down()  # containers gone, volumes kept
    assert not podman("ps", "-a", "-q", "--filter", f"name={stack.project}_", check=False).stdout.strip()
    figures = stack.up()
    assert api.state(created["id"])["status"] == "succeeded"
    assert api.result(created["id"]).text == before
    with api.client() as client:
        listed_after = client.get("/v1/documents").json()
    assert listed_after == listed_before, "every earlier document is still listed"
    for fmt in FORMATS:
        assert api.result(created["id"], fmt).status_code == 200, fmt
    # and the stack still parses
    again = api.upload(corpus / "office" / "docx_word_sample" / "word_sample.docx")
    assert api.wait_done(again["id"])["status"] == "succeeded"
    record("compose", {"up_again": figures})
