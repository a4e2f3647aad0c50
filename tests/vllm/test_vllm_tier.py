"""Real pages through the real platform (gateway, Redis, PostgreSQL, Celery workers) to a real vLLM server.

The server is vLLM on CPU serving a tiny random-weight Qwen2-VL: its text is noise, so these tests assert on
what the platform does with it — requests over HTTP with the tokens vLLM itself counted, the answer checks,
the temperature ladder and the flagged fallback, routing, the in-flight bound, speculative decoding in
vLLM's own metrics, and pages that wait out an outage. Two sampling set-ups steer the noise (both are plain
vLLM request fields, passed through PAGEMILL_ENGINE__REQUEST_EXTRA):

- STOP_EARLY: after 8 tokens, the first of a few common characters ends the answer (finish_reason "stop"); the
  end-of-sequence token can still end one sooner: vLLM 0.32 checks it before `min_tokens` (`check_stop`) and, under
  the tier's n-gram speculation, does not always mask it;
- RUN_TO_LENGTH: the end-of-sequence token is ignored, so every answer runs into max_tokens ("length").
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.core.pdf import PNG
from services.core.settings import Settings
from services.worker.engines import PageInput
from services.worker.engines.vllm.engine import VllmEngine
from services.worker.pipeline.inputs import prepare_input
from tests.conftest import PlatformFactory
from tests.harness import Platform
from tests.textmatch import word_recall
from tests.vllm_server import VllmServer, engine_env

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

STOP_EARLY = {"stop": ["e", "a", " ", "|"], "min_tokens": 8}
RUN_TO_LENGTH = {"ignore_eos": True}
GPU_THREADS = 4  # engine.max_in_flight of the tier, and the server's --max-num-seqs


def start_platform(platform_factory: PlatformFactory, database_url: str, server: VllmServer,
                   **engine: Any) -> Platform:
    env = engine_env({**server.engine, **engine})
    env.update({"PAGEMILL_WORKER__RETRY_BACKOFF_S": "0.5", "PAGEMILL_WORKER__RETRY_BACKOFF_MAX_S": "2"})
    platform = platform_factory(database_url, engine="vllm", extra_env=env)
    platform.start(worker=False)
    platform.start_worker("worker", concurrency=1, queues="pages.cpu,documents,results,webhooks")
    # The GPU worker as deployments run it: `pagemill worker --queues pages.gpu` picks a thread pool of
    # engine.max_in_flight by itself.
    platform._spawn("gpu", "worker", "--queues", "pages.gpu", "--name", "gpu@tier")
    return platform


def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    series: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in httpx.get(url, timeout=10).text.splitlines():
        match = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$", line)
        if match:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
            series.setdefault(match.group(1), []).append((labels, float(match.group(3))))
    return series


def metric(series: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    return sum(value for found, value in series.get(name, []) if all(found.get(k) == v for k, v in labels.items()))


def pages_of(platform: Platform, document_id: str) -> list[dict[str, Any]]:
    """The document's pages, each as the result JSON has it plus the page row's details."""
    pages: list[dict[str, Any]] = platform.result(document_id, "json")["pages"]
    with platform.client() as client:
        for page in pages:
            page["details"] = client.get(f"/v1/documents/{document_id}/pages/{page['page']}").json()["details"]
    return pages


def drafts_per_step(server: VllmServer) -> int:
    """The most draft tokens one step of the server can accept: its --speculative-config's count, else 0."""
    argv = server.argv
    if "--speculative-config" not in argv:
        return 0
    return int(json.loads(argv[argv.index("--speculative-config") + 1])["num_speculative_tokens"])


class RunningSampler:
    """Polls vLLM's `vllm:num_requests_running` while a test runs, to see the most it ever had at once."""

    def __init__(self, server: VllmServer) -> None:
        self.server, self.peak, self._stop = server, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RunningSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(httpx.HTTPError):
                self.peak = max(self.peak, self.server.metrics().get("vllm:num_requests_running", 0.0))
            time.sleep(0.05)


