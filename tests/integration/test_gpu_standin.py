"""bench/gpu_standin.py over real HTTP: its batching rule (max_num_seqs running, the rest waiting in arrival
order, each request its own prefill + tokens x step whatever else runs), its `/metrics` as the bench reads them,
and answers the generic preset's parser takes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import uvicorn

from bench.gpu_path_figures import FINISHED, GENERATED, PROMPT, RUNNING, WAITING, parse_metrics
from bench.gpu_standin import Timing, create_app, step_for_rate
from services.worker.engines.vllm.presets import get_preset
from tests.openai_answers import tokens_of
from tests.servers import free_port, wait_for

TIMING = Timing(max_num_seqs=2, prefill_s=0.1, step_s=0.003, tokens=100)  # 0.4 s a request
ANCHOR = "Quarterly report\nRevenue grew by twelve percent in the third quarter, " + "and costs fell. " * 60


@pytest.fixture
def standin() -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(TIMING), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, 10, "the stand-in")
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def body(max_tokens: int = 256) -> dict[str, object]:
    preset = get_preset("generic")
    return {"model": "m", "logprobs": True, "max_tokens": max_tokens, "temperature": 0.0, "messages": [
        {"role": "user", "content": [{"type": "text", "text": preset.user_text(ANCHOR)},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]}


def gauges(url: str) -> dict[str, float]:
    return parse_metrics(httpx.get(f"{url}/metrics", timeout=5).text)


def test_beyond_max_num_seqs_requests_wait_in_arrival_order_and_each_runs_its_own_time(standin: str) -> None:
    seen: list[tuple[float, float]] = []

    def done(count: int) -> bool:
        totals = gauges(standin)
        seen.append((totals.get(RUNNING, 0.0), totals.get(WAITING, 0.0)))
        return totals.get(FINISHED, 0.0) == count

    with ThreadPoolExecutor(5) as pool:  # five at once: they come within a request's time of one another
        sent = [pool.submit(httpx.post, f"{standin}/v1/chat/completions", json=body(), timeout=30) for _ in range(5)]
        wait_for(lambda: done(5), 10, "the five answers")
        answers = [future.result() for future in sent]
    assert all(answer.status_code == 200 for answer in answers)
    # The server's own clock: when each came, got its slot, ended; in the order they came.
    times = sorted(tuple(float(t) for t in answer.headers["x-standin-times"].split()) for answer in answers)
    queued, started, ended = zip(*times, strict=True)
    # Each ran at least its own prefill + tokens x step, which does not depend on how many ran beside it.
    assert all(end - start >= TIMING.seconds(100) for start, end in zip(started, ended, strict=True))
    for number in range(5):
        running = sum(1 for i in range(5) if i != number and started[i] <= started[number] < ended[i])
        assert running < TIMING.max_num_seqs  # never more than max_num_seqs at once
        if started[number] > queued[number] + 0.01:  # it waited: only while the slots were full
            assert any(end <= started[number] for end in ended)
            assert sum(1 for i in range(5) if started[i] <= queued[number] < ended[i]) == TIMING.max_num_seqs
    # first come, first served; and the three beyond the two slots had to wait
    assert list(started) == sorted(started)
    assert started[2] >= min(ended[:2]) and started[3] >= sorted(ended)[1] and started[4] >= sorted(ended)[2]
    # Whenever sampled, the slots were full before anything waited.
    assert all(running <= TIMING.max_num_seqs and (waiting == 0 or running == TIMING.max_num_seqs)
               for running, waiting in seen)
    totals = gauges(standin)
    assert totals[RUNNING] == 0 and totals[WAITING] == 0
    assert totals[FINISHED] == 5 and totals[GENERATED] == 5 * 100
    assert totals[PROMPT] == 5 * answers[0].json()["usage"]["prompt_tokens"] > 0


def test_the_answer_is_the_anchor_cut_to_the_tokens_and_the_preset_reads_it(standin: str) -> None:
    answer = httpx.post(f"{standin}/v1/chat/completions", json=body(), timeout=30).json()
    choice = answer["choices"][0]
    content = choice["message"]["content"]
    assert choice["finish_reason"] == "stop" and answer["usage"]["completion_tokens"] == 100
    assert ANCHOR.startswith(content) and len(tokens_of(content)) == 100 < len(tokens_of(ANCHOR))
    assert "".join(entry["token"] for entry in choice["logprobs"]["content"]) == content
    assert get_preset("generic").parse(content).markdown.strip() == content.strip()
    short = httpx.post(f"{standin}/v1/chat/completions", json=body(max_tokens=40), timeout=30).json()
    assert short["choices"][0]["finish_reason"] == "length" and short["usage"]["completion_tokens"] == 40
    assert httpx.get(f"{standin}/health", timeout=5).status_code == 200
    assert httpx.get(f"{standin}/v1/models", timeout=5).json()["data"][0]["id"] == "standin"


def test_the_step_is_set_from_the_rate_with_every_slot_full() -> None:
    step = step_for_rate(5.71, max_num_seqs=8, tokens=192, prefill_s=0.05)
    assert 8 / Timing(max_num_seqs=8, prefill_s=0.05, step_s=step, tokens=192).seconds(192) == pytest.approx(5.71)
    with pytest.raises(ValueError):
        step_for_rate(200, max_num_seqs=8, tokens=192, prefill_s=0.05)  # 40 ms a request: less than the prefill