def test_pages_go_over_http_to_vllm_by_mode_with_the_tokens_it_counted(
        platform_factory: PlatformFactory, postgres_url: str, vllm_server: VllmServer, corpus: Path) -> None:
    platform = start_platform(platform_factory, postgres_url, vllm_server, request_extra=STOP_EARLY)
    before = vllm_server.metrics()
    with RunningSampler(vllm_server) as running:
        accurate = platform.upload(corpus / "dev/docling_multi_page/multi_page.pdf", mode="accurate", pages="1-3")
        balanced_text = platform.upload(corpus / "dev/docling_multi_page/multi_page.pdf", pages="4-5")
        balanced_scan = platform.upload(corpus / "dev/tesseract_phototest/phototest.png")  # default mode
        states = [platform.wait_done(d["id"], timeout=300) for d in (accurate, balanced_text, balanced_scan)]
    after = vllm_server.metrics()
    assert [s["status"] for s in states] == ["succeeded"] * 3, states
    assert [s["mode"] for s in states] == ["accurate", "balanced", "balanced"]

    vllm_pages = pages_of(platform, accurate["id"]) + pages_of(platform, balanced_scan["id"])
    for page in vllm_pages:
        assert page["engine"] == "vllm" and page["model"] == "tiny-vlm" and not page["is_fallback"], page
        assert page["finish_reason"] == "stop" and page["markdown"].strip()
        assert page["prompt_tokens"] > 0 and page["completion_tokens"] > 0  # what vLLM's usage said (see STOP_EARLY)
        assert 1 <= page["attempts"] <= 3 and len(page["details"]["attempt_log"]) == page["attempts"]
    # Digital pages carry their text layer, the scan the cpu engine's OCR hypothesis, as the anchor.
    assert {p["details"]["anchor_source"] for p in vllm_pages[:3]} == {"text_layer"}
    assert vllm_pages[3]["details"]["anchor_source"] == "ocr" and vllm_pages[3]["details"]["anchor_chars"] > 50
    # Plain text pages in balanced mode never went to vLLM.
    assert {(p["engine"], p["is_fallback"]) for p in pages_of(platform, balanced_text["id"])} == {("cpu", False)}

    # vLLM counted exactly the prompt tokens the pages recorded: every request really went to it.
    assert after["vllm:prompt_tokens_total"] - before.get("vllm:prompt_tokens_total", 0) == sum(
        p["prompt_tokens"] for p in vllm_pages)
    # It generated the answer tokens the pages recorded, and at most a speculative step's drafts more a request:
    # when a stop string ends an answer inside a step that accepted drafts, vLLM counts the whole step but drops
    # the tokens after the stop from the answer and its usage (vllm/v1/engine/detokenizer.py, "Drop tokens
    # generated after the one completing the stop string").
    generated = after["vllm:generation_tokens_total"] - before.get("vllm:generation_tokens_total", 0)
    recorded = sum(p["completion_tokens"] for p in vllm_pages)
    requests = sum(p["attempts"] for p in vllm_pages)
    assert recorded <= generated <= recorded + requests * drafts_per_step(vllm_server), (generated, recorded)
    assert running.peak <= GPU_THREADS
    ours = scrape(f"{platform.url}/metrics")
    assert metric(ours, "pagemill_engine_tokens_total", engine="vllm", kind="prompt") == sum(
        p["prompt_tokens"] for p in vllm_pages)
    assert metric(ours, "pagemill_engine_requests_total", engine="vllm", outcome="ok") >= len(vllm_pages)
    assert metric(ours, "pagemill_engine_in_flight_requests", engine="vllm") == 0


def test_length_finishes_climb_the_ladder_then_fall_back_flagged(
        platform_factory: PlatformFactory, postgres_url: str, vllm_server: VllmServer, corpus: Path) -> None:
    platform = start_platform(platform_factory, postgres_url, vllm_server, request_extra=RUN_TO_LENGTH,
                              temperatures=[0.0, 0.1, 0.2])
    before = vllm_server.metrics()
    scan = platform.upload(corpus / "dev/tesseract_phototest/phototest.png", mode="accurate")
    digital = platform.upload(corpus / "dev/docling_multi_page/multi_page.pdf", mode="accurate", pages="1")
    for created in (scan, digital):
        assert platform.wait_done(created["id"], timeout=300)["status"] == "succeeded"
    after = vllm_server.metrics()

    pages = pages_of(platform, scan["id"]) + pages_of(platform, digital["id"])
    for page in pages:
        # Three generations, each cut off at max_tokens, then the cpu engine's reading, flagged.
        assert page["is_fallback"] and page["fallback_reason"] == "length" and page["engine"] == "cpu", page
        assert page["attempts"] == 3
        log = page["details"]["attempt_log"]
        assert [a["temperature"] for a in log] == [0.0, 0.1, 0.2]
        assert [(a["finish_reason"], a["invalid"], a["completion_tokens"]) for a in log] == [
            ("length", "length", 48)] * 3
        assert page["completion_tokens"] == 3 * 48 and page["details"]["primary_model"] == "tiny-vlm"
    truth = (corpus / "dev/tesseract_phototest/phototest.txt").read_text()
    assert word_recall(truth, pages[0]["markdown"]) >= 0.9  # the fallback is a real reading of the page

    ours = scrape(f"{platform.url}/metrics")
    assert metric(ours, "pagemill_page_retries_total", reason="length") == 2 * len(pages)
    assert metric(ours, "pagemill_fallback_pages_total", reason="length") == len(pages)
    assert metric(ours, "pagemill_engine_requests_total", engine="vllm", outcome="length") == 3 * len(pages)
    # Greedy noise loops, and prompt-lookup drafts of the loop are accepted: vLLM shows both.
    assert after["vllm:spec_decode_num_drafts_total"] > before.get("vllm:spec_decode_num_drafts_total", 0)
    assert after["vllm:spec_decode_num_accepted_tokens_total"] > before.get(
        "vllm:spec_decode_num_accepted_tokens_total", 0)


def test_one_process_never_has_more_requests_open_than_max_in_flight(vllm_server: VllmServer, corpus: Path) -> None:
    settings = Settings(engine={**vllm_server.engine, "max_in_flight": 2, "max_tokens": 96,
                                "request_extra": RUN_TO_LENGTH})
    engine = VllmEngine(settings)
    page = prepare_input(engine, PageInput("bound", 0, PNG, (corpus / "dev/tesseract_phototest/phototest.png")
                                           .read_bytes(), anchor="The quick brown fox"), settings)
    outputs: list[Any] = []
    with RunningSampler(vllm_server) as running:
        threads = [threading.Thread(target=lambda: outputs.append(engine.parse(page, temperature=0.5)))
                   for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
    assert len(outputs) == 8 and all(o.completion_tokens == 96 for o in outputs)
    assert engine.peak_in_flight == 2 and engine.in_flight == 0
    assert running.peak <= 2


def test_pages_wait_out_a_vllm_outage_and_finish_when_it_is_back(
        platform_factory: PlatformFactory, postgres_url: str, vllm_server: VllmServer, corpus: Path) -> None:
    platform = start_platform(platform_factory, postgres_url, vllm_server, request_extra=STOP_EARLY)
    vllm_server.stop()
    try:
        created = platform.upload(corpus / "dev/docling_multi_page/multi_page.pdf", mode="accurate", pages="1-2")
        deadline = time.monotonic() + 120
        retries = 0.0
        while time.monotonic() < deadline:  # the pages bounce off the closed port, again and again
            retries = metric(scrape(f"{platform.url}/metrics"), "pagemill_page_retries_total",
                             reason="engine_unavailable")
            if retries >= 8:
                break
            time.sleep(1)
        assert retries >= 8, platform.log("gpu")[-3000:]
        with platform.client() as client:
            state = client.get(f"/v1/documents/{created['id']}").json()
            page = client.get(f"/v1/documents/{created['id']}/pages/1").json()
        assert state["status"] in ("queued", "running") and state["pages_failed"] == 0, state
        assert page["status"] in ("queued", "running") and page["details"]["last_retry_reason"] == "engine_unavailable"
    finally:
        vllm_server.start()  # back up, for this test and any that follow
    assert platform.wait_done(created["id"], timeout=300)["status"] == "succeeded"
    for page in pages_of(platform, created["id"]):
        assert page["engine"] == "vllm" and not page["is_fallback"] and page["finish_reason"] == "stop", page


def test_a_vllm_server_killed_mid_batch_loses_no_page(
        platform_factory: PlatformFactory, postgres_url: str, vllm_server: VllmServer, corpus: Path) -> None:
    """Issue 13's vLLM fault: SIGKILL of the server while requests are in its engine. The requests in flight fail
    as an outage; their pages wait (backoff, not the fallback) and finish once a server is back, each exactly
    once."""
    # The kill follows the server's own log of two requests in its engine: entered ("Added request") and not yet
    # answered (the access log's line), lines that stay, unlike the num_requests_running gauge (five pages of 600
    # tokens were over within 6 s, between two of its samples). Each request generates 1,500 tokens (end-of-sequence
    # ignored; well within the 4,096-token context): seconds of generation, against the milliseconds from reading
    # the log to the kill. Counting "entered" alone, a poll that came late (2 cores shared with other work) found
    # the first two requests already answered and killed a server with none in flight; asked "entered and not
    # answered", a late poll waits for the next pair of the five pages.
    platform = start_platform(platform_factory, postgres_url, vllm_server, request_extra=RUN_TO_LENGTH,
                              max_tokens=1500, max_attempts=1)
    log_start = vllm_server.log_size()
    created = platform.upload(corpus / "dev/docling_multi_page/multi_page.pdf", mode="accurate")
    uploaded_at = time.monotonic()
    deadline = uploaded_at + 240
    while vllm_server.requests_open(since=log_start) < 2:
        assert time.monotonic() < deadline, (
            f"vLLM never had two requests open\n--- gpu worker\n{platform.log('gpu')[-4000:]}\n"
            f"--- worker\n{platform.log('worker')[-2000:]}\n--- vllm\n{vllm_server.log_tail(3000)}")
        time.sleep(0.02)
    killed_at = time.monotonic()
    vllm_server.kill()
    try:
        with platform.client() as client:
            state = client.get(f"/v1/documents/{created['id']}").json()
        assert state["pages_failed"] == 0 and state["status"] in ("queued", "running"), state
    finally:
        vllm_server.start()  # a new server, as an orchestrator would start one
    back_at = time.monotonic()
    final = platform.wait_done(created["id"], timeout=300)
    done_at = time.monotonic()
    assert final["status"] in ("succeeded", "partial") and final["pages_failed"] == 0, final
    pages = pages_of(platform, created["id"])
    assert [p["page"] for p in pages] == [1, 2, 3, 4, 5]
    markdown = platform.result(created["id"])
    assert all(markdown.count(f"<!-- page {n} -->") == 1 for n in range(1, 6)), "a page twice or missing"
    # max_attempts=1 and length finishes: each page ends as the flagged fallback for `length`, never for the outage
    assert all(p["fallback_reason"] != "engine_unavailable" for p in pages), pages
    # The kill cut requests open (the connection dropped under them), not only refused new ones.
    cut = [line for line in platform.log("gpu").splitlines()
           if "page.retry" in line and "engine_unavailable" in line and "ConnectError" not in line]
    assert cut, (f"no request was in flight at the kill, {killed_at - uploaded_at:.1f} s after the upload\n"
                 f"--- gpu worker\n{platform.log('gpu')[-4000:]}\n--- vllm\n{vllm_server.log_tail(3000)}")
    print(f"vllm killed mid-batch: 1 document, 5 pages, 0 lost, 0 duplicated, {len(cut)} requests cut; killed "
          f"{killed_at - uploaded_at:.1f} s after the upload; server back after "
          f"{back_at - killed_at:.1f} s, document final {done_at - back_at:.1f} s after that")
